//! JSON text that joins a response without becoming a `serde_json::Value` tree first: a page of
//! rows already written as text (src/result_json.rs) stands in the response as a placeholder
//! string, and the response's writers (`write`, `datum::jsonb_of`) put the text in its place.
//! Building, counting and dropping a Value per row cost more than the rest of chumbo's own work
//! on a 50-row call.
//!
//! A placeholder is a string that starts with U+0000, which no PostgreSQL text or jsonb value can
//! hold (and chumbo never writes), followed by a per-backend counter: it can only be one of these.
//! Held texts live until the next request begins (`clear`).

use serde_json::Value;
use std::cell::{Cell, RefCell};

thread_local! {
    static HELD: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
    static NEXT: Cell<u64> = const { Cell::new(0) };
}

/// A placeholder for `json` (valid JSON text, written by chumbo): put it where the value goes.
pub fn hold(json: String) -> Value {
    let n = NEXT.with(|c| {
        let n = c.get() + 1;
        c.set(n);
        n
    });
    let token = format!("\0chumbo:{n}");
    HELD.with(|h| h.borrow_mut().push((token.clone(), json)));
    Value::String(token)
}

/// Whether any text is held (a value may then contain placeholders).
pub fn held() -> bool {
    HELD.with(|h| !h.borrow().is_empty())
}

/// Forgets every held text (at the start of a request: nothing of an earlier one is pending).
pub fn clear() {
    HELD.with(|h| h.borrow_mut().clear());
}

/// The compact JSON text of `v`, with every placeholder replaced by its text.
pub fn write(v: &Value) -> String {
    let mut out = v.to_string();
    HELD.with(|h| {
        for (token, json) in h.borrow().iter() {
            // serde_json writes U+0000 as \u0000; the placeholder is a whole string value.
            let quoted = format!("\"\\u0000{}\"", &token[1..]);
            while let Some(at) = out.find(&quoted) {
                out.replace_range(at..at + quoted.len(), json);
            }
        }
    });
    out
}
