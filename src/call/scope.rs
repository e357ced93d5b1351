//! One request's per-backend state, set and cleared in one place. While a [RequestScope] lives,
//! chumbo's SQL functions know who the request is for (principal), where its notifications go
//! (events) and whether a capability may ask for input (MRTR); when it is dropped, all three are
//! gone, whichever way the request ended: returned, failed, or unwound by a PostgreSQL ERROR
//! (pgrx turns the ERROR into a panic that unwinds through Rust frames, so Drop runs). A
//! cancelled request must not leave its principal behind for the next statement on the same
//! pooled connection.

use crate::bookkeeping::runs;
use crate::call::mrtr;
use crate::events;
use crate::identity::principal::{self, Principal};
use crate::identity::session;
use crate::trace_context::{self, TraceParent};
use serde_json::Value;
use std::marker::PhantomData;

/// The trace id of the request in scope (minted once as it enters: trace_context keeps it);
/// outside one (an entry point refusing a request before it is in scope), a new one.
pub fn trace_id() -> String {
    trace_context::request_trace_id().unwrap_or_else(new_trace_id)
}

/// A new W3C trace id (32 hex digits, 128 random bits): a request without a valid traceparent
/// starts a trace of its own.
pub fn new_trace_id() -> String {
    session::random_id() + &session::random_id()
}

pub struct RequestScope {
    /// Per-backend state: the scope must stay on the backend's thread.
    _not_send: PhantomData<*const ()>,
}

impl RequestScope {
    /// Enters the scope of one request: its principal (and the deployment key for state
    /// partitions), its progress token, the bytes its events may take, and the trace it belongs
    /// to (the client's, else a new one). The MRTR round is
    /// opened per capability call inside the scope (see src/call/steps.rs execute) and closed with it.
    pub fn enter(
        principal: Principal,
        state_key: Vec<u8>,
        progress: Option<Value>,
        events_budget: usize,
        trace: Option<TraceParent>,
    ) -> RequestScope {
        events::begin(progress, events_budget);
        principal::enter(principal, state_key);
        let trace_id = trace.map_or_else(new_trace_id, |t| t.trace_id);
        trace_context::set_request_trace_id(Some(trace_id));
        RequestScope {
            _not_send: PhantomData,
        }
    }

    /// The notifications the request raised, for its response (the queue is left empty).
    pub fn take_events(&self) -> Vec<Value> {
        events::take()
    }
}

impl Drop for RequestScope {
    fn drop(&mut self) {
        trace_context::set_request_trace_id(None);
        principal::leave();
        runs::leave();
        mrtr::clear();
        drop(events::take());
        session::forget_session_state();
    }
}

/// Whether no per-request state is set (for tests).
#[cfg(any(test, feature = "pg_test"))]
pub fn is_clear() -> bool {
    !principal::in_request()
        && !mrtr::in_round()
        && events::is_empty()
        && trace_context::request_trace_id().is_none()
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use pgrx::prelude::*;
    use serde_json::json;

    fn principal() -> Principal {
        Principal::from_claims(
            &json!({"sub": "alice", "iss": "t"}),
            "authenticated",
            None,
            b"k",
        )
    }

    /// Everything a request sets, set: principal, an event, an open MRTR round.
    fn fill() {
        mrtr::begin(true, json!({"elicitation": {}}), serde_json::Map::new());
        Spi::run("select chumbo.log('info', '\"hello\"'::jsonb)").expect("log");
        assert!(principal::in_request());
        assert!(mrtr::in_round());
        assert!(!events::is_empty());
    }

    #[pg_test]
    fn scope_clears_everything_when_it_ends() {
        assert!(is_clear());
        {
            let _scope =
                RequestScope::enter(principal(), b"k".to_vec(), Some(json!(7)), 10_000, None);
            fill();
        }
        assert!(is_clear());
    }

    /// A PostgreSQL ERROR raised inside the scope (here by the executor, in C) unwinds through
    /// Rust as a panic: the scope's Drop still runs, so nothing of the request is left behind.
    #[pg_test]
    fn scope_clears_everything_when_an_error_unwinds() {
        let outcome = session::in_subtransaction(|| {
            let _scope =
                RequestScope::enter(principal(), b"k".to_vec(), Some(json!(7)), 10_000, None);
            fill();
            Spi::get_one::<i32>("select 1 / 0")
        });
        let err = outcome.expect_err("division by zero must raise");
        assert_eq!(err.sqlstate, "22012");
        assert!(is_clear());
        // and chumbo's request-only functions refuse again, as outside any request
        let refused = session::in_subtransaction(|| {
            Spi::get_one::<pgrx::JsonB>("select chumbo._principal()")
        });
        assert!(refused.is_err());
    }
}
