//! Multi round-trip requests (MCP 2026-07-28): a capability asks the client for input with
//! `chumbo.input(key, request)`. Within a request, the function either returns the client's
//! answer (from this retry's `inputResponses` or an earlier round carried in `requestState`) or
//! records what is missing and aborts the capability, which then answers `input_required`.
//!
//! `requestState` is a signed token (src/tokens.rs, its key derived from chumbo.keys
//! 'request_state', rotatable). The payload binds the principal, method, capability and a digest
//! of the arguments, expires, and carries a nonce that is consumed once.

use crate::error::Error;
use crate::tokens::{self, Kind, Refused};
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Map, Value};
use std::cell::RefCell;

/// How long an issued requestState stays valid.
const STATE_TTL_SECONDS: i64 = 600;
/// Bound on what a requestState may carry, so a client cannot make us sign unbounded data.
const MAX_STATE_BYTES: usize = 64 * 1024;

#[derive(Default)]
struct Round {
    /// Whether this request may ask for input at all (the stateless era).
    can_ask: bool,
    client_capabilities: Value,
    responses: Map<String, Value>,
    /// Input requests the capability made that have no response yet.
    missing: Map<String, Value>,
    /// Capabilities the capability needed that the client did not declare.
    undeclared: Map<String, Value>,
    /// Why input cannot be asked for on this wire (legacy era).
    blocked: Option<String>,
    /// The call may become a task where the capability calls `chumbo.continue_as_task()`.
    may_continue_as_task: bool,
    /// It did.
    continued_as_task: bool,
    /// The JSON-RPC error the capability ended its call with (`chumbo.jsonrpc_error`).
    application_error: Option<(i64, String)>,
}

thread_local! {
    static ROUND: RefCell<Option<Round>> = const { RefCell::new(None) };
}

pub fn begin(can_ask: bool, client_capabilities: Value, responses: Map<String, Value>) {
    ROUND.with(|r| {
        *r.borrow_mut() = Some(Round {
            can_ask,
            client_capabilities,
            responses,
            ..Default::default()
        })
    });
}

/// Lets the open round's capability become a task (`chumbo.continue_as_task()`).
pub fn allow_continue_as_task() {
    ROUND.with(|r| {
        if let Some(round) = r.borrow_mut().as_mut() {
            round.may_continue_as_task = true;
        }
    });
}

/// What the capability asked for and did not get, after it ran.
pub struct Outcome {
    pub missing: Map<String, Value>,
    pub undeclared: Map<String, Value>,
    pub responses: Map<String, Value>,
    pub blocked: Option<String>,
    pub continued_as_task: bool,
    pub application_error: Option<(i64, String)>,
}

/// Ends the round (the request scope also ends any round left open when a call unwinds).
pub fn clear() {
    ROUND.with(|r| *r.borrow_mut() = None);
}

/// Whether a round is open.
#[cfg(any(test, feature = "pg_test"))]
pub fn in_round() -> bool {
    ROUND.with(|r| r.borrow().is_some())
}

pub fn finish() -> Option<Outcome> {
    ROUND.with(|r| r.borrow_mut().take()).map(|r| Outcome {
        missing: r.missing,
        undeclared: r.undeclared,
        responses: r.responses,
        blocked: r.blocked,
        continued_as_task: r.continued_as_task,
        application_error: r.application_error,
    })
}

fn capability_for(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// Raised (as an ERROR the subtransaction rolls back) when a capability cannot go on without input.
fn stop(message: String) -> ! {
    ereport!(
        PgLogLevel::ERROR,
        PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        message
    );
    unreachable!()
}

/// Asks the client for input: `request` is `{"method": "elicitation/create" |
/// "sampling/createMessage" | "roots/list", "params": {…}}`. Returns the client's response once
/// it has been given; otherwise the capability ends and the client is asked.
#[pg_extern(name = "input")]
fn input(key: &str, request: JsonB) -> JsonB {
    let mut requests = Map::new();
    requests.insert(key.to_string(), request.0);
    let mut answers = ask(requests);
    JsonB(answers.remove(key).unwrap_or_default())
}

/// Like `chumbo.input` for several requests at once (`{"key": request, …}`): all of them are
/// asked in one round; returns `{"key": response, …}` once every one is answered.
#[pg_extern(name = "inputs")]
fn inputs(requests: JsonB) -> JsonB {
    let Value::Object(requests) = requests.0 else {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "chumbo.inputs expects an object of input requests",
            None,
        );
    };
    JsonB(Value::Object(ask(requests)))
}

