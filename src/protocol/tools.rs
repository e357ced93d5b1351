//! The tools family: tools/list, tools/call.

use super::call::{arguments, named, run, Stop};
use super::listing::{list, put_opt};
use super::{stateless, Context, MethodResult};
use crate::approval;
use crate::error::Error;
use crate::events;
use crate::execute::Returned;
use crate::idempotency;
use crate::pages;
use crate::projection;
use crate::registry::{Capability, Kind};
use crate::types::ReturnShape;
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

pub const METHODS: &[&str] = &["tools/list", "tools/call"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        "tools/list" => list(ctx, params, "tools", |c| c.kind == Kind::Tool, tool_json),
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
    t
}

fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

fn call_tool(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let cap = named(ctx, params, Kind::Tool)?;
    let args = arguments(params)?;
    if let (true, Some(headers)) = (ctx.era.is_stateless(), ctx.headers) {
        stateless::check_param_headers(headers, &cap.input_schema, &args)?;
    }
    if let Some(limit) = &cap.meta.rate_limit {
        let bucket = format!("tool:{}:{}", cap.name, ctx.caller.principal.limit_key());
        match crate::ledger::rate_hit(&bucket, 60, limit.per_minute, 1) {
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
    // The arguments are checked in place (no copy); the errors are listed only when there are any.
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
        return Ok(tool_error(format!(
            "Invalid arguments for {}: {}",
            cap.name,
            problems.join("; ")
        )));
    }
    let Value::Object(args) = instance else {
        unreachable!("built as an object just above")
    };
    // the execution predicate and approval (src/approval.rs), before every run
    let gate = approval::Call {
        registry: ctx.registry,
        caller: ctx.caller,
        client_capabilities: ctx.era.envelope().map(|e| &e.client_capabilities),
        params,
    };
    let (mut args, verified) = match approval::gate(&gate, cap, args) {
        approval::Gate::Run(args, p) => (args, p),
        approval::Gate::Deny(m) => return Ok(tool_error(m)),
        approval::Gate::Reply(v) => return Ok(v),
        approval::Gate::Invalid(e) => return Err(e),
    };
    // a paged tool's `cursor` argument becomes the page window (src/pages.rs)
    let window = match pages::start(ctx.registry, ctx.caller, cap, &mut args) {
        Ok(w) => w,
        Err(words) => return Ok(tool_error(words)),
    };
    // exactly-once operations: claim the key, or answer from the stored outcome (src/idempotency.rs)
    let operation = match idempotency::begin(ctx.registry, ctx.caller, cap, &args, params) {
        idempotency::Begin::Run => None,
        idempotency::Begin::Claimed(op) => Some(op),
        idempotency::Begin::Answer(a) => return a,
    };
    // A stored outcome needs the rows as values; otherwise they may stay text (src/spliced.rs).
    let rows_as_text = operation.is_none();
    match run(
        ctx,
        cap,
        &args,
        params,
        verified,
        "tools/call",
        &window,
        |r| {
            // execute::call raises the refusal, so the call's writes are rolled back
            tool_result(ctx, cap, &args, &window, r, rows_as_text).map_err(|e| e.to_string())
        },
    ) {
        Ok(result) => {
            // The outcome is stored in the call's transaction; a failure to store raises, and the
            // method's subtransaction undoes the tool's writes with it.
            if let Some(op) = operation {
                if let Err(e) = idempotency::complete(op, &result) {
                    error!("chumbo: the outcome of an idempotent call could not be stored: {e}");
                }
            }
            Ok(result)
        }
        Err(Stop::Reply(a)) => a,
        Err(Stop::Failed(e)) => Ok(tool_error(e.message)),
    }
}

/// The tools/call result for what the function returned, or why it must not be given (the call
/// then fails and its writes are undone, see execute::call).
fn tool_result(
    ctx: &Context,
    cap: &Capability,
    args: &Map<String, Value>,
    window: &pages::Window,
    returned: Returned,
    rows_as_text: bool,
) -> Result<Value, Error> {
    let refuse = |message: String| {
        Err(Error::Capability {
            message,
            internal: false,
            uri: None,
        })
    };
    let max = ctx.registry.settings.max_result_bytes;
    // @mcp model_output projects the result before it is rendered and checked (src/projection.rs)
    let (shape, returned) =
        projection::model_output(cap, returned).map_err(|message| Error::Capability {
            message,
            internal: false,
            uri: None,
        })?;
    let (text, structured) = match (shape, returned) {
        (ReturnShape::ToolResult, Returned::One(Some(v))) => return Ok(v),
        (_, Returned::Rows(page)) => {
            // Rows stay text unless the outputSchema check needs them as values.
            let held = rows_as_text && cap.output_validator.is_none();
            let (text, s) =
                match pages::result(ctx.registry, ctx.caller, cap, args, window, page, held) {
                    Ok(page) => page,
                    Err(message) => return refuse(message),
                };
            (text, Some(s))
        }
        (ReturnShape::Json | ReturnShape::Row, Returned::One(Some(v))) => {
            let s = if v.is_object() {
                v
            } else {
                Value::Object(Map::from_iter([("result".to_string(), v)]))
            };
            (s.to_string(), Some(s))
        }
        (ReturnShape::Void, _) => ("OK".to_string(), None),
        (_, Returned::One(Some(Value::String(s)))) => (s, None),
        (_, Returned::One(Some(v))) => (v.to_string(), None),
        (_, Returned::One(None)) => ("null".to_string(), None),
    };
    if text.len() + events::bytes() > max {
        return refuse(format!(
            "the result is {} bytes (with {} bytes of notifications), over the limit of {max} bytes",
            text.len(),
            events::bytes()
        ));
    }
    if let (Some(v), Some(s)) = (&cap.output_validator, &structured) {
        if !v.is_valid(s) {
            return refuse(format!(
                "{} returned a result that does not match its outputSchema",
                cap.name
            ));
        }
    }
    let mut result = json!({"content": [{"type": "text", "text": Value::Null}]});
    // moved in (json! would copy the text)
    result["content"][0]["text"] = Value::String(text);
    if let Some(s) = structured {
        if ctx.era.has_structured_content() {
            result["structuredContent"] = s;
        }
    }
    Ok(result)
}
