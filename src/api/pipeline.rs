//! The HTTP pipeline of `chumbo.http` (and `chumbo.mcp`): one request through receive,
//! authenticate, classify, identify, admit, batch, dispatch and frame, each step a function that
//! either hands its result on or ends the request with its answer (docs/architecture.md).

use super::*;
use crate::trace_context::timed;

pub(super) fn header<'a>(headers: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .and_then(|(_, v)| v.as_str())
}

pub(super) fn bearer_token(headers: &Map<String, Value>) -> Option<&str> {
    let h = header(headers, "authorization")?;
    let (scheme, token) = h.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

pub(super) fn challenge(
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

pub(super) fn scope_challenge(resource_metadata: Option<&str>, scopes: &[String]) -> String {
    let needed = scopes.join(" ");
    challenge(
        resource_metadata,
        Some(("insufficient_scope", &format!("requires scopes: {needed}"))),
        scopes,
    )
}

/// `subscriptions/listen`: its acknowledgement as the only event, and the stream the edge holds.
pub(super) fn listen(msg: &Value, id: &Value, caller: &Caller, registry: &Registry) -> Answer {
    match subscriptions::listen(msg, id, caller, registry) {
        Ok((ack, stream)) => {
            let mut a = answer(200, None);
            a.events = vec![ack];
            a.listen = Some(Box::new(stream));
            a
        }
        Err(e) => refusal(id, e, true),
    }
}

/// The answer to a request `e` ends on its own (its status from [Error::status]).
pub(super) fn refusal(id: &Value, e: Error, stateless: bool) -> Answer {
    answer(e.status(stateless), Some(jsonrpc::error(id, &e.rpc())))
}

/// A credential, by its shape: an API key (`x-api-key`, or a bearer token that starts with
/// chumbo's key prefix) or a JWT (any other bearer token).
pub(super) enum Credential<'a> {
    ApiKey(&'a str),
    Jwt(&'a str),
    None,
}

pub(super) fn credential(headers: &Map<String, Value>, keys_accepted: bool) -> Credential<'_> {
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
pub(super) fn authenticate(
    settings: &crate::settings::Settings,
    headers: &Map<String, Value>,
    resource: Option<&str>,
    resource_metadata: Option<&str>,
    req_id: &Value,
) -> Result<(Value, Option<apikey::VerifiedKey>), Answer> {
    let jwt_modes = settings.allows(AuthMode::Bearer) || settings.allows(AuthMode::Oauth);
    let key_mode = settings.allows(AuthMode::ApiKey);
    let jwt_refusal = |error: Option<(&str, &str)>, message: &str| {
        let mut a = refusal(req_id, Error::Unauthorized(message.to_string()), false);
        a.headers.insert(
            "www-authenticate".into(),
            json!(challenge(resource_metadata, error, &[])),
        );
        a
    };
    let key_refusal = |message: &str| {
        let mut a = refusal(req_id, Error::Unauthorized(message.to_string()), false);
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
        Credential::Jwt(token) if jwt_modes => match auth::verify_cached(token, settings, resource)
        {
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
    pub(super) static DISPATCHED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The trace id of a request refused before any method ran: its valid `traceparent` header's, else
/// a new one.
fn refused_trace_id(request: &Value) -> String {
    request
        .get("headers")
        .and_then(Value::as_object)
        .and_then(crate::trace_context::of_headers)
        .map_or_else(crate::call::scope::new_trace_id, |t| t.trace_id)
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
    let mut a = a;
    replica::mark_needs_primary(&mut a);
    // 421: the request goes to the primary, which audits it (src/api/replica.rs).
    if !dispatched && a.status >= 400 && a.status != 421 && registry::current().settings.audit {
        let principal = principal.unwrap_or_else(|| "unauthenticated".to_string());
        timed("audit", || {
            ledger::audit(
                true,
                ledger::Event {
                    trace_id: &refused_trace_id(request),
                    era: "http",
                    method: None,
                    capability: None,
                    principal: &principal,
                    outcome: &format!("refused {}", a.status),
                    duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                    bytes: a.body.as_ref().map_or(0, crate::render::json_len),
                    detail: None,
                    run_id: None,
                },
            )
        });
    }
    a
}

/// What the transport step read off an HTTP request.
pub(super) struct Received<'r> {
    pub(super) headers: &'r Map<String, Value>,
    pub(super) resource: Option<&'r str>,
    pub(super) resource_metadata: Option<&'r str>,
    /// The body: parsed before authenticating only so that every error can echo the request id;
    /// nothing runs and nothing about the server is revealed before the caller is authenticated.
    pub(super) parsed: Result<Value, Error>,
    /// The id to echo in an error about the whole request.
    pub(super) req_id: Value,
}

/// What the dispatch step produced, before framing.
pub(super) struct Dispatched {
    pub(super) replies: Vec<Reply>,
    pub(super) events: Vec<Value>,
    /// The scopes the caller lacked, when that is why a method failed (-> 403).
    pub(super) missing_scopes: Vec<String>,
}

pub(super) fn answer_http(
    request: &Value,
    verified_claims: Option<Value>,
    principal: &mut Option<String>,
) -> Answer {
    match pipeline(request, verified_claims, principal) {
        Ok(a) | Err(a) => a,
    }
}

/// The steps of one HTTP request, in order. Each either hands the next what it needs or decides
/// the answer (`Err`), which ends the request there.
pub(super) fn pipeline(
    request: &Value,
    verified_claims: Option<Value>,
    principal: &mut Option<String>,
) -> Result<Answer, Answer> {
    let registry = timed("registry", registry::current);
    replica::standby_gate(&registry.settings)?;
    let empty = Map::new();
    let mut received = receive(request, &registry.settings, &empty)?;
    let (claims, api_key) = match verified_claims {
        Some(c) => (c, None),
        None => timed("authenticate", || {
            authenticate(
                &registry.settings,
                received.headers,
                received.resource,
                received.resource_metadata,
                &received.req_id,
            )
        })?,
    };
    let msg = std::mem::replace(&mut received.parsed, Ok(Value::Null))
        .map_err(|e| refusal(&Value::Null, e, false))?;
    let era = classify(&msg, received.headers, &received.req_id)?;
    let caller = timed("identify", || {
        identify(&registry, request, &received, claims, api_key.as_ref())
    })?;
    *principal = Some(caller.principal.digest().to_string());
    let messages = batch(&msg, &era, &registry.settings)?;
    timed("admit", || {
        let full = || {
            admit(
                &registry.settings,
                &caller,
                &received.req_id,
                messages.len(),
            )
        };
        replica::admission(
            &registry,
            request,
            &caller,
            &received.req_id,
            messages.len(),
            full,
        )
    })?;
    let dispatched = dispatch(&registry, &caller, &msg, &messages, &era, &received)?;
    Ok(frame(&msg, &era, dispatched, received.resource_metadata))
}

/// Transport: a POST of application/json within the size limit.
pub(super) fn receive<'r>(
    request: &'r Value,
    settings: &crate::settings::Settings,
    empty: &'r Map<String, Value>,
) -> Result<Received<'r>, Answer> {
    let headers = request
        .get("headers")
        .and_then(Value::as_object)
        .unwrap_or(empty);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("POST")
        .to_ascii_uppercase();
    if method != "POST" {
        let mut a = answer(405, None);
        a.headers.insert("allow".into(), json!("POST"));
        return Err(a);
    }
    // The transport carries JSON-RPC as application/json; a request that says otherwise is not
    // one (no header at all is accepted: SQL callers of chumbo.http often pass none).
    if let Some(wrong) = header(headers, "content-type").and_then(not_json_media_type) {
        return Err(refusal(
            &Value::Null,
            Error::UnsupportedMediaType(wrong),
            false,
        ));
    }
    // A compressed body would be read as the text it is not (RFC 9110 §8.4: a server that does
    // not decode a content coding answers 415 and says which it takes).
    let coded = header(headers, "content-encoding").is_some_and(|codings| {
        codings
            .split(',')
            .any(|c| !c.trim().is_empty() && !c.trim().eq_ignore_ascii_case("identity"))
    });
    if coded {
        let e = Error::UnsupportedMediaType("sent without a Content-Encoding");
        let mut a = refusal(&Value::Null, e, false);
        a.headers
            .insert("accept-encoding".into(), json!("identity"));
        return Err(a);
    }
    let body_text = match request.get("body") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if body_text.len() > settings.max_body_bytes {
        return Err(refusal(&Value::Null, Error::PayloadTooLarge, false));
    }
    let parsed = parse_body(&body_text);
    let req_id = parsed.as_ref().map(id_of).unwrap_or(Value::Null);
    Ok(Received {
        headers,
        resource: request.get("resource").and_then(Value::as_str),
        resource_metadata: request.get("resource_metadata").and_then(Value::as_str),
        parsed,
        req_id,
    })
}

/// What a Content-Type lacks to be JSON text: the media type, or UTF-8 when it names another
/// charset (JSON between systems is UTF-8, RFC 8259 §8.1; the body is read as such).
fn not_json_media_type(content_type: &str) -> Option<&'static str> {
    let mut parts = content_type.split(';');
    let essence = parts.next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Some("application/json");
    }
    let other_charset = parts
        .filter_map(|p| p.split_once('='))
        .any(|(name, value)| {
            let value = value.trim().trim_matches('"');
            name.trim().eq_ignore_ascii_case("charset")
                && !value.eq_ignore_ascii_case("utf-8")
                && !value.eq_ignore_ascii_case("utf8")
        });
    other_charset.then_some("application/json in UTF-8")
}

/// The era, decided by the body as the official SDK does; the MCP-Protocol-Version header is only
/// cross-checked (and, for the stateless era, Mcp-Method and Mcp-Name). A stateless notification
/// is accepted here (202): nothing runs for it.
pub(super) fn classify(
    msg: &Value,
    headers: &Map<String, Value>,
    req_id: &Value,
) -> Result<Era, Answer> {
    let header_version = header(headers, "mcp-protocol-version").map(str::trim);
    if msg.is_array() || !stateless::is_stateless(msg, header_version) {
        return match header_version.map(|v| (v, Revision::parse(v))) {
            // Without the header the spec says to assume 2025-03-26.
            None => Ok(Era::Legacy(Revision::HTTP_DEFAULT)),
            Some((_, Some(r))) => Ok(Era::Legacy(r)),
            Some((v, None)) => {
                let m = format!(
                    "unsupported protocol version {v} (supported: {})",
                    Revision::ALL.map(Revision::as_str).join(", ")
                );
                Err(refusal(req_id, Error::BadRequest(m), false))
            }
        };
    }
    if msg.get("id").is_none() {
        return Err(answer(202, None));
    }
    // A header that disagrees with the body is a mismatch before it is a version question.
    let meta_version = msg
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    if let (Some(h), Some(b)) = (header_version, meta_version) {
        if h != b {
            let e = stateless::mismatch("the MCP-Protocol-Version header does not match the body");
            return Err(refusal(req_id, e, true));
        }
    }
    stateless::envelope(msg)
        .and_then(|env| stateless::check_headers(headers, msg).map(|_| Era::Stateless(env)))
        .map_err(|e| refusal(req_id, e, true))
}

/// Who the caller is: the role its claims name must be allowed to run capabilities (403).
pub(super) fn identify(
    registry: &Registry,
    request: &Value,
    received: &Received,
    claims: Value,
    api_key: Option<&apikey::VerifiedKey>,
) -> Result<Caller, Answer> {
    let origin = client_origin(request, received.headers);
    caller_from(registry, Some(claims), origin, api_key)
        .map_err(|e| refusal(&received.req_id, Error::Forbidden(e.to_string()), false))
}

/// Where the request comes from: anonymous callers are told apart by it, for their rate-limit
/// bucket. The edge passes the client address; without the edge's word, the entry the nearest
/// proxy appended to X-Forwarded-For (the client can only prepend entries, so the first one is
/// whatever it likes).
pub(super) fn client_origin(request: &Value, headers: &Map<String, Value>) -> Option<String> {
    request
        .get("client")
        .and_then(Value::as_str)
        .or_else(|| header(headers, "x-forwarded-for").and_then(|f| f.rsplit(',').next()))
        .map(|s| s.trim().to_string())
}

/// The caller's share: requests in flight and per minute (429). Each message of a batch counts
/// as a request: it holds a slot and a hit of its own.
pub(super) fn admit(
    settings: &crate::settings::Settings,
    caller: &Caller,
    req_id: &Value,
    messages: usize,
) -> Result<(), Answer> {
    let messages = u32::try_from(messages).unwrap_or(u32::MAX);
    let too_many = |message: &str, retry_after: String| {
        let mut a = refusal(req_id, Error::TooManyRequests(message.to_string()), false);
        a.headers.insert("retry-after".into(), json!(retry_after));
        a
    };
    if !ledger::claim_in_flight_slots(
        caller.principal.limit_key(),
        settings.max_in_flight,
        messages,
    ) {
        let message = match messages {
            1 => format!(
                "{} of this caller's requests are already running",
                settings.max_in_flight
            ),
            n => format!(
                "at most {} of this caller's requests may run at once, and fewer than the {n} this batch needs are free",
                settings.max_in_flight
            ),
        };
        return Err(too_many(&message, "1".into()));
    }
    if let Some(limit) = settings.request_limit() {
        let bucket = format!("request:{}", caller.principal.limit_key());
        match ledger::rate_hit(&bucket, 60, limit, messages) {
            Ok(None) => {}
            Ok(Some(retry_after)) => {
                return Err(too_many(
                    &format!("retry in {retry_after} s"),
                    retry_after.to_string(),
                ))
            }
            Err(()) => return Err(too_many("the rate limiter is unavailable", "1".into())),
        }
    }
    Ok(())
}

/// The messages of the request: one, or a batch where the revision has them (2025-03-26), of at
/// most `max_batch_messages` (and never more than may run at once).
pub(super) fn batch<'m>(
    msg: &'m Value,
    era: &Era,
    settings: &crate::settings::Settings,
) -> Result<Vec<&'m Value>, Answer> {
    let invalid = |m: &str| refusal(&Value::Null, Error::InvalidRequest(m.to_string()), false);
    let Value::Array(items) = msg else {
        return Ok(vec![msg]);
    };
    if !matches!(era, Era::Legacy(r) if r.allows_batches()) {
        return Err(invalid("batches are only allowed in MCP 2025-03-26"));
    }
    if items.is_empty() {
        return Err(invalid("empty batch"));
    }
    if items.iter().any(|m| stateless::is_stateless(m, None)) {
        return Err(invalid("MCP 2026-07-28 has no batches"));
    }
    let cap = match settings.max_in_flight {
        0 => settings.max_batch_messages,
        n => n.min(settings.max_batch_messages),
    } as usize;
    if items.len() > cap {
        return Err(invalid(&format!(
            "a batch may hold at most {cap} messages (max_batch_messages, max_in_flight); this one has {}",
            items.len()
        )));
    }
    Ok(items.iter().collect())
}

