//! W3C Trace Context in (https://www.w3.org/TR/trace-context/): the `traceparent` a client sends
//! as an HTTP header or in a message's `params._meta` (which wins for that message). A valid one
//! makes its trace id the request's trace id, the one its audit row, its server log line and a
//! failing call's message carry; a malformed one is ignored (never an error, never echoed), and
//! the request starts a trace of its own.
//!
//! And spans out: when the edge asks for them (it exports traces), the phases of a request are
//! timed here ([timed]) and handed back with the answer ([take_spans]); the database exports
//! nothing itself. When the edge does not ask, [timed] only runs its work. Each span costs the
//! edge far more than timing it costs here (its export: bench/RESULTS.md), so the phases come back
//! in a few groups ([group]), and only for a message whose trace is sampled (its parent's flags:
//! the edge's own sampling decision, or the client's `_meta.traceparent`); every message's facts
//! come back either way, for the edge's duration metric.

use serde::Serialize;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::time::Instant;

/// A valid `traceparent`'s parts, lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// 32 hex digits, not all zero.
    pub trace_id: String,
    /// The caller's span: 16 hex digits, not all zero.
    pub parent_id: String,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The `tracestate` sent with it (in the same place: the header with the header, `_meta` with
    /// `_meta`), when that is valid ([trace_state]); the edge puts it on the spans it exports.
    pub state: Option<String>,
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
        state: None,
    })
}

/// `tracestate` by the W3C rules (https://www.w3.org/TR/trace-context/#tracestate-header): at most
/// 32 comma-separated `key=value` members (empty ones, and spaces and tabs around a member, are
/// allowed), no key twice, at most 512 characters. A key is `[a-z][a-z0-9_*/-]{0,255}` or
/// `tenant@system` (`[a-z0-9][a-z0-9_*/-]{0,240}` @ `[a-z][a-z0-9_*/-]{0,13}`); a value is 1–256
/// printable ASCII characters other than `,` and `=`. Valid: its members joined by `,`. Anything
/// else is dropped as a whole, as the specification asks of a value that cannot be parsed.
pub fn trace_state(value: &str) -> Option<String> {
    fn rest_ok(b: u8) -> bool {
        b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'*' | b'/')
    }
    fn key_ok(key: &str) -> bool {
        let k = key.as_bytes();
        match key.split_once('@') {
            None => {
                k.len() <= 256
                    && k.first().is_some_and(u8::is_ascii_lowercase)
                    && k.iter().all(|&b| rest_ok(b))
            }
            Some((tenant, system)) => {
                let (t, y) = (tenant.as_bytes(), system.as_bytes());
                (1..=241).contains(&t.len())
                    && (t[0].is_ascii_lowercase() || t[0].is_ascii_digit())
                    && t.iter().all(|&b| rest_ok(b))
                    && (1..=14).contains(&y.len())
                    && y[0].is_ascii_lowercase()
                    && y.iter().all(|&b| rest_ok(b))
            }
        }
    }
    fn value_ok(value: &str) -> bool {
        let v = value.as_bytes();
        (1..=256).contains(&v.len())
            && v.iter()
                .all(|&b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
    }
    if value.len() > 512 {
        return None;
    }
    let mut members: Vec<&str> = vec![];
    for member in value.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        let (key, val) = member.split_once('=')?;
        let again = members
            .iter()
            .any(|m| m.split_once('=').is_some_and(|(k, _)| k == key));
        if !key_ok(key) || !value_ok(val) || again {
            return None;
        }
        members.push(member);
    }
    (!members.is_empty() && members.len() <= 32).then(|| members.join(","))
}

/// The trace parent of one message: its `params._meta.traceparent` when that is valid, else the
/// request's `traceparent` header when that is valid; each with the `tracestate` beside it.
pub fn of_message(
    params: &Map<String, Value>,
    headers: Option<&Map<String, Value>>,
) -> Option<TraceParent> {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .and_then(with_state)
        .or_else(|| of_headers(headers?))
}

/// The request's `traceparent` header, when it is valid (a header sent twice arrives joined by a
/// comma, and is not), with its `tracestate` header.
pub fn of_headers(headers: &Map<String, Value>) -> Option<TraceParent> {
    with_state(headers)
}

/// `traceparent` and `tracestate` of one place (the headers, or a message's `_meta`).
fn with_state(place: &Map<String, Value>) -> Option<TraceParent> {
    let mut parent = parse(place.get("traceparent")?.as_str()?)?;
    parent.state = place
        .get("tracestate")
        .and_then(Value::as_str)
        .and_then(trace_state);
    Some(parent)
}

/// One timed phase, in microseconds since the request began.
#[derive(Serialize)]
struct Span {
    name: &'static str,
    start_us: u64,
    end_us: u64,
}

