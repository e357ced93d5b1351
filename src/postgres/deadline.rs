//! The time bound of one capability call, in two steps.
//!
//! 1. At the bound, the statement timer cancels the call (57014). Tool code can catch that
//!    (`exception when query_canceled`), and so it can catch the client's cancel too.
//! 2. [HARD_STOP_GRACE_MS] later, if the call is still running, a timer of chumbo's own ends the
//!    backend as `pg_terminate_backend` would: FATAL cannot be caught, the transaction is rolled
//!    back, session-level and transaction-level locks (the in-flight slot) are released, and the
//!    client gets SQLSTATE 57014 with a message saying why, then the connection closes (the edge
//!    answers the request with the timeout answer and its pool opens a new connection).
//!
//! Tool code cannot reach either timer: `SET statement_timeout` inside the call does not move
//! the running statement's timer, and the second timer is not a setting at all.

use pgrx::pg_sys;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// How long a call may go on after its bound before its backend is ended. Half a second leaves
/// the rest of the promised second for the backend's exit and the edge's answer.
pub const HARD_STOP_GRACE_MS: i64 = 500;

// utils/timeout.h is not bound by pgrx. TimeoutId is a C enum (int): STARTUP_PACKET_TIMEOUT,
// DEADLOCK_TIMEOUT, LOCK_TIMEOUT, STATEMENT_TIMEOUT, ... so 3, as read in the headers of 15.20,
// 16.2 and 18.6; 17 added TRANSACTION_TIMEOUT (its transaction_timeout setting) after
// IDLE_IN_TRANSACTION_SESSION_TIMEOUT, past it, as 18's header shows. Another major does not
// compile until its header has been read; tests/regress time_and_events (a tool's bound cutting a
// 30 s sleep) runs on 15, 16 and 18 in `make test` and fails if this is another timer.
#[cfg(any(feature = "pg15", feature = "pg16", feature = "pg17", feature = "pg18"))]
const STATEMENT_TIMEOUT: i32 = 3;
/// Any id at or above USER_TIMEOUT asks RegisterTimeout for a free user-defined id. USER_TIMEOUT
/// itself moves between majors (12 in 15 and 16, 13 in 17 and 18); this is above it in all.
const ANY_USER_TIMEOUT: i32 = 1 << 16;

// SAFETY: exported functions of the PostgreSQL server with these C signatures (utils/timeout.h);
// they raise at most FATAL, never longjmp into Rust.
unsafe extern "C-unwind" {
    fn enable_timeout_at(id: i32, fin_time: pg_sys::TimestampTz);
    fn disable_timeout(id: i32, keep_indicator: bool);
    fn get_timeout_active(id: i32) -> bool;
    fn get_timeout_finish_time(id: i32) -> pg_sys::TimestampTz;
    fn RegisterTimeout(id: i32, handler: Option<unsafe extern "C" fn()>) -> i32;
}

thread_local! {
    /// The id RegisterTimeout gave the hard stop in this backend (registered on first use).
    static HARD_STOP_ID: Cell<Option<i32>> = const { Cell::new(None) };
}

/// Set by the hard stop's handler (a signal handler, hence an atomic): the FATAL that follows is
/// chumbo's, and [on_emit_log] says so in its message.
static HARD_STOPPED: AtomicBool = AtomicBool::new(false);

