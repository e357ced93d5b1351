//! Bearer-token verification inside the database (jsonwebtoken), so a forwarding edge is never
//! trusted blindly: signature from the configured JWKS (ES256/RS256/EdDSA; HS256 only with a
//! configured secret), issuer, audience, expiry and not-before.
//!
//! A signature check (ES256: ~100 µs) would otherwise run on every request, so each backend keeps
//! the claims of the tokens it verified, by the whole token and the resource (compared exactly,
//! not by a digest: hashing a token with SHA-256 cost as much as a small call's own work), until
//! their `exp`. The cache is emptied whenever the registry is rebuilt (registry::current): keys
//! and settings live in `chumbo.settings`, whose every change moves the schema version, so a
//! removed signing key or a changed issuer/audience is in force at the next request.

use crate::settings::Settings;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;

/// Clock skew tolerated on exp and nbf.
pub const LEEWAY_SECONDS: u64 = 30;

/// Bounds of one backend's token cache; beyond either, it starts over (a pooled edge connection
/// sees a handful of live tokens, so this only caps what a flood of distinct tokens can hold).
const CACHE_MAX_TOKENS: usize = 1024;
const CACHE_MAX_BYTES: usize = 1 << 20;

struct Verified {
    claims: Value,
    /// Last second at which jsonwebtoken would still accept the token (exp + leeway).
    valid_until: u64,
    bytes: usize,
}

#[derive(Default)]
struct TokenCache {
    /// By [key]; std's HashMap hashes with a per-process random key (no crafted collisions).
    by_key: HashMap<String, Verified>,
    bytes: usize,
}

thread_local! {
    static TOKENS: RefCell<TokenCache> = RefCell::new(TokenCache::default());
}

/// Forgets every verified token: called when keys or settings may have changed.
pub fn forget_verified_tokens() {
    TOKENS.with(|t| *t.borrow_mut() = TokenCache::default());
}

/// The whole token and the resource it was presented at (the default audience), so claims are
/// only ever handed back for exactly the input they were verified from. The token's length comes
/// first: no other pair of strings makes the same key.
fn key(token: &str, resource: Option<&str>) -> String {
    let resource = resource.unwrap_or("");
    let mut k = String::with_capacity(token.len() + resource.len() + 8);
    k.push_str(&token.len().to_string());
    k.push(':');
    k.push_str(token);
    k.push_str(resource);
    k
}

/// [verify], through the backend's cache. Only successes are kept; expiry is checked on every hit.
pub fn verify_cached(
    token: &str,
    settings: &Settings,
    resource: Option<&str>,
) -> Result<Value, String> {
    verify_cached_at(
        token,
        settings,
        resource,
        jsonwebtoken::get_current_timestamp(),
    )
}

/// [verify_cached] at the clock reading `now` (what jsonwebtoken reads on a miss).
fn verify_cached_at(
    token: &str,
    settings: &Settings,
    resource: Option<&str>,
    now: u64,
) -> Result<Value, String> {
    let key = key(token, resource);
    let hit = TOKENS.with(|t| {
        let mut t = t.borrow_mut();
        match t.by_key.get(&key) {
            Some(v) if now <= v.valid_until => Some(Ok(v.claims.clone())),
            Some(_) => {
                let gone = t.by_key.remove(&key).map_or(0, |v| v.bytes);
                t.bytes -= gone;
                Some(Err(()))
            }
            None => None,
        }
    });
    match hit {
        Some(Ok(claims)) => return Ok(claims),
        // Expired since it was cached: the same answer verify gives an expired token.
        Some(Err(())) => return Err("the token has expired".into()),
        None => {}
    }
    let claims = verify(token, settings, resource)?;
    if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
        let bytes = key.len() + claims.to_string().len() + 64;
        TOKENS.with(|t| {
            let mut t = t.borrow_mut();
            if t.by_key.len() >= CACHE_MAX_TOKENS || t.bytes + bytes > CACHE_MAX_BYTES {
                *t = TokenCache::default();
            }
            if bytes <= CACHE_MAX_BYTES {
                t.bytes += bytes;
                let valid_until = exp.saturating_add(LEEWAY_SECONDS);
                t.by_key.insert(
                    key,
                    Verified {
                        claims: claims.clone(),
                        valid_until,
                        bytes,
                    },
                );
            }
        });
    }
    Ok(claims)
}

