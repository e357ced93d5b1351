//! The SQL entry points: `chumbo.handle`, `chumbo.http`, `chumbo.mcp`. None of them raises for a
//! protocol-level problem; each answers in JSON-RPC shape.

use crate::apikey;
use crate::auth;
use crate::events;
use crate::jsonrpc::{self, Message, RpcError, INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR};
use crate::ledger;
use crate::modern::{self, Envelope};
use crate::principal::{self, Principal};
use crate::protocol::{self, Context, LEGACY_VERSIONS};
use crate::registry::{self, Caller, Registry};
use crate::session;
use crate::settings::AuthMode;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde_json::{json, Map, Value};

/// A jsonb argument received as its text, parsed by us: a body too deep for serde must become a
/// JSON-RPC error, not an ERROR raised while converting the argument.
pub struct JsonbText(pub String);

impl pgrx::FromDatum for JsonbText {
    // SAFETY: pgrx passes a datum of the declared argument type (jsonb) or null; jsonb_out
    // detoasts it and returns a palloc'd copy of its text.
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null {
            return None;
        }
        let text =
            pgrx::direct_function_call::<&core::ffi::CStr>(pg_sys::jsonb_out, &[Some(datum)])?;
        Some(JsonbText(text.to_string_lossy().into_owned()))
    }
}
impl_sql_translatable!(JsonbText, arg_only = "jsonb");

// SAFETY: JsonbText is read through FromDatum (above) exactly like pgrx's own jsonb argument.
unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for JsonbText {
    // SAFETY: pgrx calls this with an argument of the declared (jsonb) type.
    unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        // SAFETY: forwarded from the caller's contract (a non-null jsonb argument).
        unsafe {
            arg.unbox_arg_using_from_datum()
                .unwrap_or_else(|| panic!("argument {index} must not be null"))
        }
    }

    // SAFETY: pgrx calls this with an argument of the declared (jsonb) type, possibly null.
    unsafe fn unbox_nullable_arg(
        arg: pgrx::callconv::Arg<'_, 'fcx>,
    ) -> pgrx::nullable::Nullable<Self> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { arg.unbox_arg_using_from_datum().into() }
    }
}

/// A jsonb result handed to PostgreSQL as the JSON text we already serialized: responses are
/// serialized exactly once (their size is what audit events record).
pub struct JsonText(pub String);

impl pgrx::IntoDatum for JsonText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let text = std::ffi::CString::new(self.0).ok()?;
        // SAFETY: a NUL-terminated C string that outlives the call; jsonb_in parses and copies it
        // into a palloc'd jsonb datum (and raises an ERROR on invalid input).
        unsafe {
            pgrx::direct_function_call_as_datum(
                pg_sys::jsonb_in,
                &[Some(pg_sys::Datum::from(text.as_ptr()))],
            )
        }
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::JSONBOID
    }
}

