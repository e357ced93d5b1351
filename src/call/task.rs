//! Durable MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a task is a row of
//! chumbo.tasks (sql/tasks.sql) holding the call's plan ([ToolCall]) and its creator, committed
//! before the client is told its id. Background workers (src/api/tasks.rs) run it as that creator.
//!
//! A task's life: `working` (waiting for a worker, or running) → `completed` (the tool's result,
//! an `isError` one included), `failed` (a JSON-RPC error), `cancelled`, or `input_required` (the
//! tool asked for input; `tasks/update` gives it, and once nothing is left unanswered the task is
//! `working` again and runs from the start with every answer, as an MRTR retry does).
//!
//! Runs are exclusive without locks a tool could release: a runner writes its pid and start time
//! into the row (in a transaction of its own, so a run cut short by a crash is known), and a task
//! whose runner no longer exists may be claimed again. Every read and change here is bound to the
//! principal: another user's task id is exactly an unknown one.

use crate::call::plan::ToolCall;
use crate::error::Error;
use crate::identity::session;
use crate::postgres::spi_read;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Map, Value};

/// The extension's id, in capabilities and in the client's per-request `_meta`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The extension declared in the client's capabilities of this request.
pub fn opted_in(client_capabilities: Option<&Value>) -> bool {
    client_capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// -32021 for a task method or a task-only tool asked for without the extension.
pub fn missing_extension() -> Error {
    Error::MissingClientCapability {
        names: format!("[\"extensions.{EXTENSION}\"]"),
        required: json!({"extensions": {EXTENSION: {}}}),
    }
}

/// What a caller is told about an id that is not theirs, expired, or never was: one answer.
pub fn unknown() -> Error {
    Error::InvalidParams("unknown or expired task".into())
}

/// A task as its creator sees it.
pub struct Task {
    pub id: String,
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
    pub ttl_ms: i64,
    pub result: Option<Value>,
    pub error: Option<Value>,
    pub input_requests: Option<Value>,
}

impl Task {
    /// The task fields every task answer carries (SEP-2663's `Task`).
    pub fn envelope(&self, poll_interval_ms: u64) -> Map<String, Value> {
        let mut t = Map::new();
        t.insert("taskId".into(), json!(self.id));
        t.insert("status".into(), json!(self.status));
        t.insert("createdAt".into(), json!(self.created_at));
        t.insert("lastUpdatedAt".into(), json!(self.updated_at));
        t.insert("ttlMs".into(), json!(self.ttl_ms));
        t.insert("pollIntervalMs".into(), json!(poll_interval_ms));
        t
    }

    /// `tasks/get`'s DetailedTask: the envelope with the result, error or input requests inlined.
    pub fn detailed(&self, poll_interval_ms: u64) -> Value {
        let mut t = self.envelope(poll_interval_ms);
        match self.status.as_str() {
            "completed" => put(&mut t, "result", &self.result),
            "failed" => put(&mut t, "error", &self.error),
            "input_required" => put(&mut t, "inputRequests", &self.input_requests),
            _ => {}
        }
        Value::Object(t)
    }
}

fn put(t: &mut Map<String, Value>, key: &str, v: &Option<Value>) {
    if let Some(v) = v {
        t.insert(key.into(), v.clone());
    }
}

const COLUMNS: &str = "id, status,
    pg_catalog.to_char(created_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
    pg_catalog.to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
    ttl_ms, result, error, input_requests";

fn task_of(row: &pgrx::spi::SpiHeapTupleData) -> pgrx::spi::Result<Task> {
    let text = |i| row.get::<String>(i).map(Option::unwrap_or_default);
    let json = |i| row.get::<JsonB>(i).map(|j| j.map(|j| j.0));
    Ok(Task {
        id: text(1)?,
        status: text(2)?,
        created_at: text(3)?,
        updated_at: text(4)?,
        ttl_ms: row.get::<i64>(5)?.unwrap_or_default(),
        result: json(6)?,
        error: json(7)?,
        input_requests: json(8)?,
    })
}

/// A statement on chumbo.tasks that writes (as the owner), returning its rows through `f`.
fn write<R>(
    sql: &str,
    args: &[pgrx::datum::DatumWithOid],
    f: impl FnOnce(pgrx::spi::SpiTupleTable) -> pgrx::spi::Result<R>,
) -> Result<R, Error> {
    session::as_owner(std::panic::AssertUnwindSafe(|| {
        Spi::connect_mut(|c| {
            // Task rows are durable state: every statement here is meant to write.
            #[allow(clippy::disallowed_methods)]
            let t = c.update(sql, None, args)?;
            f(t)
        })
    }))
    .map_err(|e| Error::Internal(format!("Internal error: the task store failed ({e})")))
}

fn first_task(t: pgrx::spi::SpiTupleTable) -> pgrx::spi::Result<Option<Task>> {
    match t.into_iter().next() {
        Some(row) => task_of(&row).map(Some),
        None => Ok(None),
    }
}

/// Who created a task: what a worker needs to act as exactly that caller again.
pub struct Creator<'a> {
    pub principal: &'a str,
    /// `{"role", "claims", "principal"}` (src/identity/principal.rs Principal::stored).
    pub stored: Value,
    pub active_cap: u32,
}

/// Stores a new task for `plan`, `working`, with the answers already given (`responses`), in the
/// request's transaction: the CreateTaskResult is sent only after it commits. Finished tasks past
/// their TTL are deleted a few at a time here. None: the creator has `active_cap` unfinished tasks.
pub fn create(
    plan: &ToolCall,
    creator: &Creator,
    responses: &Map<String, Value>,
    ttl_ms: u64,
) -> Result<Option<Task>, Error> {
    let id = format!("{}{}", session::random_id(), session::random_id());
    let sql = format!(
        "with pruned as (
           delete from chumbo.tasks t where t.id in (
             select id from chumbo.tasks
              where status in ('completed', 'failed', 'cancelled')
                and updated_at + pg_catalog.make_interval(secs => ttl_ms / 1000.0) <= pg_catalog.clock_timestamp()
              limit 16 for update skip locked))
         insert into chumbo.tasks (id, principal, caller, tool, plan, status, input_responses, trace_id,
                                   ttl_ms, created_at, updated_at)
         select $1, $2, $3, $4, $5, 'working', $6, $7, $8, pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp()
          where (select pg_catalog.count(*) from chumbo.tasks
                  where principal = $2 and status in ('working', 'input_required')) < $9
         returning {COLUMNS}"
    );
    let plan_json = serde_json::to_value(plan).map_err(|e| Error::Internal(e.to_string()))?;
    write(
        &sql,
        &[
            id.as_str().into(),
            creator.principal.into(),
            JsonB(creator.stored.clone()).into(),
            plan.tool.as_str().into(),
            JsonB(plan_json).into(),
            JsonB(Value::Object(responses.clone())).into(),
            plan.trace_id.as_str().into(),
            (ttl_ms as i64).into(),
            (creator.active_cap as i64).into(),
        ],
        first_task,
    )
}