/// Runs each message (see [process_message]); subscriptions/listen opens a stream instead.
pub(super) fn dispatch(
    registry: &Registry,
    caller: &Caller,
    msg: &Value,
    messages: &[&Value],
    era: &Era,
    received: &Received,
) -> Result<Dispatched, Answer> {
    if let Era::Stateless(env) = era {
        if msg.get("method").and_then(Value::as_str) == Some(subscriptions::METHOD) {
            return Err(listen(msg, &received.req_id, caller, registry));
        }
        let Processed {
            reply,
            missing_scopes,
            mut events,
        } = process_message(
            registry,
            caller,
            msg,
            era,
            Some(received.headers),
            true,
            true,
        );
        events.retain(|e| {
            e["method"] != "notifications/message"
                || stateless::log_passes(
                    env.log_level.as_deref(),
                    e["params"]["level"].as_str().unwrap_or(""),
                )
        });
        return Ok(Dispatched {
            replies: reply.into_iter().collect(),
            events,
            missing_scopes,
        });
    }
    let mut out = Dispatched {
        replies: vec![],
        events: vec![],
        missing_scopes: vec![],
    };
    for (i, m) in messages.iter().enumerate() {
        if msg.is_array() && m.get("method").and_then(Value::as_str) == Some("initialize") {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            let e = Error::InvalidRequest("initialize must not be part of a batch".into());
            out.replies
                .push(Reply::of(jsonrpc::error(&id, &e.rpc()), true));
            continue;
        }
        let last = i + 1 == messages.len();
        let p = process_message(registry, caller, m, era, Some(received.headers), last, true);
        out.events.extend(p.events);
        out.replies.extend(p.reply);
        if !p.missing_scopes.is_empty() {
            out.missing_scopes = p.missing_scopes;
        }
    }
    Ok(out)
}