// SAFETY: JsonText returns a jsonb datum built by into_datum, the function's declared result type.
unsafe impl pgrx::callconv::BoxRet for JsonText {
    // SAFETY: pgrx calls this with the fcinfo of the function whose result type is jsonb.
    unsafe fn box_into<'fcx>(
        self,
        fcinfo: &mut pgrx::callconv::FcInfo<'fcx>,
    ) -> pgrx::datum::Datum<'fcx> {
        match pgrx::IntoDatum::into_datum(self) {
            // SAFETY: the datum was made for this call's result type just above.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}
impl_sql_translatable!(JsonText, "jsonb");

fn json_text(v: Value) -> JsonText {
    JsonText(v.to_string())
}

/// One message's response, serialized, and its error code if it is an error.
pub struct Reply {
    pub text: String,
    pub error_code: Option<i64>,
}

impl Reply {
    fn of(response: Value) -> Reply {
        let error_code = response.pointer("/error/code").and_then(Value::as_i64);
        Reply {
            text: response.to_string(),
            error_code,
        }
    }
}

/// The answer to one HTTP-shaped or SQL-shaped request before framing.
pub struct Answer {
    pub status: u16,
    pub headers: Map<String, Value>,
    /// The body as JSON text.
    pub body: Option<String>,
    pub events: Vec<Value>,
    /// For subscriptions/listen: the stream the edge must hold open.
    pub listen: Option<Value>,
}

fn answer(status: u16, body: Option<String>) -> Answer {
    Answer {
        status,
        headers: Map::new(),
        body,
        events: vec![],
        listen: None,
    }
}

/// Processes one parsed message for `caller`. Returns the response (None for notifications and
/// client responses) and the scopes the caller lacked, if that is why it failed. `last`: nothing
/// else of the request runs after it (a batch's earlier messages are not last), so its audit row
/// may relax the commit when nothing was written.
fn process_message(
    registry: &Registry,
    caller: &Caller,
    msg: &Value,
    version: &str,
    modern: Option<&Envelope>,
    headers: Option<&Map<String, Value>>,
    last: bool,
) -> (Option<Reply>, Vec<String>) {
    let (id, method, params) = match jsonrpc::parse(msg) {
        Err((id, e)) => return (Some(Reply::of(jsonrpc::error(&id, &e))), vec![]),
        Ok(Message::Notification | Message::ClientResponse) => return (None, vec![]),
        Ok(Message::Request { id, method, params }) => (id, method, params),
    };
    let started = std::time::Instant::now();
    DISPATCHED.with(|d| d.set(true));
    let progress = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    let ctx = Context {
        registry,
        caller,
        version,
        modern,
        headers,
    };
    // Anything unexpected (a bug, a catalog hiccup) must still be answered, and must not leave
    // half-done work behind: hence the subtransaction around the whole method.
    let outcome = in_request(registry, caller, progress, || {
        session::in_subtransaction(|| protocol::dispatch(&ctx, &method, &params))
    });
    let trace = session::trace_id();
    let (response, missing_scopes, class) = match outcome {
        Ok(Ok(result)) => {
            let class = match (result.get("isError"), result.get("resultType")) {
                (Some(Value::Bool(true)), _) => "tool_error",
                (_, Some(t)) if t == "input_required" => "input_required",
                _ => "ok",
            };
            let result = match modern {
                Some(_) => modern::decorate(&method, result, 60_000),
                None => result,
            };
            (jsonrpc::result(&id, result), vec![], class.to_string())
        }
        Ok(Err(f)) => {
            let class = format!("error {}", f.error.code);
            (jsonrpc::error(&id, &f.error), f.missing_scopes, class)
        }
        Err(e) => {
            pgrx::ereport!(
                PgLogLevel::LOG_SERVER_ONLY,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "chumbo trace {trace}: {method} failed with {}: {}",
                    e.sqlstate, e.message
                )
            );
            let err = RpcError::new(INTERNAL_ERROR, format!("Internal error (trace id {trace})"));
            (jsonrpc::error(&id, &err), vec![], "internal".to_string())
        }
    };
    let reply = Reply::of(response);
    if registry.settings.audit {
        let capability = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str);
        let opted_in = capability
            .and_then(|n| registry.find(n, registry::Kind::Tool))
            .and_then(|c| c.meta.audit.as_ref())
            .is_some_and(|a| a.arguments);
        ledger::audit(
            last,
            json!({
                "trace_id": trace,
                "era": if modern.is_some() { "modern" } else { "legacy" },
                "method": method,
                "capability": capability,
                "principal": caller.principal.digest(),
                "outcome": class,
                "duration_ms": started.elapsed().as_secs_f64() * 1000.0,
                "bytes": reply.text.len(),
                "detail": if opted_in { json!({"arguments": params.get("arguments")}) } else { Value::Null },
            }),
        );
    }
    // The audit insert used a sequence: lastval() must not tell the next caller anything.
    session::forget_session_state();
    (Some(reply), missing_scopes)
}

/// Per-request state (the principal chumbo's own functions act for, the events queue) exists
/// exactly while `f` runs, whatever way it ends: a cancelled request must not leave its principal
/// behind for the next statement on the same connection.
fn in_request<R>(
    registry: &Registry,
    caller: &Caller,
    progress: Option<Value>,
    f: impl FnOnce() -> R,
) -> R {
    events::begin(progress, registry.settings.max_result_bytes);
    let state_key = registry.keys.get("state").cloned().unwrap_or_default();
    principal::enter(caller.principal.clone(), state_key);
    PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        .finally(|| {
            principal::leave();
            session::forget_session_state();
        })
        .execute()
}

/// chumbo's entry points cannot be reached from inside a capability (or any other
/// security-restricted operation): a tool must not start a request of its own, for itself or
/// for someone else.
fn refuse_nested_call() {
    // SAFETY: reads the backend's security context only.
    if principal::in_request() || unsafe { pg_sys::InSecurityRestrictedOperation() } {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: a capability cannot call chumbo.handle, chumbo.mcp or chumbo.http"
        );
    }
}

