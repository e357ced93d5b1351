//! The SQL entry points: `chumbo.handle`, `chumbo.http`, `chumbo.mcp`. None of them raises for a
//! protocol-level problem; each answers in JSON-RPC shape.

use crate::bookkeeping::ledger;
use crate::call::scope::RequestScope;
use crate::catalog::registry::{self, Caller, Registry};
use crate::datum::{JsonValue, JsonbArg, JsonbText};
use crate::error::{self, Error};
use crate::identity::apikey;
use crate::identity::auth;
use crate::identity::principal::{self, Principal};
use crate::identity::session;
use crate::identity::spliced;
use crate::jsonrpc::{self, Message};
use crate::protocol::versions::{Era, Revision};
use crate::protocol::{self, Context};
use crate::protocol::{stateless, subscriptions};
use crate::settings::AuthMode;
use pgrx::pg_sys;
use pgrx::prelude::*;
use serde_json::{json, Map, Value};
use std::cell::RefCell;

pub mod doctor;
mod pipeline;
mod recorded;
mod replica;
pub mod tasks;
use pipeline::*;

/// One message's response, and its error code if it is an error. It stays a value up to the
/// jsonb that is returned (src/datum.rs): it is never serialized to text on the way.
pub struct Reply {
    pub value: Value,
    pub error_code: Option<i64>,
    /// The value's JSON text, when it was written already (the audit counts a reply's bytes):
    /// an entry point that answers with text sends it as it is instead of writing it again.
    pub text: Option<String>,
}

impl Reply {
    /// `as_text`: the reply leaves as JSON text; text held outside the value
    /// (src/identity/spliced.rs) is then written into the reply's text now. Otherwise (jsonb out)
    /// the held texts join the jsonb where their placeholders stand (datum::jsonb_of).
    fn of(response: Value, as_text: bool) -> Reply {
        let error_code = response.pointer("/error/code").and_then(Value::as_i64);
        Reply {
            text: (as_text && spliced::held()).then(|| spliced::write(&response)),
            value: response,
            error_code,
        }
    }
}

/// The answer to one HTTP-shaped or SQL-shaped request before framing.
pub struct Answer {
    pub status: u16,
    pub headers: Map<String, Value>,
    pub body: Option<Value>,
    /// `body`'s JSON text when it was written already (see Reply::text).
    pub body_text: Option<String>,
    pub events: Vec<Value>,
    /// For subscriptions/listen: the stream the edge must hold open.
    pub listen: Option<Box<Value>>, // boxed: a rare answer, kept out of every Result<_, Answer>
}

fn answer(status: u16, body: Option<Value>) -> Answer {
    Answer {
        status,
        headers: Map::new(),
        body,
        body_text: None,
        events: vec![],
        listen: None,
    }
}

/// The answer whose body is `reply`, with its text when it has one.
fn answer_reply(status: u16, reply: Reply) -> Answer {
    Answer {
        body_text: reply.text,
        ..answer(status, Some(reply.value))
    }
}

/// A reply or body as the value a jsonb result is made of: when its text was written already, a
/// placeholder for that text (src/identity/spliced.rs), so the rows in it are not written a second time.
fn written(value: Value, text: Option<String>) -> Value {
    text.map_or(value, spliced::hold)
}

/// What one message produced.
struct Processed {
    /// None for notifications and client responses.
    reply: Option<Reply>,
    /// The scopes the caller lacked, if that is why it failed.
    missing_scopes: Vec<String>,
    /// The notifications it raised.
    events: Vec<Value>,
}