/// What one JSON-RPC message was, for its MCP server span (no argument or result unless its
/// capability opted in to have them recorded).
pub struct MessageFacts<'a> {
    pub method: &'a str,
    pub target: Option<&'a str>,
    pub request_id: &'a Value,
    pub protocol_version: &'a str,
    pub trace_id: &'a str,
    pub parent_id: Option<&'a str>,
    /// The parent's trace flags (bit 0: sampled), with the parent.
    pub trace_flags: Option<u8>,
    /// The parent's valid `tracestate`, with the parent.
    pub trace_state: Option<&'a str>,
    /// The audit row's outcome class (`ok`, `tool_error`, `error -32602`, `internal`, …).
    pub outcome: &'a str,
    /// What the capability opted in to have recorded, as its audit row does (src/api/recorded.rs):
    /// a resource URI and a tool's arguments. Sent only for a sampled message, each cut to
    /// [RECORDED_TEXT_LIMIT].
    pub resource_uri: Option<&'a str>,
    pub tool_arguments: Option<&'a Value>,
}

/// The most bytes of a resource URI or of a tool's arguments (JSON text) a message's facts carry
/// to its span. Both are the client's own text, up to the edge's body limit (4 MiB): whole, a
/// span queue of 2,048 (OTEL_BSP_MAX_QUEUE_SIZE) could hold gigabytes while a collector is slow.
/// The audit row keeps them whole.
const RECORDED_TEXT_LIMIT: usize = 4096;

/// `text` cut to at most [RECORDED_TEXT_LIMIT] bytes, never inside a character.
fn recorded_text(mut text: String) -> String {
    text.truncate(text.floor_char_boundary(RECORDED_TEXT_LIMIT));
    text
}

/// A finished message as the edge takes it: its facts, its time, and its phases when its trace
/// is sampled. Typed, so that the reply is written once by serde (a `serde_json::Value` per
/// message cost ~50k instructions per traced request: bench/analysis.md, issue 30).
#[derive(Serialize)]
struct Message {
    method: String,
    target: Option<String>,
    request_id: Value,
    protocol_version: String,
    trace_id: String,
    parent_id: Option<String>,
    trace_flags: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_state: Option<String>,
    outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_uri: Option<String>,
    /// Its JSON text, cut as the URI is.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_arguments: Option<String>,
    start_us: u64,
    end_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    spans: Option<Vec<Span>>,
}

/// What [take_spans] writes.
#[derive(Serialize)]
struct Taken<'a> {
    total_us: u64,
    spans: &'a [Span],
    messages: &'a [Message],
}

struct Recording {
    began: Instant,
    /// Phases outside any message (authentication, the registry).
    spans: Vec<Span>,
    /// Finished messages.
    messages: Vec<Message>,
    /// The message in progress: when it began, its phases, and whether its trace is sampled.
    current: Option<(u64, Vec<Span>, bool)>,
    /// Whether the first message's trace is sampled (the request's phases go under its span).
    first_sampled: Option<bool>,
}

impl Recording {
    fn now_us(&self) -> u64 {
        self.began.elapsed().as_micros() as u64
    }
}

