//! MCP methods of the legacy era (2024-11-05 … 2025-11-25), answered from the registry.

use crate::events;
use crate::execute::{self, PublicError, Returned};
use crate::jsonrpc::{self, RpcError, METHOD_NOT_FOUND};
use crate::modern::Envelope;
use crate::mrtr;
use crate::registry::{Caller, Capability, Kind, Registry};
use crate::session;
use crate::types::ReturnShape;
use base64::Engine;
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
pub const SERVER_NAME: &str = "chumbo";

/// What a request needs besides its params.
pub struct Context<'a> {
    pub registry: &'a Registry,
    pub caller: &'a Caller,
    /// The revision: negotiated (legacy, from the MCP-Protocol-Version header) or declared in
    /// `_meta` (modern).
    pub version: &'a str,
    /// Some for MCP 2026-07-28 requests.
    pub modern: Option<&'a Envelope>,
    /// The HTTP headers, when the request came over HTTP (for `Mcp-Param-*` checks).
    pub headers: Option<&'a Map<String, Value>>,
}

/// A protocol failure plus, for HTTP, the scopes whose absence caused it (→ 403).
pub struct Failure {
    pub error: RpcError,
    pub missing_scopes: Vec<String>,
}

impl From<RpcError> for Failure {
    fn from(error: RpcError) -> Self {
        Failure {
            error,
            missing_scopes: vec![],
        }
    }
}

type Answer = Result<Value, Failure>;

/// Methods the modern era removed: unknown there (HTTP 404 + -32601).
const REMOVED_IN_MODERN: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

pub fn dispatch(ctx: &Context, method: &str, params: &Map<String, Value>) -> Answer {
    if ctx.modern.is_some() {
        if REMOVED_IN_MODERN.contains(&method) {
            return Err(
                RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {method}")).into(),
            );
        }
        if method == "server/discover" {
            return Ok(discover(ctx));
        }
    }
    match method {
        "initialize" => Ok(initialize(ctx, params)?),
        "ping" => Ok(json!({})),
        "logging/setLevel" => match params.get("level").and_then(Value::as_str) {
            // Stateless: there is no session to remember the level in; tools' log events are
            // returned with the request that raised them.
            Some(l) if events::valid_level(l) => Ok(json!({})),
            _ => Err(
                RpcError::invalid_params("Invalid params: \"level\" must be a log level").into(),
            ),
        },
        "tools/list" => list(ctx, params, "tools", |c| c.kind == Kind::Tool, tool_json),
        "resources/list" => list(
            ctx,
            params,
            "resources",
            |c| c.kind == Kind::Resource,
            resource_json,
        ),
        "resources/templates/list" => list(
            ctx,
            params,
            "resourceTemplates",
            |c| c.kind == Kind::ResourceTemplate,
            template_json,
        ),
        "prompts/list" => list(
            ctx,
            params,
            "prompts",
            |c| c.kind == Kind::Prompt,
            prompt_json,
        ),
        "tools/call" => call_tool(ctx, params),
        "resources/read" => read_resource(ctx, params),
        "prompts/get" => get_prompt(ctx, params),
        "completion/complete" if offers_completions(ctx) => complete(ctx, params),
        _ => Err(RpcError::new(METHOD_NOT_FOUND, format!("Method not found: {method}")).into()),
    }
}

fn visible<'r>(
    ctx: &'r Context,
    kind: impl Fn(&Capability) -> bool,
) -> impl Iterator<Item = &'r Capability> {
    ctx.registry
        .capabilities
        .iter()
        .filter(move |c| kind(c) && ctx.caller.may_use(c))
}

fn offers_completions(ctx: &Context) -> bool {
    visible(ctx, |c| !c.meta.completions.is_empty())
        .next()
        .is_some()
}

fn initialize(ctx: &Context, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            RpcError::invalid_params("Invalid params: \"protocolVersion\" is required")
        })?;
    // Echo a version we speak; otherwise offer our newest and let the client decide.
    let version = LEGACY_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .unwrap_or(&LEGACY_VERSIONS[0]);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(ctx),
        "serverInfo": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
    });
    if let Some(i) = &ctx.registry.settings.instructions {
        result["instructions"] = json!(i);
    }
    Ok(result)
}

