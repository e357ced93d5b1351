//! The tasks family (MCP extension `io.modelcontextprotocol/tasks`, SEP-2663, 2026-07-28 only):
//! tasks/get, tasks/update, tasks/cancel, for the caller's own tasks (src/call/task.rs); and the
//! CreateTaskResult a tools/call that becomes a task answers with.

use super::{Context, MethodResult};
use crate::call::plan::ToolCall;
use crate::call::{task, task_run};
use crate::catalog::registry::Capability;
use crate::error::{Error, Refusal};
use serde_json::{json, Map, Value};

/// tasks/result and tasks/list are not here: the extension removed them (-32601).
pub const METHODS: &[&str] = &["tasks/get", "tasks/update", "tasks/cancel"];

fn client_capabilities<'c>(ctx: &'c Context) -> Option<&'c Value> {
    ctx.era.envelope().map(|e| &e.client_capabilities)
}

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    if !task::opted_in(client_capabilities(ctx)) {
        return Err(task::missing_extension());
    }
    // Tasks live, run and change on the primary: a standby (or the edge's read path) sends every
    // task request there, so a client never reads a task behind its last change.
    if crate::postgres::standby::serving_read_only() {
        return Err(Error::NeedsPrimary);
    }
    let id = params
        .get("taskId")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("\"taskId\" must be a string".into()))?;
    let principal = ctx.caller.principal.digest();
    let settings = &ctx.registry.settings;
    match method {
        "tasks/get" => {
            let t = task::get(principal, id)?.ok_or_else(task::unknown)?;
            if t.status == "working" {
                // A task whose runner is gone (a restart without a launcher) gets one when polled.
                task_run::wake(settings.task_workers);
            }
            Ok(t.detailed(settings.task_poll_interval_ms))
        }
        "tasks/update" => {
            let responses = match params.get("inputResponses") {
                Some(Value::Object(r)) => r,
                _ => {
                    return Err(Error::InvalidParams(
                        "\"inputResponses\" must be an object".into(),
                    ))
                }
            };
            if !task::give_input(principal, id, responses)? {
                return Err(task::unknown());
            }
            task_run::wake(settings.task_workers);
            Ok(json!({}))
        }
        _ => match task::cancel(principal, id)? {
            None => Err(task::unknown()),
            Some(runner) => {
                if let Some(r) = runner {
                    task_run::interrupt(&r);
                }
                Ok(json!({}))
            }
        },
    }
}

/// The call of `cap` planned as `plan` becomes a task, with the answers given so far: its row
/// is written in this request's transaction (so it exists once the answer is sent), a worker is
/// woken, and the answer is the CreateTaskResult.
pub(super) fn create(
    ctx: &Context,
    cap: &Capability,
    plan: &ToolCall,
    responses: &Map<String, Value>,
) -> MethodResult {
    let settings = &ctx.registry.settings;
    let stored = json!({
        "role": ctx.caller.principal.role,
        "claims": ctx.caller.claims,
        "principal": ctx.caller.principal.stored(),
    });
    // A finished task is kept at least as long as the settings say; an unfinished one never expires.
    let creator = task::Creator {
        principal: ctx.caller.principal.digest(),
        stored,
        active_cap: settings.max_tasks_per_principal,
    };
    let Some(t) = task::create(plan, &creator, responses, settings.task_ttl_ms)? else {
        return Ok(crate::call::steps::tool_error(
            Refusal::RateLimit(format!(
                "{} was not started: you have {} unfinished tasks, the most this server runs for one user; wait for one to finish or cancel one",
                cap.name, settings.max_tasks_per_principal
            ))
            .to_string(),
        ));
    };
    task_run::wake(settings.task_workers);
    let mut result = t.envelope(settings.task_poll_interval_ms);
    result.insert("resultType".into(), json!("task"));
    Ok(Value::Object(result))
}