thread_local! {
    /// The trace id of the request in scope (call::scope sets and clears it): the one the client's
    /// error, the server log line and the audit row all carry. Kept here, below every layer that
    /// names it, so that the hard stop's FATAL (postgres::deadline) can name it too.
    static REQUEST_TRACE_ID: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Sets (or, None, clears) the trace id of the request in scope.
pub fn set_request_trace_id(trace_id: Option<String>) {
    REQUEST_TRACE_ID.with(|t| *t.borrow_mut() = trace_id);
}

/// The trace id of the request in scope, if one is.
pub fn request_trace_id() -> Option<String> {
    REQUEST_TRACE_ID.with(|t| t.try_borrow().ok().and_then(|t| t.clone()))
}

thread_local! {
    /// The spans of the request in progress, when its edge asked for them.
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// The span a phase is recorded in: the request's work before its first message is one span
/// (`authenticate`: the registry, the token, the caller, admission), and the checks before a tool
/// runs another (`policy`: policy, approval, idempotency); `execute`, `render` and `audit` are
/// their own. Consecutive phases of one group become one span.
fn group(phase: &'static str) -> &'static str {
    match phase {
        "registry" | "identify" | "admit" => "authenticate",
        "approval" | "idempotency" => "policy",
        other => other,
    }
}

/// Starts (or, `on` false, turns off) the recording of this request's spans; whatever an earlier
/// request left (one that ended in an ERROR) is dropped either way.
pub fn record_spans(on: bool) {
    RECORDING.with(|r| {
        *r.borrow_mut() = on.then(|| Recording {
            began: Instant::now(),
            spans: vec![],
            messages: vec![],
            current: None,
            first_sampled: None,
        })
    });
}

/// Runs `work`, timing it as the phase `name` when spans are recorded (of the message in
/// progress, if one is). A phase that ends in a PostgreSQL ERROR (unwinding through here) is
/// recorded too: a failing tool's execution is what an operator looks for.
pub fn timed<T>(name: &'static str, work: impl FnOnce() -> T) -> T {
    let start = RECORDING.with(|r| r.borrow().as_ref().map(Recording::now_us));
    let Some(start_us) = start else {
        return work();
    };
    let _phase = Phase { name, start_us };
    work()
}

/// A phase being timed; recorded when dropped, however its work ended.
struct Phase {
    name: &'static str,
    start_us: u64,
}

impl Drop for Phase {
    fn drop(&mut self) {
        // Never borrowed across `work`: this borrow cannot fail, even while unwinding.
        RECORDING.with(|r| {
            if let Some(rec) = r.borrow_mut().as_mut() {
                let end_us = rec.now_us();
                let spans = match rec.current.as_mut() {
                    Some((_, spans, true)) => spans,
                    Some((_, _, false)) => return, // not sampled: no phase of it is exported
                    None => &mut rec.spans,
                };
                let name = group(self.name);
                match spans.last_mut() {
                    Some(last) if last.name == name => last.end_us = end_us,
                    _ => spans.push(Span {
                        name,
                        start_us: self.start_us,
                        end_us,
                    }),
                }
            }
        });
    }
}

/// A JSON-RPC message begins: the phases timed from now on are its own, recorded only when its
/// trace is `sampled`.
pub fn message_begins(sampled: bool) {
    RECORDING.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            rec.first_sampled.get_or_insert(sampled);
            rec.current = Some((rec.now_us(), vec![], sampled));
        }
    });
}

/// The message in progress ended as `facts` say.
pub fn message_ends(facts: MessageFacts) {
    RECORDING.with(|r| {
        if let Some(rec) = r.borrow_mut().as_mut() {
            let (start_us, spans, sampled) =
                rec.current.take().unwrap_or((rec.now_us(), vec![], false));
            let end_us = rec.now_us();
            let message = Message {
                method: facts.method.to_owned(),
                target: facts.target.map(str::to_owned),
                request_id: facts.request_id.clone(),
                protocol_version: facts.protocol_version.to_owned(),
                trace_id: facts.trace_id.to_owned(),
                parent_id: facts.parent_id.map(str::to_owned),
                trace_flags: facts.trace_flags,
                trace_state: facts.trace_state.map(str::to_owned),
                outcome: facts.outcome.to_owned(),
                resource_uri: facts
                    .resource_uri
                    .filter(|_| sampled)
                    .map(|u| recorded_text(u.to_owned())),
                tool_arguments: facts
                    .tool_arguments
                    .filter(|_| sampled)
                    .map(|a| recorded_text(a.to_string())),
                start_us,
                end_us,
                spans: sampled.then_some(spans),
            };
            rec.messages.push(message);
        }
    });
}