/// Processes one parsed message for `caller`, inside its request scope. `last`: nothing
/// else of the request runs after it (a batch's earlier messages are not last), so its audit row
/// may relax the commit when nothing was written. `as_text`: the reply leaves as JSON text (HTTP),
/// so the text the audit row's byte count needs is written here once and kept; chumbo.handle
/// returns jsonb built from the value, so its bytes are only counted.
fn process_message(
    registry: &Registry,
    caller: &Caller,
    msg: &Value,
    era: &Era,
    headers: Option<&Map<String, Value>>,
    last: bool,
    as_text: bool,
) -> Processed {
    let nothing = |reply: Option<Reply>| Processed {
        reply,
        missing_scopes: vec![],
        events: vec![],
    };
    let (id, method, params) = match jsonrpc::parse(msg) {
        Err((id, e)) => return nothing(Some(Reply::of(jsonrpc::error(&id, &e.rpc()), as_text))),
        Ok(Message::Notification | Message::ClientResponse) => return nothing(None),
        Ok(Message::Request { id, method, params }) => (id, method, params),
    };
    let started = std::time::Instant::now();
    let known = protocol::known_method(&method);
    DISPATCHED.with(|d| d.set(true));
    let progress = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    let ctx = Context {
        registry,
        caller,
        era,
        headers,
        resolved: RefCell::new(None),
    };
    // The request's run (a verified run handle, or a new one; src/bookkeeping/runs.rs).
    let run = match crate::bookkeeping::runs::of_request(registry, caller, &params) {
        Ok(r) => r,
        Err(e) => return nothing(Some(Reply::of(jsonrpc::error(&id, &e.rpc()), as_text))),
    };
    let state_key = registry.keys.get("state").cloned().unwrap_or_default();
    let trace_parent = crate::trace_context::of_message(&params, headers);
    // Its own copy: the request scope takes the original; the message's facts name the parent.
    let parent = trace_parent.clone();
    // Sampled unless the parent says otherwise (flags bit 0), as the W3C flag asks.
    crate::trace_context::message_begins(parent.as_ref().is_none_or(|p| p.flags & 1 == 1));
    let scope = RequestScope::enter(
        caller.principal.clone(),
        state_key,
        progress,
        registry.settings.max_result_bytes,
        trace_parent,
    );
    crate::bookkeeping::runs::enter(run.as_ref());
    // Anything unexpected (a bug, a catalog hiccup) must still be answered, and must not leave
    // half-done work behind: hence the subtransaction around the whole method.
    crate::postgres::standby::take_refused_write();
    let outcome = session::in_subtransaction(|| protocol::dispatch(&ctx, &method, &params));
    let outcome = replica::needs_primary_if_refused(outcome);
    let events = scope.take_events();
    let trace = crate::call::scope::trace_id();
    drop(scope);
    // a newly issued run handle goes back in the result's _meta
    let outcome = outcome.map(|o| {
        o.map(|mut result| {
            crate::bookkeeping::runs::decorate(&mut result, run.as_ref());
            result
        })
    });
    let (response, missing_scopes, class) = match outcome {
        Ok(Ok(result)) => {
            let class = match (result.get("isError"), result.get("resultType")) {
                (Some(Value::Bool(true)), _) => "tool_error",
                (_, Some(t)) if t == "input_required" => "input_required",
                (_, Some(t)) if t == "task" => "task",
                _ => "ok",
            };
            let result = match era {
                Era::Stateless(_) => stateless::decorate(&method, result, 60_000),
                Era::Legacy(_) => result,
            };
            (jsonrpc::result(&id, result), vec![], class.to_string())
        }
        Ok(Err(e)) => {
            let class = format!("error {}", e.code());
            let missing = e.missing_scopes().to_vec();
            (jsonrpc::error(&id, &e.rpc()), missing, class)
        }
        Err(e) => {
            pgrx::ereport!(
                PgLogLevel::LOG_SERVER_ONLY,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "chumbo trace {trace}: {known} failed with {}: {}",
                    e.sqlstate, e.message
                )
            );
            let err = Error::Internal(format!("Internal error (trace id {trace})"));
            (
                jsonrpc::error(&id, &err.rpc()),
                vec![],
                "internal".to_string(),
            )
        }
    };
    let mut reply = Reply::of(response, as_text);
    let resolved = ctx.resolved.take();
    let recorded = recorded::recorded(registry, known, &params, resolved.as_ref());
    if registry.settings.audit {
        let bytes = match &reply.text {
            Some(text) => text.len(),
            None if as_text => {
                let text = reply.value.to_string();
                let bytes = text.len();
                reply.text = Some(text);
                bytes
            }
            None => crate::render::written_len(&reply.value),
        };
        crate::trace_context::timed("audit", || {
            ledger::audit(
                last,
                ledger::Event {
                    trace_id: &trace,
                    era: era.audit_name(),
                    method: Some(known),
                    capability: recorded.target,
                    principal: caller.principal.digest(),
                    outcome: &class,
                    duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                    bytes,
                    detail: recorded.detail,
                    run_id: run.as_ref().map(|r| r.id.as_str()),
                },
            )
        });
    }
    crate::trace_context::message_ends(crate::trace_context::MessageFacts {
        method: known,
        target: recorded.target,
        request_id: &id,
        protocol_version: era.version(),
        trace_id: &trace,
        parent_id: parent.as_ref().map(|p| p.parent_id.as_str()),
        trace_flags: parent.as_ref().map(|p| p.flags),
        trace_state: parent.as_ref().and_then(|p| p.state.as_deref()),
        outcome: &class,
        resource_uri: recorded.resource_uri,
        tool_arguments: recorded.tool_arguments,
    });
    // The audit insert used a sequence: lastval() must not tell the next caller anything.
    session::forget_session_state();
    Processed {
        reply: Some(reply),
        missing_scopes,
        events,
    }
}

