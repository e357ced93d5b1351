//! Bearer-token verification inside the database (jsonwebtoken), so a forwarding edge is never
//! trusted blindly: signature from the configured JWKS (ES256/RS256/EdDSA; HS256 only with a
//! configured secret), issuer, audience, expiry and not-before.

use crate::settings::Settings;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use serde_json::Value;

pub enum AuthError {
    /// No credentials at all (401 without error=).
    Missing,
    /// Credentials present but unacceptable (401 error="invalid_token").
    Invalid(String),
}

/// Verified claims of `token`, checked against `settings` and, when no audience is configured,
/// the canonical resource URL the request arrived at.
pub fn verify(
    token: &str,
    settings: &Settings,
    resource: Option<&str>,
) -> Result<Value, AuthError> {
    let invalid = |m: &str| AuthError::Invalid(m.to_string());
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
    let mut validation = Validation::new(header.alg);
    validation.leeway = 30;
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp"]);
    if !settings.jwt_issuers.is_empty() {
        validation.set_issuer(&settings.jwt_issuers);
    }
    let audience: Vec<String> = if settings.jwt_audience.is_empty() {
        resource
            .map(|r| vec![r.trim_end_matches('/').to_string(), r.to_string()])
            .unwrap_or_default()
    } else {
        settings.jwt_audience.clone()
    };
    if audience.is_empty() {
        validation.validate_aud = false;
    } else {
        validation.set_audience(&audience);
    }
    decode::<Value>(token, &key, &validation)
        .map(|d| d.claims)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind::*;
            invalid(match e.kind() {
                ExpiredSignature => "the token has expired",
                ImmatureSignature => "the token is not valid yet",
                InvalidIssuer => "the token's issuer is not trusted",
                InvalidAudience => "the token was not issued for this server",
                InvalidSignature => "the token's signature is invalid",
                MissingRequiredClaim(_) => "the token lacks a required claim",
                _ => "the token is invalid",
            })
        })
}