/// The request's spans as the edge takes them (`None` when it did not ask), and the recording
/// ended.
pub fn take_spans() -> Option<String> {
    RECORDING.with(|r| r.borrow_mut().take()).map(|rec| {
        let request_spans = match rec.first_sampled {
            Some(false) => &[][..],
            _ => &rec.spans[..],
        };
        let taken = Taken {
            total_us: rec.now_us(),
            spans: request_spans,
            messages: &rec.messages,
        };
        serde_json::to_string(&taken).unwrap_or_default()
    })
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
    fn spans_are_recorded_only_when_asked() {
        record_spans(false);
        assert_eq!(timed("execute", || 7), 7);
        assert_eq!(take_spans(), None);
        record_spans(true);
        timed("registry", || ());
        timed("authenticate", || ());
        message_begins(true);
        timed("policy", || ());
        timed("idempotency", || ());
        timed("execute", || ());
        message_ends(MessageFacts {
            method: "tools/call",
            target: Some("greet"),
            request_id: &json!(1),
            protocol_version: "2025-11-25",
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
            parent_id: None,
            trace_flags: None,
            trace_state: None,
            outcome: "ok",
            resource_uri: None,
            tool_arguments: None,
        });
        let got: Value = serde_json::from_str(&take_spans().unwrap()).unwrap();
        // consecutive phases of one group are one span
        assert_eq!(got["spans"].as_array().unwrap().len(), 1);
        assert_eq!(got["spans"][0]["name"], "authenticate");
        assert_eq!(got["messages"][0]["target"], "greet");
        assert_eq!(got["messages"][0]["spans"][0]["name"], "policy");
        assert_eq!(got["messages"][0]["spans"][1]["name"], "execute");
        let m = &got["messages"][0];
        assert!(m["start_us"].as_u64() <= m["spans"][0]["start_us"].as_u64());
        assert!(m["spans"][1]["end_us"].as_u64() <= m["end_us"].as_u64());
        // taken once: the next request starts clean
        assert_eq!(take_spans(), None);

        // a message whose trace is not sampled: its facts, no phase of it nor of the request
        record_spans(true);
        timed("authenticate", || ());
        message_begins(false);
        timed("execute", || ());
        message_ends(MessageFacts {
            method: "tools/call",
            target: Some("greet"),
            request_id: &json!(2),
            protocol_version: "2025-11-25",
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
            parent_id: Some("00f067aa0ba902b7"),
            trace_flags: Some(0),
            trace_state: None,
            outcome: "ok",
            resource_uri: None,
            tool_arguments: None,
        });
        let got: Value = serde_json::from_str(&take_spans().unwrap()).unwrap();
        assert_eq!(got["spans"], json!([]));
        assert_eq!(got["messages"][0]["outcome"], "ok");
        assert_eq!(got["messages"][0].get("spans"), None);
    }

    #[test]
    fn recorded_text_is_cut_at_a_character_boundary() {
        assert_eq!(recorded_text("short".into()), "short");
        let exact = "x".repeat(RECORDED_TEXT_LIMIT);
        assert_eq!(recorded_text(exact.clone()), exact);
        // a three-byte character across the limit is left out whole
        let across = "x".repeat(RECORDED_TEXT_LIMIT - 1) + "€€";
        assert_eq!(recorded_text(across), "x".repeat(RECORDED_TEXT_LIMIT - 1));
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

    #[test]
    fn a_tracestate_comes_with_its_own_traceparent() {
        let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let headers = json!({"traceparent": GOOD, "tracestate": "edge=1"});
        let headers = headers.as_object();
        assert_eq!(
            of_message(&Map::new(), headers).unwrap().state.as_deref(),
            Some("edge=1")
        );
        // _meta's traceparent wins, and brings _meta's tracestate, never the header's
        let meta = json!({"_meta": {"traceparent": other, "tracestate": " rojo=00f067aa0ba902b7 ,, congo=t61rcWkgMzE"}});
        let t = of_message(meta.as_object().unwrap(), headers).unwrap();
        assert_eq!(
            t.state.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        let without = json!({"_meta": {"traceparent": other}});
        assert_eq!(
            of_message(without.as_object().unwrap(), headers)
                .unwrap()
                .state,
            None
        );
        // a tracestate without a valid traceparent beside it goes nowhere
        let lone = json!({"_meta": {"traceparent": "junk", "tracestate": "a=b"}});
        assert_eq!(of_message(lone.as_object().unwrap(), None), None);
    }

    #[test]
    fn tracestate_by_the_w3c_rules() {
        let good = [
            ("a=b", "a=b"),
            ("vendor@system=x y", "vendor@system=x y"),
            ("0tenant@sys=1", "0tenant@sys=1"),
            ("k_*/-9=~!\"#", "k_*/-9=~!\"#"),
            ("\ta=1 ,\tb=2", "a=1,b=2"),
        ];
        for (input, kept) in good {
            assert_eq!(trace_state(input).as_deref(), Some(kept), "{input}");
        }
        let many = (0..32)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(trace_state(&many).is_some());
        let bad = [
            String::new(),
            " , ".into(),
            "A=b".into(),                     // uppercase key
            "1a=b".into(),                    // a simple key starts with a letter
            "a=".into(),                      // empty value
            "a=b=c".into(),                   // '=' in the value
            "a=b ".into(),                    // nothing after it, but "a=b " trims; see next
            "a=b\u{7f}".into(),               // not printable
            "a=é".into(),                     // not ASCII
            "a=1,a=2".into(),                 // a key twice
            "a".into(),                       // no '='
            "t@=1".into(),                    // empty system
            "t@Sys=1".into(),                 // uppercase system
            format!("{many},k32=v"),          // 33 members
            format!("a={}", "v".repeat(257)), // value too long
            format!("{}=v", "k".repeat(257)), // key too long
            format!("a={},b=1", "v".repeat(250)) + &",c=".repeat(1) + &"w".repeat(256), // over 512
        ];
        for b in &bad[..6] {
            assert_eq!(trace_state(b), None, "{b:?}");
        }
        // a member's trailing space is OWS around the list's comma, not part of the value
        assert_eq!(trace_state(&bad[6]).as_deref(), Some("a=b"));
        for b in &bad[7..] {
            assert_eq!(trace_state(b), None, "{b:?}");
        }
    }
}
