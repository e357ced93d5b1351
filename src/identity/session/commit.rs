//! The commit of a request's transaction: chumbo's own bookkeeping writes (audit row, rate
//! counters) may commit asynchronously, unless the application (a capability, or a statement
//! around the request) wrote WAL too; see [relax_commit_for_bookkeeping].

use super::*;

/// What chumbo knows of the current transaction's WAL (see [relax_commit_for_bookkeeping]).
#[derive(Clone, Copy, Default)]
pub(super) struct Ledger {
    /// Where the WAL this backend wrote ended after chumbo's latest bookkeeping write.
    mark: pg_sys::XLogRecPtr,
    /// Someone else (the application, a capability, a statement around the request) wrote WAL.
    foreign: bool,
    /// The commit was relaxed from this synchronous_commit value.
    relaxed_from: Option<&'static str>,
    /// Commit/abort callbacks that reset this are registered.
    armed: bool,
}

thread_local! {
    static LEDGER: Cell<Ledger> = const { Cell::new(Ledger { mark: 0, foreign: false, relaxed_from: None, armed: false }) };
}

/// Compares the end of the WAL this backend wrote in the transaction with the end of chumbo's
/// own last write: anything written since is someone else's.
pub(super) fn note_foreign_wal() {
    // SAFETY: a plain read of this backend's WAL position (0 until the transaction writes WAL).
    let end = unsafe { pg_sys::XactLastRecEnd };
    if end != LEDGER.with(|c| c.get()).mark {
        arm_ledger();
        LEDGER.with(|c| {
            c.set(Ledger {
                foreign: true,
                ..c.get()
            })
        });
    }
}

/// Once something else wrote WAL, a relaxed commit is made synchronous again, so application data
/// is never committed asynchronously, whichever order it and chumbo's requests came in within the
/// transaction. Only where a setting made lasts until the commit: at the request's own level (a
/// subtransaction's settings are undone when it ends), and just before the commit.
pub(super) fn settle_commit() {
    note_foreign_wal();
    let l = LEDGER.with(|c| c.get());
    if let (true, Some(value)) = (l.foreign, l.relaxed_from) {
        set_local("synchronous_commit", value);
        LEDGER.with(|c| {
            c.set(Ledger {
                relaxed_from: None,
                ..l
            })
        });
    }
}

/// Resets the ledger when the transaction ends (the callbacks live for this transaction only).
pub(super) fn arm_ledger() {
    if LEDGER.with(|c| c.get()).armed {
        return;
    }
    let reset = || LEDGER.with(|c| c.set(Ledger::default()));
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, reset);
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, reset);
    LEDGER.with(|c| {
        c.set(Ledger {
            armed: true,
            ..c.get()
        })
    });
}

/// Runs chumbo's own bookkeeping write `f` (rate counters, audit rows, redeemed MRTR nonces):
/// the WAL it writes does not count as the application's.
pub fn bookkeeping<R>(f: impl FnOnce() -> R) -> R {
    arm_ledger();
    note_foreign_wal();
    let r = f();
    // SAFETY: as in note_foreign_wal.
    let end = unsafe { pg_sys::XactLastRecEnd };
    LEDGER.with(|c| {
        c.set(Ledger {
            mark: end,
            ..c.get()
        })
    });
    r
}

/// Marks the start of a request at an entry point: WAL written before it is the application's.
pub fn request_begins() {
    crate::identity::spliced::clear();
    settle_commit();
}

/// After a capability: its WAL is the application's (see [note_foreign_wal]).
pub(super) fn note_capability_writes() {
    note_foreign_wal();
}

/// Called before chumbo writes the audit row of a request that is the whole of a single-statement
/// transaction: when only chumbo's bookkeeping (rate counters, the audit row) wrote WAL, the
/// commit need not wait for the WAL flush, so a read-only MCP call does not pay a disk sync for
/// its audit row, also when its rate-limit hit was counted. Application data is never made less
/// durable: WAL written by anything else, before the request, by a capability, or later in the
/// same transaction (checked again just before the commit), keeps synchronous commit; so does an
/// explicit transaction block (whose later statements may write).
pub fn relax_commit_for_bookkeeping() {
    // SAFETY: reads the transaction state.
    let in_block = unsafe { pg_sys::IsTransactionBlock() };
    arm_ledger();
    settle_commit();
    let l = LEDGER.with(|c| c.get());
    if in_block || l.foreign || l.relaxed_from.is_some() {
        return;
    }
    let before = match current_setting("synchronous_commit").as_deref() {
        Some("off") => return,
        Some("local") => "local",
        Some("remote_write") => "remote_write",
        Some("remote_apply") => "remote_apply",
        _ => "on",
    };
    set_local("synchronous_commit", "off");
    LEDGER.with(|c| {
        c.set(Ledger {
            relaxed_from: Some(before),
            ..l
        })
    });
    // The last word: whatever the rest of the transaction wrote.
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::PreCommit, settle_commit);
}
