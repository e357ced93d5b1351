//! The audit queue: a read-only call's audit row, handed over at its commit to a background worker
//! that writes the rows in batches, so the call stays a read-only transaction (no transaction id,
//! no heap insert, no commit record: about a fifth of a small call's cost at 8 clients).
//!
//! Only with `shared_preload_libraries = 'chumbo'` (the queue lives in shared memory, which only a
//! preloaded library can ask for). Without it, or whenever a row cannot be queued, ledger::audit
//! writes the row in the call's own transaction, as before. A row is queued only when the call's
//! transaction has written nothing (no transaction id) and is a single statement (not a block:
//! a savepoint could roll the call back while its row stayed queued); a call that wrote keeps its
//! row in the same transaction as its writes.
//!
//! What a crash (or an immediate shutdown) can lose: rows of read-only calls that committed in the
//! last moments before it and were not yet written by the worker (it writes every
//! [FLUSH_EVERY], and at once when the queue is a quarter full; its commits wait for the local WAL
//! flush, never for a synchronous standby: see [NO_STANDBY_WAIT]). A fast or smart shutdown loses
//! nothing: the worker stops accepting, waits for the calls that reserved a slot, writes
//! everything and exits. A row whose transaction aborts is dropped.
//!
//! Rows are queued for one database at a time (the worker's): a call in another database writes
//! its row itself. The worker is started on demand by the first call that could queue (at most one
//! start per [RESTART_AFTER_US]) and exits after [IDLE_EXIT_US] without work, so that it does not
//! hold its database against DROP DATABASE. On a standby nothing is queued (nothing could be
//! written there; the call fails as it would writing its row).

use pgrx::bgworkers::{BackgroundWorker, BackgroundWorkerBuilder, SignalWakeFlags};
use pgrx::datum::TimestampWithTimeZone;
use pgrx::lwlock::PgLwLock;
use pgrx::prelude::*;
use pgrx::shmem::PGRXSharedMemory;
use pgrx::{pg_shmem_init, pg_sys};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const CAPACITY: usize = 2048;
/// The text columns of one row share this many bytes; a longer row is written in its call.
const TEXT_BYTES: usize = 416;
const FIELDS: usize = 7;
const NULL: u16 = u16::MAX;
const BATCH: usize = 512;
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// The worker commits with `synchronous_commit = local`. A commit waiting for a synchronous standby
/// ends only by `die()` (or its standby's answer), and this worker keeps SIGTERM for itself to
/// drain the queue: a wait for a standby that will not answer (one being promoted: a
/// pg_auto_failover demotion stops its primary with a fast shutdown) held the primary's shutdown,
/// and so the failover, forever. Nothing waits on these commits anyway: the calls whose rows they
/// are answered already, and were read-only. A failover can lose what a crash can: rows committed
/// in the last moments and not yet streamed to the standby.
const NO_STANDBY_WAIT: (&std::ffi::CStr, &std::ffi::CStr) = (c"synchronous_commit", c"local");
const RESTART_AFTER_US: i64 = 1_000_000;
/// How long a stopping worker waits for calls that reserved a slot to commit or abort.
const DRAIN_WAIT_US: i64 = 5_000_000;
/// A worker with nothing to write for this long exits (a later call starts another).
const IDLE_EXIT_US: i64 = 10_000_000;

/// The text columns, in this order: trace_id, era, method, capability, principal, outcome, run_id.
pub struct Row<'a> {
    pub texts: [Option<&'a str>; FIELDS],
    pub duration_ms: f64,
    pub bytes: i32,
}

#[derive(Copy, Clone)]
#[repr(C)]
struct Entry {
    at: i64,
    duration_ms: f64,
    bytes: i32,
    lens: [u16; FIELDS],
    text: [u8; TEXT_BYTES],
}

impl Entry {
    const EMPTY: Entry = Entry {
        at: 0,
        duration_ms: 0.0,
        bytes: 0,
        lens: [NULL; FIELDS],
        text: [0; TEXT_BYTES],
    };

    fn of(row: &Row, at: i64) -> Option<Entry> {
        let mut e = Entry {
            at,
            duration_ms: row.duration_ms,
            bytes: row.bytes,
            ..Entry::EMPTY
        };
        let mut used = 0;
        for (i, t) in row.texts.iter().enumerate() {
            if let Some(t) = t {
                let end = used + t.len();
                if end > TEXT_BYTES {
                    return None;
                }
                e.text[used..end].copy_from_slice(t.as_bytes());
                e.lens[i] = t.len() as u16;
                used = end;
            }
        }
        Some(e)
    }

    fn texts(&self) -> [Option<String>; FIELDS] {
        let mut at = 0;
        self.lens.map(|len| {
            (len != NULL).then(|| {
                let s = &self.text[at..at + len as usize];
                at += len as usize;
                // Copied from &str: valid UTF-8.
                String::from_utf8_lossy(s).into_owned()
            })
        })
    }
}