/// What this server offers the caller. List changes reach modern clients through
/// subscriptions/listen; the legacy stateless wire has no stream to send them on.
fn capabilities(ctx: &Context) -> Value {
    let list_changed = ctx.modern.is_some();
    let mut capabilities = json!({
        "tools": {"listChanged": list_changed},
        "resources": {"subscribe": false, "listChanged": list_changed},
        "prompts": {"listChanged": list_changed},
        "logging": {},
    });
    if offers_completions(ctx) {
        capabilities["completions"] = json!({});
    }
    capabilities
}

fn discover(ctx: &Context) -> Value {
    let mut versions: Vec<&str> = crate::modern::MODERN_VERSIONS.to_vec();
    versions.extend(LEGACY_VERSIONS);
    let mut result = json!({"supportedVersions": versions, "capabilities": capabilities(ctx)});
    if let Some(i) = &ctx.registry.settings.instructions {
        result["instructions"] = json!(i);
    }
    result
}

fn decode_cursor(params: &Map<String, Value>) -> Result<usize, RpcError> {
    let Some(cursor) = params.get("cursor") else {
        return Ok(0);
    };
    let bad = || RpcError::invalid_params("Invalid params: invalid cursor");
    let text = cursor.as_str().ok_or_else(bad)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| bad())?;
    String::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_prefix("offset:")?.parse().ok())
        .ok_or_else(bad)
}

fn list(
    ctx: &Context,
    params: &Map<String, Value>,
    key: &str,
    kind: impl Fn(&Capability) -> bool,
    render: fn(&Capability) -> Value,
) -> Answer {
    let offset = decode_cursor(params)?;
    let page = ctx.registry.settings.page_size.max(1);
    let all: Vec<&Capability> = visible(ctx, kind).collect();
    let items: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(page)
        .map(|c| render(c))
        .collect();
    let mut result = json!({ key: items });
    if offset + page < all.len() {
        let cursor = format!("offset:{}", offset + page);
        result["nextCursor"] =
            json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(cursor));
    }
    Ok(result)
}

fn put_opt(v: &mut Value, key: &str, value: Option<impl serde::Serialize>) {
    if let Some(x) = value {
        v[key] = json!(x);
    }
}

pub fn tool_json(c: &Capability) -> Value {
    let mut t = json!({"name": c.name, "inputSchema": c.input_schema});
    put_opt(&mut t, "title", c.meta.title.as_ref());
    put_opt(&mut t, "description", c.description.as_ref());
    put_opt(&mut t, "outputSchema", c.meta.output_schema.as_ref());
    put_opt(&mut t, "icons", c.meta.icons.as_ref());
    let mut annotations = match &c.meta.annotations {
        Some(a) => serde_json::to_value(a).unwrap_or(json!({})),
        None => json!({}),
    };
    if let Some(obj) = annotations.as_object_mut() {
        obj.retain(|_, v| !v.is_null());
        if c.read_only {
            obj.entry("readOnlyHint").or_insert(json!(true));
        }
        if !obj.is_empty() {
            t["annotations"] = annotations;
        }
    }
    t
}

fn resource_json(c: &Capability) -> Value {
    let mut r =
        json!({"uri": c.meta.resource, "name": c.meta.name.clone().unwrap_or(c.name.clone())});
    put_opt(&mut r, "title", c.meta.title.as_ref());
    put_opt(&mut r, "description", c.description.as_ref());
    put_opt(&mut r, "mimeType", c.meta.mime_type.as_ref());
    put_opt(&mut r, "icons", c.meta.icons.as_ref());
    r
}

fn template_json(c: &Capability) -> Value {
    let mut r = resource_json(c);
    if let Some(obj) = r.as_object_mut() {
        if let Some(uri) = obj.remove("uri") {
            obj.insert("uriTemplate".into(), uri);
        }
    }
    r
}

fn prompt_json(c: &Capability) -> Value {
    let args: Vec<Value> = c
        .params
        .iter()
        .map(|p| {
            let mut a = json!({"name": p.name, "required": p.required});
            put_opt(&mut a, "description", p.description.as_ref());
            a
        })
        .collect();
    let mut p = json!({"name": c.name, "arguments": args});
    put_opt(&mut p, "title", c.meta.title.as_ref());
    put_opt(&mut p, "description", c.description.as_ref());
    put_opt(&mut p, "icons", c.meta.icons.as_ref());
    p
}