fn ask(requests: Map<String, Value>) -> Map<String, Value> {
    let outcome = ROUND.with(|r| {
        let mut r = r.borrow_mut();
        let Some(round) = r.as_mut() else {
            return Err("chumbo.input: no MCP request is in progress".to_string());
        };
        let mut answers = Map::new();
        for (key, request) in requests {
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let Some(capability) = capability_for(method) else {
                return Err("chumbo.input: method must be elicitation/create, sampling/createMessage or roots/list".to_string());
            };
            if let Some(v) = round.responses.get(&key) {
                answers.insert(key, v.clone());
                continue;
            }
            if !round.can_ask {
                let m = "This needs input from you (a form, a model completion or your roots), which chumbo can only ask for over MCP 2026-07-28; this client uses an older revision, where a stateless server cannot ask.".to_string();
                round.blocked = Some(m.clone());
                return Err(m);
            }
            if round.client_capabilities.get(capability).is_none() {
                round.undeclared.insert(capability.to_string(), json!({}));
            } else {
                round.missing.insert(key, request);
            }
        }
        if round.undeclared.is_empty() && round.missing.is_empty() {
            Ok(answers)
        } else {
            Err("input required".to_string())
        }
    });
    outcome.unwrap_or_else(|m| stop(m))
}

/// Where a tool that may run as a task (`@mcp {"task": …, "task_starts_in_request": true}`)
/// becomes one: in the request, the run ends here (its writes rolled back) and the call is
/// answered with a task that runs it again from the start, with the input given so far; in that
/// task's run, and wherever the call cannot become a task, it returns at once.
#[pg_extern]
fn continue_as_task() {
    let stop_here = ROUND.with(|r| {
        let mut r = r.borrow_mut();
        match r.as_mut() {
            Some(round) if round.may_continue_as_task => {
                round.continued_as_task = true;
                true
            }
            _ => false,
        }
    });
    if stop_here {
        stop("continued as a task".into());
    }
}

/// Ends the call with the JSON-RPC error `code`/`message` instead of a result (a task then ends
/// `failed` with it). `code` is -32603, -32602, one of -32099..-32050, or outside JSON-RPC's
/// reserved range: never a code with a protocol meaning.
#[pg_extern]
fn jsonrpc_error(code: i32, message: &str) {
    let code = i64::from(code);
    if !crate::error::application_code(code) {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("chumbo.jsonrpc_error: code {code} is reserved; use -32603, -32602, -32099..-32050, or a code outside -32768..-32000"),
            None,
        );
    }
    let message: String = message.chars().take(1000).collect();
    let open = ROUND.with(|r| match r.borrow_mut().as_mut() {
        Some(round) => {
            round.application_error = Some((code, message.clone()));
            true
        }
        None => false,
    });
    if !open {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo.jsonrpc_error: no MCP request is in progress",
            None,
        );
    }
    stop(message);
}

/// The capabilities the client declared on this request (`{}` in the legacy era).
#[pg_extern]
fn client_capabilities() -> JsonB {
    JsonB(
        ROUND
            .with(|r| r.borrow().as_ref().map(|r| r.client_capabilities.clone()))
            .unwrap_or(json!({})),
    )
}

/// What a requestState binds.
pub struct Binding<'a> {
    pub principal: &'a str,
    pub method: &'a str,
    pub capability: &'a str,
    /// tokens::arguments_digest of the call's arguments (a resource's URI).
    pub arguments_digest: &'a str,
}

pub fn issue(key: &[u8], b: &Binding, responses: &Map<String, Value>) -> String {
    let payload = json!({
        "p": b.principal, "m": b.method, "c": b.capability,
        "a": b.arguments_digest,
        "x": tokens::expiry(STATE_TTL_SECONDS), "n": crate::identity::session::random_id(), "r": responses,
    });
    tokens::sign(key, Kind::RequestState, &payload)
}

