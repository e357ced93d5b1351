//! JSON text that joins a response without becoming a `serde_json::Value` tree first: a page of
//! rows already written as text (src/result_json/text_page.rs) stands in the response as a placeholder
//! string, and the response's writers (`write`, `datum::jsonb_of`) put the text in its place.
//! Building, counting and dropping a Value per row cost more than the rest of chumbo's own work
//! on a 50-row call.
//!
//! A placeholder is a string that starts with U+0000, which no PostgreSQL text or jsonb value can
//! hold, followed by a counter and a tag drawn once per backend from the strong random source: a
//! client's own JSON (which may hold U+0000, and may be echoed back) cannot name one. Held texts
//! live until the next request begins (`clear`).

use serde_json::Value;
use std::cell::{Cell, RefCell};

thread_local! {
    static HELD: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
    static NEXT: Cell<u64> = const { Cell::new(0) };
    static TAG: String = {
        let mut b = [0u8; 16];
        // SAFETY: writes 16 bytes into a buffer of 16.
        if !unsafe { pgrx::pg_sys::pg_strong_random(b.as_mut_ptr().cast(), b.len()) } {
            crate::error::raise(pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, "chumbo: no strong random bytes", None);
        }
        crate::identity::principal::hex(&b)
    };
}

/// How every placeholder starts.
const PREFIX: &str = "\0chumbo:";

/// A placeholder for `json` (valid JSON text, written by chumbo): put it where the value goes.
pub fn hold(json: String) -> Value {
    let n = NEXT.with(|c| {
        let n = c.get() + 1;
        c.set(n);
        n
    });
    let token = TAG.with(|t| format!("{PREFIX}{n}:{t}"));
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

/// The texts held now, found by their placeholder.
pub struct Held<'a>(&'a [(String, String)]);

impl<'a> Held<'a> {
    /// The text `s` stands for, when `s` (a whole string value) is a placeholder.
    pub fn text(&self, s: &str) -> Option<&'a str> {
        if !s.starts_with(PREFIX) {
            return None;
        }
        self.0
            .iter()
            .find(|(token, _)| token == s)
            .map(|(_, json)| json.as_str())
    }
}

/// Runs `f` with the texts held now.
pub fn with_held<R>(f: impl FnOnce(&Held) -> R) -> R {
    HELD.with(|h| f(&Held(&h.borrow())))
}

/// The compact JSON text of `v`, with every placeholder replaced by its text. One pass over
/// the written value: each held text is copied once, wherever its placeholder stands.
pub fn write(v: &Value) -> String {
    let written = v.to_string();
    HELD.with(|h| {
        let held = h.borrow();
        if held.is_empty() {
            return written;
        }
        // serde_json writes U+0000 as \u0000; a placeholder is always a whole string value.
        const START: &str = "\"\\u0000chumbo:";
        let extra: usize = held.iter().map(|(_, json)| json.len()).sum();
        let mut out = String::with_capacity(written.len() + extra);
        let mut rest = written.as_str();
        while let Some(at) = rest.find(START) {
            out.push_str(&rest[..at]);
            rest = &rest[at + START.len()..];
            // What follows the prefix in a token is ASCII, written as it is, then the quote.
            let found = held.iter().find_map(|(token, json)| {
                let tail = rest.strip_prefix(&token[PREFIX.len()..])?;
                Some((tail.strip_prefix('"')?, json))
            });
            match found {
                Some((after, json)) => {
                    out.push_str(json);
                    rest = after;
                }
                None => out.push_str(START),
            }
        }
        out.push_str(rest);
        out
    })
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::json;

    #[pgrx::pg_test]
    fn held_text_takes_the_placeholders_place() {
        clear();
        let rows = hold(r#"[{"a":1},{"a":"x\ny"}]"#.to_string());
        // a client's own string that looks like a placeholder without the tag stays a string
        let forged = Value::String("\0chumbo:1".into());
        let reply = json!({"result": {"structuredContent": {"rows": rows}, "echo": forged}});
        assert!(held());
        let text = write(&reply);
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            json!({"result": {"structuredContent": {"rows": [{"a": 1}, {"a": "x\ny"}]},
                              "echo": "\u{0}chumbo:1"}})
        );
        clear();
        assert!(!held());
    }

    #[pgrx::pg_test]
    fn every_placeholder_is_replaced_once_and_only_by_its_text() {
        clear();
        let a = hold("[1]".to_string());
        let b = hold("[2]".to_string());
        let Value::String(token) = &a else { panic!() };
        // a string that is a placeholder with one character of the tag changed, and one that
        // merely starts like one, stay strings; a held text is never searched for placeholders
        let mut wrong = token.clone();
        let last = wrong.pop().unwrap();
        wrong.push(if last == '0' { '1' } else { '0' });
        let inner = hold(format!("[{}]", Value::String(token.clone())));
        let reply = json!([a, b, a, wrong, format!("x{token}"), inner]);
        let back: Value = serde_json::from_str(&write(&reply)).unwrap();
        assert_eq!(
            back,
            json!([[1], [2], [1], wrong, format!("x{token}"), [token]])
        );
        clear();
    }
}