/// The capability named in `params.name`, or the protocol error a caller who may not use it gets.
fn named<'r>(
    ctx: &'r Context,
    params: &Map<String, Value>,
    kind: Kind,
) -> Result<&'r Capability, Failure> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: \"name\" must be a string"))?;
    let unknown = || RpcError::invalid_params(format!("Unknown {}: {name}", kind.as_str()));
    let cap = ctx.registry.find(name, kind).ok_or_else(unknown)?;
    if !session::can_execute(cap.oid, ctx.caller.role_oid) {
        return Err(unknown().into());
    }
    if !ctx.caller.has_scopes(cap) {
        return Err(Failure {
            error: unknown(),
            // policy hook: no insufficient_scope challenge when scopes come from the resolver.
            missing_scopes: crate::policy::scopes_to_request(ctx.registry, cap),
        });
    }
    // policy hook: a capability its visibility predicate hides is unknown.
    if !crate::policy::visible(cap, ctx.caller) {
        return Err(unknown().into());
    }
    Ok(cap)
}

fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// Why a capability did not produce a value.
enum Stop {
    /// It failed; the caller may see this much.
    Failed(PublicError),
    /// The method's answer is already decided: `input_required`, or a protocol error.
    Reply(Answer),
}

/// Runs a capability, with MRTR: earlier rounds' input (from a verified `requestState`) and this
/// retry's `inputResponses` are available to `chumbo.input`; input still missing ends the call as
/// `input_required` with a fresh `requestState`.
fn run<T>(
    ctx: &Context,
    cap: &Capability,
    args: &Map<String, Value>,
    params: &Map<String, Value>,
    method: &str,
    finish: impl FnOnce(Returned) -> Result<T, String>,
) -> Result<T, Stop> {
    let reply = |f: Failure| Stop::Reply(Err(f));
    let digest = ctx.caller.principal.digest().to_string();
    let bound_to = if method == "resources/read" {
        params.get("uri").cloned().unwrap_or_default()
    } else {
        Value::Object(args.clone())
    };
    let binding = mrtr::Binding {
        principal: &digest,
        method,
        capability: &cap.name,
        arguments: &bound_to,
    };
    let key = ctx
        .registry
        .keys
        .get("request_state")
        .cloned()
        .unwrap_or_default();
    let mut responses = Map::new();
    if ctx.modern.is_some() {
        if let Some(state) = params.get("requestState") {
            let state = state.as_str().ok_or_else(|| {
                reply(
                    RpcError::invalid_params("Invalid params: requestState must be a string")
                        .into(),
                )
            })?;
            responses = mrtr::verify(&key, state, &binding).map_err(|e| reply(e.into()))?;
        }
        match params.get("inputResponses") {
            None => {}
            Some(Value::Object(given)) => {
                for (k, v) in given {
                    if !v.is_object() {
                        return Err(reply(
                            RpcError::invalid_params(format!(
                                "Invalid params: inputResponses[\"{k}\"] must be an object"
                            ))
                            .into(),
                        ));
                    }
                    responses.insert(k.clone(), v.clone());
                }
            }
            Some(_) => {
                return Err(reply(
                    RpcError::invalid_params("Invalid params: inputResponses must be an object")
                        .into(),
                ))
            }
        }
    }
    let client_capabilities = ctx
        .modern
        .map(|m| m.client_capabilities.clone())
        .unwrap_or(json!({}));
    mrtr::begin(ctx.modern.is_some(), client_capabilities, responses);
    let s = &ctx.registry.settings;
    let timeout_ms = cap.meta.timeout_ms.unwrap_or(s.call_timeout_ms);
    let outcome = execute::call(
        cap,
        ctx.caller,
        args,
        s.max_rows,
        s.max_result_bytes,
        timeout_ms,
        finish,
    );
    let round = mrtr::finish();
    let e = match outcome {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if let Some(round) = round {
        if !round.undeclared.is_empty() {
            let names: Vec<&String> = round.undeclared.keys().collect();
            let err = RpcError::new(
                crate::modern::MISSING_CLIENT_CAPABILITY,
                format!("Missing required client capability: {names:?}"),
            )
            .with_data(json!({"requiredCapabilities": round.undeclared}));
            return Err(reply(err.into()));
        }
        if !round.missing.is_empty() {
            return Err(Stop::Reply(Ok(json!({
                "resultType": "input_required",
                "inputRequests": round.missing,
                "requestState": mrtr::issue(&key, &binding, &round.responses),
            }))));
        }
        if let Some(message) = round.blocked {
            return Err(Stop::Failed(PublicError {
                message,
                internal: false,
            }));
        }
    }
    Err(Stop::Failed(execute::public_error(
        &e,
        &session::trace_id(),
    )))
}

/// A resource or prompt failing: the app refusing its input is -32602, anything else -32603.
fn method_error(e: PublicError) -> RpcError {
    let code = if e.internal {
        jsonrpc::INTERNAL_ERROR
    } else {
        jsonrpc::INVALID_PARAMS
    };
    RpcError::new(code, e.message)
}

/// `params.arguments`: absent or null is none; anything but an object is invalid.
fn arguments(params: &Map<String, Value>) -> Result<Map<String, Value>, RpcError> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(a)) => Ok(a.clone()),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: \"arguments\" must be an object",
        )),
    }
}

