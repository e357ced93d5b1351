//! The lifecycle family: initialize, ping and logging/setLevel (legacy), server/discover
//! (stateless).

use super::call::offers_completions;
use super::versions::{self, Revision};
use super::{stateless, Context, MethodResult};
use crate::error::Error;
use crate::events;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &["initialize", "ping", "logging/setLevel", "server/discover"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        "initialize" => Ok(initialize(ctx, params)?),
        "ping" => Ok(json!({})),
        "logging/setLevel" => match params.get("level").and_then(Value::as_str) {
            // Stateless: there is no session to remember the level in; tools' log events are
            // returned with the request that raised them.
            Some(l) if events::valid_level(l) => Ok(json!({})),
            _ => Err(Error::InvalidParams("\"level\" must be a log level".into())),
        },
        _ => Ok(discover(ctx)),
    }
}

fn initialize(ctx: &Context, params: &Map<String, Value>) -> Result<Value, Error> {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("\"protocolVersion\" is required".into()))?;
    // Echo a version we speak; otherwise offer our newest and let the client decide.
    let version = Revision::parse(requested).unwrap_or(Revision::NEWEST);
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(ctx),
        "serverInfo": stateless::server_info(),
    });
    if let Some(i) = &ctx.registry.settings.instructions {
        result["instructions"] = json!(i);
    }
    Ok(result)
}

/// What this server offers the caller.
fn capabilities(ctx: &Context) -> Value {
    let list_changed = ctx.era.announces_list_changes();
    let mut capabilities = json!({
        "tools": {"listChanged": list_changed},
        "resources": {"subscribe": false, "listChanged": list_changed},
        "prompts": {"listChanged": list_changed},
        "logging": {},
    });
    if offers_completions(ctx) {
        capabilities["completions"] = json!({});
    }
    let mut extensions = Map::new();
    if let Some((id, settings)) = super::skills::capability(ctx) {
        extensions.insert(id.into(), settings);
    }
    if let Some((id, settings)) = super::apps::capability(ctx) {
        extensions.insert(id.into(), settings);
    }
    if ctx.era.is_stateless() {
        extensions.insert(crate::call::task::EXTENSION.into(), json!({}));
    }
    if !extensions.is_empty() {
        capabilities["extensions"] = Value::Object(extensions);
    }
    capabilities
}

fn discover(ctx: &Context) -> Value {
    let mut result =
        json!({"supportedVersions": versions::supported(), "capabilities": capabilities(ctx)});
    if let Some(i) = &ctx.registry.settings.instructions {
        result["instructions"] = json!(i);
    }
    result
}
