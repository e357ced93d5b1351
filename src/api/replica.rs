//! The edge's read path on a replicated database (docs/scaling.md): bookkeeping on the primary,
//! the read on a hot standby.
//!
//! 1. On the primary, in a transaction the edge keeps open: `chumbo.http_admit(request, body)`
//!    runs the pipeline up to and including admission (authentication, the role check, the
//!    in-flight slot, the request rate limit) and stops there. Refused: its answer (401, 429, ...,
//!    audited on the primary). Admitted: an admission ticket, signed with the server's token key,
//!    bound to the principal and the body, valid for a short time.
//! 2. On the standby: `chumbo.http_replica(request, body, ticket)` serves the request read-only
//!    (even on a server that is not in recovery), skipping the admission the ticket vouches for.
//!    Anything that must write answers `Error::NeedsPrimary` (421, `chumbo-route: needs-primary`);
//!    the audit rows come back in the `audit` column instead of being written.
//! 3. On the primary, same transaction: `chumbo.http_audit(ticket, rows)` writes them, then COMMIT
//!    releases the in-flight slot. So limits count exactly once, on one server, before the read,
//!    and the audit row commits with the admission (or neither does, and the edge retries).
//!
//! A standby reached through the plain entry points (`http_parts`, `http`, `mcp`, `handle`) when
//! audit or a request rate limit is on answers `NeedsPrimary` at once: it cannot write their books.

use super::*;
use crate::postgres::standby;
use crate::tokens::{self, Kind};
use std::cell::RefCell;

/// How the current request's admission step runs.
#[derive(Clone)]
enum Mode {
    Full,
    AdmitOnly,
    Admitted(String),
}

thread_local! {
    static MODE: RefCell<Mode> = const { RefCell::new(Mode::Full) };
}

/// The header of an admission ticket in `http_admit`'s answer (never sent to a client).
const TICKET_HEADER: &str = "chumbo-admission";
/// How long a ticket stays valid: long enough for the read it admits to start (the edge sends it
/// at once). A standby cannot record that a ticket was used, so within this time the edge's login
/// could replay the same request of the same caller unadmitted: kept short.
const TICKET_TTL_S: i64 = 15;
const TICKET_MAX_LEN: usize = 1024;

fn body_digest(request: &Value) -> String {
    tokens::arguments_digest(&request.get("body").cloned().unwrap_or(Value::Null))
}

/// The pipeline's admission step as the request's mode wants it: the full step (`admit`), the
/// full step then a ticket (http_admit), or the ticket's word for it (http_replica).
pub(super) fn admission(
    registry: &Registry,
    request: &Value,
    caller: &Caller,
    req_id: &Value,
    messages: usize,
    full: impl FnOnce() -> Result<(), Answer>,
) -> Result<(), Answer> {
    let mode = MODE.with(|m| m.borrow().clone());
    match mode {
        Mode::Full => full(),
        Mode::AdmitOnly => {
            full()?;
            let payload = json!({
                "p": caller.principal.digest(),
                "b": body_digest(request),
                "n": messages,
                "x": tokens::expiry(TICKET_TTL_S),
            });
            let mut a = answer(200, None);
            a.headers.insert(
                TICKET_HEADER.into(),
                json!(tokens::sign(
                    registry.token_secret(),
                    Kind::Admission,
                    &payload
                )),
            );
            Err(a)
        }
        Mode::Admitted(ticket) => {
            let valid = tokens::open(
                registry.token_secret(),
                Kind::Admission,
                &ticket,
                TICKET_MAX_LEN,
            )
            .ok()
            .filter(|p| !tokens::expired(p))
            .filter(|p| p["p"] == json!(caller.principal.digest()))
            .filter(|p| p["b"] == json!(body_digest(request)));
            match valid {
                Some(_) => Ok(()),
                None => Err(refusal(req_id, Error::NeedsPrimary, false)),
            }
        }
    }
}

/// Before anything else: a standby reached through a plain entry point cannot write the books
/// that audit or a request rate limit need.
pub(super) fn standby_gate(settings: &crate::settings::Settings) -> Result<(), Answer> {
    if !standby::replica()
        && (settings.audit || settings.request_limit().is_some())
        && standby::in_recovery()
    {
        return Err(refusal(&Value::Null, Error::NeedsPrimary, false));
    }
    Ok(())
}

/// A method whose write was refused because this request serves read-only needs the primary,
/// whatever else it was about to answer (a tool's isError, an internal error).
pub(super) fn needs_primary_if_refused(
    outcome: Result<protocol::MethodResult, session::CaughtSqlError>,
) -> Result<protocol::MethodResult, session::CaughtSqlError> {
    let refused = standby::take_refused_write()
        || matches!(&outcome, Err(e) if standby::serving_read_only()
            && standby::is_refused_write(&e.sqlstate, &e.message));
    if refused {
        Ok(Err(Error::NeedsPrimary))
    } else {
        outcome
    }
}

/// An answer that holds a NeedsPrimary error (one message, or any of a batch) is 421 with the
/// `chumbo-route` header the edge routes on; the JSON-RPC error stays in the body for anyone else.
pub(super) fn mark_needs_primary(a: &mut Answer) {
    let is =
        |v: &Value| v.pointer("/error/code").and_then(Value::as_i64) == Some(error::NEEDS_PRIMARY);
    let needs = match &a.body {
        Some(Value::Array(items)) => items.iter().any(is),
        Some(v) => is(v),
        None => false,
    };
    if needs {
        a.status = 421;
        a.headers
            .insert("chumbo-route".into(), json!(error::NEEDS_PRIMARY_MARKER));
        a.events.clear();
        a.listen = None;
    }
}

