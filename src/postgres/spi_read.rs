//! chumbo's own reads, the only place that runs them. A read must not take a transaction id: a
//! request that only reads then stays a read-only transaction (no commit record, no WAL flush)
//! unless chumbo's bookkeeping writes, and whether a capability wrote can be told by whether it
//! took one (session::note_capability_writes). pgrx's `Spi::get_*`, `Spi::run*`,
//! `Spi::explain*` and `SpiClient::update` take one on every call (`Spi::mark_mutable`), whatever
//! the SQL; `clippy.toml` bans them everywhere (writes say why they use one). `SpiClient::select`
//! does not: without a transaction id it runs read-only (SPI refuses INSERT/UPDATE/DELETE there),
//! with one read-write so that it sees the transaction's own changes.

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::spi::{self, SpiTupleTable};

/// Runs `sql` once with `args` and hands its rows to `f`. A read that took a transaction id (a
/// function it called wrote) is a bug in chumbo's SQL: it raises an ERROR, so every test that
/// goes through it checks the invariant.
pub fn read<R>(
    sql: &str,
    args: &[DatumWithOid],
    f: impl FnOnce(SpiTupleTable) -> spi::Result<R>,
) -> spi::Result<R> {
    read_at_most(sql, None, args, f)
}

fn read_at_most<R>(
    sql: &str,
    limit: Option<i64>,
    args: &[DatumWithOid],
    f: impl FnOnce(SpiTupleTable) -> spi::Result<R>,
) -> spi::Result<R> {
    let before = top_xid();
    let r = Spi::connect(|c| f(c.select(sql, limit.map(|l| l as _), args)?));
    if before == pg_sys::InvalidTransactionId && top_xid() != pg_sys::InvalidTransactionId {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo: an internal read took a transaction id",
            None,
        );
    }
    r
}

/// The first column of the first row (None: no row, or null).
pub fn one<T: FromDatum + IntoDatum>(sql: &str, args: &[DatumWithOid]) -> spi::Result<Option<T>> {
    read_at_most(sql, Some(1), args, |t| match t.is_empty() {
        true => Ok(None),
        false => t.first().get_one::<T>(),
    })
}

fn top_xid() -> pg_sys::TransactionId {
    // SAFETY: reads the transaction state; never assigns.
    unsafe { pg_sys::GetTopTransactionIdIfAny() }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use pgrx::pg_sys;

    #[pgrx::pg_test]
    fn a_read_takes_no_transaction_id() {
        assert_eq!(super::one::<i32>("select 1", &[]).ok().flatten(), Some(1));
        // SAFETY: reads the transaction state.
        let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
        assert_eq!(xid, pg_sys::InvalidTransactionId);
    }

    /// The invariant is checked, not trusted: SQL that writes through a function is refused.
    #[pgrx::pg_test(error = "chumbo: an internal read took a transaction id")]
    fn a_read_that_writes_is_refused() {
        let _ = super::one::<i32>("select chumbo._rate_hit('spi_read test', 60, 5, 1)", &[]);
    }
}