/// The HTTP status, headers and body for what the messages produced.
pub(super) fn frame(
    msg: &Value,
    era: &Era,
    mut d: Dispatched,
    resource_metadata: Option<&str>,
) -> Answer {
    let scope_refusal = |body: Option<Value>, scopes: &[String]| {
        let mut a = answer(403, body);
        a.headers.insert(
            "www-authenticate".into(),
            json!(scope_challenge(resource_metadata, scopes)),
        );
        a
    };
    if era.is_stateless() {
        let Some(reply) = d.replies.pop() else {
            return answer(202, None);
        };
        let mut a = match reply.error_code {
            Some(_) if !d.missing_scopes.is_empty() => {
                scope_refusal(Some(reply.value), &d.missing_scopes)
            }
            Some(code) => answer_reply(error::status_of_code(code, true), reply),
            None => answer_reply(200, reply),
        };
        a.events = d.events;
        return a;
    }
    if !d.missing_scopes.is_empty() && !msg.is_array() {
        return scope_refusal(d.replies.pop().map(|r| r.value), &d.missing_scopes);
    }
    if d.replies.is_empty() {
        return answer(202, None);
    }
    // A batch's errors ride a 200; a single message's status is its error's (see error.rs).
    let status = match (msg.is_array(), d.replies[0].error_code) {
        (false, Some(code)) => error::status_of_code(code, false),
        _ => 200,
    };
    let mut a = if msg.is_array() {
        let values = d.replies.into_iter().map(|r| r.value).collect();
        answer(status, Some(Value::Array(values)))
    } else {
        match d.replies.pop() {
            Some(one) => answer_reply(status, one),
            None => answer(status, Some(Value::Array(vec![]))),
        }
    };
    a.events = d.events;
    a
}

/// The answer's headers, with the content type of a body.
pub(super) fn answer_headers(a: &mut Answer) -> Map<String, Value> {
    let mut headers = std::mem::take(&mut a.headers);
    if a.body.is_some() {
        headers
            .entry("content-type")
            .or_insert(json!("application/json"));
    }
    headers
}

/// The `{status, headers, body, events, listen?}` object chumbo.http returns, around the body
/// value as it is.
pub(super) fn answer_json(mut a: Answer) -> JsonValue {
    let headers = answer_headers(&mut a);
    let mut out = Map::new();
    out.insert("status".into(), json!(a.status));
    out.insert("headers".into(), Value::Object(headers));
    let body = a.body.map(|b| written(b, a.body_text));
    out.insert("body".into(), body.unwrap_or(Value::Null));
    out.insert("events".into(), Value::Array(a.events));
    if let Some(l) = a.listen {
        out.insert("listen".into(), *l);
    }
    JsonValue(Value::Object(out))
}
