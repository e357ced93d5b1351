//! Running a task (src/call/task.rs): its plan, run as its creator by a background worker
//! (src/api/tasks.rs) or by `call chumbo.run_tasks()`, in the transaction that records how it
//! ended, so the tool's writes and the task's outcome commit together.

use crate::call::policy;
use crate::call::scope::RequestScope;
use crate::call::steps::{self, Place, Ran};
use crate::call::task::{self, Claimed, Runner, Settled};
use crate::catalog::registry::{self, Caller, Kind, Registry};
use crate::error::Error;
use crate::identity::principal::Principal;
use crate::identity::session;
use crate::postgres::spi_read;
use pgrx::pg_sys;
use serde_json::{json, Value};

/// Runs of one task at most: a task whose runs keep being cut short (a crash, a hard stop of its
/// time bound) fails instead of being claimed forever.
const MAX_ATTEMPTS: i32 = 3;

/// The bgworker type task workers show in pg_stat_activity.
pub const WORKER_TYPE: &str = "chumbo task";

/// Starts a task worker for this database when fewer than `workers` run (none when 0: then
/// `call chumbo.run_tasks()` runs tasks). A worker started before the task's transaction commits
/// finds it on its next look; a worker that cannot be started leaves the task to the next wake.
pub fn wake(workers: u32) {
    if workers == 0 {
        return;
    }
    // SAFETY: MyDatabaseId is set for the life of a backend connected to a database.
    let database = unsafe { pg_sys::MyDatabaseId };
    let running =
        session::as_owner(|| {
            spi_read::read(
            "select pid from pg_catalog.pg_stat_activity where backend_type = $1 and datid = $2",
            &[WORKER_TYPE.into(), database.into()],
            |t| Ok(t.filter_map(|r| r.get::<i32>(1).ok().flatten()).collect::<Vec<i32>>()),
        )
        })
        .unwrap_or_default();
    // Idle workers look again when this transaction commits, not at their next poll.
    wake_at_commit(&running);
    if running.len() >= workers as usize {
        return;
    }
    let started = pgrx::bgworkers::BackgroundWorkerBuilder::new("chumbo task worker")
        .set_type(WORKER_TYPE)
        .set_library("chumbo")
        .set_function("chumbo_task_worker_main")
        .set_argument(Some(pg_sys::Datum::from(database.to_u32())))
        .enable_spi_access()
        .set_restart_time(None)
        .load_dynamic();
    if started.is_err() {
        pgrx::log!("chumbo: could not start a task worker (max_worker_processes?); tasks wait for the next one, or for `call chumbo.run_tasks()`");
    }
}

thread_local! {
    /// Workers whose latches this transaction's commit sets.
    static WAKE_AT_COMMIT: std::cell::RefCell<Vec<i32>> = const { std::cell::RefCell::new(Vec::new()) };
    static CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn wake_at_commit(pids: &[i32]) {
    if pids.is_empty() {
        return;
    }
    if !CALLBACK.with(|c| c.replace(true)) {
        // SAFETY: a static callback for the rest of the backend's life.
        unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
    }
    WAKE_AT_COMMIT.with(|w| w.borrow_mut().extend_from_slice(pids));
}

/// At commit, sets the latches of the workers [wake] found (a task they may now claim exists);
/// at abort, forgets them. Nothing here can fail: a commit callback must not raise.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    let commit = match event {
        pg_sys::XactEvent::XACT_EVENT_COMMIT => true,
        pg_sys::XactEvent::XACT_EVENT_ABORT => false,
        _ => return,
    };
    let pids = WAKE_AT_COMMIT.with(|w| std::mem::take(&mut *w.borrow_mut()));
    if !commit {
        return;
    }
    for pid in pids {
        // SAFETY: BackendPidGetProc returns the live PGPROC of `pid` or null (it takes
        // ProcArrayLock); setting a latch of a process that exited since is a harmless wake-up
        // of whichever process owns that PGPROC now.
        unsafe {
            let proc = pg_sys::BackendPidGetProc(pid);
            if !proc.is_null() {
                pg_sys::SetLatch(&raw mut (*proc).procLatch);
            }
        }
    }
}

/// Interrupts the statement `runner` is running (as pg_cancel_backend would), if that backend is
/// still the one that claimed the task: its pid and start time both match.
pub fn interrupt(runner: &Runner) {
    let alive = session::as_owner(|| {
        spi_read::one::<bool>(
            "select true from pg_catalog.pg_stat_activity where pid = $1 and backend_start = $2",
            &[runner.pid.into(), runner.started.into()],
        )
    });
    if matches!(alive, Ok(Some(true))) {
        // SAFETY: sends SIGINT (a query cancel) to a PostgreSQL backend of this cluster, checked
        // just above to be the task's runner; its transaction cannot record the task as finished
        // before ours, which holds the task's row, commits (src/call/task.rs settle).
        unsafe { libc::kill(runner.pid, libc::SIGINT) };
    }
}

/// The caller a task was created by, as of now: its role must still be allowed.
fn creator(registry: &Registry, claimed: &Claimed) -> Result<Caller, Error> {
    let stored = &claimed.caller;
    let broken = || Error::Internal("Internal error: a stored task creator is unreadable".into());
    let role = stored
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(broken)?;
    let principal = stored
        .get("principal")
        .and_then(Principal::restored)
        .ok_or_else(broken)?;
    let role_oid = session::check_role(
        role,
        &registry.settings.allowed_roles,
        &registry.table_owners,
    )?;
    Ok(Caller {
        principal,
        role_oid,
        scopes: claimed.plan.caller.scopes.clone(),
        claims: stored.get("claims").cloned().unwrap_or(json!({})),
    })
}