fn call_tool(ctx: &Context, params: &Map<String, Value>) -> Answer {
    let cap = named(ctx, params, Kind::Tool)?;
    let args = arguments(params)?;
    if let (Some(_), Some(headers)) = (ctx.modern, ctx.headers) {
        crate::modern::check_param_headers(headers, &cap.input_schema, &args)?;
    }
    if let Some(limit) = &cap.meta.rate_limit {
        let bucket = format!("tool:{}:{}", cap.name, ctx.caller.principal.limit_key());
        match crate::ledger::rate_hit(&bucket, 60, limit.per_minute) {
            Ok(None) => {}
            Ok(Some(retry)) => {
                return Ok(tool_error(format!(
                    "Rate limit of {} calls per minute reached for {}: retry in {retry} s",
                    limit.per_minute, cap.name
                )))
            }
            Err(()) => {
                return Ok(tool_error(format!(
                    "{} is unavailable: its rate limit cannot be checked",
                    cap.name
                )))
            }
        }
    }
    // Invalid argument values are the model's to fix: a tool error, not a protocol error.
    let validator = match cap.validator() {
        Ok(v) => v,
        Err(e) => {
            return Ok(tool_error(format!(
                "{} has an unusable input schema: {e}",
                cap.name
            )))
        }
    };
    {
        let problems: Vec<String> = validator
            .iter_errors(&Value::Object(args.clone()))
            .take(10)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Ok(tool_error(format!(
                "Invalid arguments for {}: {}",
                cap.name,
                problems.join("; ")
            )));
        }
    }
    // policy hook: execution predicate and approval (src/approval.rs) before every run.
    let gate = crate::approval::Call {
        registry: ctx.registry,
        caller: ctx.caller,
        client_capabilities: ctx.modern.map(|m| &m.client_capabilities),
        params,
    };
    let (args, gated_params) = match crate::approval::gate(&gate, cap, args) {
        crate::approval::Gate::Run(args, p) => (args, p),
        crate::approval::Gate::Deny(m) => return Ok(tool_error(m)),
        crate::approval::Gate::Reply(v) => return Ok(v),
        crate::approval::Gate::Invalid(e) => return Err(e.into()),
    };
    let params = gated_params.as_ref().unwrap_or(params);
    match run(ctx, cap, &args, params, "tools/call", |r| {
        tool_result(ctx, cap, r)
    }) {
        Ok(result) => Ok(result),
        Err(Stop::Reply(a)) => a,
        Err(Stop::Failed(e)) => Ok(tool_error(e.message)),
    }
}

/// The tools/call result for what the function returned, or why it must not be given (the call
/// then fails and its writes are undone, see execute::call).
fn tool_result(ctx: &Context, cap: &Capability, returned: Returned) -> Result<Value, String> {
    let max = ctx.registry.settings.max_result_bytes;
    let (text, structured) = match (cap.returns, returned) {
        (ReturnShape::ToolResult, Returned::One(Some(v))) => return Ok(v),
        (_, Returned::Rows { rows, truncated }) => {
            let mut s = json!({"rows": rows});
            if truncated {
                s["truncated"] = json!(true);
            }
            (s.to_string(), Some(s))
        }
        (ReturnShape::Json | ReturnShape::Row, Returned::One(Some(v))) => {
            let s = if v.is_object() {
                v
            } else {
                json!({"result": v})
            };
            (s.to_string(), Some(s))
        }
        (ReturnShape::Void, _) => ("OK".to_string(), None),
        (_, Returned::One(Some(Value::String(s)))) => (s, None),
        (_, Returned::One(Some(v))) => (v.to_string(), None),
        (_, Returned::One(None)) => ("null".to_string(), None),
    };
    if text.len() + events::bytes() > max {
        return Err(format!(
            "the result is {} bytes (with {} bytes of notifications), over the limit of {max} bytes",
            text.len(),
            events::bytes()
        ));
    }
    if let (Some(v), Some(s)) = (&cap.output_validator, &structured) {
        if !v.is_valid(s) {
            return Err(format!(
                "{} returned a result that does not match its outputSchema",
                cap.name
            ));
        }
    }
    let mut result = json!({"content": [{"type": "text", "text": text}]});
    if let Some(s) = structured {
        if ctx.version >= "2025-06-18" {
            result["structuredContent"] = s;
        }
    }
    Ok(result)
}

