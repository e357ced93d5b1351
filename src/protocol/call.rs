//! Running a capability for a method: finding it as the caller may see it, its arguments, and
//! the run itself with MRTR (multi round-trip input).

use super::Context;
use crate::call::execute::{PublicError, Returned};
use crate::call::mrtr;
use crate::call::pages;
use crate::call::plan::EraFacts;
use crate::call::policy;
use crate::call::steps::{self, Round, Stop};
use crate::catalog::registry::{Capability, Kind};
use crate::error::{Error, Refusal};
use crate::identity::session;
use crate::tokens;
use serde_json::{Map, Value};

/// Of `candidates` (the registry's, src/catalog/registry/index.rs), those the caller may see and
/// use.
pub(super) fn visible<'r>(
    ctx: &'r Context,
    candidates: impl Iterator<Item = &'r Capability> + 'r,
) -> impl Iterator<Item = &'r Capability> + 'r {
    candidates.filter(move |c| policy::usable(ctx.registry, ctx.caller, c))
}

pub(super) fn offers_completions(ctx: &Context) -> bool {
    visible(ctx, ctx.registry.capabilities.completing())
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
        .capabilities
        .find(name, kind)
        .ok_or_else(|| unknown(vec![]))?;
    if !session::can_execute(&cap.executors, ctx.caller.role_oid)
        || ctx.registry.refuses_definer(cap)
    {
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

/// What the revision decides about a call, as the call's plan carries it.
pub(super) fn era_facts(ctx: &Context) -> EraFacts {
    EraFacts {
        protocol_version: ctx.era.version().to_string(),
        can_ask_for_input: ctx.era.can_ask_for_input(),
        structured_content: ctx.era.has_structured_content(),
        client_capabilities: ctx.era.envelope().map(|e| e.client_capabilities.clone()),
    }
}

/// Runs a resource or a prompt (tools run their plan, src/call/steps.rs): the input of earlier
/// rounds from a verified `requestState` and this request's `inputResponses`, then the run in an
/// input round. A requestState is bound to the resource's URI, or the prompt's arguments.
pub(super) fn run<T>(
    ctx: &Context,
    cap: &Capability,
    args: &Map<String, Value>,
    params: &Map<String, Value>,
    method: &str,
    window: &pages::Window,
    finish: impl FnOnce(Returned) -> Result<T, Refusal>,
) -> Result<T, Stop> {
    let arguments_digest = if method == "resources/read" {
        tokens::arguments_digest(params.get("uri").unwrap_or(&Value::Null))
    } else {
        tokens::arguments_digest(args)
    };
    let principal = ctx.caller.principal.digest().to_string();
    let binding = mrtr::Binding {
        principal: &principal,
        method,
        capability: &cap.name,
        arguments_digest: &arguments_digest,
    };
    let era = era_facts(ctx);
    let responses = if era.can_ask_for_input {
        steps::verified_input(
            ctx.registry,
            params.get("requestState"),
            params.get("inputResponses"),
            &binding,
        )
        .map_err(|e| Stop::Reply(Err(e)))?
    } else {
        Map::new()
    };
    let timeout_ms = cap.timeout_ms(&ctx.registry.settings);
    steps::execute(
        ctx.registry,
        ctx.caller,
        cap,
        Round {
            binding: &|| mrtr::Binding { ..binding },
            responses,
            can_ask: era.can_ask_for_input,
            client_capabilities: era.client_capabilities,
            may_continue_as_task: false,
        },
        args,
        window,
        timeout_ms,
        finish,
    )
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
