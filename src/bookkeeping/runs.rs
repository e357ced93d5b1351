//! Run correlation: a run handle ties the calls of one agent run together. A client asks for one
//! with `_meta: {"io.chumbo/run": true}` on any request and gets it back in the result's `_meta`;
//! it passes the handle (a string) on later requests of the same run. The run id appears in
//! those requests' audit events (`chumbo.audit_events.run_id`) and stored outcomes, and
//! capability code reads it with `chumbo.run_id()` (to scope its state by run, say).
//!
//! A handle is a signed token (src/tokens.rs) of its own kind (so no other signed token can pass
//! as a handle), and binds the principal's digest: a forged, expired or another caller's handle is refused.

use crate::catalog::registry::{Caller, Registry};
use crate::error::Error;
use crate::tokens::{self, Kind};
use pgrx::prelude::*;
use serde_json::{json, Map, Value};
use std::cell::RefCell;

/// The `_meta` key of run handles, in requests and results.
pub const META_KEY: &str = "io.chumbo/run";
const MAX_HANDLE_CHARS: usize = 1024;

thread_local! {
    /// The run of the request being processed.
    static CURRENT: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What a request says about its run.
pub struct Run {
    pub id: String,
    /// The handle to return, when this request started the run.
    pub issued: Option<String>,
}

fn issue(key: &[u8], principal: &str, ttl: u32) -> Run {
    let id = format!(
        "{}{}",
        crate::identity::session::random_id(),
        crate::identity::session::random_id()
    );
    let payload = json!({"p": principal, "r": id, "x": tokens::expiry(i64::from(ttl))});
    Run {
        issued: Some(tokens::sign(key, Kind::RunHandle, &payload)),
        id,
    }
}

fn verify(key: &[u8], handle: &str, principal: &str) -> Result<String, Error> {
    let invalid = || {
        Error::InvalidParams(format!(
            "{META_KEY} is not a valid run handle of this caller"
        ))
    };
    let p = tokens::open(key, Kind::RunHandle, handle, MAX_HANDLE_CHARS).map_err(|_| invalid())?;
    if p["p"] != principal {
        return Err(invalid());
    }
    if tokens::expired(&p) {
        return Err(Error::InvalidParams(format!(
            "{META_KEY}: the run handle has expired"
        )));
    }
    p["r"].as_str().map(String::from).ok_or_else(invalid)
}

/// The run of a request (`params._meta["io.chumbo/run"]`): none, a new one (`true`), or the one
/// a valid handle names.
pub fn of_request(
    registry: &Registry,
    caller: &Caller,
    params: &Map<String, Value>,
) -> Result<Option<Run>, Error> {
    let key = registry.token_secret();
    let principal = caller.principal.digest();
    match params.get("_meta").and_then(|m| m.get(META_KEY)) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
        Some(Value::Bool(true)) => Ok(Some(issue(
            key,
            principal,
            registry.settings.run_ttl_seconds,
        ))),
        Some(Value::String(h)) => {
            verify(key, h, principal).map(|id| Some(Run { id, issued: None }))
        }
        Some(_) => Err(Error::InvalidParams(format!(
            "{META_KEY} must be true (start a run) or a run handle"
        ))),
    }
}

pub fn enter(run: Option<&Run>) {
    CURRENT.with(|c| *c.borrow_mut() = run.map(|r| r.id.clone()));
}

pub fn leave() {
    CURRENT.with(|c| *c.borrow_mut() = None);
}

pub fn current_id() -> Option<String> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Adds a newly issued handle to a result's `_meta`.
pub fn decorate(result: &mut Value, run: Option<&Run>) {
    let Some(handle) = run.and_then(|r| r.issued.as_ref()) else {
        return;
    };
    if let Some(obj) = result.as_object_mut() {
        let meta = obj.entry("_meta").or_insert(json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert(META_KEY.into(), json!(handle));
        }
    }
}

/// The run id of the current request, or null outside a run. Capability code can key its state
/// by it; it cannot choose it (only a handle signed for the caller names a run).
#[pg_extern(name = "run_id")]
fn run_id() -> Option<String> {
    current_id()
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    #[pgrx::pg_test]
    fn handles_are_bound_to_key_and_principal() {
        let run = issue(b"k1", "alice", 60);
        let h = run.issued.unwrap();
        assert_eq!(verify(b"k1", &h, "alice").unwrap(), run.id);
        assert!(verify(b"k1", &h, "bob").is_err());
        assert!(verify(b"k2", &h, "alice").is_err());
        assert!(verify(b"k1", &format!("{h}x"), "alice").is_err());
    }
}
