//! Signed tokens, all four kinds chumbo hands to clients: MRTR `requestState`s, page cursors,
//! approval (confirmation) tokens and run handles. One format, `base64url(payload JSON)` `.`
//! `base64url(HMAC-SHA256)`, and one way to keep the kinds apart: each kind signs with its own
//! key, derived from the `request_state` secret with the kind's purpose label, so a token of one
//! kind never passes the integrity check of another (and rotating `request_state` retires them
//! all). The tag is checked in constant time (`Mac::verify_slice`). Expiry is the payload's `x`
//! (Unix seconds) on chumbo's clock; what else a payload binds (caller, capability, arguments)
//! each kind checks itself, with [arguments_digest] the one digest of arguments.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// What a token is for; its label derives the key it is signed with.
#[derive(Clone, Copy)]
pub enum Kind {
    RequestState,
    PageCursor,
    ApprovalToken,
    RunHandle,
    /// The primary's admission of a request the edge serves on a standby (src/api/replica.rs).
    Admission,
}

impl Kind {
    fn label(self) -> &'static [u8] {
        match self {
            Kind::RequestState => b"request state",
            Kind::PageCursor => b"page cursor",
            Kind::ApprovalToken => b"approval token",
            Kind::RunHandle => b"run handle",
            Kind::Admission => b"admission ticket",
        }
    }

    /// HMAC(secret, "chumbo token key v2" NUL label): the key this kind signs with.
    fn key(self, secret: &[u8]) -> Hmac<Sha256> {
        let mut derive = hmac(secret);
        derive.update(b"chumbo token key v2\0");
        derive.update(self.label());
        hmac(&derive.finalize().into_bytes())
    }
}

fn hmac(key: &[u8]) -> Hmac<Sha256> {
    <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length")
}

/// Why a token was refused before its payload was read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Too long, not two base64url parts, or a payload that is not a JSON object.
    Malformed,
    /// Not signed by this server for this kind.
    Forged,
}

/// The token of `kind` carrying `payload` (a JSON object).
pub fn sign(secret: &[u8], kind: Kind, payload: &Value) -> String {
    let payload = payload.to_string();
    let mut mac = kind.key(secret);
    mac.update(payload.as_bytes());
    format!(
        "{}.{}",
        B64.encode(payload.as_bytes()),
        B64.encode(mac.finalize().into_bytes())
    )
}

/// The payload of a token of `kind` this server signed, at most `max_len` characters long.
pub fn open(secret: &[u8], kind: Kind, token: &str, max_len: usize) -> Result<Value, Refused> {
    if token.len() > max_len {
        return Err(Refused::Malformed);
    }
    let (payload, tag) = token.split_once('.').ok_or(Refused::Malformed)?;
    let payload = B64.decode(payload).map_err(|_| Refused::Malformed)?;
    let tag = B64.decode(tag).map_err(|_| Refused::Malformed)?;
    let mut mac = kind.key(secret);
    mac.update(&payload);
    mac.verify_slice(&tag).map_err(|_| Refused::Forged)?;
    match serde_json::from_slice(&payload) {
        Ok(p @ Value::Object(_)) => Ok(p),
        _ => Err(Refused::Malformed),
    }
}

/// The expiry to put in a payload's `x`: `ttl_seconds` from now on chumbo's clock.
pub fn expiry(ttl_seconds: i64) -> i64 {
    crate::postgres::guards::now_unix().saturating_add(ttl_seconds)
}

/// Whether a payload's `x` has passed (a payload without one has).
pub fn expired(payload: &Value) -> bool {
    payload["x"].as_i64().unwrap_or(0) < crate::postgres::guards::now_unix()
}

/// The digest tokens and approvals bind arguments with: SHA-256 of their compact JSON text,
/// hex. serde_json's objects are ordered by key, so the text (and the digest) is canonical.
pub fn arguments_digest(arguments: &impl serde::Serialize) -> String {
    struct Hasher(Sha256);
    impl std::io::Write for Hasher {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.update(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hasher(Sha256::new());
    // Writing JSON into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut h, arguments);
    crate::identity::principal::hex(&h.0.finalize())
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &[u8] = b"tokens-test-secret";
    const KINDS: [Kind; 4] = [
        Kind::RequestState,
        Kind::PageCursor,
        Kind::ApprovalToken,
        Kind::RunHandle,
    ];

    /// A token opens only as the kind it was signed as: every ordered pair of kinds.
    #[pgrx::pg_test]
    fn kinds_never_open_as_each_other() {
        let payload = json!({"p": "alice", "x": 1});
        for (i, signed) in KINDS.iter().enumerate() {
            let token = sign(SECRET, *signed, &payload);
            for (j, opened) in KINDS.iter().enumerate() {
                let got = open(SECRET, *opened, &token, 4096);
                if i == j {
                    assert_eq!(got, Ok(payload.clone()));
                } else {
                    assert_eq!(got, Err(Refused::Forged), "kind {i} opened as kind {j}");
                }
            }
            assert_eq!(
                open(b"another secret", *signed, &token, 4096),
                Err(Refused::Forged)
            );
        }
    }

    #[pgrx::pg_test]
    fn malformed_and_tampered_tokens_are_refused() {
        let token = sign(SECRET, Kind::PageCursor, &json!({"o": 50}));
        assert_eq!(
            open(SECRET, Kind::PageCursor, &token, token.len() - 1),
            Err(Refused::Malformed)
        );
        assert_eq!(
            open(SECRET, Kind::PageCursor, "no dot", 4096),
            Err(Refused::Malformed)
        );
        let (p, t) = token.split_once('.').unwrap();
        let other = B64.encode(br#"{"o":51}"#);
        assert_eq!(
            open(SECRET, Kind::PageCursor, &format!("{other}.{t}"), 4096),
            Err(Refused::Forged)
        );
        let not_an_object = sign(SECRET, Kind::PageCursor, &json!([1]));
        assert_eq!(
            open(SECRET, Kind::PageCursor, &not_an_object, 4096),
            Err(Refused::Malformed)
        );
        assert!(open(SECRET, Kind::PageCursor, &format!("{p}.{t}"), 4096).is_ok());
    }

    #[pgrx::pg_test]
    fn the_arguments_digest_is_the_compact_text_digest() {
        let args = json!({"b": [1, {"d": null}], "a": "x"});
        let text = args.to_string();
        assert_eq!(text, r#"{"a":"x","b":[1,{"d":null}]}"#);
        assert_eq!(
            arguments_digest(&args),
            crate::identity::principal::hex(&Sha256::digest(text.as_bytes()))
        );
        assert_eq!(
            arguments_digest(args.as_object().unwrap()),
            arguments_digest(&args)
        );
    }
}