/// chumbo's entry points cannot be reached from inside a capability (or any other
/// security-restricted operation): a tool must not start a request of its own, for itself or
/// for someone else.
fn refuse_nested_call() {
    // SAFETY: reads the backend's security context only.
    if principal::in_request() || unsafe { pg_sys::InSecurityRestrictedOperation() } {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: a capability cannot call chumbo.handle, chumbo.mcp or chumbo.http",
            None,
        );
    }
}

/// Every entry point's request: refused inside a capability, then served (see
/// [session::serve_request]). On a session that many users' requests share (the edge's login,
/// PostgREST's pool), also refused while it holds temporary tables or types; `chumbo.handle`'s
/// caller is trusted to act for anyone, so its own temporary objects change nothing.
fn serve<R>(shared_session: bool, f: impl FnOnce() -> R) -> R {
    refuse_nested_call();
    if shared_session {
        session::refuse_temporary_relations_and_types();
    }
    session::request_begins();
    // Spans are recorded only for an http_parts request that asks (its own step turns it on).
    crate::trace_context::record_spans(false);
    session::serve_request(f)
}

/// Who is calling: the verified claims (or the API key) and the role they name, or why it may
/// not call anything.
fn caller_from(
    registry: &Registry,
    claims: Option<Value>,
    origin: Option<String>,
    api_key: Option<&apikey::VerifiedKey>,
) -> Result<Caller, Error> {
    let claims = claims.unwrap_or_else(|| json!({"role": "anon"}));
    if !claims.is_object() {
        return Err(Error::CallerRefused("claims must be a JSON object".into()));
    }
    let role = match claims.get("role") {
        None => "anon".to_string(),
        Some(Value::String(r)) => r.clone(),
        Some(_) => {
            return Err(Error::CallerRefused(
                "the role claim must be a string".into(),
            ))
        }
    };
    let role_oid = session::check_role(
        &role,
        &registry.settings.allowed_roles,
        &registry.table_owners,
    )?;
    let key = registry
        .keys
        .get("state")
        .map(Vec::as_slice)
        .unwrap_or_default();
    let principal = match api_key {
        Some(k) => Principal::api_key(&k.id, &role, key),
        None => Principal::from_claims(&claims, &role, origin, key),
    };
    let mut caller = Caller {
        principal,
        scopes: registry::scopes_of(&claims),
        role_oid,
        claims,
    };
    // The scope resolver replaces the token's scopes.
    crate::call::policy::resolve_scopes(registry, &mut caller);
    Ok(caller)
}

fn parse_body(text: &str) -> Result<Value, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().contains("recursion limit") {
            Error::InvalidRequest("the message is nested too deeply".into())
        } else if e.is_syntax() || e.is_eof() {
            Error::Parse("the body is not valid JSON".into())
        } else {
            Error::InvalidRequest(e.to_string())
        }
    })?;
    if let Some(reason) = jsonrpc::unacceptable(&value) {
        return Err(Error::InvalidRequest(reason));
    }
    Ok(value)
}

/// The request id to echo in an error about the whole request, when it can be read.
fn id_of(msg: &Value) -> Value {
    msg.get("id")
        .filter(|i| i.is_string() || i.is_i64() || i.is_u64())
        .cloned()
        .unwrap_or(Value::Null)
}

/// `chumbo.handle(body, claims)`: one JSON-RPC message for already-verified claims.
#[pg_extern(name = "handle")]
fn handle(body: Option<JsonbArg>, claims: default!(Option<JsonbArg>, "NULL")) -> Option<JsonValue> {
    serve(false, || handle_request(body, claims))
}