type Parts = (
    i32,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn with_mode<R>(mode: Mode, replica: bool, f: impl FnOnce() -> R) -> R {
    MODE.with(|m| *m.borrow_mut() = mode);
    standby::set_replica(replica);
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            MODE.with(|m| *m.borrow_mut() = Mode::Full);
            standby::set_replica(false);
        }
    }
    let _reset = Reset;
    f()
}

/// `chumbo.http_admit(request, request_body)`: on the primary, the admission of a request the
/// edge will serve on a standby. `ticket` is set when it was admitted; otherwise the other
/// columns are the answer to send (a refusal, or a notification's 202).
#[pg_extern(name = "http_admit")]
#[allow(clippy::type_complexity)]
fn http_admit(
    request: Option<&str>,
    request_body: Option<String>,
) -> TableIterator<
    'static,
    (
        name!(status, i32),
        name!(headers, String),
        name!(body, Option<String>),
        name!(ticket, Option<String>),
    ),
> {
    let (status, headers, body, ..) = serve(true, || {
        with_mode(Mode::AdmitOnly, false, || {
            http_parts_request(request, request_body)
        })
    });
    let mut h: Map<String, Value> = serde_json::from_str(&headers).unwrap_or_default();
    let ticket = h
        .remove(TICKET_HEADER)
        .and_then(|t| t.as_str().map(String::from));
    TableIterator::once((status, Value::Object(h).to_string(), body, ticket))
}

/// `chumbo.http_replica(request, request_body, ticket)`: chumbo.http_parts, read-only, for a
/// request `ticket` admitted on the primary; `audit` holds its audit rows (JSON array) for
/// `chumbo.http_audit`.
#[pg_extern(name = "http_replica")]
#[allow(clippy::type_complexity)]
fn http_replica(
    request: Option<&str>,
    request_body: Option<String>,
    ticket: Option<String>,
) -> TableIterator<
    'static,
    (
        name!(status, i32),
        name!(headers, String),
        name!(body, Option<String>),
        name!(events, Option<String>),
        name!(listen, Option<String>),
        name!(spans, Option<String>),
        name!(audit, Option<String>),
    ),
> {
    let (parts, audit) = serve(true, || {
        let mode = Mode::Admitted(ticket.unwrap_or_default());
        with_mode(mode, true, || {
            // Read-only on any server: a write is refused (25006) and answered NeedsPrimary.
            // (XactReadOnly is transaction_read_only; turning it on is always allowed, the next
            // transaction starts from default_transaction_read_only again. No SPI: pgrx's
            // non-read-only SPI would assign a transaction id, which a standby cannot.)
            // SAFETY: a backend-global flag, read at every write's check.
            unsafe { pg_sys::XactReadOnly = true };
            let parts: Parts = http_parts_request(request, request_body);
            let rows = standby::take_shipped();
            (
                parts,
                (!rows.is_empty()).then(|| Value::Array(rows).to_string()),
            )
        })
    });
    let (status, headers, body, events, listen, spans) = parts;
    TableIterator::once((status, headers, body, events, listen, spans, audit))
}

/// `chumbo.http_audit(ticket, rows)`: on the primary, in the transaction that admitted the
/// request, the audit rows its read produced. Each row must be the ticket's principal's (or of a
/// request refused before it was identified), and no more rows than the request can produce.
#[pg_extern(name = "http_audit")]
fn http_audit(ticket: Option<&str>, rows: Option<&str>) -> i32 {
    refuse_nested_call();
    let registry = registry::current();
    let refuse = |m: &str| -> ! {
        crate::error::raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, m, None)
    };
    let payload = ticket
        .and_then(|t| {
            tokens::open(registry.token_secret(), Kind::Admission, t, TICKET_MAX_LEN).ok()
        })
        .filter(|p| !tokens::expired(p))
        .unwrap_or_else(|| refuse("chumbo.http_audit: the admission ticket is not valid"));
    let rows: Vec<Value> = match rows.map(serde_json::from_str::<Value>) {
        None => vec![],
        Some(Ok(Value::Array(r))) => r,
        Some(_) => refuse("chumbo.http_audit: rows must be a JSON array"),
    };
    let most = payload["n"].as_u64().unwrap_or(1).saturating_mul(4) + 4;
    if rows.len() as u64 > most {
        refuse("chumbo.http_audit: more rows than the admitted request can produce");
    }
    let principal = payload["p"].as_str().unwrap_or_default();
    for row in &rows {
        let p = row["principal"].as_str().unwrap_or_default();
        if p != principal {
            refuse("chumbo.http_audit: a row of another principal");
        }
    }
    for row in &rows {
        let text = |k: &str| row.get(k).and_then(Value::as_str);
        ledger::audit(
            false,
            ledger::Event {
                trace_id: text("trace_id").unwrap_or_default(),
                era: text("era").unwrap_or_default(),
                method: text("method"),
                capability: text("capability"),
                principal,
                outcome: text("outcome").unwrap_or_default(),
                duration_ms: row["duration_ms"].as_f64().unwrap_or(0.0),
                bytes: row["bytes"].as_u64().unwrap_or(0) as usize,
                detail: row.get("detail").filter(|d| !d.is_null()).cloned(),
                run_id: text("run_id"),
            },
        );
    }
    session::forget_session_state();
    rows.len() as i32
}