#[derive(Copy, Clone)]
#[repr(C)]
struct Queue {
    /// The database the entries belong to and the worker serves (InvalidOid: none yet).
    database: pg_sys::Oid,
    /// The running worker's latch (0: none runs).
    worker_latch: usize,
    accepting: bool,
    /// When a call last asked the postmaster for a worker.
    last_start: i64,
    /// Slots promised to calls whose transactions have not ended yet.
    reserved: usize,
    /// Entries ever queued / ever written (and committed) by the worker; the ring holds head - tail.
    head: u64,
    tail: u64,
    /// Rows a call wrote itself because the queue was full.
    overflowed: u64,
    entries: [Entry; CAPACITY],
}

impl Queue {
    const EMPTY: Queue = Queue {
        database: pg_sys::InvalidOid,
        worker_latch: 0,
        accepting: false,
        last_start: 0,
        reserved: 0,
        head: 0,
        tail: 0,
        overflowed: 0,
        entries: [Entry::EMPTY; CAPACITY],
    };

    fn queued(&self) -> usize {
        (self.head - self.tail) as usize
    }
}

// SAFETY: plain data (no pointers into process memory: the latch is an address in shared memory).
unsafe impl PGRXSharedMemory for Queue {}

// SAFETY: one lock of this name, in a static; pgrx attaches it to the shared memory requested in
// _PG_init before any backend uses it.
static QUEUE: PgLwLock<Queue> = unsafe { PgLwLock::new(c"chumbo_audit_queue") };
/// Set in the postmaster when chumbo is preloaded (inherited by every backend it forks).
static PRELOADED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Rows of this backend's open transaction that hold a reserved slot.
    static PENDING: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    static CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// From _PG_init: asks for the queue's shared memory when chumbo is being preloaded.
// pgrx's macro tests features of PostgreSQL versions this crate does not build for.
#[allow(unexpected_cfgs)]
pub fn init() {
    // SAFETY: a flag the postmaster sets while it loads shared_preload_libraries.
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        pg_shmem_init!(QUEUE = Queue::EMPTY);
        PRELOADED.store(true, Ordering::Relaxed);
    }
}

/// Queues the row of a call that is the whole of a read-only single-statement transaction, to be
/// handed to the worker when that transaction commits. false: the caller writes the row itself.
pub fn defer(row: &Row) -> bool {
    if !PRELOADED.load(Ordering::Relaxed) {
        return false;
    }
    // SAFETY: reads of the transaction's state and of the backend's database.
    let (in_block, wrote, database, at) = unsafe {
        (
            pg_sys::IsTransactionBlock() || pg_sys::GetCurrentTransactionNestLevel() > 1,
            pg_sys::GetTopTransactionIdIfAny() != pg_sys::InvalidTransactionId,
            pg_sys::MyDatabaseId,
            pg_sys::GetCurrentTransactionStartTimestamp(),
        )
    };
    // On a standby nothing can be written: the call must fail as it would writing its row.
    // SAFETY: reads shared recovery state.
    if in_block || wrote || unsafe { pg_sys::RecoveryInProgress() } {
        return false;
    }
    let Some(entry) = Entry::of(row, at) else {
        return false;
    };
    let mut start = false;
    let reserved = {
        let mut q = QUEUE.exclusive();
        if q.accepting && q.database == database && q.queued() + q.reserved < CAPACITY {
            q.reserved += 1;
            true
        } else {
            if q.accepting && q.database == database {
                q.overflowed += 1;
            }
            let now = now();
            if q.worker_latch == 0
                && (q.database == pg_sys::InvalidOid || q.database == database)
                && now - q.last_start > RESTART_AFTER_US
            {
                q.last_start = now;
                q.database = database;
                start = true;
            }
            false
        }
    };
    if start && !start_worker(database) {
        release_database_if_unused(&mut QUEUE.exclusive());
    }
    if reserved {
        if !CALLBACK.with(|c| c.replace(true)) {
            // SAFETY: a static callback for the rest of the backend's life.
            unsafe { pg_sys::RegisterXactCallback(Some(at_transaction_end), std::ptr::null_mut()) };
        }
        PENDING.with(|p| p.borrow_mut().push(entry));
    }
    reserved
}

fn start_worker(database: pg_sys::Oid) -> bool {
    let started = BackgroundWorkerBuilder::new("chumbo audit writer")
        .set_type("chumbo audit")
        .set_library("chumbo")
        .set_function("chumbo_audit_worker_main")
        .set_argument(Some(pg_sys::Datum::from(database.to_u32())))
        .enable_spi_access()
        .set_restart_time(None)
        .load_dynamic();
    if started.is_err() {
        pgrx::log!("chumbo: could not start the audit writer (max_worker_processes?); rows are written in their calls");
    }
    started.is_ok()
}

