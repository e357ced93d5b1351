//! The completion family: completion/complete (offered only when a capability the caller may use
//! declares completions).

use super::call::{named, offers_completions, visible};
use super::{not_found, Context, MethodResult};
use crate::call::execute;
use crate::catalog::registry::Kind;
use crate::error::Error;
use crate::identity::session;
use crate::postgres::app_function;
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &["completion/complete"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    if !offers_completions(ctx) {
        return Err(not_found(method));
    }
    complete(ctx, params)
}

fn complete(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let bad = |m: &str| Error::InvalidParams(m.to_string());
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
            let templates = ctx.registry.capabilities.of_kind(Kind::ResourceTemplate);
            visible(
                ctx,
                templates.filter(|c| c.meta.resource.as_deref() == Some(uri)),
            )
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
        Some(crate::catalog::metadata::Completion::Values(all)) => all
            .iter()
            .filter(|v| v.starts_with(prefix))
            .take(101)
            .cloned()
            .collect(),
        Some(crate::catalog::metadata::Completion::Function(func)) => {
            complete_with_function(ctx, func, prefix)?
        }
    };
    let has_more = values.len() > 100;
    let values: Vec<String> = values.into_iter().take(100).collect();
    Ok(json!({"completion": {"values": values, "hasMore": has_more}}))
}

/// Calls the completion function named in metadata, as the caller. The name is resolved to a
/// catalog entry as the caller too (so a function in a schema only the caller may use is found,
/// whoever the session user is, and one the caller may not use is not); only catalog-quoted
/// identifiers reach the SQL text.
fn complete_with_function(ctx: &Context, func: &str, prefix: &str) -> Result<Vec<String>, Error> {
    let trace = crate::call::scope::trace_id();
    let func_name = func.to_string();
    let prefix = prefix.to_string();
    let timeout_ms = ctx.registry.settings.call_timeout_ms;
    session::run_as_caller(
        ctx.caller.role_oid,
        &ctx.caller.claims,
        timeout_ms,
        move || {
            session::read_only(|| {
                let Some(f) = app_function::resolve(&func_name, "text")? else {
                    return Ok(None);
                };
                let sql = format!("select v::pg_catalog.text from {}($1) as v limit 101", f.qualified);
                Spi::connect(|c| {
                    let mut out = vec![];
                    for row in c.select(sql.as_str(), None, &[prefix.as_str().into()])? {
                        if let Some(v) = row.get::<String>(1)? {
                            out.push(v);
                        }
                    }
                    Ok::<_, pgrx::spi::Error>(Some(out))
                })
            })
        },
    )
    .map_err(|e| Error::Internal(execute::public_error(&e, &trace).message))?
    .map_err(|_| Error::Internal(format!("completion failed (trace id {trace})")))?
    .ok_or_else(|| {
        Error::Internal(format!(
            "completion function {func}(text) does not exist or is not visible to the caller (trace id {trace})"
        ))
    })
}
