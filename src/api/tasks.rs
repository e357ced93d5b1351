//! The task runners (src/call/task.rs, src/call/task_run.rs): chumbo's background workers, and
//! the two steps of `call chumbo.run_tasks()` (sql/tasks.sql), the fallback where workers cannot
//! be started. Both claim a task in one transaction and run it in the next.
//!
//! Workers are dynamic background workers, started on demand (a task created, answered or polled,
//! src/call/task_run.rs wake) up to the setting `task_workers` per database; each runs tasks until
//! none is left, then exits after [IDLE_EXIT]. That needs no `shared_preload_libraries`. With
//! chumbo preloaded, a launcher also starts a worker in every database when the server starts (and
//! after a crash), so tasks left unfinished run again without waiting for a client to poll them.

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::time::{Duration, Instant};

/// How often an idle worker looks for tasks (a task created before its transaction commits is
/// found on the next look).
const POLL: Duration = Duration::from_millis(100);
/// A worker without tasks for this long exits (the next task starts another).
const IDLE_EXIT: Duration = Duration::from_secs(5);

/// `chumbo._task_claim()`: claims a waiting task for this session (committed by the caller before
/// `_task_run`), or null when none waits.
#[pg_extern(name = "_task_claim")]
fn task_claim() -> Option<String> {
    super::serve(false, || crate::call::task::claim().ok().flatten())
}

/// `chumbo._task_run(id)`: runs the task this session claimed, as its creator.
#[pg_extern(name = "_task_run")]
fn task_run(id: &str) {
    super::serve(false, || crate::call::task_run::run(id));
}

/// The worker: connects to its database, then claims and runs tasks until none is left.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn chumbo_task_worker_main(arg: pg_sys::Datum) {
    let database = pg_sys::Oid::from(arg.value() as u32);
    // SIGTERM keeps PostgreSQL's default for background workers (end at once, even mid-statement):
    // a shutdown or DROP DATABASE ... WITH (FORCE) must not wait for a long task. Its run is then
    // cut short, and the next claim knows it (src/call/task.rs).
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP);
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(database), None);
    if !BackgroundWorker::transaction(may_work) {
        return;
    }
    let mut idle_since = Instant::now();
    loop {
        // A cancel meant for a task that ended already must not cut the next one short.
        // SAFETY: a backend-local interrupt flag, cleared between transactions.
        unsafe { pg_sys::QueryCancelPending = 0 };
        match BackgroundWorker::transaction(task_claim) {
            Some(id) => {
                BackgroundWorker::transaction(|| task_run(&id));
                idle_since = Instant::now();
            }
            None if idle_since.elapsed() > IDLE_EXIT => return,
            None => {
                if !BackgroundWorker::wait_latch(Some(POLL)) {
                    return;
                }
            }
        }
    }
}

/// Whether this worker has work here: chumbo is installed, and fewer than `task_workers` workers
/// started before it still run (a burst of wakes may start more than the bound; the late ones go).
fn may_work() -> bool {
    if !crate::postgres::spi_read::relation_exists("chumbo.tasks") {
        return false;
    }
    let workers = crate::catalog::registry::current().settings.task_workers;
    let earlier = crate::postgres::spi_read::one::<i64>(
        "select pg_catalog.count(*) from pg_catalog.pg_stat_activity a, pg_catalog.pg_stat_activity me
          where me.pid = pg_catalog.pg_backend_pid() and a.backend_type = me.backend_type
            and a.datid = me.datid and (a.backend_start, a.pid) < (me.backend_start, me.pid)",
        &[],
    );
    matches!(earlier, Ok(Some(n)) if n < i64::from(workers))
}

/// From _PG_init, when chumbo is preloaded: the launcher, started with the server (and again
/// after a crash).
pub fn init() {
    // SAFETY: a flag the postmaster sets while it loads shared_preload_libraries.
    if !unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        return;
    }
    BackgroundWorkerBuilder::new("chumbo task launcher")
        .set_type("chumbo task launcher")
        .set_library("chumbo")
        .set_function("chumbo_task_launcher_main")
        .enable_spi_access()
        .set_start_time(pgrx::bgworkers::BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(10)))
        .load();
}

/// The launcher: from the `postgres` database, starts a task worker in every database that
/// accepts connections (each exits at once where chumbo is not installed or nothing waits), then
/// sleeps until the server stops: it stays registered, so it runs again after a crash.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn chumbo_task_launcher_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP); // SIGTERM: as for workers
    BackgroundWorker::connect_worker_to_spi(Some("postgres"), None);
    let databases: Vec<u32> = BackgroundWorker::transaction(|| {
        crate::postgres::spi_read::read(
            "select oid from pg_catalog.pg_database where datallowconn and not datistemplate",
            &[],
            |t| {
                Ok(t.filter_map(|r| r.get::<pg_sys::Oid>(1).ok().flatten())
                    .map(|o| o.to_u32())
                    .collect())
            },
        )
        .unwrap_or_default()
    });
    for database in databases {
        let _ = BackgroundWorkerBuilder::new("chumbo task worker")
            .set_type(crate::call::task_run::WORKER_TYPE)
            .set_library("chumbo")
            .set_function("chumbo_task_worker_main")
            .set_argument(Some(pg_sys::Datum::from(database)))
            .enable_spi_access()
            .set_restart_time(None)
            .load_dynamic();
    }
    while BackgroundWorker::wait_latch(Some(Duration::from_secs(3600))) {}
}
