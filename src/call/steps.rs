//! The steps of a tools/call, in their one order (docs/architecture.md draws it):
//!
//! 1. admit         the tool's own rate limit
//! 2. may_execute   the app's `can_execute` predicate (src/call/policy.rs)
//! 3. input         earlier input rounds: the requestState verified (and consumed) once
//! 4. approval      the user's confirmation, when the tool needs it (src/call/approval.rs)
//! 5. idempotency   claim the operation, or answer its stored outcome (src/call/idempotency.rs)
//! 6. page          the window the page starts at: first, or the cursor's (src/call/pages.rs)
//! 7. execute       the function as the caller within the time bound, the MRTR round around it;
//!    inside it, project and render the result ([tool_result]), so a refused result rolls back
//! 8. record        store the idempotent outcome, in the call's transaction
//!
//! (The request's audit row is written by the entry point for every method, src/api/mod.rs.)
//!
//! Visibility comes before all of them: a plan is only made for a tool the caller may see
//! (protocol::call::named). Each step is a function of the plan and of what earlier steps
//! returned; a step that ends the call returns [Stop].

use crate::call::approval::{self, Gate};
use crate::call::execute::{self, PublicError, Returned};
use crate::call::idempotency;
use crate::call::mrtr;
use crate::call::pages::{self, Window};
use crate::call::plan::ToolCall;
use crate::call::policy::{self, Denied};
use crate::call::projection;
use crate::catalog::registry::{Caller, Capability, Registry};
use crate::catalog::types::ReturnShape;
use crate::error::{Error, Refusal};
use crate::events;
use crate::trace_context::timed;
use serde_json::{json, Map, Value};

/// Why a call ends without the tool's value.
pub enum Stop {
    /// It failed, or the app refused it; the caller may see this much (an `isError` result of a
    /// tool, a -32602/-32603 of a resource or prompt).
    Failed(PublicError),
    /// The method's answer is already decided: `input_required`, a stored outcome, or a protocol
    /// error.
    Reply(Result<Value, Error>),
    /// The call goes on as a task (src/call/task.rs), with the input given so far.
    BecomeTask(Map<String, Value>),
}

/// Where a tools/call runs (src/call/task.rs).
pub enum Place<'a> {
    /// In the request, to its end.
    Request,
    /// In the request until the tool calls `chumbo.continue_as_task()`, then as a task.
    RequestThenTask,
    /// As a task, once the request's own steps (rate limit, policy, approval) let it.
    Task,
    /// In a task's worker, with every answer the task was given: the request's steps ran when it
    /// was created; the policy is asked again, as the creator, before each run.
    Worker(&'a Map<String, Value>),
}

/// How a tools/call ended.
pub enum Ran {
    Answer(Result<Value, Error>),
    /// It is to become a task, with these answers.
    BecomeTask(Map<String, Value>),
}

fn refused(refusal: Refusal) -> Stop {
    Stop::Failed(PublicError {
        message: refusal.to_string(),
        internal: false,
    })
}

/// Runs the plan of a call of `cap` (resolved by the registry the plan was made with) for the
/// live `caller` at `place`: the tools/call result or the protocol error, or a task to create.
pub fn run(
    registry: &Registry,
    caller: &Caller,
    cap: &Capability,
    plan: &ToolCall,
    place: Place,
) -> Ran {
    let steps = || -> Result<Value, Stop> {
        needs_no_write(cap, plan, &place)?;
        let responses = match place {
            Place::Worker(given) => {
                timed("policy", || may_execute(registry, caller, cap, plan))?;
                given.clone()
            }
            _ => {
                admit(caller, cap)?;
                timed("policy", || may_execute(registry, caller, cap, plan))?;
                let input = input(registry, plan);
                let responses = timed("approval", || approve(registry, caller, cap, plan, input))?;
                if matches!(place, Place::Task) {
                    return Err(Stop::BecomeTask(responses));
                }
                responses
            }
        };
        let operation = timed("idempotency", || claim(registry, plan))?;
        let window = pages::start(registry, cap, plan).map_err(refused)?;
        // A stored outcome needs the rows as values; otherwise they may stay text (src/identity/spliced.rs).
        let rows_as_text = operation.is_none();
        let result = execute(
            registry,
            caller,
            cap,
            Round {
                binding: &|| plan.input_binding(),
                responses,
                can_ask: plan.era.can_ask_for_input,
                client_capabilities: plan.era.client_capabilities.clone(),
                may_continue_as_task: matches!(place, Place::RequestThenTask),
            },
            &plan.arguments,
            &window,
            plan.timeout_ms,
            |r| {
                // execute::call raises the refusal, so the call's writes are rolled back
                timed("render", || {
                    tool_result(registry, cap, plan, &window, r, rows_as_text)
                })
            },
        )?;
        record(operation, &result);
        Ok(result)
    };
    match steps() {
        Ok(result) => Ran::Answer(Ok(result)),
        Err(Stop::Reply(answer)) => Ran::Answer(answer),
        Err(Stop::Failed(e)) => Ran::Answer(Ok(tool_error(e.message))),
        Err(Stop::BecomeTask(responses)) => Ran::BecomeTask(responses),
    }
}

