//! Notifications a capability raises while it runs (log messages, progress). They are queued per
//! backend for the current request and returned with its response, which the edge frames as SSE.

use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};
use std::cell::RefCell;

thread_local! {
    static QUEUE: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
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

/// Starts a request: clears the queue and remembers the request's progress token, if any.
pub fn begin(progress_token: Option<Value>) {
    QUEUE.with(|q| q.borrow_mut().clear());
    PROGRESS_TOKEN.with(|t| *t.borrow_mut() = progress_token);
}

pub fn take() -> Vec<Value> {
    PROGRESS_TOKEN.with(|t| *t.borrow_mut() = None);
    QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()))
}

fn push(event: Value) {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if q.len() < MAX_EVENTS {
            q.push(event);
        }
    });
}

/// Queue a `notifications/message` for the current request.
#[pg_extern]
fn log(level: &str, data: JsonB, logger: default!(Option<&str>, "NULL")) {
    if !valid_level(level) {
        error!("chumbo.log: level must be one of {}", LEVELS.join(", "));
    }
    let mut params = json!({"level": level, "data": data.0});
    if let Some(l) = logger {
        params["logger"] = json!(l);
    }
    push(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params}));
}

/// Queue a `notifications/progress` for the current request (dropped when the client sent no
/// progress token).
#[pg_extern]
fn progress(
    progress: f64,
    total: default!(Option<f64>, "NULL"),
    message: default!(Option<&str>, "NULL"),
) {
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