/// Who is calling: the verified claims (or the API key) and the role they name, or why it may
/// not call anything.
fn caller_from(
    registry: &Registry,
    claims: Option<Value>,
    origin: Option<String>,
    api_key: Option<&apikey::VerifiedKey>,
) -> Result<Caller, String> {
    let claims = claims.unwrap_or_else(|| json!({"role": "anon"}));
    if !claims.is_object() {
        return Err("claims must be a JSON object".into());
    }
    let role = match claims.get("role") {
        None => "anon".to_string(),
        Some(Value::String(r)) => r.clone(),
        Some(_) => return Err("the role claim must be a string".into()),
    };
    let role_oid = session::check_role(
        &role,
        &registry.settings.allowed_roles,
        &registry.rls_owners,
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
    // policy hook: the scope resolver replaces the token's scopes.
    crate::policy::resolve_scopes(registry, &mut caller);
    Ok(caller)
}

fn parse_body(text: &str) -> Result<Value, RpcError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.to_string().contains("recursion limit") {
            RpcError::new(
                INVALID_REQUEST,
                "Invalid Request: the message is nested too deeply",
            )
        } else if e.is_syntax() || e.is_eof() {
            RpcError::new(PARSE_ERROR, "Parse error: the body is not valid JSON")
        } else {
            RpcError::new(INVALID_REQUEST, format!("Invalid Request: {e}"))
        }
    })?;
    if jsonrpc::contains_nul(&value) {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "Invalid Request: strings must not contain U+0000",
        ));
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
fn handle(body: Option<JsonbText>, claims: default!(Option<JsonB>, "NULL")) -> Option<JsonText> {
    refuse_nested_call();
    session::request_begins();
    let msg = match body.map(|b| parse_body(&b.0)) {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Some(json_text(jsonrpc::error(&Value::Null, &e))),
        None => {
            return Some(json_text(jsonrpc::error(
                &Value::Null,
                &RpcError::new(INVALID_REQUEST, "Invalid Request: the body is null"),
            )))
        }
    };
    if msg.is_array() {
        let e = RpcError::new(INVALID_REQUEST, "Invalid Request: chumbo.handle takes one message; batches go through chumbo.http (MCP 2025-03-26 only)");
        return Some(json_text(jsonrpc::error(&Value::Null, &e)));
    }
    let registry = registry::current();
    let caller = match caller_from(&registry, claims.map(|c| c.0), None, None) {
        Ok(c) => c,
        Err(m) => {
            return Some(json_text(jsonrpc::error(
                &id_of(&msg),
                &RpcError::new(INVALID_REQUEST, format!("Invalid Request: {m}")),
            )));
        }
    };
    // The era is decided by the body; a trusted SQL caller has no headers to cross-check.
    let envelope = if modern::is_modern(&msg, None) {
        match modern::envelope(&msg) {
            Ok(env) => Some(env),
            Err(e) => return Some(json_text(jsonrpc::error(&id_of(&msg), &e))),
        }
    } else {
        None
    };
    let version = envelope
        .as_ref()
        .map(|e| e.version.clone())
        .unwrap_or(LEGACY_VERSIONS[0].to_string());
    let (response, _) = process_message(
        &registry,
        &caller,
        &msg,
        &version,
        envelope.as_ref(),
        None,
        true,
    );
    events::take();
    response.map(|r| JsonText(r.text))
}

fn header<'a>(headers: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}