/// Both arguments arrive as jsonb values read off their binary form (src/datum): jsonb holds no
/// U+0000 and no invalid JSON, so of what parse_body checks in a text body only depth and the
/// numbers' length can occur.
fn handle_request(body: Option<JsonbArg>, claims: Option<JsonbArg>) -> Option<JsonValue> {
    let too_deep = |what: &str| Error::InvalidRequest(format!("the {what} is nested too deeply"));
    let msg = match body.map(|b| b.0) {
        Some(Ok(v)) => v,
        Some(Err(_)) => {
            let e = too_deep("message");
            return Some(JsonValue(jsonrpc::error(&Value::Null, &e.rpc())));
        }
        None => {
            let e = Error::InvalidRequest("the body is null".into());
            return Some(JsonValue(jsonrpc::error(&Value::Null, &e.rpc())));
        }
    };
    if let Some(reason) = jsonrpc::unacceptable(&msg) {
        let e = Error::InvalidRequest(reason);
        return Some(JsonValue(jsonrpc::error(&id_of(&msg), &e.rpc())));
    }
    if msg.is_array() {
        let e = Error::InvalidRequest(
            "chumbo.handle takes one message; batches go through chumbo.http (MCP 2025-03-26 only)"
                .into(),
        );
        return Some(JsonValue(jsonrpc::error(&Value::Null, &e.rpc())));
    }
    let registry = registry::current();
    if replica::standby_gate(&registry.settings).is_err() {
        return Some(JsonValue(jsonrpc::error(
            &id_of(&msg),
            &Error::NeedsPrimary.rpc(),
        )));
    }
    let claims = match claims.map(|c| c.0).transpose() {
        Ok(c) => c,
        Err(_) => {
            let e = too_deep("claims value");
            return Some(JsonValue(jsonrpc::error(&id_of(&msg), &e.rpc())));
        }
    };
    let caller = match caller_from(&registry, claims, None, None) {
        Ok(c) => c,
        Err(m) => {
            let e = Error::InvalidRequest(m.to_string());
            return Some(JsonValue(jsonrpc::error(&id_of(&msg), &e.rpc())));
        }
    };
    // The era is decided by the body; a trusted SQL caller has no headers to cross-check.
    let era = if stateless::is_stateless(&msg, None) {
        match stateless::envelope(&msg) {
            Ok(env) => Era::Stateless(env),
            Err(e) => return Some(JsonValue(jsonrpc::error(&id_of(&msg), &e.rpc()))),
        }
    } else {
        Era::Legacy(Revision::NEWEST)
    };
    let processed = process_message(&registry, &caller, &msg, &era, None, true, false);
    processed.reply.map(|r| JsonValue(written(r.value, r.text)))
}

/// `chumbo.http(request)`: an HTTP request as JSON in, the HTTP response as JSON out.
#[pg_extern(name = "http")]
fn http(request: Option<JsonbText>) -> JsonValue {
    serve(true, || http_request(request))
}

fn http_request(request: Option<JsonbText>) -> JsonValue {
    let request = match request.map(|r| serde_json::from_str::<Value>(&r.0)) {
        Some(Ok(v @ Value::Object(_))) => v,
        _ => {
            let e =
                Error::InvalidRequest("chumbo.http expects {method, path, headers, body}".into());
            return answer_json(refusal(&Value::Null, e, false));
        }
    };
    answer_json(process_http(&request, None))
}

/// `chumbo.http_parts(request, request_body)`: chumbo.http as the edge calls it. The bodies travel
/// as text both ways, so neither is parsed into jsonb and printed again on its way through the
/// connection, nor escaped into a JSON string: the edge sends the bytes it received and frames the
/// bytes it gets. `request` is chumbo.http's object without `body` (and `"trace": true` when the
/// edge exports traces); headers, events, listen and spans come back as JSON text (null when there
/// are none).
#[pg_extern(name = "http_parts")]
#[allow(clippy::type_complexity)] // pgrx reads the result columns from this very type
fn http_parts(
    request: Option<&str>,
    request_body: Option<String>,
) -> TableIterator<
    'static,
    (
        name!(status, i32),
        name!(headers, String),
        name!(body, Option<String>),
        name!(events, Option<String>),
        name!(listen, Option<String>),
        name!(spans, Option<String>),
    ),
