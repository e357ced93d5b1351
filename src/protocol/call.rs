//! Running a capability for a method: finding it as the caller may see it, its arguments, and
//! the run itself with MRTR (multi round-trip input).

use super::{Context, MethodResult};
use crate::approval;
use crate::error::Error;
use crate::execute::{self, PublicError, Returned};
use crate::mrtr;
use crate::pages;
use crate::policy;
use crate::projection;
use crate::registry::{Capability, Kind};
use crate::session;
use serde_json::{json, Map, Value};

pub(super) fn visible<'r>(
    ctx: &'r Context,
    kind: impl Fn(&Capability) -> bool,
) -> impl Iterator<Item = &'r Capability> {
    ctx.registry
        .capabilities
        .iter()
        .map(|c| &**c)
        // the visibility predicate last: it runs application code (src/policy.rs)
        .filter(move |c| {
            kind(c)
                && ctx.caller.may_use(c)
                && !ctx.registry.refuses_definer(c)
                && policy::visible(c, ctx.caller)
        })
}

pub(super) fn offers_completions(ctx: &Context) -> bool {
    visible(ctx, |c| !c.meta.completions.is_empty())
        .next()
        .is_some()
}

/// The capability named in `params.name`, or the protocol error a caller who may not use it gets.
pub(super) fn named<'r>(
    ctx: &'r Context,
    params: &Map<String, Value>,
    kind: Kind,
) -> Result<&'r Capability, Error> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("\"name\" must be a string".into()))?;
    let unknown = |missing_scopes: Vec<String>| Error::UnknownCapability {
        kind: kind.as_str(),
        name: name.to_string(),
        missing_scopes,
    };
    let cap = ctx
        .registry
        .find(name, kind)
        .ok_or_else(|| unknown(vec![]))?;
    if !session::can_execute(cap.oid, ctx.caller.role_oid) || ctx.registry.refuses_definer(cap) {
        return Err(unknown(vec![]));
    }
    if !ctx.caller.has_scopes(cap) {
        // no insufficient_scope challenge when the scopes come from the scope resolver
        return Err(unknown(policy::scopes_to_request(ctx.registry, cap)));
    }
    // a capability its visibility predicate hides is unknown
    if !policy::visible(cap, ctx.caller) {
        return Err(unknown(vec![]));
    }
    Ok(cap)
}

/// Why a capability did not produce a value.
pub(super) enum Stop {
    /// It failed; the caller may see this much.
    Failed(PublicError),
    /// The method's answer is already decided: `input_required`, or a protocol error.
    Reply(MethodResult),
}

/// Runs a capability, with MRTR: earlier rounds' input (from a verified `requestState`) and this
/// retry's `inputResponses` are available to `chumbo.input`; input still missing ends the call as
/// `input_required` with a fresh `requestState`. `verified`: the responses the approval gate
/// already verified (it consumed the requestState).
#[allow(clippy::too_many_arguments)]
pub(super) fn run<T>(
    ctx: &Context,
    cap: &Capability,
    args: &Map<String, Value>,
    params: &Map<String, Value>,
    verified: Option<Map<String, Value>>,
    method: &str,
    window: &pages::Window,
    finish: impl FnOnce(Returned) -> Result<T, String>,
) -> Result<T, Stop> {
    let reply = |e: Error| Stop::Reply(Err(e));
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
    if ctx.era.can_ask_for_input() {
        if let Some(verified) = verified {
            responses = verified;
        } else {
            if let Some(state) = params.get("requestState") {
                let state = state.as_str().ok_or_else(|| {
                    reply(Error::InvalidParams("requestState must be a string".into()))
                })?;
                responses = mrtr::verify(&key, state, &binding).map_err(reply)?;
            }
            responses.extend(approval::from_client(params).map_err(reply)?);
        }
    }
    let client_capabilities = ctx
        .era
        .envelope()
        .map(|e| e.client_capabilities.clone())
        .unwrap_or(json!({}));
    mrtr::begin(ctx.era.can_ask_for_input(), client_capabilities, responses);
    let s = &ctx.registry.settings;
    let timeout_ms = cap.meta.timeout_ms.unwrap_or(s.call_timeout_ms);
    let outcome = execute::call(
        cap,
        ctx.caller,
        args,
        window,
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
            return Err(reply(Error::MissingClientCapability {
                names: format!("{names:?}"),
                required: Value::Object(round.undeclared),
            }));
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
    // the setting error_projection may rephrase what the model is told (src/projection.rs)
    let trace = crate::scope::trace_id();
    let shown = execute::public_error(&e, &trace);
    Err(Stop::Failed(projection::model_error(
        s.error_projection.as_deref(),
        ctx.caller,
        &cap.name,
        shown,
        &e,
        &trace,
        timeout_ms,
    )))
}

/// A resource or prompt failing: the app refusing its input is -32602, anything else -32603.
pub(super) fn method_error(e: PublicError, uri: Option<&str>) -> Error {
    Error::Capability {
        message: e.message,
        internal: e.internal,
        uri: uri.map(String::from),
    }
}

/// `params.arguments`: absent or null is none; anything but an object is invalid.
pub(super) fn arguments(params: &Map<String, Value>) -> Result<Map<String, Value>, Error> {
    match params.get("arguments") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(a)) => Ok(a.clone()),
        Some(_) => Err(Error::InvalidParams(
            "\"arguments\" must be an object".into(),
        )),
    }
}