fn bearer_token(headers: &Map<String, Value>) -> Option<&str> {
    let h = header(headers, "authorization")?;
    let (scheme, token) = h.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn challenge(
    resource_metadata: Option<&str>,
    error: Option<(&str, &str)>,
    scopes: &[String],
) -> String {
    let mut parts = vec![];
    if let Some((code, description)) = error {
        parts.push(format!("error=\"{code}\""));
        parts.push(format!(
            "error_description=\"{}\"",
            description.replace('"', "'")
        ));
    }
    if !scopes.is_empty() {
        parts.push(format!("scope=\"{}\"", scopes.join(" ")));
    }
    if let Some(url) = resource_metadata {
        parts.push(format!("resource_metadata=\"{url}\""));
    }
    if parts.is_empty() {
        "Bearer".into()
    } else {
        format!("Bearer {}", parts.join(", "))
    }
}

fn scope_challenge(resource_metadata: Option<&str>, scopes: &[String]) -> String {
    let needed = scopes.join(" ");
    challenge(
        resource_metadata,
        Some(("insufficient_scope", &format!("requires scopes: {needed}"))),
        scopes,
    )
}

/// `subscriptions/listen`: acknowledged here, then held open by the edge. A NOTIFY on channel
/// `chumbo_capabilities` is only a hint (any role can send one): the edge re-sends the listen
/// request and forwards list-changed notifications only when `version` moved; it ends the stream
/// when the request is no longer accepted (the token expired at `expires_at`), and holds at most
/// `max_streams` per `principal`.
fn listen(msg: &Value, id: &Value, caller: &Caller, registry: &Registry) -> Answer {
    let requested = msg
        .pointer("/params/notifications")
        .cloned()
        .unwrap_or(json!({}));
    let Some(requested) = requested.as_object() else {
        return answer(
            400,
            Some(
                jsonrpc::error(
                    id,
                    &RpcError::invalid_params("Invalid params: notifications must be an object"),
                )
                .to_string(),
            ),
        );
    };
    let mut honoured = Map::new();
    for key in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        if requested.get(key) == Some(&Value::Bool(true)) {
            honoured.insert(key.into(), json!(true));
        }
    }
    let subscription = json!({"io.modelcontextprotocol/subscriptionId": id});
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": honoured, "_meta": subscription}});
    let mut a = answer(200, None);
    a.events = vec![ack];
    a.listen = Some(json!({
        "id": id,
        "notifications": honoured,
        "principal": caller.principal.digest(),
        "version": registry.version,
        // when the database stops accepting the token: its exp plus the verification leeway
        "expires_at": caller.claims.get("exp").and_then(Value::as_i64).map(|e| e + auth::LEEWAY_SECONDS as i64),
        "max_streams": registry.settings.max_listen_streams,
    }));
    a
}

fn error_answer(status: u16, id: &Value, code: i64, message: &str) -> Answer {
    answer(
        status,
        Some(jsonrpc::error(id, &RpcError::new(code, message)).to_string()),
    )
}

/// A credential, by its shape: an API key (`x-api-key`, or a bearer token that starts with
/// chumbo's key prefix) or a JWT (any other bearer token).
enum Credential<'a> {
    ApiKey(&'a str),
    Jwt(&'a str),
    None,
}

fn credential(headers: &Map<String, Value>, keys_accepted: bool) -> Credential<'_> {
    if let Some(k) = header(headers, "x-api-key").filter(|_| keys_accepted) {
        return Credential::ApiKey(k.trim());
    }
    match bearer_token(headers) {
        None | Some("") => Credential::None,
        Some(t) if apikey::looks_like_key(t) => Credential::ApiKey(t),
        Some(t) => Credential::Jwt(t),
    }
}

/// Who sent the request, as the auth modes in force allow: the claims to run under (and the API
/// key, for its principal), or the 401 refusal. Each credential goes to exactly one verifier, by
/// its shape, so a failed API key is never tried as a JWT, nor the reverse.
fn authenticate(
    settings: &crate::settings::Settings,
    headers: &Map<String, Value>,
    resource: Option<&str>,
    resource_metadata: Option<&str>,
    req_id: &Value,
) -> Result<(Value, Option<apikey::VerifiedKey>), Answer> {
    let jwt_modes = settings.allows(AuthMode::Bearer) || settings.allows(AuthMode::Oauth);
    let key_mode = settings.allows(AuthMode::ApiKey);
    let jwt_refusal = |error: Option<(&str, &str)>, message: &str| {
        let mut a = error_answer(401, req_id, INVALID_REQUEST, message);
        a.headers.insert(
            "www-authenticate".into(),
            json!(challenge(resource_metadata, error, &[])),
        );
        a
    };
    let key_refusal = |message: &str| {
        let mut a = error_answer(401, req_id, INVALID_REQUEST, message);
        a.headers.insert("www-authenticate".into(), json!("ApiKey"));
        a
    };
    match credential(headers, key_mode) {
        Credential::ApiKey(key) if key_mode => match apikey::verify(key) {
            Ok(k) => Ok((
                json!({"role": k.role, "scope": k.scopes.join(" ")}),
                Some(k),
            )),
            Err(m) => Err(key_refusal(&m)),
        },
        Credential::Jwt(token) if jwt_modes => match auth::verify(token, settings, resource) {
            Ok(claims) => Ok((claims, None)),
            Err(m) => Err(jwt_refusal(
                Some(("invalid_token", m.as_str())),
                &format!("Invalid token: {m}"),
            )),
        },
        Credential::None if settings.allows(AuthMode::Public) => {
            Ok((json!({"role": "anon"}), None))
        }
        Credential::ApiKey(_) => Err(key_refusal("API keys are not accepted here")),
        Credential::Jwt(_) if key_mode => Err(key_refusal("the API key is invalid")),
        Credential::Jwt(_) => Err(jwt_refusal(
            Some(("invalid_token", "bearer tokens are not accepted here")),
            "Invalid token: bearer tokens are not accepted here",
        )),
        Credential::None if jwt_modes => Err(jwt_refusal(None, "Authorization required")),
        Credential::None => Err(key_refusal("an API key is required")),
    }
}

