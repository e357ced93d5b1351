//! W3C Trace Context in (https://www.w3.org/TR/trace-context/): the `traceparent` a client sends
//! as an HTTP header or in a message's `params._meta` (which wins for that message). A valid one
//! makes its trace id the request's trace id, the one its audit row, its server log line and a
//! failing call's message carry; a malformed one is ignored (never an error, never echoed), and
//! the request starts a trace of its own.

use serde_json::{Map, Value};

/// A valid `traceparent`'s parts, lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// 32 hex digits, not all zero.
    pub trace_id: String,
    /// The caller's span: 16 hex digits, not all zero.
    pub parent_id: String,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

fn lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Parses `traceparent` by the W3C rules: `version-traceid-parentid-flags` in lowercase hex;
/// version `ff` is invalid; version `00` has exactly these four fields; a later version may add
/// fields after a `-`, which are ignored; an all-zero trace id or parent id is invalid.
pub fn parse(value: &str) -> Option<TraceParent> {
    if value.len() < 55 || !value.is_ascii() {
        return None;
    }
    let (head, rest) = value.split_at(55);
    let version = &head[..2];
    if !lower_hex(version, 2) || version == "ff" {
        return None;
    }
    if version == "00" && !rest.is_empty() || !rest.is_empty() && !rest.starts_with('-') {
        return None;
    }
    let mut parts = head.split('-');
    let (Some(_), Some(trace_id), Some(parent_id), Some(flags), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let valid = lower_hex(trace_id, 32)
        && lower_hex(parent_id, 16)
        && lower_hex(flags, 2)
        && trace_id.bytes().any(|b| b != b'0')
        && parent_id.bytes().any(|b| b != b'0');
    valid.then(|| TraceParent {
        trace_id: trace_id.to_string(),
        parent_id: parent_id.to_string(),
        flags: u8::from_str_radix(flags, 16).unwrap_or(0),
    })
}

/// The trace parent of one message: its `params._meta.traceparent` when that is valid, else the
/// request's `traceparent` header when that is valid.
pub fn of_message(
    params: &Map<String, Value>,
    headers: Option<&Map<String, Value>>,
) -> Option<TraceParent> {
    let from_meta = params
        .get("_meta")
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
        .and_then(parse);
    from_meta.or_else(|| of_headers(headers?))
}

/// The request's `traceparent` header, when it is valid (a header sent twice arrives joined by a
/// comma, and is not).
pub fn of_headers(headers: &Map<String, Value>) -> Option<TraceParent> {
    headers
        .get("traceparent")
        .and_then(Value::as_str)
        .and_then(parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_gives_its_parts() {
        let t = parse(GOOD).expect("valid");
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.parent_id, "00f067aa0ba902b7");
        assert_eq!(t.flags, 1);
        // a later version may carry more fields after its fourth
        assert!(parse(&format!("01{}-extra", &GOOD[2..])).is_some());
    }

    #[test]
    fn malformed_ones_are_ignored() {
        let bad = [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // 00 has four fields
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01, 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902é-01",
        ];
        for b in bad {
            assert_eq!(parse(b), None, "{b}");
        }
    }

    #[test]
    fn the_message_wins_over_the_header() {
        let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
        let headers = json!({"traceparent": GOOD});
        let headers = headers.as_object();
        let with_meta = json!({"_meta": {"traceparent": other}});
        let t = of_message(with_meta.as_object().unwrap(), headers).unwrap();
        assert_eq!(t.trace_id, "0af7651916cd43dd8448eb211c80319c");
        // a malformed one in _meta does not hide a valid header
        let bad_meta = json!({"_meta": {"traceparent": "junk"}});
        let t = of_message(bad_meta.as_object().unwrap(), headers).unwrap();
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(of_message(&Map::new(), None), None);
    }
}
