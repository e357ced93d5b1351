//! chumbo's own records of requests: rate-limit counters and audit events, written as the
//! extension owner (the caller cannot touch either table).

use crate::{bookkeeping::audit_queue, identity::session};
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde_json::Value;
use sha2::Digest;

/// Counts `hits` hits (a batch counts one per message), all or none; Ok(None) when allowed,
/// Ok(Some(seconds)) when over the limit. Err when the limiter could not record: callers refuse
/// the request then (fail closed).
///
/// The counter is bookkeeping (session::bookkeeping): it does not keep a read-only request's
/// commit synchronous. It needs no more durability than that: a crash loses at most the hits of
/// the last moments before it (those commits were not yet flushed), which lets a caller make that
/// many requests more in the window being counted. A limit is a brake on load, not a record; the
/// row is never what makes another write durable (that commit is synchronous anyway).
pub fn rate_hit(
    bucket: &str,
    window_seconds: i32,
    max_hits: u32,
    hits: u32,
) -> Result<Option<i32>, ()> {
    let bucket = bucket.to_string();
    let outcome = session::bookkeeping(|| {
        session::in_subtransaction(|| {
            session::as_owner(|| {
                // A write, meant to take a transaction id.
                #[allow(clippy::disallowed_methods)]
                Spi::get_one_with_args::<i32>(
                    "select chumbo._rate_hit($1, $2, $3, $4)",
                    &[
                        bucket.as_str().into(),
                        window_seconds.into(),
                        (max_hits.min(i32::MAX as u32) as i32).into(),
                        (hits.min(i32::MAX as u32) as i32).into(),
                    ],
                )
            })
        })
    });
    match outcome {
        Ok(Ok(Some(0))) => Ok(None),
        Ok(Ok(Some(n))) => Ok(Some(n)),
        _ => Err(()),
    }
}

/// One row of chumbo.audit_events, as typed parameters: nothing is built as jsonb and unpacked
/// again in SQL on the hot path (only an opted-in `detail` is jsonb).
pub struct Event<'a> {
    pub trace_id: &'a str,
    pub era: &'a str,
    pub method: Option<&'a str>,
    pub capability: Option<&'a str>,
    pub principal: &'a str,
    pub outcome: &'a str,
    pub duration_ms: f64,
    pub bytes: usize,
    pub detail: Option<Value>,
    pub run_id: Option<&'a str>,
}

const AUDIT_INSERT: &str = "insert into chumbo.audit_events \
     (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail, run_id) \
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
const AUDIT_TYPES: [pg_sys::Oid; 10] = [
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::TEXTOID,
    pg_sys::FLOAT8OID,
    pg_sys::INT4OID,
    pg_sys::JSONBOID,
    pg_sys::TEXTOID,
];

/// Writes one audit event: a read-only call's last event goes to the audit queue when there is
/// one (audit_queue::defer: written by the worker after the call commits), every other one in
/// the request's own transaction: the row commits exactly when the call does, and is as durable as its commit (see session::relax_commit_for_bookkeeping).
/// No subtransaction of its own: if the row cannot be written, the error aborts the request's
/// transaction, so no call commits without its row. `last`: nothing else of the request follows,
/// so the commit may be relaxed.
pub fn audit(last: bool, event: Event) {
    let bytes = i32::try_from(event.bytes).unwrap_or(i32::MAX);
    // The edge's read path (src/api/replica.rs): the row goes back to the edge, which writes it
    // on the primary in the transaction that admitted the request.
    if crate::postgres::standby::replica() {
        crate::postgres::standby::ship(serde_json::json!({
            "trace_id": event.trace_id, "era": event.era, "method": event.method,
            "capability": event.capability, "principal": event.principal,
            "outcome": event.outcome, "duration_ms": event.duration_ms, "bytes": bytes,
            "detail": event.detail, "run_id": event.run_id,
        }));
        return;
    }
    if last && event.detail.is_none() {
        let row = audit_queue::Row {
            texts: [
                Some(event.trace_id),
                Some(event.era),
                event.method,
                event.capability,
                Some(event.principal),
                Some(event.outcome),
                event.run_id,
            ],
            duration_ms: event.duration_ms,
            bytes,
        };
        if audit_queue::defer(&row) {
            return;
        }
    }
    if last {
        session::relax_commit_for_bookkeeping();
    }
    let written = session::bookkeeping(|| {
        session::as_owner(|| {
            Spi::connect_mut(|client| {
                session::run_kept(
                    client,
                    AUDIT_INSERT,
                    &AUDIT_TYPES,
                    &[
                        event.trace_id.into(),
                        event.era.into(),
                        event.method.into(),
                        event.capability.into(),
                        event.principal.into(),
                        event.outcome.into(),
                        event.duration_ms.into(),
                        bytes.into(),
                        event.detail.map(JsonB).into(),
                        event.run_id.into(),
                    ],
                )
                .map(|_| ())
            })
        })
    });
    if written.is_err() {
        // SQL errors never get here (they abort the transaction); this is pgrx's own refusal.
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo: could not write an audit event",
            None,
        );
    }
}

/// Takes `count` of the `max` in-flight slots of `bucket` (a principal's limit key) for the rest
/// of the transaction, so that one principal cannot hold more than `max` requests running at once
/// across every connection (a batch takes one per message; slots this transaction already holds
/// count). false when fewer than `count` are free (those taken are released with the
/// transaction, which the refusal ends). `max` = 0: no limit.
///
/// The slots are transaction-level advisory locks in a key space of their own: the fourth
/// locktag field is one that the SQL advisory-lock functions (1 and 2) never use, so tool code
/// can neither take nor release them, and the key comes from the keyed principal digest.
pub fn claim_in_flight_slots(bucket: &str, max: u32, count: u32) -> bool {
    const CHUMBO_LOCK_SPACE: u16 = 0x4d43; // "MC"
    if max == 0 {
        return true;
    }
    let h = sha2::Sha256::digest(bucket.as_bytes());
    let (key1, key2) = (
        u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
        u32::from_be_bytes([h[4], h[5], h[6], h[7]]) & !0x3f,
    );
    let mut taken = 0;
    for slot in 0..max.min(64) {
        if taken == count {
            break;
        }
        let tag = pg_sys::LOCKTAG {
            // SAFETY: MyDatabaseId is set for the whole life of a backend connected to a database.
            locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
            locktag_field2: key1,
            locktag_field3: key2 | slot,
            locktag_field4: CHUMBO_LOCK_SPACE,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        };
        // SAFETY: a transaction-level lock (sessionLock = false) taken without waiting
        // (dontWait = true); the transaction's end releases it on every path.
        let got = unsafe {
            pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, true)
        };
        // A slot this transaction already holds (an earlier request of it) serves this one too,
        // as it always has: one transaction runs one request at a time.
        if got != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
            taken += 1;
        }
    }
    taken == count
}
