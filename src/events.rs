//! Notifications a capability raises while it runs (log messages, progress). They are queued per
//! backend for the current request and returned with its response, which the edge frames as SSE.

use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};
use std::cell::RefCell;

#[derive(Default)]
struct Queue {
    events: Vec<Value>,
    /// Serialized size of `events`.
    bytes: usize,
    /// What the events of this request may add up to (shared with the result).
    budget: usize,
    dropped: usize,
}

thread_local! {
    static QUEUE: RefCell<Queue> = RefCell::new(Queue::default());
    static PROGRESS_TOKEN: RefCell<Option<Value>> = const { RefCell::new(None) };
}

/// Log levels, least severe first.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
/// A runaway loop must not grow a response without bound.
const MAX_EVENTS: usize = 1000;

pub fn valid_level(level: &str) -> bool {
    LEVELS.contains(&level)
}

/// Starts a request: clears the queue, remembers the request's progress token, if any, and
/// how many bytes its events may take (they count against the result's byte bound).
pub fn begin(progress_token: Option<Value>, budget: usize) {
    QUEUE.with(|q| {
        *q.borrow_mut() = Queue {
            budget,
            ..Queue::default()
        }
    });
    PROGRESS_TOKEN.with(|t| *t.borrow_mut() = progress_token);
}

/// Whether nothing of a request is queued: no events, no progress token.
#[cfg(any(test, feature = "pg_test"))]
pub fn is_empty() -> bool {
    QUEUE.with(|q| q.borrow().events.is_empty() && q.borrow().dropped == 0)
        && PROGRESS_TOKEN.with(|t| t.borrow().is_none())
}

/// Bytes the queued events take.
pub fn bytes() -> usize {
    QUEUE.with(|q| q.borrow().bytes)
}

/// The request's events; past the budget, a last warning says how many were dropped.
pub fn take() -> Vec<Value> {
    PROGRESS_TOKEN.with(|t| *t.borrow_mut() = None);
    let q = QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
    let mut events = q.events;
    if q.dropped > 0 {
        events.push(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {
            "level": "warning", "logger": "chumbo",
            "data": format!("chumbo: {} notifications of this request were dropped (over the size limit)", q.dropped)}}));
    }
    events
}

fn push(event: Value) {
    let size = event.to_string().len();
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.events.len() < MAX_EVENTS && q.bytes + size <= q.budget {
            q.events.push(event);
            q.bytes += size;
        } else {
            q.dropped += 1;
        }
    });
}

/// Queue a `notifications/message` for the current request.
#[pg_extern]
fn log(level: Option<&str>, data: Option<JsonB>, logger: default!(Option<&str>, "NULL")) {
    let level = level.unwrap_or_default();
    if !valid_level(level) {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("chumbo.log: level must be one of {}", LEVELS.join(", ")),
            None,
        );
    }
    // SQL NULL is JSON null: data may be any JSON value.
    let data = data.map_or(Value::Null, |d| d.0);
    let mut params = json!({"level": level, "data": data});
    if let Some(l) = logger {
        params["logger"] = json!(l);
    }
    push(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params}));
}

/// Queue a `notifications/progress` for the current request (dropped when the client sent no
/// progress token).
#[pg_extern]
fn progress(
    progress: Option<f64>,
    total: default!(Option<f64>, "NULL"),
    message: default!(Option<&str>, "NULL"),
) {
    // JSON has no NaN or infinity (they would be sent as null, which no client reads as progress).
    let progress = crate::error::required(progress, "progress", "progress");
    if !progress.is_finite() || total.is_some_and(|t| !t.is_finite()) {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "chumbo.progress: progress and total must be finite numbers",
            None,
        );
    }
    let Some(token) = PROGRESS_TOKEN.with(|t| t.borrow().clone()) else {
        return;
    };
    let mut params = json!({"progressToken": token, "progress": progress});
    if let Some(t) = total {
        params["total"] = json!(t);
    }
    if let Some(m) = message {
        params["message"] = json!(m);
    }
    push(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}));
}
