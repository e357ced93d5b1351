//! Who the current request is for, as chumbo's own tables see it: a stable identity derived
//! from the verified credential (JWT issuer + subject, or API key id), never from anything SQL
//! can set. Capability code reaches chumbo's state, limits and sandboxes only through functions
//! that read this, so it cannot act for someone else.

use hmac::{Hmac, KeyInit, Mac};
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};
use sha2::Sha256;
use std::cell::RefCell;
use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct Principal {
    /// "jwt", "api-key" or "anonymous".
    pub kind: &'static str,
    /// The exact credential identity; None for anonymous callers.
    pub identity: Option<String>,
    pub role: String,
    pub client_id: Option<String>,
    /// HMAC-SHA256(deployment key, identity) in hex: what audit rows, limit buckets and sandbox
    /// owners hold instead of the subject. Keyed, so a known `sub` cannot be linked to its rows.
    digest: String,
}

impl Principal {
    /// The principal of verified JWT claims (`iss` + `sub`), or an anonymous one told apart by
    /// `origin` (where the request came from). No other claim is looked at: in particular no
    /// claim can make a caller an API key.
    pub fn from_claims(
        claims: &Value,
        role: &str,
        origin: Option<String>,
        key: &[u8],
    ) -> Principal {
        let s = |k: &str| claims.get(k).and_then(Value::as_str).map(String::from);
        let client_id = s("client_id").or_else(|| s("azp"));
        match s("sub") {
            Some(sub) => {
                let identity = format!("jwt\u{1}{}\u{1}{sub}", s("iss").unwrap_or_default());
                Principal::new("jwt", Some(identity), role, client_id, key)
            }
            None => {
                let basis = format!("anonymous\u{1}{}", origin.as_deref().unwrap_or(""));
                let mut p = Principal::new("anonymous", None, role, client_id, key);
                p.digest = keyed_hex(key, &basis);
                p
            }
        }
    }

    /// The principal of an API key, by its id (verified against the stored secret).
    pub fn api_key(key_id: &str, role: &str, key: &[u8]) -> Principal {
        let identity = format!("api-key\u{1}{key_id}");
        Principal::new("api-key", Some(identity), role, None, key)
    }

    fn new(
        kind: &'static str,
        identity: Option<String>,
        role: &str,
        client_id: Option<String>,
        key: &[u8],
    ) -> Principal {
        let digest = keyed_hex(key, identity.as_deref().unwrap_or(""));
        Principal {
            kind,
            identity,
            role: role.to_string(),
            client_id,
            digest,
        }
    }

    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The principal as a task keeps it (sql/tasks.sql): enough to be exactly this principal again
    /// when a worker runs the task, with no credential left to verify.
    pub fn stored(&self) -> Value {
        json!({"kind": self.kind, "identity": self.identity, "role": self.role,
               "client_id": self.client_id, "digest": self.digest})
    }

    /// The principal [Principal::stored] kept (None: not such an object).
    pub fn restored(v: &Value) -> Option<Principal> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        let kind = match v.get("kind")?.as_str()? {
            "jwt" => "jwt",
            "api-key" => "api-key",
            "anonymous" => "anonymous",
            _ => return None,
        };
        Some(Principal {
            kind,
            identity: s("identity"),
            role: s("role")?,
            client_id: s("client_id"),
            digest: s("digest")?,
        })
    }

    /// The rate-limit and in-flight bucket: the principal alone. (The OAuth client is not part of
    /// it: a user must not get a fresh budget by registering another client.)
    pub fn limit_key(&self) -> &str {
        &self.digest
    }
}

/// Digests already computed in this backend, for one deployment key: a pooled connection serves
/// the same few principals call after call, and the HMAC was a fixed cost of every request.
/// Bounded: cleared when full, and when the key changes.
const MAX_DIGESTS: usize = 1024;

thread_local! {
    static DIGESTS: RefCell<(Vec<u8>, HashMap<String, String>)> = RefCell::new((Vec::new(), HashMap::new()));
}

/// Digests are a different use of the deployment key than state partitions: domain-separated.
fn keyed_hex(key: &[u8], basis: &str) -> String {
    DIGESTS.with(|d| {
        let (cached_key, digests) = &mut *d.borrow_mut();
        if cached_key.as_slice() != key {
            *cached_key = key.to_vec();
            digests.clear();
        }
        if let Some(digest) = digests.get(basis) {
            return digest.clone();
        }
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
        mac.update(b"chumbo principal digest\x01");
        mac.update(basis.as_bytes());
        let digest = hex(&mac.finalize().into_bytes());
        if digests.len() >= MAX_DIGESTS {
            digests.clear();
        }
        digests.insert(basis.to_string(), digest.clone());
        digest
    })
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

thread_local! {
    static CURRENT: RefCell<Option<(Principal, Vec<u8>)>> = const { RefCell::new(None) };
}

/// Marks the principal (and the deployment key for partitions) of the request being processed.
pub fn enter(principal: Principal, state_key: Vec<u8>) {
    CURRENT.with(|c| *c.borrow_mut() = Some((principal, state_key)));
}

pub fn leave() {
    CURRENT.with(|c| *c.borrow_mut() = None);
}

/// Whether a request is being processed in this backend right now.
pub fn in_request() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

fn current() -> (Principal, Vec<u8>) {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: no MCP request is in progress",
            Some("chumbo's state, limit and sandbox functions only work inside a capability called through chumbo"),
        )
    })
}

/// The current request's principal (digest, never the raw subject).
#[pg_extern(name = "_principal")]
fn principal_json() -> JsonB {
    let (p, _) = current();
    JsonB(json!({
        "kind": p.kind,
        "digest": p.digest(),
        "anonymous": p.identity.is_none(),
        "role": p.role,
        "client_id": p.client_id,
    }))
}

/// HMAC-SHA256(deployment key, auth kind + exact credential identity): the partition key of the
/// current principal's durable state. Anonymous callers have none.
#[pg_extern(name = "_principal_partition")]
fn principal_partition() -> Vec<u8> {
    let (p, key) = current();
    let Some(identity) = p.identity else {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: anonymous callers have no durable state",
            None,
        )
    };
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(identity.as_bytes());
    mac.finalize().into_bytes().to_vec()
}
