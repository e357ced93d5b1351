//! The prompts family: prompts/list, prompts/get.

use super::call::{arguments, method_error, named, run};
use super::listing::{list, put_opt};
use super::{Context, MethodResult};
use crate::call::execute::Returned;
use crate::call::pages;
use crate::call::steps::Stop;
use crate::catalog::registry::{Capability, Kind};
use crate::error::Error;
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &["prompts/list", "prompts/get"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        "prompts/list" => list(
            ctx,
            params,
            "prompts",
            ctx.registry.capabilities.of_kind(Kind::Prompt),
            prompt_json,
        ),
        _ => get_prompt(ctx, params),
    }
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

fn get_prompt(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let cap = named(ctx, params, Kind::Prompt)?;
    let args = arguments(params)?;
    for (k, v) in &args {
        if !cap.params.iter().any(|p| &p.name == k) {
            return Err(Error::InvalidParams(format!(
                "{} has no argument \"{k}\"",
                cap.name
            )));
        }
        if !v.is_string() {
            return Err(Error::InvalidParams(format!(
                "argument \"{k}\" must be a string"
            )));
        }
    }
    if let Some(p) = cap
        .params
        .iter()
        .find(|p| p.required && !args.contains_key(&p.name))
    {
        return Err(Error::InvalidParams(format!(
            "missing required argument \"{}\"",
            p.name
        )));
    }
    let first = pages::first(cap, &ctx.registry.settings);
    let value = match run(ctx, cap, &args, params, "prompts/get", &first, Ok) {
        Ok(Returned::One(v)) => v.unwrap_or(Value::Null),
        Ok(Returned::Rows(_)) => Value::Null,
        Err(Stop::Reply(a)) => return a,
        Err(Stop::Failed(e)) => return Err(method_error(e, None)),
        // only a tool's round may continue as a task (steps::Round::may_continue_as_task)
        Err(Stop::BecomeTask(_)) => {
            return Err(crate::error::Error::Internal(
                "Internal error: only tools become tasks".into(),
            ))
        }
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
            let trace = crate::call::scope::trace_id();
            pgrx::ereport!(
                PgLogLevel::LOG_SERVER_ONLY,
                PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                format!(
                    "chumbo trace {trace}: prompt {} returned neither text nor messages",
                    cap.name
                )
            );
            return Err(Error::Internal(format!(
                "Prompt {} returned no messages (trace id {trace})",
                cap.name
            )));
        }
    };
    let mut result = json!({"messages": messages});
    if let Some(d) = description.or_else(|| cap.description.clone().map(Value::String)) {
        result["description"] = d;
    }
    Ok(result)
}