/// Verified claims of `token`, checked against `settings` and, when no audience is configured,
/// the canonical resource URL the request arrived at.
pub fn verify(token: &str, settings: &Settings, resource: Option<&str>) -> Result<Value, String> {
    let invalid = |m: &str| m.to_string();
    let header = decode_header(token).map_err(|_| invalid("the token is not a well-formed JWT"))?;
    let key = match header.alg {
        Algorithm::HS256 => {
            let secret = settings
                .jwt_hs256_secret
                .as_deref()
                .ok_or_else(|| invalid("HS256 tokens are not accepted"))?;
            DecodingKey::from_secret(secret.as_bytes())
                .map_err(|_| invalid("HS256 is misconfigured"))?
        }
        Algorithm::ES256 | Algorithm::RS256 | Algorithm::EdDSA => {
            let jwks: JwkSet = settings
                .jwks
                .clone()
                .and_then(|j| serde_json::from_value(j).ok())
                .ok_or_else(|| invalid("no signing keys are configured"))?;
            let jwk = match &header.kid {
                Some(kid) => jwks.find(kid),
                None if jwks.keys.len() == 1 => jwks.keys.first(),
                None => None,
            }
            .ok_or_else(|| invalid("the token's signing key is unknown"))?;
            DecodingKey::from_jwk(jwk).map_err(|_| invalid("the signing key is unusable"))?
        }
        _ => return Err(invalid("the token's algorithm is not accepted")),
    };
    // Strict by design: exp, iss, aud and sub must all be present; iss and sub must be strings
    // and iss one of the configured issuers. jsonwebtoken checks presence, signature, expiry,
    // not-before, issuer and audience; the types are checked below (a JSON array `iss` must never
    // pass as "one of its entries is trusted").
    if settings.jwt_issuers.is_empty() {
        return Err(invalid("no trusted issuer is configured"));
    }
    let audience: Vec<String> = if settings.jwt_audience.is_empty() {
        resource
            .map(|r| vec![r.trim_end_matches('/').to_string(), r.to_string()])
            .unwrap_or_default()
    } else {
        settings.jwt_audience.clone()
    };
    if audience.is_empty() {
        return Err(invalid("no audience is configured"));
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = LEEWAY_SECONDS;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.set_issuer(&settings.jwt_issuers);
    validation.set_audience(&audience);
    let claims = decode::<Value>(token, &key, &validation)
        .map(|d| d.claims)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind::*;
            invalid(match e.kind() {
                ExpiredSignature => "the token has expired",
                ImmatureSignature => "the token is not valid yet",
                InvalidIssuer => "the token's issuer is not trusted",
                InvalidAudience => "the token was not issued for this server",
                InvalidSignature => "the token's signature is invalid",
                MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss, aud, sub)",
                _ => "the token is invalid",
            })
        })?;
    check_claim_types(&claims, &settings.jwt_issuers, &audience).map_err(invalid)?;
    if settings.require_client_id
        && claims
            .get("client_id")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        return Err(invalid(
            "the token was not issued to an OAuth client (it has no client_id claim)",
        ));
    }
    Ok(claims)
}

