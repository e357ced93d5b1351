//! Whether the cached registry is current: chumbo.schema_version (moved by every capability
//! change, committed or not), the newest committed change, whether every change given a version
//! has settled, and which functions the changes since a registry touched.

use super::*;

thread_local! {
    /// (schema chumbo's oid, chumbo.schema_version's oid): looked up again when the schema is a
    /// new one (the extension dropped and created again in this session).
    static SEQUENCE: std::cell::Cell<Option<(pg_sys::Oid, pg_sys::Oid)>> = const { std::cell::Cell::new(None) };
}

/// chumbo.schema_version's last value, read through the syscache and the sequence itself rather
/// than SPI: this runs on every request. It moves at every change, committed or not.
pub(super) fn sequence_value() -> i64 {
    // SAFETY: both take NUL-terminated 'static C strings; get_namespace_oid (missing_ok =
    // false) raises a PostgreSQL error, not UB, if the schema is missing.
    let schema = unsafe { pg_sys::get_namespace_oid(c"chumbo".as_ptr(), false) };
    let seq = match SEQUENCE.with(|s| s.get()) {
        Some((s, seq)) if s == schema => seq,
        _ => {
            // SAFETY: as above.
            let seq = unsafe { pg_sys::get_relname_relid(c"schema_version".as_ptr(), schema) };
            SEQUENCE.with(|s| s.set(Some((schema, seq))));
            seq
        }
    };
    // SAFETY: pg_sequence_last_value takes the sequence's oid (looked up above) and returns int8 or
    // null. As the owner (it checks SELECT), without a search_path: it runs no statement.
    session::as_owner_here(|| unsafe {
        pgrx::direct_function_call::<i64>(
            pg_sys::pg_sequence_last_value,
            &[Some(pg_sys::Datum::from(seq))],
        )
    })
    .unwrap_or(0)
}

/// The newest change this transaction can see committed (or made itself).
pub(super) fn committed_version() -> i64 {
    session::as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "select max(version) from chumbo.schema_changes",
                Some(1),
                &[],
            )?
            .first()
            .get_one::<i64>()
        })
    })
    .ok()
    .flatten()
    .unwrap_or(0)
}

thread_local! {
    /// The sequence value at which the cached registry was last known to be current: while the
    /// sequence stays there, nothing can have changed. -1 while a change is still open: then
    /// every request checks again.
    pub(super) static CONFIRMED_AT: std::cell::Cell<i64> = const { std::cell::Cell::new(-1) };
}

/// The newest snapshot as the active one (what SPI reads with) while this lives.
pub(super) struct LatestSnapshot;

impl LatestSnapshot {
    pub(super) fn push() -> LatestSnapshot {
        // SAFETY: PushActiveSnapshot copies the static snapshot GetLatestSnapshot returns.
        unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetLatestSnapshot()) };
        LatestSnapshot
    }
}

impl Drop for LatestSnapshot {
    fn drop(&mut self) {
        // SAFETY: pops the snapshot `push` pushed (also when a PostgreSQL error unwinds past it,
        // before the (sub)transaction's abort looks at the stack).
        unsafe { pg_sys::PopActiveSnapshot() };
    }
}

/// The advisory lock each capability change holds, shared, from before it takes its schema
/// version until its transaction ends (chumbo._schema_changed, sql/registry.sql).
pub(super) const CHANGE_LOCK: [i32; 2] = [0x6368_6d62, 1]; // "chmb"

/// Whether no other transaction holds a schema version it has not yet committed or rolled back.
/// Versions are taken in one order and may commit in another: only once every version given out
/// is settled does the newest committed one say what the catalog holds. (A backend's own locks
/// never conflict with each other: its own open change is seen through `built_in`.)
pub(super) fn changes_settled() -> bool {
    let key = CHANGE_LOCK.map(|k| Some(pg_sys::Datum::from(k)));
    // SAFETY: both functions take two int4 and return a bool; the exclusive session lock taken
    // when free is released at once, so no change ever waits on it for longer than this.
    unsafe {
        let free = pgrx::direct_function_call::<bool>(pg_sys::pg_try_advisory_lock_int4, &key)
            == Some(true);
        if free {
            pgrx::direct_function_call::<bool>(pg_sys::pg_advisory_unlock_int4, &key);
        }
        free
    }
}

/// Rows `chumbo._schema_changed` keeps above the newest committed number (sql/registry.sql).
pub(super) const KEPT_CHANGES: i64 = 64;

/// The functions the changes numbered above `since` named, up to `committed`, when every one of
/// them touched functions only (sql/registry.sql, _bump_schema_version). None when one may have
/// touched anything else, or when rows of the range may have been deleted. Only meaningful for
/// a registry built once every change up to `since` had settled: a change numbered lower than
/// `since` is not in the range.
pub(super) fn changes_since(since: i64, committed: i64) -> Option<Vec<u32>> {
    if committed < since || committed - since > KEPT_CHANGES {
        return None;
    }
    session::as_owner(|| {
        Spi::connect(|c| {
            let mut touched = vec![];
            // Through to_jsonb: a database not yet updated to this version has no column
            // `functions`, and reads as null (everything) instead of failing the request.
            for row in session::run_kept(
                c,
                "select to_jsonb(c) -> 'functions' from chumbo.schema_changes c where c.version > $1",
                &[pg_sys::INT8OID],
                &[since.into()],
            )? {
                // oids come as strings in jsonb; anything unreadable counts as "everything"
                let oids = match row.get::<JsonB>(1)? {
                    Some(JsonB(Value::Array(oids))) => oids,
                    _ => return Ok(None),
                };
                for oid in oids {
                    match oid.as_str().and_then(|o| o.parse::<u32>().ok()) {
                        Some(oid) => touched.push(oid),
                        None => return Ok(None),
                    }
                }
            }
            Ok::<_, pgrx::spi::Error>(Some(touched))
        })
    })
    .ok()
    .flatten()
}