/// At commit the reserved rows join the queue; at abort they are dropped. Nothing here can fail:
/// a commit callback must not raise.
#[pg_guard]
unsafe extern "C-unwind" fn at_transaction_end(
    event: pg_sys::XactEvent::Type,
    _arg: *mut std::ffi::c_void,
) {
    let commit = match event {
        pg_sys::XactEvent::XACT_EVENT_COMMIT => true,
        pg_sys::XactEvent::XACT_EVENT_ABORT => false,
        _ => return,
    };
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_empty() {
            return;
        }
        let wake = {
            let mut q = QUEUE.exclusive();
            q.reserved -= p.len();
            if commit {
                for e in p.iter() {
                    let slot = (q.head % CAPACITY as u64) as usize;
                    q.entries[slot] = *e;
                    q.head += 1;
                }
            }
            (commit && q.queued() >= CAPACITY / 4).then_some(q.worker_latch)
        };
        p.clear();
        if let Some(latch) = wake.filter(|l| *l != 0) {
            // SAFETY: the worker's latch in shared memory; a latch set after its worker exited is
            // a harmless spurious wake-up of whichever process owns that PGPROC now.
            unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
        }
    });
}

/// The worker: connects to the database it was started for, writes what is queued every
/// FLUSH_EVERY (or when woken), and drains everything before it exits.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn chumbo_audit_worker_main(arg: pg_sys::Datum) {
    let database = pg_sys::Oid::from(arg.value() as u32);
    // SAFETY: a static callback, registered before anything can fail; it runs on every exit path.
    unsafe { pg_sys::before_shmem_exit(Some(at_worker_exit), pg_sys::Datum::from(0)) };
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    BackgroundWorker::connect_worker_to_spi_by_oid(Some(database), None);
    // SAFETY: a valid GUC name and value; at the session level it outranks a database's or role's.
    unsafe {
        pg_sys::SetConfigOption(
            NO_STANDBY_WAIT.0.as_ptr(),
            NO_STANDBY_WAIT.1.as_ptr(),
            pg_sys::GucContext::PGC_SUSET,
            pg_sys::GucSource::PGC_S_SESSION,
        )
    };
    {
        let mut q = QUEUE.exclusive();
        if q.worker_latch != 0 || q.database != database {
            return; // another worker serves the queue
        }
        q.worker_latch = my_latch();
        q.accepting = true;
    }
    let mut idle_since = now();
    loop {
        if !BackgroundWorker::wait_latch(Some(FLUSH_EVERY)) {
            break;
        }
        if write_queued() > 0 {
            idle_since = now();
        } else if now() - idle_since > IDLE_EXIT_US && stop_accepting_if_idle() {
            // Idle: exit, so that DROP DATABASE is not refused for a connection nobody uses.
            return;
        }
    }
    QUEUE.exclusive().accepting = false;
    let deadline = now() + DRAIN_WAIT_US;
    while QUEUE.share().reserved > 0 && now() < deadline {
        // SAFETY: sleeps 1 ms.
        unsafe { pg_sys::pg_usleep(1000) };
    }
    write_queued();
}

fn now() -> i64 {
    // SAFETY: reads the clock.
    unsafe { pg_sys::GetCurrentTimestamp() }
}

fn my_latch() -> usize {
    // SAFETY: MyProc is this process's PGPROC in shared memory.
    (unsafe { &raw mut (*pg_sys::MyProc).procLatch }) as usize
}

/// Stops taking rows when nothing is queued or promised; false (and still accepting) otherwise.
fn stop_accepting_if_idle() -> bool {
    let mut q = QUEUE.exclusive();
    let idle = q.queued() == 0 && q.reserved == 0;
    if idle {
        q.accepting = false;
    }
    idle
}

#[pg_guard]
unsafe extern "C-unwind" fn at_worker_exit(_code: i32, _arg: pg_sys::Datum) {
    let mut q = QUEUE.exclusive();
    // SAFETY: MyProc is set (or null before InitProcess, then this worker claimed nothing).
    if !unsafe { pg_sys::MyProc }.is_null() && q.worker_latch == my_latch() {
        q.accepting = false;
        q.worker_latch = 0;
    }
    release_database_if_unused(&mut q);
}

/// A database claimed by no running worker, with nothing queued for it, is free for any other.
fn release_database_if_unused(q: &mut Queue) {
    if q.worker_latch == 0 && q.queued() == 0 && q.reserved == 0 {
        q.database = pg_sys::InvalidOid;
    }
}