/// Resource not found: -32002 up to 2025-11-25, -32602 from 2026-07-28.
fn not_found_for(ctx: &Context, uri: &str) -> Failure {
    if ctx.modern.is_some() {
        return RpcError::invalid_params(format!("Resource not found: {uri}"))
            .with_data(json!({"uri": uri}))
            .into();
    }
    not_found(uri)
}

fn not_found(uri: &str) -> Failure {
    RpcError::new(
        jsonrpc::RESOURCE_NOT_FOUND,
        format!("Resource not found: {uri}"),
    )
    .with_data(json!({"uri": uri}))
    .into()
}

fn read_resource(ctx: &Context, params: &Map<String, Value>) -> Answer {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Invalid params: \"uri\" must be a string"))?;
    let found = visible(ctx, |c| {
        matches!(c.kind, Kind::Resource | Kind::ResourceTemplate)
    })
    .find_map(|c| c.template.as_ref()?.matches(uri).map(|vars| (c, vars)));
    let Some((cap, vars)) = found else {
        return Err(not_found_for(ctx, uri));
    };
    if !ctx.caller.has_scopes(cap) {
        return Err(Failure {
            error: not_found_for(ctx, uri).error,
            // policy hook: see named().
            missing_scopes: crate::policy::scopes_to_request(ctx.registry, cap),
        });
    }
    let args: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let value = match run(ctx, cap, &args, params, "resources/read", Ok) {
        Ok(Returned::One(Some(v))) if !v.is_null() => v,
        Ok(_) => return Err(not_found_for(ctx, uri)),
        Err(Stop::Reply(a)) => return a,
        Err(Stop::Failed(e)) => return Err(method_error(e).with_data(json!({"uri": uri})).into()),
    };
    let mut content = json!({"uri": uri});
    match (cap.returns, value) {
        (ReturnShape::Bytes, Value::String(b64)) => {
            content["blob"] = json!(b64);
            content["mimeType"] = json!(cap
                .meta
                .mime_type
                .clone()
                .unwrap_or("application/octet-stream".into()));
        }
        (ReturnShape::Json | ReturnShape::Row | ReturnShape::ToolResult, v) => {
            content["text"] = json!(v.to_string());
            content["mimeType"] = json!(cap
                .meta
                .mime_type
                .clone()
                .unwrap_or("application/json".into()));
        }
        (_, Value::String(s)) => {
            content["text"] = json!(s);
            content["mimeType"] = json!(cap.meta.mime_type.clone().unwrap_or("text/plain".into()));
        }
        (_, v) => {
            content["text"] = json!(v.to_string());
            content["mimeType"] = json!(cap.meta.mime_type.clone().unwrap_or("text/plain".into()));
        }
    }
    Ok(json!({"contents": [content]}))
}