/// An `isError` tools/call result: what the model is told when its call did not work.
pub fn tool_error(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// Before the steps, on a server that serves reads only (a hot standby, or the edge's read path;
/// src/postgres/standby.rs): a call that would write is sent to the primary before anything of it
/// runs. A VOLATILE function may write; the tool's own rate limit, an input round's requestState
/// (its nonce) and an idempotency key write chumbo's books; a call that may become a task writes
/// the task (src/call/task.rs). Anything else that writes is refused by
/// PostgreSQL and answered the same way (api/mod.rs process_message).
fn needs_no_write(cap: &Capability, plan: &ToolCall, place: &Place) -> Result<(), Stop> {
    let writes = !cap.read_only
        || matches!(place, Place::Task | Place::RequestThenTask)
        || cap.meta.rate_limit.is_some()
        || plan.input.request_state.is_some()
        || plan.idempotency_key.is_some();
    if writes && crate::postgres::standby::serving_read_only() {
        return Err(Stop::Reply(Err(Error::NeedsPrimary)));
    }
    Ok(())
}

/// Step 1: The tool's own rate limit (`@mcp {"rate_limit": …}`), per principal.
fn admit(caller: &Caller, cap: &Capability) -> Result<(), Stop> {
    let Some(limit) = &cap.meta.rate_limit else {
        return Ok(());
    };
    let bucket = format!("tool:{}:{}", cap.name, caller.principal.limit_key());
    match crate::bookkeeping::ledger::rate_hit(&bucket, 60, limit.per_minute, 1) {
        Ok(None) => Ok(()),
        Ok(Some(retry)) => Err(refused(Refusal::RateLimit(format!(
            "Rate limit of {} calls per minute reached for {}: retry in {retry} s",
            limit.per_minute, cap.name
        )))),
        Err(()) => Err(refused(Refusal::RateLimit(format!(
            "{} is unavailable: its rate limit cannot be checked",
            cap.name
        )))),
    }
}

/// Step 2: The app's execution predicate.
fn may_execute(
    registry: &Registry,
    caller: &Caller,
    cap: &Capability,
    plan: &ToolCall,
) -> Result<(), Stop> {
    policy::may_execute(registry, cap, caller, &plan.arguments)
        .map_err(|Denied(m)| refused(Refusal::Denied(m)))
}

/// Step 3: The input of earlier rounds: the requestState verified (its nonce consumed) and this
/// request's `inputResponses` added; nothing before MCP 2026-07-28, where there are no rounds.
/// The approval step decides what a bad state means.
fn input(registry: &Registry, plan: &ToolCall) -> Result<Map<String, Value>, Error> {
    if !plan.era.can_ask_for_input {
        return Ok(Map::new());
    }
    verified_input(
        registry,
        plan.input.request_state.as_ref(),
        plan.input.responses.as_ref(),
        &plan.input_binding(),
    )
}

/// The responses of earlier rounds carried by a valid `request_state`, with the client's
/// `responses` of this request.
pub fn verified_input(
    registry: &Registry,
    request_state: Option<&Value>,
    responses: Option<&Value>,
    binding: &mrtr::Binding,
) -> Result<Map<String, Value>, Error> {
    let mut verified = Map::new();
    if let Some(state) = request_state {
        let state = state
            .as_str()
            .ok_or_else(|| Error::InvalidParams("requestState must be a string".into()))?;
        verified = mrtr::verify(registry.token_secret(), state, binding)?;
    }
    verified.extend(approval::from_client(responses)?);
    Ok(verified)
}

/// Step 4: The user's confirmation: the input responses the run gets.
fn approve(
    registry: &Registry,
    caller: &Caller,
    cap: &Capability,
    plan: &ToolCall,
    input: Result<Map<String, Value>, Error>,
) -> Result<Map<String, Value>, Stop> {
    match approval::gate(registry, caller, cap, plan, input) {
        Gate::Run(responses) => Ok(responses),
        Gate::Deny(m) => Err(refused(Refusal::Denied(m))),
        Gate::Reply(v) => Err(Stop::Reply(Ok(v))),
        Gate::Invalid(e) => Err(Stop::Reply(Err(e))),
    }
}

/// Step 5: Exactly-once operations: the claim, or the stored answer.
fn claim(registry: &Registry, plan: &ToolCall) -> Result<Option<idempotency::Operation>, Stop> {
    match idempotency::begin(registry, plan) {
        idempotency::Begin::Run => Ok(None),
        idempotency::Begin::Claimed(op) => Ok(Some(op)),
        idempotency::Begin::Answer(a) => Err(Stop::Reply(a)),
    }
}

/// Step 8: The outcome is stored in the call's transaction; a failure to store raises, and the
/// method's subtransaction undoes the tool's writes with it.
fn record(operation: Option<idempotency::Operation>, result: &Value) {
    if let Some(op) = operation {
        if let Err(e) = idempotency::complete(op, result) {
            crate::error::raise(
                pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("chumbo: the outcome of an idempotent call could not be stored: {e}"),
                None,
            );
        }
    }
}

/// The input round a capability runs in (MCP 2026-07-28; `can_ask` false before).
pub struct Round<'a> {
    /// What a requestState issued for missing input is bound to (made only then: the plan's
    /// arguments digest is computed on first use).
    pub binding: &'a dyn Fn() -> mrtr::Binding<'a>,
    /// Input already given: earlier rounds' (verified) and this request's.
    pub responses: Map<String, Value>,
    pub can_ask: bool,
    pub client_capabilities: Option<Value>,
    /// The call may become a task where the tool calls `chumbo.continue_as_task()`.
    pub may_continue_as_task: bool,
}