> {
    TableIterator::once(serve(true, || http_parts_request(request, request_body)))
}

#[allow(clippy::type_complexity)]
fn http_parts_request(
    request: Option<&str>,
    request_body: Option<String>,
) -> (
    i32,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    let mut a = match request.map(serde_json::from_str::<Value>) {
        Some(Ok(Value::Object(mut m))) => {
            // An edge that exports traces asks for the request's spans (docs/observability.md).
            crate::trace_context::record_spans(m.get("trace") == Some(&Value::Bool(true)));
            m.insert(
                "body".into(),
                request_body.map_or(Value::Null, Value::String),
            );
            process_http(&Value::Object(m), None)
        }
        _ => {
            let e = Error::InvalidRequest(
                "chumbo.http_parts expects {method, path, headers} and the body".into(),
            );
            refusal(&Value::Null, e, false)
        }
    };
    let headers = Value::Object(answer_headers(&mut a)).to_string();
    let events = (!a.events.is_empty()).then(|| Value::Array(a.events).to_string());
    let listen = a.listen.map(|l| l.to_string());
    let body = a.body_text.or_else(|| a.body.map(|b| spliced::write(&b)));
    let spans = crate::trace_context::take_spans();
    (i32::from(a.status), headers, body, events, listen, spans)
}

/// `chumbo.mcp(body)`: the PostgREST RPC entry (`POST /rest/v1/rpc/mcp`). PostgREST has already
/// verified the JWT, switched to its role and set `request.jwt.claims` and `request.headers`; the
/// HTTP status and headers go back through `response.status` and `response.headers`.
#[pg_extern(name = "mcp")]
fn mcp(body: Option<JsonbText>) -> Option<JsonValue> {
    serve(true, || mcp_request(body))
}