/// Writes what is queued now, in batches, each in its own transaction; an entry leaves the queue
/// only once its batch committed (a worker that fails leaves them for the next one). Rows queued
/// meanwhile wait for the next round: chasing them would commit (and flush) a few rows at a time.
fn write_queued() -> u64 {
    let upto = QUEUE.share().head;
    let mut written = 0;
    loop {
        let batch: Vec<Entry> = {
            let q = QUEUE.share();
            let n = ((upto.saturating_sub(q.tail)) as usize).min(BATCH);
            (0..n)
                .map(|i| q.entries[((q.tail + i as u64) % CAPACITY as u64) as usize])
                .collect()
        };
        if batch.is_empty() {
            return written;
        }
        BackgroundWorker::transaction(|| insert(&batch));
        QUEUE.exclusive().tail += batch.len() as u64;
        written += batch.len() as u64;
    }
}

fn insert(batch: &[Entry]) {
    // SAFETY: a catalog lookup; missing_ok = true.
    let schema = unsafe { pg_sys::get_namespace_oid(c"chumbo".as_ptr(), true) };
    if schema == pg_sys::InvalidOid {
        // The extension was dropped, and its table with it: these rows would have gone too.
        return;
    }
    let mut columns: [Vec<Option<String>>; FIELDS] = Default::default();
    let (mut at, mut duration, mut bytes) = (vec![], vec![], vec![]);
    for e in batch {
        for (column, text) in columns.iter_mut().zip(e.texts()) {
            column.push(text);
        }
        at.push(TimestampWithTimeZone::try_from(e.at).ok());
        duration.push(e.duration_ms);
        bytes.push(e.bytes);
    }
    let [trace_id, era, method, capability, principal, outcome, run_id] = columns;
    crate::identity::session::as_owner(|| {
        // A write, meant to take a transaction id.
        #[allow(clippy::disallowed_methods)]
        Spi::run_with_args(
            // Every name qualified (so `rows from` spelled out: an unqualified multi-argument
            // unnest is expanded into unqualified ones): the worker runs with its database's
            // search_path, which the database owner can set.
            "insert into chumbo.audit_events \
             (at, trace_id, era, method, capability, principal, outcome, duration_ms, bytes, run_id) \
             select * from rows from (pg_catalog.unnest($1::pg_catalog.timestamptz[]), \
                 pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[]), \
                 pg_catalog.unnest($4::pg_catalog.text[]), pg_catalog.unnest($5::pg_catalog.text[]), \
                 pg_catalog.unnest($6::pg_catalog.text[]), pg_catalog.unnest($7::pg_catalog.text[]), \
                 pg_catalog.unnest($8::pg_catalog.float8[]), pg_catalog.unnest($9::pg_catalog.int4[]), \
                 pg_catalog.unnest($10::pg_catalog.text[]))",
            &[
                at.into(),
                trace_id.into(),
                era.into(),
                method.into(),
                capability.into(),
                principal.into(),
                outcome.into(),
                duration.into(),
                bytes.into(),
                run_id.into(),
            ],
        )
    })
    .unwrap_or_else(|e| crate::error::raise(pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, format!("chumbo: could not write queued audit events: {e}"), None));
}

/// chumbo.audit_flush(): waits (at most 10 s) until every row queued before the call is in
/// chumbo.audit_events. true when they are (also when nothing is queued or there is no queue).
#[pg_extern(volatile, parallel_unsafe)]
fn audit_flush() -> bool {
    if !PRELOADED.load(Ordering::Relaxed) {
        return true;
    }
    let (target, latch) = {
        let q = QUEUE.share();
        (q.head, q.worker_latch)
    };
    if latch != 0 {
        // SAFETY: as in at_transaction_end.
        unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
    }
    for _ in 0..2000 {
        if QUEUE.share().tail >= target {
            return true;
        }
        // SAFETY: sleeps 5 ms on this backend's latch, then honours cancel and terminate.
        unsafe {
            pg_sys::WaitLatch(
                pg_sys::MyLatch,
                (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                5,
                pg_sys::PG_WAIT_EXTENSION,
            );
            pg_sys::ResetLatch(pg_sys::MyLatch);
        }
        check_for_interrupts!();
    }
    false
}

/// chumbo.audit_queue_stats(): the queue's state (for operators and tests); {"preloaded": false}
/// without shared_preload_libraries.
#[pg_extern(volatile, parallel_safe)]
fn audit_queue_stats() -> pgrx::JsonB {
    if !PRELOADED.load(Ordering::Relaxed) {
        return pgrx::JsonB(serde_json::json!({"preloaded": false}));
    }
    let q = QUEUE.share();
    pgrx::JsonB(serde_json::json!({
        "preloaded": true,
        "capacity": CAPACITY,
        "worker": q.worker_latch != 0,
        "accepting": q.accepting,
        "database": q.database.to_u32(),
        "queued": q.queued(),
        "reserved": q.reserved,
        "written": q.tail,
        "overflowed": q.overflowed,
    }))
}