/// The responses of earlier rounds carried by a valid `state`, after consuming its nonce.
pub fn verify(key: &[u8], state: &str, b: &Binding) -> Result<Map<String, Value>, Error> {
    let invalid = |why: &str| Error::InvalidParams(format!("requestState {why}"));
    if state.len() > MAX_STATE_BYTES * 2 {
        return Err(invalid("is too large"));
    }
    let p = tokens::open(key, Kind::RequestState, state, MAX_STATE_BYTES * 2).map_err(|r| {
        invalid(match r {
            Refused::Malformed => "is malformed",
            Refused::Forged => "failed its integrity check",
        })
    })?;
    if tokens::expired(&p) {
        return Err(invalid("has expired"));
    }
    if p["p"] != b.principal
        || p["m"] != b.method
        || p["c"] != b.capability
        || p["a"] != b.arguments_digest
    {
        return Err(invalid(
            "belongs to another caller, method, capability or arguments",
        ));
    }
    let nonce = p["n"].as_str().unwrap_or("").to_string();
    let fresh = crate::identity::session::bookkeeping(|| {
        crate::identity::session::as_owner(|| {
            // A write (the nonce is recorded as used), meant to take a transaction id.
            #[allow(clippy::disallowed_methods)]
            Spi::get_one_with_args::<bool>(
                "select chumbo._redeem_request_state($1)",
                &[nonce.as_str().into()],
            )
        })
    });
    if !matches!(fresh, Ok(Some(true))) {
        return Err(invalid("was already used"));
    }
    Ok(p["r"].as_object().cloned().unwrap_or_default())
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use base64::Engine;

    const KEY: &[u8] = b"request-state-test-key";
    const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn pin(at: &str) {
        Spi::run(&format!("set local chumbo.pinned_now = '{at}'")).expect("pin the clock");
    }

    fn as_issued(s: String) -> String {
        s
    }
    fn flip_payload(s: String) -> String {
        let (p, t) = s.split_once('.').expect("two parts");
        let mut bytes = B64.decode(p).expect("base64");
        let at = bytes.len() / 2;
        bytes[at] ^= 1;
        format!("{}.{t}", B64.encode(bytes))
    }
    fn flip_tag(s: String) -> String {
        let (p, t) = s.split_once('.').expect("two parts");
        let mut bytes = B64.decode(t).expect("base64");
        bytes[0] ^= 1;
        format!("{p}.{}", B64.encode(bytes))
    }
    fn no_dot(_: String) -> String {
        "no-dot-here".into()
    }
    fn huge(_: String) -> String {
        "x".repeat(MAX_STATE_BYTES * 2 + 1)
    }

    struct Case {
        name: &'static str,
        change: fn(String) -> String,
        key: &'static [u8],
        principal: &'static str,
        method: &'static str,
        capability: &'static str,
        amount: i64,
        /// Verify 601 s after issuing (the lifetime is 600 s).
        late: bool,
        /// Fragment of the refusal; "" = accepted.
        want: &'static str,
    }

    /// A requestState issued for alice / tools/call / transfer / {amount: 5}, coming back changed
    /// in one way each.
    #[pgrx::pg_test]
    fn request_state_is_bound_signed_expiring_and_single_use() {
        let ok = Case {
            name: "as issued",
            change: as_issued,
            key: KEY,
            principal: "alice",
            method: "tools/call",
            capability: "transfer",
            amount: 5,
            late: false,
            want: "",
        };
        let cases = [
            Case {
                name: "used twice",
                want: "was already used",
                ..ok
            },
            Case {
                name: "payload tampered",
                change: flip_payload,
                want: "failed its integrity check",
                ..ok
            },
            Case {
                name: "tag tampered",
                change: flip_tag,
                want: "failed its integrity check",
                ..ok
            },
            Case {
                name: "malformed",
                change: no_dot,
                want: "is malformed",
                ..ok
            },
            Case {
                name: "too large",
                change: huge,
                want: "is too large",
                ..ok
            },
            Case {
                name: "another key",
                key: b"rotated",
                want: "failed its integrity check",
                ..ok
            },
            Case {
                name: "another principal",
                principal: "mallory",
                want: "belongs to another caller",
                ..ok
            },
            Case {
                name: "another method",
                method: "prompts/get",
                want: "belongs to another caller",
                ..ok
            },
            Case {
                name: "another tool",
                capability: "delete_all",
                want: "belongs to another caller",
                ..ok
            },
            Case {
                name: "other arguments",
                amount: 500,
                want: "belongs to another caller",
                ..ok
            },
            Case {
                name: "expired",
                late: true,
                want: "has expired",
                ..ok
            },
        ];
        let mut answers = Map::new();
        answers.insert("confirm".into(), json!({"action": "accept"}));
        let digest = tokens::arguments_digest(&json!({"amount": 5}));
        let issued_for_alice = || {
            let b = Binding {
                principal: "alice",
                method: "tools/call",
                capability: "transfer",
                arguments_digest: &digest,
            };
            issue(KEY, &b, &answers)
        };
        let mut used = None;
        for case in std::iter::once(&ok).chain(cases.iter()) {
            pin("2026-01-01 00:00:00+00");
            let issued = match case.name {
                "used twice" => used.take().expect("the first case was accepted"),
                _ => issued_for_alice(),
            };
            if case.late {
                pin("2026-01-01 00:10:01+00");
            }
            let arguments_digest = tokens::arguments_digest(&json!({"amount": case.amount}));
            let b = Binding {
                principal: case.principal,
                method: case.method,
                capability: case.capability,
                arguments_digest: &arguments_digest,
            };
            let got = verify(case.key, &(case.change)(issued.clone()), &b);
            match (case.want, got) {
                ("", Ok(r)) => {
                    assert_eq!(r, answers, "{}", case.name);
                    used = Some(issued);
                }
                ("", Err(e)) => panic!("{}: refused: {e}", case.name),
                (w, Ok(_)) => panic!("{}: accepted, expected \"{w}\"", case.name),
                (w, Err(e)) => {
                    assert_eq!(e.code(), crate::error::INVALID_PARAMS, "{}", case.name);
                    assert!(e.to_string().contains(w), "{}: {e}", case.name);
                }
            }
        }
    }
}
