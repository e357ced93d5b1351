//! What a message is recorded as, in its audit row, in chumbo.metrics and in its trace: the target
//! the server declared, never the client's own text, and what its capability opted in to have
//! recorded (`@mcp {"audit": {"arguments": true}}`).

use crate::catalog::registry::{self, Registry};
use crate::protocol::Resolved;
use serde_json::{json, Map, Value};

pub(super) struct Recorded<'r> {
    /// The name of a tool or prompt that exists (whoever may call it); for a resource URI, what
    /// it resolved to for the caller (the URI or URI template of a resource, the URI of a skill
    /// file or app), else the first resource it matches, whoever may read it. The audit row's
    /// capability, chumbo.metrics' series and the span name's target.
    pub target: Option<&'r str>,
    /// What a capability that opts in has recorded, for its audit row: a tool's or prompt's
    /// arguments, a resource's URI.
    pub detail: Option<Value>,
    /// `mcp.resource.uri`: a resource URI that is as the server declared it (a resource without
    /// parameters, a skill file, an app), or whose resource opts in. A template's URI carries
    /// its parameters, the resource's arguments, kept out as a tool's are.
    pub resource_uri: Option<&'r str>,
    /// `gen_ai.tool.call.arguments`: a tools/call's arguments, when its tool opts in.
    pub tool_arguments: Option<&'r Value>,
}

/// What the message `method` ([crate::protocol::known_method]) with `params` is recorded as;
/// `resolved`: what a resources/read resolved its URI to. An unknown name or URI is whatever the
/// client sent, which must not reach a row, name a span or make a series.
pub(super) fn recorded<'r>(
    registry: &'r Registry,
    method: &str,
    params: &'r Map<String, Value>,
    resolved: Option<&Resolved>,
) -> Recorded<'r> {
    let text = |key: &str| params.get(key).and_then(Value::as_str);
    let named = |kind| text("name").and_then(|name| registry.capabilities.find(name, kind));
    let uri = match method {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => text("uri"),
        _ => None,
    };
    let (target, capability) = match (method, uri) {
        ("tools/call", _) => with_name(named(registry::Kind::Tool)),
        ("prompts/get", _) => with_name(named(registry::Kind::Prompt)),
        // skill files and apps have no parameters: their URI is declared as it is
        (_, Some(uri)) if matches!(resolved, Some(Resolved::Served)) => (Some(uri), None),
        (_, Some(uri)) => {
            let chosen = match resolved {
                Some(Resolved::Capability(name)) => {
                    registry.capabilities.find(name, registry::Kind::Resource)
                }
                _ => None,
            };
            let first = || {
                registry
                    .capabilities
                    .resources_matching(uri)
                    .next()
                    .map(|(c, _)| c)
            };
            let found = chosen.or_else(first);
            (found.and_then(|c| c.meta.resource.as_deref()), found)
        }
        _ => (None, None),
    };
    let opted_in = capability.filter(|c| c.meta.audit.as_ref().is_some_and(|a| a.arguments));
    Recorded {
        target,
        detail: opted_in.map(|c| match c.kind {
            registry::Kind::Resource | registry::Kind::ResourceTemplate => json!({"uri": uri}),
            registry::Kind::Tool | registry::Kind::Prompt => {
                json!({"arguments": params.get("arguments")})
            }
        }),
        resource_uri: uri.filter(|&u| target == Some(u) || opted_in.is_some()),
        tool_arguments: opted_in
            .filter(|c| c.kind == registry::Kind::Tool)
            .and_then(|_| params.get("arguments")),
    }
}

fn with_name(c: Option<&registry::Capability>) -> (Option<&str>, Option<&registry::Capability>) {
    (c.map(|c| c.name.as_str()), c)
}