thread_local! {
    /// Set by process_message: the HTTP request reached a method (and so has its audit row).
    static DISPATCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The HTTP-shaped processing shared by `chumbo.http` and `chumbo.mcp`. `claims` is Some when an
/// outer layer (PostgREST) already verified the token. Requests refused before any method runs
/// (400, 401, 403, 413, 415, 429) get an audit row here; the others get theirs from
/// process_message.
pub fn process_http(request: &Value, verified_claims: Option<Value>) -> Answer {
    let started = std::time::Instant::now();
    let mut principal = None;
    DISPATCHED.with(|d| d.set(false));
    let a = answer_http(request, verified_claims, &mut principal);
    // process_message audits every request it handles: audit here what was refused before it.
    let dispatched = DISPATCHED.with(|d| d.replace(false));
    if !dispatched && a.status >= 400 && registry::current().settings.audit {
        ledger::audit(
            true,
            json!({
                "trace_id": session::trace_id(),
                "era": "http",
                "method": Value::Null,
                "capability": Value::Null,
                "principal": principal.unwrap_or_else(|| "unauthenticated".to_string()),
                "outcome": format!("refused {}", a.status),
                "duration_ms": started.elapsed().as_secs_f64() * 1000.0,
                "bytes": a.body.as_ref().map_or(0, String::len),
                "detail": Value::Null,
            }),
        );
    }
    a
}

fn answer_http(
    request: &Value,
    verified_claims: Option<Value>,
    principal: &mut Option<String>,
) -> Answer {
    let empty = Map::new();
    let headers = request
        .get("headers")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("POST")
        .to_ascii_uppercase();
    if method != "POST" {
        let mut a = answer(405, None);
        a.headers.insert("allow".into(), json!("POST"));
        return a;
    }
    // The transport carries JSON-RPC as application/json; a request that says otherwise is not
    // one (no header at all is accepted: SQL callers of chumbo.http often pass none).
    if let Some(ct) = header(headers, "content-type") {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return error_answer(
                415,
                &Value::Null,
                INVALID_REQUEST,
                "Unsupported Media Type: the body must be application/json",
            );
        }
    }
    let registry = registry::current();
    let settings = &registry.settings;
    let resource = request.get("resource").and_then(Value::as_str);
    let resource_metadata = request.get("resource_metadata").and_then(Value::as_str);

    let body_text = match request.get("body") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if body_text.len() > settings.max_body_bytes {
        return error_answer(
            413,
            &Value::Null,
            INVALID_REQUEST,
            "Invalid Request: the body is too large",
        );
    }

    // Parsed before authenticating only so that every error can echo the request id; nothing
    // runs and nothing about the server is revealed before the caller is authenticated.
    let parsed = parse_body(&body_text);
    let req_id = parsed.as_ref().map(id_of).unwrap_or(Value::Null);
    let (claims, api_key) = match verified_claims {
        Some(c) => (c, None),
        None => match authenticate(settings, headers, resource, resource_metadata, &req_id) {
            Ok(who) => who,
            Err(refusal) => return refusal,
        },
    };

    let msg = match parsed {
        Ok(v) => v,
        Err(e) => return answer(400, Some(jsonrpc::error(&Value::Null, &e).to_string())),
    };
    let header_version = header(headers, "mcp-protocol-version").map(str::trim);
    // The era is decided by the body, as the official SDK does; the header is only cross-checked.
    let envelope = if !msg.is_array() && modern::is_modern(&msg, header_version) {
        if msg.get("id").is_none() {
            return answer(202, None);
        }
        // A header that disagrees with the body is a mismatch before it is a version question.
        let meta_version = msg
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
            .and_then(Value::as_str);
        if let (Some(h), Some(b)) = (header_version, meta_version) {
            if h != b {
                let e = modern::mismatch("the MCP-Protocol-Version header does not match the body");
                return answer(400, Some(jsonrpc::error(&req_id, &e).to_string()));
            }
        }
        let checked = modern::envelope(&msg)
            .and_then(|env| modern::check_headers(headers, &msg, &env).map(|_| env));
        match checked {
            Ok(env) => Some(env),
            Err(e) => {
                return answer(
                    modern::status_of(e.code),
                    Some(jsonrpc::error(&req_id, &e).to_string()),
                )
            }
        }
    } else {
        if let Some(v) = header_version {
            if !LEGACY_VERSIONS.contains(&v) {
                let m = format!(
                    "Bad Request: unsupported protocol version {v} (supported: {})",
                    LEGACY_VERSIONS.join(", ")
                );
                return error_answer(400, &req_id, INVALID_REQUEST, &m);
            }
        }
        None
    };
    // Without the header the spec says to assume 2025-03-26.
    let version = match &envelope {
        Some(env) => env.version.as_str(),
        None => header_version.unwrap_or("2025-03-26"),
    };

    // Anonymous callers are told apart by where they come from (the edge passes the client
    // address), for their rate-limit bucket.
    let origin = request
        .get("client")
        .and_then(Value::as_str)
        // Without the edge's word, the entry the nearest proxy appended: the client can only
        // prepend entries, so the first one is whatever it likes.
        .or_else(|| header(headers, "x-forwarded-for").and_then(|f| f.rsplit(',').next()))
        .map(|s| s.trim().to_string());
    let caller = match caller_from(&registry, Some(claims), origin, api_key.as_ref()) {
        Ok(c) => c,
        Err(m) => return error_answer(403, &req_id, INVALID_REQUEST, &format!("Forbidden: {m}")),
    };
    *principal = Some(caller.principal.digest().to_string());
    if !ledger::claim_in_flight_slot(caller.principal.limit_key(), settings.max_in_flight) {
        let mut a = error_answer(
            429,
            &req_id,
            INVALID_REQUEST,
            &format!(
                "Too many requests: {} of this caller's requests are already running",
                settings.max_in_flight
            ),
        );
        a.headers.insert("retry-after".into(), json!("1"));
        return a;
    }
    if let Some(limit) = settings.request_limit() {
        match ledger::rate_hit(
            &format!("request:{}", caller.principal.limit_key()),
            60,
            limit,
        ) {
            Ok(None) => {}
            Ok(Some(retry_after)) => {
                let mut a = error_answer(
                    429,
                    &req_id,
                    INVALID_REQUEST,
                    &format!("Too many requests: retry in {retry_after} s"),
                );
                a.headers
                    .insert("retry-after".into(), json!(retry_after.to_string()));
                return a;
            }
            Err(()) => {
                let mut a = error_answer(
                    429,
                    &req_id,
                    INVALID_REQUEST,
                    "Too many requests: the rate limiter is unavailable",
                );
                a.headers.insert("retry-after".into(), json!("1"));
                return a;
            }
        }
    }

    let messages: Vec<&Value> = match &msg {
        Value::Array(items) => {
            if version != "2025-03-26" {
                return error_answer(
                    400,
                    &Value::Null,
                    INVALID_REQUEST,
                    "Invalid Request: batches are only allowed in MCP 2025-03-26",
                );
            }
            if items.is_empty() {
                return error_answer(
                    400,
                    &Value::Null,
                    INVALID_REQUEST,
                    "Invalid Request: empty batch",
                );
            }
            items.iter().collect()
        }
        single => vec![single],
    };
    if msg.is_array() && messages.iter().any(|m| modern::is_modern(m, None)) {
        return error_answer(
            400,
            &Value::Null,
            INVALID_REQUEST,
            "Invalid Request: MCP 2026-07-28 has no batches",
        );
    }
    if let Some(env) = &envelope {
        if msg.get("method").and_then(Value::as_str) == Some("subscriptions/listen") {
            return listen(&msg, &req_id, &caller, &registry);
        }
        let (response, scopes) = process_message(
            &registry,
            &caller,
            &msg,
            version,
            Some(env),
            Some(headers),
            true,
        );
        let mut events = events::take();
        events.retain(|e| {
            e["method"] != "notifications/message"
                || modern::log_passes(
                    env.log_level.as_deref(),
                    e["params"]["level"].as_str().unwrap_or(""),
                )
        });
        let Some(reply) = response else {
            return answer(202, None);
        };
        let mut a = match reply.error_code {
            Some(_) if !scopes.is_empty() => {
                let mut a = answer(403, Some(reply.text));
                a.headers.insert(
                    "www-authenticate".into(),
                    json!(scope_challenge(resource_metadata, &scopes)),
                );
                a
            }
            Some(code) => answer(modern::status_of(code), Some(reply.text)),
            None => answer(200, Some(reply.text)),
        };
        a.events = events;
        return a;
    }

    let mut responses = vec![];
    let mut all_events = vec![];
    let mut missing_scopes = vec![];
    for (i, m) in messages.iter().enumerate() {
        if msg.is_array() && m.get("method").and_then(Value::as_str) == Some("initialize") {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            responses.push(Reply::of(jsonrpc::error(
                &id,
                &RpcError::new(
                    INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch",
                ),
            )));
            continue;
        }
        let last = i + 1 == messages.len();
        let (response, scopes) =
            process_message(&registry, &caller, m, version, None, Some(headers), last);
        all_events.extend(events::take());
        if let Some(r) = response {
            responses.push(r);
        }
        if !scopes.is_empty() {
            missing_scopes = scopes;
        }
    }
    if !missing_scopes.is_empty() && !msg.is_array() {
        let mut a = answer(403, responses.pop().map(|r| r.text));
        a.headers.insert(
            "www-authenticate".into(),
            json!(scope_challenge(resource_metadata, &missing_scopes)),
        );
        return a;
    }
    if responses.is_empty() {
        return answer(202, None);
    }
    // Envelope errors are the transport's business (400); method errors ride a 200.
    let status = match (msg.is_array(), responses[0].error_code) {
        (false, Some(PARSE_ERROR | INVALID_REQUEST)) => 400,
        _ => 200,
    };
    let texts: Vec<String> = responses.into_iter().map(|r| r.text).collect();
    let body = if msg.is_array() {
        format!("[{}]", texts.join(","))
    } else {
        texts.concat()
    };
    let mut a = answer(status, Some(body));
    a.events = all_events;
    a
}

