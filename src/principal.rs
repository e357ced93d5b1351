//! Who the current request is for, as chumbo's own tables see it: a stable identity derived
//! from the verified credential (JWT issuer + subject, or API key id), never from anything SQL
//! can set. Capability code reaches chumbo's state, limits and sandboxes only through functions
//! that read this, so it cannot act for someone else.

use hmac::{Hmac, KeyInit, Mac};
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::cell::RefCell;

#[derive(Clone, Debug)]
pub struct Principal {
    /// "jwt", "api-key" or "anonymous".
    pub kind: &'static str,
    /// The exact credential identity; None for anonymous callers.
    pub identity: Option<String>,
    pub role: String,
    pub client_id: Option<String>,
    /// For anonymous callers in public mode: where the request came from (rate-limit bucket).
    pub origin: Option<String>,
}

impl Principal {
    pub fn from_claims(claims: &Value, role: &str, origin: Option<String>) -> Principal {
        let s = |k: &str| claims.get(k).and_then(Value::as_str).map(String::from);
        let (kind, identity) = if let Some(key) = s("chumbo_api_key") {
            ("api-key", Some(format!("api-key\u{1}{key}")))
        } else if let Some(sub) = s("sub") {
            (
                "jwt",
                Some(format!(
                    "jwt\u{1}{}\u{1}{sub}",
                    s("iss").unwrap_or_default()
                )),
            )
        } else {
            ("anonymous", None)
        };
        Principal {
            kind,
            identity,
            role: role.to_string(),
            client_id: s("client_id").or_else(|| s("azp")),
            origin,
        }
    }

    /// SHA-256 of the identity: what audit rows and limit buckets hold instead of the subject.
    pub fn digest(&self) -> String {
        let basis = match &self.identity {
            Some(i) => i.clone(),
            None => format!("anonymous\u{1}{}", self.origin.as_deref().unwrap_or("")),
        };
        hex(&Sha256::digest(basis.as_bytes()))
    }

    /// The rate-limit bucket: principal plus OAuth client.
    pub fn limit_key(&self) -> String {
        format!(
            "{}:{}",
            self.digest(),
            self.client_id.as_deref().unwrap_or("")
        )
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

fn current() -> (Principal, Vec<u8>) {
    CURRENT.with(|c| c.borrow().clone()).unwrap_or_else(|| {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: no MCP request is in progress",
            "chumbo's state, limit and sandbox functions only work inside a capability called through chumbo"
        );
        unreachable!()
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
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: anonymous callers have no durable state"
        );
        unreachable!()
    };
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(identity.as_bytes());
    mac.finalize().into_bytes().to_vec()
}