/// The bound of the call now running, in milliseconds, for the hard stop's message.
static BOUND_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The timer handler (runs inside SIGALRM's handler): asks the backend to die at its next
/// interrupt check, exactly as SIGTERM's handler (`die`) does.
unsafe extern "C" fn hard_stop() {
    HARD_STOPPED.store(true, Ordering::SeqCst);
    // SAFETY: the same writes `die()` makes from its signal handler; both are sig_atomic_t, and
    // SetLatch is async-signal-safe.
    unsafe {
        std::ptr::write_volatile(&raw mut pg_sys::ProcDiePending, 1);
        std::ptr::write_volatile(&raw mut pg_sys::InterruptPending, 1);
        pg_sys::SetLatch(pg_sys::MyLatch);
    }
}

fn hard_stop_id() -> i32 {
    HARD_STOP_ID.with(|cell| {
        cell.get().unwrap_or_else(|| {
            // SAFETY: registers a handler for a free user-defined timeout id of this backend,
            // once (the id is kept); RegisterTimeout raises FATAL only when all ten user ids are
            // taken.
            let id = unsafe { RegisterTimeout(ANY_USER_TIMEOUT, Some(hard_stop)) };
            // SAFETY: registers an exit callback once per backend (with the timer).
            unsafe { pg_sys::before_shmem_exit(Some(after_hard_stop), pg_sys::Datum::from(0)) };
            cell.set(Some(id));
            id
        })
    })
}

/// After the hard stop's FATAL went to the client: a ReadyForQuery. Drivers that report a query's
/// ErrorResponse only when ReadyForQuery follows (postgres.js, the edge's) would otherwise see a
/// bare closed connection, not knowing the call was stopped; with it they report the FATAL (57014,
/// chumbo's message) as the query's error. Runs before the transaction is aborted and before the
/// socket is closed (before_shmem_exit callbacks run first, latest first).
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn after_hard_stop(_code: i32, _arg: pg_sys::Datum) {
    // SAFETY: reads of backend globals; ReadyForQuery writes one protocol message to the client
    // connection (still open here) and flushes it.
    unsafe {
        if HARD_STOPPED.load(Ordering::SeqCst) && !pg_sys::MyProcPort.is_null() {
            pg_sys::ReadyForQuery(pg_sys::CommandDest::DestRemote);
        }
    }
}

static mut PREV_EMIT_LOG_HOOK: pg_sys::emit_log_hook_type = None;

/// Installs the log hook that names the hard stop in its FATAL (from _PG_init).
pub fn init() {
    // SAFETY: _PG_init runs once per backend, before any other code of this library; the previous
    // hook is kept and called.
    unsafe {
        PREV_EMIT_LOG_HOOK = pg_sys::emit_log_hook;
        pg_sys::emit_log_hook = Some(on_emit_log);
    }
}

/// The backend's FATAL after a hard stop says "terminating connection due to administrator
/// command" (57P01), which reads like a server shutdown. The hook runs before the report is sent
/// to the log and the client, so both get chumbo's reason and 57014 instead.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn on_emit_log(edata: *mut pg_sys::ErrorData) {
    // SAFETY: edata is the report being emitted, valid for the whole call; the message is
    // allocated in the current (error) memory context, as the report's own strings are.
    unsafe {
        if HARD_STOPPED.load(Ordering::SeqCst)
            && (*edata).elevel == pg_sys::FATAL as i32
            && (*edata).sqlerrcode == pgrx::PgSqlErrorCode::ERRCODE_ADMIN_SHUTDOWN as i32
        {
            // The request's trace id, as its other errors carry it: the edge answers the request
            // with it, so the answer, this log line and the edge's own line name the same trace.
            let trace = crate::trace_context::request_trace_id()
                .map(|t| format!(" (trace id {t})"))
                .unwrap_or_default();
            let message = format!(
                "chumbo: the call went on {HARD_STOP_GRACE_MS} ms past its time bound of {} ms \
                 after being cancelled; its transaction was rolled back and the connection \
                 closed{trace}",
                BOUND_MS.load(Ordering::SeqCst)
            );
            let message = std::ffi::CString::new(message).unwrap_or_default();
            (*edata).message = pg_sys::pstrdup(message.as_ptr());
            (*edata).sqlerrcode = pgrx::PgSqlErrorCode::ERRCODE_QUERY_CANCELED as i32;
            // The context quotes the statements that were running (chumbo's generated call, the
            // tool's own SQL): errors never carry SQL text to the client.
            (*edata).context = std::ptr::null_mut();
        }
        if let Some(prev) = PREV_EMIT_LOG_HOOK {
            prev(edata);
        }
    }
}

/// The timers while a capability runs: the statement timer at the earlier of the session's own
/// deadline and now + `budget_ms`, the hard stop [HARD_STOP_GRACE_MS] after that. Both are put
/// back as they were afterwards (a bound armed inside another restores the outer one).
pub struct TimeBound {
    pub at: pg_sys::TimestampTz,
    outer: Option<pg_sys::TimestampTz>,
    outer_hard: Option<pg_sys::TimestampTz>,
    outer_bound_ms: u64,
}

impl TimeBound {
    pub fn arm(budget_ms: u64) -> TimeBound {
        let hard = hard_stop_id();
        // SAFETY: plain calls into timeout.c; they only raise FATAL (never longjmp into Rust).
        unsafe {
            let outer = get_timeout_active(STATEMENT_TIMEOUT)
                .then(|| get_timeout_finish_time(STATEMENT_TIMEOUT));
            let outer_hard = get_timeout_active(hard).then(|| get_timeout_finish_time(hard));
            let now = pg_sys::GetCurrentTimestamp();
            let ours = now.saturating_add((budget_ms.min(i64::MAX as u64 / 1000) as i64) * 1000);
            let at = outer.map_or(ours, |o| o.min(ours));
            enable_timeout_at(STATEMENT_TIMEOUT, at);
            let hard_at = at.saturating_add(HARD_STOP_GRACE_MS * 1000);
            enable_timeout_at(hard, outer_hard.map_or(hard_at, |o| o.min(hard_at)));
            let bound_ms = u64::try_from((at - now) / 1000).unwrap_or(0);
            let outer_bound_ms = BOUND_MS.swap(bound_ms, Ordering::SeqCst);
            TimeBound {
                at,
                outer,
                outer_hard,
                outer_bound_ms,
            }
        }
    }

    /// Puts the timers back; true when this bound (not the session's earlier deadline) had
    /// passed by now.
    pub fn disarm(&self) -> bool {
        let hard = hard_stop_id();
        // SAFETY: as in arm.
        unsafe {
            match self.outer_hard {
                Some(o) => enable_timeout_at(hard, o),
                None => disable_timeout(hard, false),
            }
            BOUND_MS.store(self.outer_bound_ms, Ordering::SeqCst);
            let passed = pg_sys::GetCurrentTimestamp() >= self.at;
            // Ours only if the session's own deadline was not the earlier one.
            let ours = passed && self.outer.is_none_or(|o| o > self.at);
            if ours && pg_sys::QueryCancelPending != 0 {
                // The timer fired as the call ended, before anything checked for interrupts:
                // the call is over, so its deadline must not cancel what chumbo does next.
                pg_sys::QueryCancelPending = 0;
            }
            match self.outer {
                Some(outer) => enable_timeout_at(STATEMENT_TIMEOUT, outer),
                None => disable_timeout(STATEMENT_TIMEOUT, false),
            }
            ours
        }
    }
}