/// The `{status, headers, body, events, listen?}` object chumbo.http returns, around the body
/// text as it is.
fn answer_json(a: Answer) -> JsonText {
    let mut headers = a.headers;
    if a.body.is_some() {
        headers
            .entry("content-type")
            .or_insert(json!("application/json"));
    }
    let listen = a
        .listen
        .map(|l| format!(",\"listen\":{l}"))
        .unwrap_or_default();
    JsonText(format!(
        "{{\"status\":{},\"headers\":{},\"body\":{},\"events\":{}{listen}}}",
        a.status,
        Value::Object(headers),
        a.body.as_deref().unwrap_or("null"),
        Value::Array(a.events),
    ))
}

/// `chumbo.http(request)`: an HTTP request as JSON in, the HTTP response as JSON out.
#[pg_extern(name = "http")]
fn http(request: Option<JsonbText>) -> JsonText {
    refuse_nested_call();
    session::request_begins();
    let request = match request.map(|r| serde_json::from_str::<Value>(&r.0)) {
        Some(Ok(v @ Value::Object(_))) => v,
        _ => {
            return answer_json(error_answer(
                400,
                &Value::Null,
                INVALID_REQUEST,
                "Invalid Request: chumbo.http expects {method, path, headers, body}",
            ))
        }
    };
    answer_json(process_http(&request, None))
}

/// `chumbo.mcp(body)`: the PostgREST RPC entry (`POST /rest/v1/rpc/mcp`). PostgREST has already
/// verified the JWT, switched to its role and set `request.jwt.claims` and `request.headers`; the
/// HTTP status and headers go back through `response.status` and `response.headers`.
#[pg_extern(name = "mcp")]
fn mcp(body: Option<JsonbText>) -> Option<JsonText> {
    refuse_nested_call();
    session::request_begins();
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
        let mut a = error_answer(401, &id, INVALID_REQUEST, "Authorization required");
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
    a.body.map(JsonText)
}
