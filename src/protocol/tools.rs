//! The tools family: tools/list, tools/call.

use super::call::{arguments, era_facts, named};
use super::listing::{list, put_opt};
use super::{stateless, Context, MethodResult};
use crate::call::plan::ToolCall;
use crate::call::steps::{self, Place, Ran};
use crate::call::task;
use crate::catalog::metadata::TaskSupport;
use crate::catalog::registry::{Capability, Kind};
use crate::error::Refusal;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &["tools/list", "tools/call"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        // an app-only tool (`@mcp {"ui": {"visibility": ["app"]}}`) is not listed; views call it
        "tools/list" => list(
            ctx,
            params,
            "tools",
            ctx.registry
                .capabilities
                .of_kind(Kind::Tool)
                .filter(|c| c.meta.model_visible()),
            tool_json,
        ),
        _ => call_tool(ctx, params),
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
    if let Some(meta) = super::apps::tool_meta(c) {
        t["_meta"] = meta;
    }
    t
}

/// A tools/call: the tool as the caller may see it, its arguments checked, then the call's plan
/// (src/call/plan.rs) run by its steps (src/call/steps.rs).
fn call_tool(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let cap = named(ctx, params, Kind::Tool)?;
    let args = arguments(params)?;
    if let (true, Some(headers)) = (ctx.era.is_stateless(), ctx.headers) {
        stateless::check_param_headers(headers, &cap.input_schema, &args)?;
    }
    let args = match valid_arguments(cap, args) {
        Ok(args) => args,
        Err(refused) => return Ok(steps::tool_error(refused.to_string())),
    };
    let era = era_facts(ctx);
    let place = match (
        cap.meta.task,
        task::opted_in(era.client_capabilities.as_ref()),
    ) {
        (TaskSupport::Never, _) | (TaskSupport::Optional, false) => Place::Request,
        (TaskSupport::Required, false) => return Err(task::missing_extension()),
        (_, true) if cap.meta.task_starts_in_request => Place::RequestThenTask,
        (_, true) => Place::Task,
    };
    let plan = ToolCall::new(cap, ctx.caller, era, args, params, &ctx.registry.settings)?;
    match steps::run(ctx.registry, ctx.caller, cap, &plan, place) {
        Ran::Answer(answer) => answer,
        Ran::BecomeTask(responses) => super::tasks::create(ctx, cap, &plan, &responses),
    }
}

/// The arguments if they are valid for the tool's inputSchema, else what the model is told:
/// invalid argument values are the model's to fix, a tool error, not a protocol error. Checked in
/// place (no copy); the errors are listed only when there are any.
fn valid_arguments(
    cap: &Capability,
    args: Map<String, Value>,
) -> Result<Map<String, Value>, Refusal> {
    let validator = cap.validator().map_err(|e| {
        Refusal::Arguments(format!("{} has an unusable input schema: {e}", cap.name))
    })?;
    let instance = Value::Object(args);
    if !validator.is_valid(&instance) {
        let problems: Vec<String> = validator
            .iter_errors(&instance)
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
        return Err(Refusal::Arguments(format!(
            "Invalid arguments for {}: {}",
            cap.name,
            problems.join("; ")
        )));
    }
    let Value::Object(args) = instance else {
        unreachable!("built as an object just above")
    };
    Ok(args)
}