/// Step 7: Runs `cap` as `caller` with `args` within `timeout_ms`, inside an input round; `finish`
/// turns what it returned into the answer while still inside the call (see execute::call).
/// Input still missing ends the call as `input_required` with a fresh requestState; a failure is
/// what the caller may see of it, after the setting `error_projection` (src/call/projection.rs).
/// Resources and prompts run through here too.
#[allow(clippy::too_many_arguments)]
pub fn execute<T>(
    registry: &Registry,
    caller: &Caller,
    cap: &Capability,
    round: Round,
    args: &Map<String, Value>,
    window: &Window,
    timeout_ms: u64,
    finish: impl FnOnce(Returned) -> Result<T, Refusal>,
) -> Result<T, Stop> {
    let reply = |e: Error| Stop::Reply(Err(e));
    mrtr::begin(
        round.can_ask,
        round.client_capabilities.unwrap_or(json!({})),
        round.responses,
    );
    if round.may_continue_as_task {
        mrtr::allow_continue_as_task();
    }
    let s = &registry.settings;
    let outcome = execute::call(
        cap,
        caller,
        args,
        window,
        s.max_result_bytes,
        timeout_ms,
        finish,
    );
    let asked = mrtr::finish();
    let e = match outcome {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if let Some(asked) = asked {
        if !asked.undeclared.is_empty() {
            let names: Vec<&String> = asked.undeclared.keys().collect();
            return Err(reply(Error::MissingClientCapability {
                names: format!("{names:?}"),
                required: Value::Object(asked.undeclared),
            }));
        }
        if !asked.missing.is_empty() {
            return Err(Stop::Reply(Ok(json!({
                "resultType": "input_required",
                "inputRequests": asked.missing,
                "requestState": mrtr::issue(registry.token_secret(), &(round.binding)(), &asked.responses),
            }))));
        }
        if let Some(message) = asked.blocked {
            return Err(refused(Refusal::InputUnavailable(message)));
        }
        if asked.continued_as_task {
            return Err(Stop::BecomeTask(asked.responses));
        }
        if let Some((code, message)) = asked.application_error {
            return Err(reply(Error::Application { code, message }));
        }
    }
    let trace = crate::call::scope::trace_id();
    let shown = execute::public_error(&e, &trace);
    Err(Stop::Failed(projection::model_error(
        s.error_projection.as_deref(),
        caller,
        &cap.name,
        shown,
        &e,
        &trace,
        timeout_ms,
    )))
}

/// The tools/call result for what the function returned, or why it must not be given (the call
/// then fails and its writes are undone, see execute::call): the `model_output` projection, the
/// page and its cursor, the size bound, the outputSchema.
fn tool_result(
    registry: &Registry,
    cap: &Capability,
    plan: &ToolCall,
    window: &Window,
    returned: Returned,
    rows_as_text: bool,
) -> Result<Value, Refusal> {
    let max = registry.settings.max_result_bytes;
    let (shape, returned) = projection::model_output(cap, returned)?;
    let (text, structured) = match (shape, returned) {
        (ReturnShape::ToolResult, Returned::One(Some(v))) => return Ok(v),
        (_, Returned::Rows(page)) => {
            // Rows stay text unless the outputSchema check needs them as values.
            let held = rows_as_text && cap.output_validator.is_none();
            let (text, s) = pages::result(registry, cap, plan, window, page, held)?;
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
        return Err(Refusal::Result(format!(
            "the result is {} bytes (with {} bytes of notifications), over the limit of {max} bytes",
            text.len(),
            events::bytes()
        )));
    }
    if let (Some(v), Some(s)) = (&cap.output_validator, &structured) {
        if !v.is_valid(s) {
            return Err(Refusal::Result(format!(
                "{} returned a result that does not match its outputSchema",
                cap.name
            )));
        }
    }
    let mut result = json!({"content": [{"type": "text", "text": Value::Null}]});
    // moved in (json! would copy the text)
    result["content"][0]["text"] = Value::String(text);
    if let Some(s) = structured {
        if plan.era.structured_content {
            result["structuredContent"] = s;
        }
    }
    Ok(result)
}
