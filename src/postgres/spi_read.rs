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

/// Whether chumbo's relation `name` exists in this database: where `alter extension chumbo
/// update` has not run yet, the library is newer than the tables it would read.
pub fn relation_exists(name: &str) -> bool {
    let found = one::<bool>(
        "select pg_catalog.to_regclass($1) is not null",
        &[name.into()],
    );
    matches!(found, Ok(Some(true)))
}

/// Runs `decode`, which turns the rows of a statement just run into Rust values, with what pgrx
/// copies on the way in memory of the SPI connection's own. pgrx converts a value in the parent of
/// the current memory context (jsonb printed as text, a varlena detoasted), and while SPI is
/// connected that parent is the transaction's top context: dead once converted, the copies stayed
/// until commit, ~30 MB for a registry build of 10,000 functions, kept by the backend as heap
/// (bench/analysis.md, issue 32 session 19). Here they go to SPI's procedure context, freed when
/// the connection ends. Call it after the statement ran (SPI makes its procedure context current
/// again after every statement), and return only owned values from it.
pub fn decode_in_connection_memory<R>(decode: impl FnOnce() -> R) -> R {
    // A child of the procedure context, current while `decode` runs: its parent takes the copies.
    let mut scratch = pgrx::PgMemoryContexts::new("chumbo decoded rows");
    // SAFETY: switched back when `decode` returns; if it unwinds, dropping `scratch` makes the
    // procedure context current again before deleting it.
    unsafe { scratch.switch_to(|_| decode()) }
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
