//! Serving on a hot standby (docs/scaling.md). A backend serves read-only when the server is in
//! recovery, or when the request came through `chumbo.http_replica` (the edge's read path, which
//! makes its transaction read-only on any server). Then nothing chumbo does may write: the steps
//! that would (a VOLATILE capability, a tool's own rate limit, an input round's nonce, ...) answer
//! [NEEDS_PRIMARY] instead, and any write that still happens is refused by PostgreSQL (25006, or
//! "cannot assign TransactionIds during recovery"), noted here and answered the same way: a typed
//! answer the edge recognises and sends to the primary, never an internal error.
//!
//! Audit rows of such a request are not written: they are kept here ([ship]) and handed back to
//! the edge, which writes them on the primary in the transaction that admitted the request.

use pgrx::pg_sys;
use serde_json::Value;
use std::cell::{Cell, RefCell};

thread_local! {
    static REPLICA: Cell<bool> = const { Cell::new(false) };
    static WRITE_REFUSED: Cell<bool> = const { Cell::new(false) };
    static SHIPPED: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

/// Whether the server is a hot standby (in recovery).
pub fn in_recovery() -> bool {
    // SAFETY: reads shared memory the startup process maintains; callable in any backend.
    unsafe { pg_sys::RecoveryInProgress() }
}

/// Whether this request must not write: a standby, or the edge's read path.
pub fn serving_read_only() -> bool {
    REPLICA.with(Cell::get) || in_recovery()
}

/// The edge's read path begins (`true`) or ends (`false`) for this backend's request.
pub fn set_replica(on: bool) {
    REPLICA.with(|r| r.set(on));
    WRITE_REFUSED.with(|w| w.set(false));
    SHIPPED.with(|s| s.borrow_mut().clear());
}

pub fn replica() -> bool {
    REPLICA.with(Cell::get)
}

/// Whether an error is PostgreSQL refusing a write because this request serves read-only.
pub fn is_refused_write(sqlstate: &str, message: &str) -> bool {
    sqlstate == "25006" || message.contains("cannot assign TransactionIds during recovery")
}

/// Notes an error caught anywhere in the request: a refused write while serving read-only makes
/// the message's answer `Error::NeedsPrimary` (see [take_refused_write]).
pub fn note_error(sqlstate: &str, message: &str) {
    if is_refused_write(sqlstate, message) && serving_read_only() {
        WRITE_REFUSED.with(|w| w.set(true));
    }
}

/// Whether a write was refused since the last call (and forget it).
pub fn take_refused_write() -> bool {
    WRITE_REFUSED.with(|w| w.replace(false))
}

/// Keeps an audit row for the edge to write on the primary.
pub fn ship(row: Value) {
    SHIPPED.with(|s| s.borrow_mut().push(row));
}

/// The audit rows kept so far (and forget them).
pub fn take_shipped() -> Vec<Value> {
    SHIPPED.with(|s| std::mem::take(&mut *s.borrow_mut()))
}