fn mcp_request(body: Option<JsonbText>) -> Option<JsonValue> {
    let claims = session::current_setting("request.jwt.claims")
        .and_then(|c| serde_json::from_str::<Value>(&c).ok());
    let mut claims = claims.filter(Value::is_object).unwrap_or_else(|| json!({}));
    // PostgREST runs the function as the role it switched to: that is the caller's role.
    let role = session::current_role_name();
    claims["role"] = json!(role);
    let headers = session::current_setting("request.headers")
        .and_then(|h| serde_json::from_str::<Value>(&h).ok())
        .unwrap_or(json!({}));
    let body_text = body.map(|b| b.0).unwrap_or_default();
    let request = json!({"method": "POST", "headers": headers, "body": body_text});
    let is_anon = role == "anon";
    let public = registry::current().settings.allows(AuthMode::Public);
    let a = if is_anon && !public {
        let id = parse_body(&body_text)
            .map(|m| id_of(&m))
            .unwrap_or(Value::Null);
        let e = Error::Unauthorized("Authorization required".into());
        let mut a = refusal(&id, e, false);
        a.headers
            .insert("www-authenticate".into(), json!(challenge(None, None, &[])));
        a
    } else {
        process_http(&request, Some(claims))
    };
    session::set_local("response.status", &a.status.to_string());
    if !a.headers.is_empty() {
        let list: Vec<Value> = a.headers.iter().map(|(k, v)| json!({ k: v })).collect();
        session::set_local("response.headers", &Value::Array(list).to_string());
    }
    a.body.map(|b| JsonValue(written(b, a.body_text)))
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    fn stateless_call(method: &str, params: Value) -> Value {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    }

    /// What `classify` makes of a body and its headers: the era, or the status and JSON-RPC code
    /// of the refusal (code 0: no body).
    fn outcome(msg: &Value, headers: Value) -> String {
        let headers = headers.as_object().cloned().unwrap_or_default();
        match classify(msg, &headers, &json!(1)) {
            Ok(Era::Legacy(r)) => format!("legacy {}", r.as_str()),
            Ok(Era::Stateless(_)) => "stateless".into(),
            Err(a) => {
                let code = a
                    .body
                    .and_then(|b| b.pointer("/error/code").and_then(Value::as_i64))
                    .unwrap_or(0);
                format!("{} {code}", a.status)
            }
        }
    }

    #[pgrx::pg_test]
    fn headers_are_checked_against_the_body() {
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let call = stateless_call("tools/call", json!({"name": "add", "arguments": {}}));
        let list = stateless_call("tools/list", json!({}));
        let v = "2026-07-28";
        let cases = [
            // MCP-Protocol-Version, legacy era
            ("no header", &legacy, json!({}), "legacy 2025-03-26"),
            (
                "named revision",
                &legacy,
                json!({"mcp-protocol-version": "2025-06-18"}),
                "legacy 2025-06-18",
            ),
            (
                "header name case",
                &legacy,
                json!({"MCP-Protocol-Version": " 2025-11-25 "}),
                "legacy 2025-11-25",
            ),
            (
                "unknown revision",
                &legacy,
                json!({"mcp-protocol-version": "1999-01-01"}),
                "400 -32600",
            ),
            (
                "injection",
                &legacy,
                json!({"mcp-protocol-version": "2025-06-18'; --"}),
                "400 -32600",
            ),
            // a later revision than ours names the stateless era, which the body then lacks
            (
                "future revision",
                &legacy,
                json!({"mcp-protocol-version": "2027-01-01"}),
                "400 -32602",
            ),
            // stateless era: every header must agree with the body
            (
                "all agree",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/call", "mcp-name": "add"}),
                "stateless",
            ),
            (
                "Base64 name",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/call", "mcp-name": "=?base64?YWRk?="}),
                "stateless",
            ),
            (
                "no Mcp-Name needed",
                &list,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/list"}),
                "stateless",
            ),
            (
                "version differs",
                &call,
                json!({"mcp-protocol-version": "2025-11-25", "mcp-method": "tools/call", "mcp-name": "add"}),
                "400 -32020",
            ),
            (
                "version missing",
                &call,
                json!({"mcp-method": "tools/call", "mcp-name": "add"}),
                "400 -32020",
            ),
            (
                "method missing",
                &call,
                json!({"mcp-protocol-version": v, "mcp-name": "add"}),
                "400 -32020",
            ),
            (
                "method differs",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/list", "mcp-name": "add"}),
                "400 -32020",
            ),
            (
                "name missing",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/call"}),
                "400 -32020",
            ),
            (
                "name differs",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/call", "mcp-name": "delete_all"}),
                "400 -32020",
            ),
            (
                "bad Base64",
                &call,
                json!({"mcp-protocol-version": v, "mcp-method": "tools/call", "mcp-name": "=?base64?***?="}),
                "400 -32020",
            ),
        ];
        for (case, msg, headers, want) in cases {
            assert_eq!(outcome(msg, headers), want, "{case}");
        }
        // a stateless notification is accepted without running anything
        let mut note = stateless_call("notifications/cancelled", json!({}));
        note.as_object_mut().unwrap().remove("id");
        assert_eq!(outcome(&note, json!({})), "202 0");
        // a declared revision we do not speak
        let mut future = list.clone();
        future["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
        let h = json!({"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"});
        assert_eq!(outcome(&future, h), "400 -32022");
    }

    /// Origin: an anonymous caller is told apart by where it comes from (its rate-limit bucket).
    /// The edge's `client` wins; without it, the entry the nearest proxy appended to
    /// X-Forwarded-For (a client can only prepend entries).
    #[pgrx::pg_test]
    fn anonymous_callers_are_told_apart_by_origin() {
        let cases = [
            (json!({"client": "10.0.0.1"}), Some("10.0.0.1")),
            (
                json!({"client": " 10.0.0.1 ", "headers": {"x-forwarded-for": "6.6.6.6"}}),
                Some("10.0.0.1"),
            ),
            (
                json!({"headers": {"X-Forwarded-For": "6.6.6.6, 10.0.0.2"}}),
                Some("10.0.0.2"),
            ),
            (
                json!({"headers": {"x-forwarded-for": "10.0.0.3"}}),
                Some("10.0.0.3"),
            ),
            (json!({"headers": {}}), None),
        ];
        let empty = Map::new();
        for (request, want) in cases {
            let headers = request
                .get("headers")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            assert_eq!(
                client_origin(&request, headers).as_deref(),
                want,
                "{request}"
            );
        }
        let anon = |origin: &str| {
            Principal::from_claims(&json!({"role": "anon"}), "anon", Some(origin.into()), b"k")
                .digest()
                .to_string()
        };
        assert_eq!(anon("10.0.0.1"), anon("10.0.0.1"));
        assert_ne!(anon("10.0.0.1"), anon("10.0.0.2"));
    }
}