fn get_prompt(ctx: &Context, params: &Map<String, Value>) -> Answer {
    let cap = named(ctx, params, Kind::Prompt)?;
    let args = arguments(params)?;
    for (k, v) in &args {
        if !cap.params.iter().any(|p| &p.name == k) {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: {} has no argument \"{k}\"",
                cap.name
            ))
            .into());
        }
        if !v.is_string() {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: argument \"{k}\" must be a string"
            ))
            .into());
        }
    }
    if let Some(p) = cap
        .params
        .iter()
        .find(|p| p.required && !args.contains_key(&p.name))
    {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: missing required argument \"{}\"",
            p.name
        ))
        .into());
    }
    let value = match run(ctx, cap, &args, params, "prompts/get", Ok) {
        Ok(Returned::One(v)) => v.unwrap_or(Value::Null),
        Ok(Returned::Rows { .. }) => Value::Null,
        Err(Stop::Reply(a)) => return a,
        Err(Stop::Failed(e)) => return Err(method_error(e).into()),
    };
    let (description, messages) = match value {
        Value::String(text) => (
            None,
            json!([{"role": "user", "content": {"type": "text", "text": text}}]),
        ),
        Value::Array(m) => (None, Value::Array(m)),
        Value::Object(mut o) if o.get("messages").is_some_and(Value::is_array) => (
            o.remove("description"),
            o.remove("messages").unwrap_or_default(),
        ),
        _ => {
            let trace = session::trace_id();
            pgrx::ereport!(
                PgLogLevel::LOG_SERVER_ONLY,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "chumbo trace {trace}: prompt {} returned neither text nor messages",
                    cap.name
                )
            );
            return Err(RpcError::new(
                jsonrpc::INTERNAL_ERROR,
                format!(
                    "Prompt {} returned no messages (trace id {trace})",
                    cap.name
                ),
            )
            .into());
        }
    };
    let mut result = json!({"messages": messages});
    if let Some(d) = description.or_else(|| cap.description.clone().map(Value::String)) {
        result["description"] = d;
    }
    Ok(result)
}

fn complete(ctx: &Context, params: &Map<String, Value>) -> Answer {
    let bad =
        |m: &str| -> Failure { RpcError::invalid_params(format!("Invalid params: {m}")).into() };
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("\"ref\" must be an object"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("\"argument\" must be an object"))?;
    let arg_name = argument
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("\"argument.name\" must be a string"))?;
    let prefix = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let cap = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => named(ctx, reference, Kind::Prompt)?,
        Some("ref/resource") => {
            let uri = reference
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("\"ref.uri\" must be a string"))?;
            visible(ctx, |c| {
                c.kind == Kind::ResourceTemplate && c.meta.resource.as_deref() == Some(uri)
            })
            .next()
            .ok_or_else(|| bad(&format!("unknown resource template {uri}")))?
        }
        _ => {
            return Err(bad(
                "\"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
            ))
        }
    };
    let values: Vec<String> = match cap.meta.completions.get(arg_name) {
        None => vec![],
        Some(crate::metadata::Completion::Values(all)) => all
            .iter()
            .filter(|v| v.starts_with(prefix))
            .take(101)
            .cloned()
            .collect(),
        Some(crate::metadata::Completion::Function(func)) => {
            complete_with_function(ctx, func, prefix)
                .map_err(|m| RpcError::new(jsonrpc::INTERNAL_ERROR, m))?
        }
    };
    let has_more = values.len() > 100;
    let values: Vec<String> = values.into_iter().take(100).collect();
    Ok(json!({"completion": {"values": values, "hasMore": has_more}}))
}

/// Calls the completion function named in metadata, as the caller. The name is resolved to a
/// catalog entry first; only catalog-quoted identifiers reach the SQL text.
fn complete_with_function(ctx: &Context, func: &str, prefix: &str) -> Result<Vec<String>, String> {
    let trace = session::trace_id();
    let qualified = Spi::connect(|c| {
        c.select(
            "select pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname)
           from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
          where p.oid = pg_catalog.to_regprocedure($1 || '(text)')",
            Some(1),
            &[func.into()],
        )?
        .first()
        .get_one::<String>()
    })
    .ok()
    .flatten()
    .ok_or_else(|| format!("completion function {func}(text) does not exist (trace id {trace})"))?;
    let sql = format!("select v::pg_catalog.text from {qualified}($1) as v limit 101");
    let prefix = prefix.to_string();
    let timeout_ms = ctx.registry.settings.call_timeout_ms;
    session::run_as_caller(
        ctx.caller.role_oid,
        &ctx.caller.claims,
        timeout_ms,
        move || {
            Spi::connect(|c| {
                let mut out = vec![];
                for row in c.select(sql.as_str(), None, &[prefix.as_str().into()])? {
                    if let Some(v) = row.get::<String>(1)? {
                        out.push(v);
                    }
                }
                Ok::<_, pgrx::spi::Error>(out)
            })
        },
    )
    .map_err(|e| execute::public_error(&e, &trace).message)?
    .map_err(|_| format!("completion failed (trace id {trace})"))
}
