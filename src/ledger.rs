//! chumbo's own records of requests: rate-limit counters and audit events, written as the
//! extension owner (the caller cannot touch either table).

use crate::session;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;

/// Counts one hit; Ok(None) when allowed, Ok(Some(seconds)) when over the limit. Err when the
/// limiter could not record: callers refuse the request then (fail closed).
pub fn rate_hit(bucket: &str, window_seconds: i32, max_hits: u32) -> Result<Option<i32>, ()> {
    let bucket = bucket.to_string();
    let outcome = session::in_subtransaction(|| {
        session::as_owner(|| {
            Spi::get_one_with_args::<i32>(
                "select chumbo._rate_hit($1, $2, $3)",
                &[
                    bucket.as_str().into(),
                    window_seconds.into(),
                    (max_hits as i32).into(),
                ],
            )
        })
    });
    match outcome {
        Ok(Ok(Some(0))) => Ok(None),
        Ok(Ok(Some(n))) => Ok(Some(n)),
        _ => Err(()),
    }
}

/// Writes one audit event; a failure to audit is logged, never turned into a failed call.
pub fn audit(event: Value) {
    session::relax_commit_for_bookkeeping();
    let outcome = session::in_subtransaction(|| {
        session::as_owner(|| {
            Spi::connect_mut(|client| {
                session::run_kept(
                    client,
                    "insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail)
                     select e->>'trace_id', e->>'era', e->>'method', e->>'capability', e->>'principal', e->>'outcome',
                            (e->>'duration_ms')::float8, (e->>'bytes')::int, e->'detail'
                     from (select $1::jsonb as e) s",
                    &[pgrx::pg_sys::JSONBOID],
                    &[JsonB(event).into()],
                )
                .map(|_| ())
            })
        })
    });
    if !matches!(outcome, Ok(Ok(()))) {
        ereport!(
            PgLogLevel::LOG_SERVER_ONLY,
            PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
            "chumbo: could not write an audit event"
        );
    }
}
