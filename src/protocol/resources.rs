//! The resources family: resources/list, resources/templates/list, resources/read.

use super::call::{method_error, run};
use super::listing::{list, list_then, put_opt};
use super::{Context, MethodResult, Resolved};
use crate::call::execute::Returned;
use crate::call::steps::Stop;
use crate::call::{pages, policy};
use crate::catalog::registry::{Capability, Kind};
use crate::catalog::types::ReturnShape;
use crate::error::Error;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &[
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        // the apps and the files of the skills the caller is served follow the capability
        // resources
        "resources/list" => list_then(
            ctx,
            params,
            "resources",
            ctx.registry.capabilities.of_kind(Kind::Resource),
            resource_json,
            super::apps::resources(ctx)
                .into_iter()
                .chain(super::skills::resources(ctx))
                .collect(),
        ),
        "resources/templates/list" => list(
            ctx,
            params,
            "resourceTemplates",
            ctx.registry.capabilities.of_kind(Kind::ResourceTemplate),
            template_json,
        ),
        _ => read_resource(ctx, params),
    }
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

/// Resource not found: -32002 up to 2025-11-25, -32602 from 2026-07-28 (see [Error::code]).
fn not_found(ctx: &Context, uri: &str, missing_scopes: Vec<String>) -> Error {
    Error::ResourceNotFound {
        uri: uri.to_string(),
        stateless: ctx.era.is_stateless(),
        missing_scopes,
    }
}

fn read_resource(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("\"uri\" must be a string".into()))?;
    if let Some(answer) = super::skills::read(ctx, uri).or_else(|| super::apps::read(ctx, uri)) {
        *ctx.resolved.borrow_mut() = Some(Resolved::Served);
        return answer;
    }
    let found = ctx
        .registry
        .capabilities
        .resources_matching(uri)
        .find(|(c, _)| policy::usable(ctx.registry, ctx.caller, c));
    let Some((cap, vars)) = found else {
        return Err(not_found(ctx, uri, vec![]));
    };
    *ctx.resolved.borrow_mut() = Some(Resolved::Capability(cap.name.clone()));
    if !ctx.caller.has_scopes(cap) {
        return Err(not_found(
            ctx,
            uri,
            crate::call::policy::scopes_to_request(ctx.registry, cap),
        ));
    }
    let args: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let first = pages::first(cap, &ctx.registry.settings);
    let value = match run(ctx, cap, &args, params, "resources/read", &first, Ok) {
        Ok(Returned::One(Some(v))) if !v.is_null() => v,
        Ok(_) => return Err(not_found(ctx, uri, vec![])),
        Err(Stop::Reply(a)) => return a,
        Err(Stop::Failed(e)) => return Err(method_error(e, Some(uri))),
        // only a tool's round may continue as a task (steps::Round::may_continue_as_task)
        Err(Stop::BecomeTask(_)) => {
            return Err(crate::error::Error::Internal(
                "Internal error: only tools become tasks".into(),
            ))
        }
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
