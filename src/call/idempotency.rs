//! Exactly-once operations. A call of a tool that is not read-only may carry an idempotency key
//! (`_meta` key `io.chumbo/idempotency-key`, or the parameter `@mcp {"idempotency_key": …}`
//! names). The operation is (principal, tool, key):
//!
//! * the first call claims it with a transaction-level lock, runs, and stores its result in
//!   chumbo.idempotency_outcomes, all in the request's transaction: the claim, the tool's writes
//!   and the stored outcome commit or roll back together, and a backend that dies before its
//!   commit leaves no claim behind (the lock goes with the transaction);
//! * a retry with the same key and arguments answers the stored result without running;
//! * the same key with other arguments is refused (-32602);
//! * a retry while the first call still runs is told at once that it is in progress (a tool
//!   error, never a wait: a client retrying because it timed out must not pile up waiters).
//!
//! Only results the tool produced are stored (its own `isError` results too: their writes are
//! kept); a call that failed was rolled back, so running it again is safe. Outcomes expire after
//! the setting `idempotency_ttl_seconds` and are pruned as new ones are stored.

use crate::call::plan::ToolCall;
use crate::catalog::registry::Registry;
use crate::error::Error;
use crate::identity::session;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The fourth locktag field of operation claims: no SQL advisory-lock function uses it (they use
/// 1 and 2), so tool code can neither take nor release a claim. In-flight slots use 0x4d43.
const CLAIM_LOCK_SPACE: u16 = 0x4d49; // "MI"

/// A claimed operation, to be completed with [complete].
pub struct Operation {
    principal: String,
    tool: String,
    key_digest: String,
    args_digest: String,
    ttl_seconds: u32,
}

/// What the call does about its idempotency key.
pub enum Begin {
    /// No key, or a read-only tool: run as usual.
    Run,
    /// Claimed: run, then [complete].
    Claimed(Operation),
    /// The answer is already decided (a stored result, "in progress", or a refusal).
    Answer(Result<Value, Error>),
}

/// What stored outcomes are found by instead of the key itself: SHA-256 of the key's length
/// (8 bytes, big-endian) and the key. Stored rows depend on it: it never changes.
fn key_digest(key: &str) -> String {
    let mut h = Sha256::new();
    h.update((key.len() as u64).to_be_bytes());
    h.update(key.as_bytes());
    crate::identity::principal::hex(&h.finalize())
}

/// Takes the claim on the operation for the rest of the transaction, without waiting.
fn try_claim(principal: &str, tool: &str, key_digest: &str) -> bool {
    let h = Sha256::digest(format!("{principal}\u{1}{tool}\u{1}{key_digest}").as_bytes());
    let tag = pg_sys::LOCKTAG {
        // SAFETY: MyDatabaseId is set for the whole life of a backend connected to a database.
        locktag_field1: unsafe { pg_sys::MyDatabaseId }.to_u32(),
        locktag_field2: u32::from_be_bytes([h[0], h[1], h[2], h[3]]),
        locktag_field3: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
        locktag_field4: CLAIM_LOCK_SPACE,
        locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
        locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
    };
    // SAFETY: a transaction-level lock (sessionLock = false) taken without waiting
    // (dontWait = true); the transaction's end releases it on every path, a crash included.
    let got = unsafe {
        pg_sys::LockAcquire(&tag, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, false, true)
    };
    got != pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL
}

fn in_progress(tool: &str) -> Value {
    json!({
        "content": [{"type": "text", "text": format!(
            "Operation in progress: an earlier call of {tool} with this idempotency key is still running; retry it later to get its result")}],
        "isError": true,
        "_meta": {"io.chumbo/idempotency": {"status": "in_progress"}},
    })
}

/// Before a tool runs: a plan without a key (a read-only tool has none) runs as usual;
/// otherwise the operation is claimed, or answered from its stored outcome, or refused.
pub fn begin(registry: &Registry, plan: &ToolCall) -> Begin {
    let Some(key) = &plan.idempotency_key else {
        return Begin::Run;
    };
    let op = Operation {
        key_digest: key_digest(key),
        args_digest: plan.arguments_digest().to_string(),
        tool: plan.tool.clone(),
        principal: plan.caller.principal.clone(),
        ttl_seconds: registry.settings.idempotency_ttl_seconds,
    };
    if !try_claim(&op.principal, &op.tool, &op.key_digest) {
        return Begin::Answer(Ok(in_progress(&plan.tool)));
    }
    // The claim is ours. Read read-write (a fresh snapshot after a command-counter increment):
    // the outcome may have been committed by another backend after this statement began, or
    // stored by an earlier message of this same statement (a batch).
    let stored = session::as_owner(|| {
        Spi::connect_mut(|c| {
            // Read read-write on purpose (see above); the claim's transaction writes anyway.
            #[allow(clippy::disallowed_methods)]
            let t = c.update(
                "select args_digest, result from chumbo.idempotency_outcomes
                  where principal = $1 and tool = $2 and key_digest = $3 and expires_at > chumbo.now()",
                Some(1),
                &[op.principal.as_str().into(), op.tool.as_str().into(), op.key_digest.as_str().into()],
            )?;
            if t.is_empty() {
                return Ok::<_, pgrx::spi::Error>(None);
            }
            let row = t.first();
            Ok(Some((row.get::<String>(1)?, row.get::<JsonB>(2)?)))
        })
    });
    match stored {
        Ok(None) => Begin::Claimed(op),
        Ok(Some((Some(digest), Some(JsonB(mut result))))) => {
            if digest != op.args_digest {
                return Begin::Answer(Err(Error::InvalidParams(format!(
                    "this idempotency key was already used for a call of {} with other arguments",
                    plan.tool
                ))));
            }
            if let Some(obj) = result.as_object_mut() {
                let meta = obj.entry("_meta").or_insert(json!({}));
                if let Some(m) = meta.as_object_mut() {
                    m.insert(
                        "io.chumbo/idempotency".into(),
                        json!({"status": "replayed"}),
                    );
                }
            }
            Begin::Answer(Ok(result))
        }
        _ => Begin::Answer(Err(Error::Internal(format!(
            "Internal error: the outcome of this operation cannot be read (trace id {})",
            plan.trace_id
        )))),
    }
}

/// After the tool produced `result`: stores it for retries, in the same transaction. Expired
/// outcomes (a few per call) are pruned here.
pub fn complete(op: Operation, result: &Value) -> Result<(), pgrx::spi::Error> {
    let run = crate::bookkeeping::runs::current_id();
    session::as_owner(|| {
        Spi::connect_mut(|c| {
            // A write (the outcome, durable with the tool's writes), meant to take a transaction id.
            #[allow(clippy::disallowed_methods)]
            c.update(
                "with pruned as (
                   delete from chumbo.idempotency_outcomes o where o.ctid in (
                     select ctid from chumbo.idempotency_outcomes where expires_at <= chumbo.now() limit 8
                     for update skip locked))
                 insert into chumbo.idempotency_outcomes (principal, tool, key_digest, args_digest, result, run_id, created_at, expires_at)
                 values ($1, $2, $3, $4, $5, $6, chumbo.now(), chumbo.now() + pg_catalog.make_interval(secs => $7))
                 on conflict (principal, tool, key_digest) do update
                   set args_digest = excluded.args_digest, result = excluded.result, run_id = excluded.run_id,
                       created_at = excluded.created_at, expires_at = excluded.expires_at",
                None,
                &[
                    op.principal.as_str().into(),
                    op.tool.as_str().into(),
                    op.key_digest.as_str().into(),
                    op.args_digest.as_str().into(),
                    JsonB(result.clone()).into(),
                    run.into(),
                    (op.ttl_seconds as f64).into(),
                ],
            )
            .map(|_| ())
        })
    })
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    #[pgrx::pg_test]
    fn key_digest_is_stable() {
        // stored outcomes are looked up by it: a change would run a stored operation again
        assert_eq!(
            key_digest("abc"),
            "c3494ca1a2cf8eeb8a11ded316fb55b83c3bbbedb6313cd50415251e5d09e12f"
        );
    }
}