/// Runs the task `id` this backend claimed (src/call/task.rs claim, committed), inside the
/// current transaction. Never raises for the task's own failures: they become its outcome.
pub fn run(id: &str) {
    let claimed = match task::load(id) {
        Ok(Some(c)) => c,
        _ => return, // cancelled meanwhile, or not ours
    };
    let registry = registry::current();
    let started = std::time::Instant::now();
    let trace = claimed.plan.trace_id.clone();
    let outcome = match creator(&registry, &claimed) {
        Err(e) => Some(failed(&e)),
        Ok(caller) => run_as(&registry, &caller, &claimed),
    };
    let class = match &outcome {
        Some(Settled::Completed(r)) if r.get("isError") == Some(&json!(true)) => "task tool_error",
        Some(Settled::Completed(_)) => "task completed",
        Some(Settled::Failed(_)) => "task failed",
        Some(Settled::InputRequired(_)) => "task input_required",
        None => "task cancelled",
    };
    if let Some(o) = &outcome {
        // The run's own subtransaction recorded it unless it failed before that: record it now.
        if !matches!(o, Settled::Completed(_) | Settled::InputRequired(_)) {
            let _ = task::settle(id, o);
        }
    }
    if registry.settings.audit {
        crate::bookkeeping::ledger::audit(
            false,
            crate::bookkeeping::ledger::Event {
                trace_id: &trace,
                era: "task",
                method: Some("tools/call"),
                capability: Some(&claimed.plan.tool),
                principal: &claimed.plan.caller.principal,
                outcome: class,
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                bytes: 0,
                detail: None,
                run_id: None,
            },
        );
    }
}

/// A failed task's `error`: the JSON-RPC error object.
fn failed(e: &Error) -> Settled {
    Settled::Failed(e.rpc().to_json())
}

/// The run proper, as `caller`: None when the task was cancelled while it ran (its writes are
/// rolled back). Completed and input-required outcomes are recorded here, in the subtransaction
/// that holds the tool's writes.
fn run_as(registry: &Registry, caller: &Caller, claimed: &Claimed) -> Option<Settled> {
    let plan = &claimed.plan;
    let cap = registry
        .capabilities
        .find(&plan.tool, Kind::Tool)
        .filter(|c| policy::usable(registry, caller, c));
    let Some(cap) = cap else {
        return Some(failed(&Error::Internal(format!(
            "{} is no longer available to the task's creator",
            plan.tool
        ))));
    };
    let safe_again = cap.read_only
        || cap
            .meta
            .annotations
            .as_ref()
            .and_then(|a| a.idempotent_hint)
            .unwrap_or(false);
    if claimed.interrupted && (!safe_again || claimed.attempts > MAX_ATTEMPTS) {
        return Some(failed(&Error::Internal(format!(
            "The task stopped before it finished (the server restarted, or its time bound of {} ms ended its worker) and {} is not safe to run again; nothing it wrote was kept",
            plan.timeout_ms, plan.tool
        ))));
    }
    let mut plan = plan.clone();
    plan.timeout_ms = plan
        .timeout_ms
        .min(registry.settings.task_timeout_ceiling_ms);
    let state_key = registry.keys.get("state").cloned().unwrap_or_default();
    let trace = crate::trace_context::TraceParent {
        trace_id: plan.trace_id.clone(),
        parent_id: "0000000000000001".into(),
        flags: 0,
        state: None,
    };
    let scope = RequestScope::enter(
        caller.principal.clone(),
        state_key,
        None,
        registry.settings.max_result_bytes,
        Some(trace),
    );
    let id = claimed.id.as_str();
    let ran = session::in_subtransaction(|| {
        let settled = match steps::run(
            registry,
            caller,
            cap,
            &plan,
            Place::Worker(&claimed.responses),
        ) {
            Ran::Answer(Ok(v)) if v.get("resultType") == Some(&json!("input_required")) => {
                Settled::InputRequired(v.get("inputRequests").cloned().unwrap_or(json!({})))
            }
            Ran::Answer(Ok(v)) => Settled::Completed(v),
            Ran::Answer(Err(e)) => failed(&e),
            Ran::BecomeTask(_) => failed(&Error::Internal(
                "Internal error: a task cannot become another task".into(),
            )),
        };
        if matches!(settled, Settled::Completed(_) | Settled::InputRequired(_))
            && !task::settle(id, &settled).unwrap_or(false)
        {
            // Cancelled while it ran: undo what the tool wrote.
            crate::error::raise(
                pgrx::PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
                "chumbo: the task was cancelled",
                None,
            );
        }
        settled
    });
    drop(scope);
    match ran {
        Ok(settled) => Some(settled),
        Err(e) => {
            // Cancelled (its row is no longer this run's), or something chumbo did not expect.
            let still_ours = matches!(task::load(id), Ok(Some(_)));
            still_ours.then(|| {
                pgrx::log!(
                    "chumbo trace {}: task run failed with {}: {}",
                    plan.trace_id,
                    e.sqlstate,
                    e.message
                );
                failed(&Error::Internal(format!(
                    "Internal error (trace id {})",
                    plan.trace_id
                )))
            })
        }
    }
}