/// iss and sub are single strings, iss a configured issuer; aud is a string or a list whose every
/// entry is an accepted audience (a token meant for several servers is not accepted here).
fn check_claim_types(
    claims: &Value,
    issuers: &[String],
    audience: &[String],
) -> Result<(), &'static str> {
    match claims.get("iss") {
        Some(Value::String(iss)) if issuers.contains(iss) => {}
        _ => return Err("the token's issuer is not trusted"),
    }
    match claims.get("sub") {
        Some(Value::String(sub)) if !sub.is_empty() => {}
        _ => return Err("the token's subject must be a non-empty string"),
    }
    let accepted = |v: &Value| v.as_str().is_some_and(|a| audience.iter().any(|x| x == a));
    match claims.get("aud") {
        Some(v @ Value::String(_)) if accepted(v) => {}
        Some(Value::Array(list)) if !list.is_empty() && list.iter().all(accepted) => {}
        _ => return Err("the token was not issued for this server"),
    }
    if !claims.get("exp").is_some_and(Value::is_number) {
        return Err("the token's expiry must be a number");
    }
    Ok(())
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::json;

    fn hs256_settings() -> Settings {
        Settings {
            jwt_issuers: vec!["https://issuer.test".into()],
            jwt_hs256_secret: Some("s1".into()),
            ..Settings::default()
        }
    }

    fn hs256_token(claims: &Value) -> String {
        let key = jsonwebtoken::EncodingKey::from_secret(b"s1").unwrap();
        jsonwebtoken::encode(&jsonwebtoken::Header::default(), claims, &key).unwrap()
    }

    /// A cached token stops at exp + leeway, as jsonwebtoken's own check does, and is dropped.
    #[pgrx::pg_test]
    fn cached_token_expires() {
        forget_verified_tokens();
        let settings = hs256_settings();
        let resource = Some("https://mcp.test");
        let now = jsonwebtoken::get_current_timestamp();
        let exp = now + 300;
        let claims = json!({"iss": "https://issuer.test", "sub": "u1", "aud": "https://mcp.test", "exp": exp});
        let token = hs256_token(&claims);
        assert_eq!(
            verify_cached_at(&token, &settings, resource, now),
            Ok(claims.clone())
        );
        let last = exp + LEEWAY_SECONDS;
        assert_eq!(
            verify_cached_at(&token, &settings, resource, last),
            Ok(claims)
        );
        assert_eq!(
            verify_cached_at(&token, &settings, resource, last + 1),
            Err("the token has expired".to_string())
        );
        assert!(TOKENS.with(|t| t.borrow().by_key.is_empty()));
        // Another resource (the default audience) is another entry, verified on its own: refused.
        assert!(verify_cached_at(&token, &settings, Some("https://other.test"), now).is_err());
    }

    /// Many distinct tokens never hold more than the bounds.
    #[pgrx::pg_test]
    fn token_cache_is_bounded() {
        forget_verified_tokens();
        let settings = hs256_settings();
        let exp = jsonwebtoken::get_current_timestamp() + 300;
        for i in 0..(CACHE_MAX_TOKENS + 10) {
            let claims = json!({"iss": "https://issuer.test", "sub": format!("u{i}"), "aud": "https://mcp.test", "exp": exp});
            assert!(
                verify_cached(&hs256_token(&claims), &settings, Some("https://mcp.test")).is_ok()
            );
        }
        TOKENS.with(|t| {
            let t = t.borrow();
            assert!(t.by_key.len() <= CACHE_MAX_TOKENS && t.bytes <= CACHE_MAX_BYTES);
            assert_eq!(t.bytes, t.by_key.values().map(|v| v.bytes).sum::<usize>());
        });
        forget_verified_tokens();
    }

    /// Claims whose signature, expiry, issuer and audience jsonwebtoken accepted still need the
    /// right types: a list `iss` or `aud` naming a trusted value among others is refused.
    #[pgrx::pg_test]
    fn claim_types_are_strict() {
        let issuers = vec!["https://issuer.test".to_string()];
        let audience = vec!["https://mcp.test".to_string()];
        let base =
            json!({"iss": "https://issuer.test", "sub": "u1", "aud": "https://mcp.test", "exp": 1});
        let with = |k: &str, v: serde_json::Value| {
            let mut c = base.clone();
            c[k] = v;
            c
        };
        assert!(check_claim_types(&base, &issuers, &audience).is_ok());
        assert!(check_claim_types(
            &with("aud", json!(["https://mcp.test"])),
            &issuers,
            &audience
        )
        .is_ok());
        for bad in [
            with(
                "iss",
                json!(["https://evil.example", "https://issuer.test"]),
            ),
            with("iss", json!("https://issuer.test/")),
            with("sub", json!(12)),
            with("sub", json!("")),
            with("aud", json!(["https://evil.example", "https://mcp.test"])),
            with("aud", json!([])),
            with("exp", json!("1")),
        ] {
            assert!(
                check_claim_types(&bad, &issuers, &audience).is_err(),
                "{bad}"
            );
        }
    }
}