/// The principal's task `id` (None: unknown, another user's, or expired).
pub fn get(principal: &str, id: &str) -> Result<Option<Task>, Error> {
    session::as_owner(|| spi_read::read(
        &format!(
            "select {COLUMNS} from chumbo.tasks
              where id = $1 and principal = $2
                and (status in ('working', 'input_required')
                     or updated_at + pg_catalog.make_interval(secs => ttl_ms / 1000.0) > pg_catalog.clock_timestamp())"
        ),
        &[id.into(), principal.into()],
        first_task,
    ))
    .map_err(|e| Error::Internal(format!("Internal error: the task store failed ({e})")))
}

/// `tasks/update`: the answers join those given so far; the answered requests leave
/// `input_requests`; with none left the task is `working` again. Answers to keys the task did not
/// ask for are ignored. false: unknown to this principal.
pub fn give_input(
    principal: &str,
    id: &str,
    responses: &Map<String, Value>,
) -> Result<bool, Error> {
    let Some(task) = get(principal, id)? else {
        return Ok(false);
    };
    let pending = task.input_requests.as_ref().and_then(Value::as_object);
    let answered: Map<String, Value> = responses
        .iter()
        .filter(|(k, _)| pending.is_some_and(|p| p.contains_key(*k)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if task.status != "input_required" || answered.is_empty() {
        return Ok(true);
    }
    write(
        "update chumbo.tasks
            set input_responses = input_responses || $3,
                input_requests = input_requests - $4::text[],
                status = case when (input_requests - $4::text[]) = '{}'::jsonb then 'working' else status end,
                updated_at = pg_catalog.clock_timestamp()
          where id = $1 and principal = $2 and status = 'input_required'",
        &[
            id.into(),
            principal.into(),
            JsonB(Value::Object(answered.clone())).into(),
            answered.keys().cloned().collect::<Vec<String>>().into(),
        ],
        |_| Ok(()),
    )?;
    announce(id)?;
    Ok(true)
}

/// Tells listeners (the edge's `notifications/tasks`, src/protocol/subscriptions.rs) that task
/// `id` changed, at commit: the id alone, a hint to ask `tasks/get`.
fn announce(id: &str) -> Result<(), Error> {
    write(
        "select pg_catalog.pg_notify('chumbo_tasks', $1)",
        &[id.into()],
        |_| Ok(()),
    )
}

/// The backend running a task when it was cancelled: its pid and start, to be signalled.
pub struct Runner {
    pub pid: i32,
    pub started: pgrx::datum::TimestampWithTimeZone,
}

/// `tasks/cancel`: an unfinished task becomes `cancelled` (its runner, if one runs it now, is
/// returned to be interrupted; whatever it wrote is rolled back, see src/api/tasks.rs). A finished
/// task is left as it is. None: unknown to this principal.
pub fn cancel(principal: &str, id: &str) -> Result<Option<Option<Runner>>, Error> {
    if get(principal, id)?.is_none() {
        return Ok(None);
    }
    let runner = write(
        "update chumbo.tasks
            set status = 'cancelled', input_requests = null, updated_at = pg_catalog.clock_timestamp()
          where id = $1 and principal = $2 and status in ('working', 'input_required')
         returning runner_pid, runner_started",
        &[id.into(), principal.into()],
        |t| match t.into_iter().next() {
            Some(row) => Ok(match (row.get::<i32>(1)?, row.get(2)?) {
                (Some(pid), Some(started)) => Some(Runner { pid, started }),
                _ => None,
            }),
            None => Ok(None),
        },
    )?;
    announce(id)?;
    Ok(Some(runner))
}

/// A task a runner claimed: its row as stored.
pub struct Claimed {
    pub id: String,
    pub plan: ToolCall,
    pub caller: Value,
    pub responses: Map<String, Value>,
    /// An earlier run of it began and never finished (its runner is gone: a crash, a restart, a
    /// hard stop of its time bound).
    pub interrupted: bool,
    pub attempts: i32,
}

/// Claims the oldest `working` task no live backend runs (tasks of principals with no task
/// running first, so one user's burst does not hold every runner), for this backend. The caller
/// commits the claim before running it; that commit need not wait for its WAL flush: if a crash
/// loses it, the run after it (whose commit flushes it) was lost too, with everything it wrote.
pub fn claim() -> Result<Option<String>, Error> {
    // SAFETY: MyStartTimestamp is set when the backend starts (what pg_stat_activity shows as
    // backend_start).
    let started = unsafe { pg_sys::MyStartTimestamp };
    let started = pgrx::datum::TimestampWithTimeZone::try_from(started)
        .map_err(|_| Error::Internal("Internal error: backend start out of range".into()))?;
    write(
        "with asynchronous as (select pg_catalog.set_config('synchronous_commit', 'off', true)),
              busy as (select distinct principal from chumbo.tasks
                        where status = 'working' and runner_pid is not null)
         update chumbo.tasks t
            set runner_pid = pg_catalog.pg_backend_pid(), runner_started = $1, attempts = t.attempts + 1
           from asynchronous
          where t.id = (
            select c.id from chumbo.tasks c
             where c.status = 'working'
               and (c.runner_pid is null or not exists (
                     select from pg_catalog.pg_stat_activity a
                      where a.pid = c.runner_pid and a.backend_start = c.runner_started))
             order by c.principal in (select principal from busy), c.created_at
             limit 1 for update of c skip locked)
         returning t.id",
        &[started.into()],
        |t| match t.into_iter().next() {
            Some(row) => row.get::<String>(1),
            None => Ok(None),
        },
    )
}

/// The claimed task `id`, if this backend still holds it (`working`, its runner this backend).
pub fn load(id: &str) -> Result<Option<Claimed>, Error> {
    let row = write(
        // FOR UPDATE is not taken: a tasks/cancel must never wait for a run.
        "select plan, caller, input_responses, attempts, status, runs_ended from chumbo.tasks
          where id = $1 and runner_pid = pg_catalog.pg_backend_pid()",
        &[id.into()],
        |t| match t.into_iter().next() {
            Some(row) => Ok(Some((
                row.get::<JsonB>(1)?.map(|j| j.0),
                row.get::<JsonB>(2)?.map(|j| j.0),
                row.get::<JsonB>(3)?.map(|j| j.0),
                row.get::<i32>(4)?.unwrap_or_default(),
                row.get::<String>(5)?.unwrap_or_default(),
                row.get::<i32>(6)?.unwrap_or_default(),
            ))),
            None => Ok(None),
        },
    )?;
    let Some((Some(plan), Some(caller), responses, attempts, status, runs_ended)) = row else {
        return Ok(None);
    };
    if status != "working" {
        return Ok(None);
    }
    let plan: ToolCall = serde_json::from_value(plan).map_err(|e| {
        Error::Internal(format!(
            "Internal error: a stored task plan is unreadable ({e})"
        ))
    })?;
    let responses = match responses {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Ok(Some(Claimed {
        id: id.to_string(),
        plan,
        caller,
        responses,
        interrupted: runs_ended < attempts - 1,
        attempts,
    }))
}

/// How a run ended.
pub enum Settled {
    Completed(Value),
    Failed(Value),
    InputRequired(Value),
}

/// Records how this backend's run of `id` ended, in the run's transaction. false: the task is no
/// longer this run's (cancelled meanwhile): the caller must roll the run's writes back.
pub fn settle(id: &str, outcome: &Settled) -> Result<bool, Error> {
    let (status, result, error, requests) = match outcome {
        Settled::Completed(r) => ("completed", Some(r), None, None),
        Settled::Failed(e) => ("failed", None, Some(e), None),
        Settled::InputRequired(q) => ("input_required", None, None, Some(q)),
    };
    let j = |v: Option<&Value>| v.map(|v| JsonB(v.clone()));
    let settled = write(
        "update chumbo.tasks
            set status = $2, result = $3, error = $4, input_requests = $5,
                runs_ended = runs_ended + 1,
                runner_pid = null, runner_started = null, updated_at = pg_catalog.clock_timestamp()
          where id = $1 and status = 'working' and runner_pid = pg_catalog.pg_backend_pid()
         returning 1",
        &[
            id.into(),
            status.into(),
            j(result).into(),
            j(error).into(),
            j(requests).into(),
        ],
        |t| Ok(!t.is_empty()),
    )?;
    if settled {
        announce(id)?;
    }
    Ok(settled)
}
