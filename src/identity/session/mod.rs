//! Who runs what: chumbo's own reads happen as the extension owner, capabilities as the caller's
//! role inside a subtransaction; either way the caller's role and settings are restored exactly.

use crate::postgres::deadline::TimeBound;
use pgrx::pg_sys;
use pgrx::prelude::*;
use pgrx::PgTryBuilder;
use std::cell::{Cell, RefCell};
use std::ffi::CString;

mod commit;
mod roles;
mod search_path;
use commit::note_capability_writes;
pub use commit::{bookkeeping, relax_commit_for_bookkeeping, request_begins};
pub use roles::check_role;
pub use search_path::serve_request;
use search_path::*;

thread_local! {
    /// (oid of schema chumbo, its owner): re-read when the schema is a new one (extension
    /// dropped and created again in this session).
    static OWNER: Cell<Option<(pg_sys::Oid, pg_sys::Oid)>> = const { Cell::new(None) };
}

/// The owner of schema chumbo (whoever ran CREATE EXTENSION).
fn owner_oid() -> pg_sys::Oid {
    // SAFETY: a catalog lookup by a static NUL-terminated name; missing_ok = false raises an ERROR.
    let schema = unsafe { pg_sys::get_namespace_oid(c"chumbo".as_ptr(), false) };
    if let Some((s, o)) = OWNER.with(|c| c.get()) {
        if s == schema {
            return o;
        }
    }
    let o = crate::postgres::spi_read::one::<pg_sys::Oid>(
        "select nspowner from pg_catalog.pg_namespace where oid = $1",
        &[schema.into()],
    )
    .ok()
    .flatten()
    .unwrap_or_else(|| {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo: schema chumbo is missing",
            None,
        )
    });
    OWNER.with(|c| c.set(Some((schema, o))));
    o
}

/// Runs `f` with these settings, restored afterwards however `f` ends (as a function's `SET`).
pub fn with_settings<R>(settings: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    // SAFETY: the nest level is closed below on success and in the catch (AtEOXact_GUC only restores).
    let level = unsafe { pg_sys::NewGUCNestLevel() };
    let r = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        settings
            .iter()
            .for_each(|(name, value)| set_guc(name, value));
        f()
    }))
    .catch_others(|e| {
        // SAFETY: as above.
        unsafe { pg_sys::AtEOXact_GUC(false, level) };
        e.rethrow()
    })
    .execute();
    // SAFETY: as above.
    unsafe { pg_sys::AtEOXact_GUC(true, level) };
    r
}

/// Runs `f` with the extension owner's privileges (chumbo's own tables) as PostgreSQL runs RI checks:
/// a local user-id change that `f` cannot undo, and chumbo's own search_path.
pub fn as_owner<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> R {
    with_own_search_path(|| as_owner_here(f))
}

/// [as_owner] without chumbo's search_path: for work that runs no statement.
pub fn as_owner_here<R>(f: impl FnOnce() -> R + std::panic::UnwindSafe) -> R {
    let owner = owner_oid();
    let (mut saved_user, mut saved_context) = (pg_sys::Oid::INVALID, 0);
    // SAFETY: the saved user and context are put back in `finally`, which runs on success,
    // error and panic.
    unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_context);
        pg_sys::SetUserIdAndSecContext(owner, saved_context | LOCAL_AND_RESTRICTED);
    }
    PgTryBuilder::new(f)
        // SAFETY: restores the values saved above.
        .finally(|| unsafe { pg_sys::SetUserIdAndSecContext(saved_user, saved_context) })
        .execute()
}

/// An error raised while running a capability, already copied out of PostgreSQL.
#[derive(Debug, Clone)]
pub struct CaughtSqlError {
    pub sqlstate: String,
    pub message: String,
    /// Raised by the application's own code (PL/pgSQL `RAISE`/`ASSERT`) or by chumbo itself:
    /// the only messages that may reach the model as they are.
    pub authored: bool,
    /// The error's HINT (`RAISE ... USING HINT`): a next step the application suggests.
    pub hint: Option<String>,
}

impl CaughtSqlError {
    pub fn internal(message: impl Into<String>) -> Self {
        CaughtSqlError {
            sqlstate: "XX000".into(),
            message: message.into(),
            authored: false,
            hint: None,
        }
    }
}

fn sqlstate_of(code: pgrx::PgSqlErrorCode) -> String {
    let mut n = code as i32;
    let mut s = String::with_capacity(5);
    for _ in 0..5 {
        s.push((b'0' + ((n & 0x3F) as u8)) as char);
        n >>= 6;
    }
    s
}

fn caught(e: &pgrx::pg_sys::panic::CaughtError) -> CaughtSqlError {
    use pgrx::pg_sys::panic::CaughtError;
    match e {
        CaughtError::PostgresError(r)
        | CaughtError::ErrorReport(r)
        | CaughtError::RustPanic { ereport: r, .. } => {
            let message = r.message().to_string();
            // A PL/pgSQL RAISE or ASSERT: the application's own words. chumbo's own: raised
            // through error::raise, which remembers what it raised.
            let plpgsql = r.file() == "pl_exec.c"
                && matches!(
                    r.function_name(),
                    Some("exec_stmt_raise" | "exec_stmt_assert")
                );
            let ours = crate::error::raised_by_chumbo(&message);
            let sqlstate = sqlstate_of(r.sql_error_code());
            // A write refused on a standby (or the edge's read path): the call needs the primary.
            crate::postgres::standby::note_error(&sqlstate, &message);
            CaughtSqlError {
                sqlstate,
                authored: plpgsql || ours,
                hint: r.hint().map(String::from),
                message,
            }
        }
    }
}

/// While a call runs, `application_name` is the session's own (cut to fit) + ` trace_id=<id>`, for
/// pg_stat_activity and `%a` in the log (SQLCommenter's idea; a comment would change kept plans).
pub fn label_call(trace_id: &str) {
    const OWN: usize = 63 - " trace_id=".len() - 32;
    let own = current_setting("application_name").unwrap_or_default();
    let own: String = own.chars().filter(char::is_ascii).take(OWN).collect();
    let own = if own.is_empty() { "chumbo".into() } else { own };
    set_guc("application_name", &format!("{own} trace_id={trace_id}"));
}

fn set_guc(name: &str, value: &str) {
    set_config(name, value, pg_sys::GucAction::GUC_ACTION_SAVE);
}

fn set_config(name: &str, value: &str, action: pg_sys::GucAction::Type) {
    let (name, value) = (CString::new(name).unwrap(), CString::new(value).unwrap());
    set_config_c(&name, &value, action);
}

fn set_config_c(name: &std::ffi::CStr, value: &std::ffi::CStr, action: pg_sys::GucAction::Type) {
    // SAFETY: set_config_option copies both strings; they outlive the call. Errors are raised as ERROR.
    unsafe {
        let context = if pg_sys::superuser() {
            pg_sys::GucContext::PGC_SUSET
        } else {
            pg_sys::GucContext::PGC_USERSET
        };
        pg_sys::set_config_option(
            name.as_ptr(),
            value.as_ptr(),
            context,
            pg_sys::GucSource::PGC_S_SESSION,
            action,
            true,
            PgLogLevel::ERROR as i32,
            false,
        );
    }
}

thread_local! {
    /// Set when the per-call deadline of the capability that just ran had passed when it ended:
    /// a 57014 raised then is chumbo's time bound, not the client's cancel.
    static DEADLINE_PASSED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` inside a subtransaction. On success its work is kept; on a PostgreSQL error (or a Rust
/// panic) it is rolled back and the error returned. Every setting changed inside, including a
/// `SET LOCAL ROLE`, is undone before returning, so nothing leaks into the caller's transaction.
/// A query cancel (57014) is rolled back and raised again, unless it is chumbo's own per-call
/// time bound: the client's cancel or the session's statement_timeout must end the statement.
pub fn in_subtransaction<R>(f: impl FnOnce() -> R) -> Result<R, CaughtSqlError> {
    crate::error::forget_raised();
    // SAFETY: the subtransaction is begun and then either released or rolled back on every path
    // (PgTryBuilder catches PostgreSQL errors and Rust panics alike); memory context, resource
    // owner and GUC nest level are restored to the values saved here before returning.
    unsafe {
        let nest_level = pg_sys::NewGUCNestLevel();
        let old_context = pg_sys::CurrentMemoryContext;
        let old_owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(old_context);

        let outcome = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
            let r = f();
            pg_sys::ReleaseCurrentSubTransaction();
            Ok(r)
        }))
        .catch_others(|e| {
            pg_sys::MemoryContextSwitchTo(old_context);
            let error = caught(&e);
            pg_sys::RollbackAndReleaseCurrentSubTransaction();
            if error.sqlstate == "57014" && !DEADLINE_PASSED.with(|d| d.replace(false)) {
                pg_sys::CurrentResourceOwner = old_owner;
                pg_sys::AtEOXact_GUC(false, nest_level);
                e.rethrow()
            }
            Err(error)
        })
        .execute();

        pg_sys::MemoryContextSwitchTo(old_context);
        pg_sys::CurrentResourceOwner = old_owner;
        pg_sys::AtEOXact_GUC(false, nest_level);
        outcome
    }
}

// commands/sequence.h is not bound by pgrx.
// SAFETY: an exported function of the PostgreSQL server with this C signature (PG 15:
// commands/sequence.h); it raises at most FATAL, never longjmps into Rust.
unsafe extern "C-unwind" {
    fn ResetSequenceCaches();
}

const LOCAL_AND_RESTRICTED: i32 =
    (pg_sys::SECURITY_LOCAL_USERID_CHANGE | pg_sys::SECURITY_RESTRICTED_OPERATION) as i32;

/// Runs `f` as the role `role` the way PostgreSQL runs security-definer code: a local user-id
/// change plus a security-restricted operation, which tool code cannot undo (`SET ROLE`,
/// `RESET ROLE`, `SET SESSION AUTHORIZATION`, a `SET role` clause, `set_config('role', …)`,
/// changing `request.jwt.claims` all fail) and inside which nothing can be left in the session
/// (temporary objects, WITH HOLD cursors, PREPARE, LISTEN are refused). `request.jwt.claims`
/// (and the legacy `request.jwt.claim.*` keys) are set first, in a subtransaction (see
/// [in_subtransaction]), with the statement timer bounded by `budget_ms`. Afterwards the
/// session keeps nothing of the call: session advisory locks and sequence state are dropped.
pub fn run_as_caller<R>(
    role: pg_sys::Oid,
    claims: &serde_json::Value,
    budget_ms: u64,
    f: impl FnOnce() -> R,
) -> Result<R, CaughtSqlError> {
    run_as_caller_calling(false, role, claims, budget_ms, f)
}

/// [run_as_caller] for a call of one function; `sets_search_path`: that function has its own
/// search_path, so the caller's is not set (the function's replaces it as it starts, and
/// chumbo's generated call qualifies every name): two search_path recomputations fewer per call.
pub fn run_as_caller_calling<R>(
    sets_search_path: bool,
    role: pg_sys::Oid,
    claims: &serde_json::Value,
    budget_ms: u64,
    f: impl FnOnce() -> R,
) -> Result<R, CaughtSqlError> {
    let outcome = in_subtransaction(|| {
        // Restored with the subtransaction's settings.
        if !sets_search_path {
            if let Some(path) = capability_path() {
                set_guc("search_path", &path);
            }
        }
        set_claims(claims);
        crate::postgres::guards::protect_claim_placeholders();
        let (mut user, mut context) = (pg_sys::Oid::INVALID, 0);
        // SAFETY: the saved user and context are put back in `finally`, which PgTryBuilder runs
        // on success, error and panic alike; an error also rolls the subtransaction back, which
        // restores them as well.
        unsafe { pg_sys::GetUserIdAndSecContext(&mut user, &mut context) };
        let bound = TimeBound::arm(budget_ms);
        let r = PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the switch is undone in `finally` below (and by the subtransaction's rollback on error).
            unsafe { pg_sys::SetUserIdAndSecContext(role, context | LOCAL_AND_RESTRICTED) };
            f()
        }))
        .finally(|| {
            // SAFETY: restores the user and context saved before the switch.
            unsafe { pg_sys::SetUserIdAndSecContext(user, context) };
            DEADLINE_PASSED.with(|d| d.set(bound.disarm()));
        })
        .execute();
        if DEADLINE_PASSED.with(Cell::get) {
            // The call ended normally after its bound: it caught the cancel (or ended as the
            // timer fired). Either way it ran too long: its work is rolled back and the caller
            // gets the timeout answer, as if the cancel had not been caught.
            ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_QUERY_CANCELED,
                "canceling statement due to statement timeout"
            );
        }
        refuse_new_temp_objects();
        if let Some(refusal) = claim_refusal() {
            ereport!(
                PgLogLevel::ERROR,
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                refusal
            );
        }
        r
    });
    note_capability_writes();
    forget_session_state();
    match outcome {
        // An error raised after the call made a claim setting (say, with what RLS then let it
        // read) must not reach anyone: the refusal replaces it.
        Err(_) => match claim_refusal() {
            Some(refusal) => Err(CaughtSqlError {
                sqlstate: "42501".into(),
                message: refusal,
                authored: true,
                hint: None,
            }),
            None => outcome,
        },
        ok => ok,
    }
}

/// The refusal of a call that made a `request.jwt.claim.<key>` setting chumbo had not defined
/// (see crate::postgres::guards): RLS would have taken its value as the caller's.
fn claim_refusal() -> Option<String> {
    let made = crate::postgres::guards::claim_placeholders_made();
    let key = made.first()?;
    Some(format!(
        "chumbo: the call set request.jwt.claim.{key}, a setting that says who the caller is; it was refused and nothing of it was kept"
    ))
}

/// Runs `f` with the transaction read-only: for application functions whose contract is to read
/// (visibility and execution policies, scope resolvers, renderers, projections, completions), so
/// that a write there fails (25006) instead of being kept by a call that then, say, denies. Only
/// ever called inside a subtransaction, where PostgreSQL refuses `SET transaction_read_only =
/// off` (a function's own SET clause included), so the function cannot turn it back.
pub fn read_only<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: XactReadOnly is a plain backend global (transaction_read_only's storage), read
    // and written on the backend's only thread; the previous value is put back in `finally`,
    // however `f` ends.
    let was = unsafe {
        let was = pg_sys::XactReadOnly;
        pg_sys::XactReadOnly = true;
        was
    };
    PgTryBuilder::new(std::panic::AssertUnwindSafe(f))
        // SAFETY: as above.
        .finally(|| unsafe { pg_sys::XactReadOnly = was })
        .execute()
}

/// Refuses to serve a request on a session whose temporary schema holds tables, views, sequences
/// or types. PostgreSQL searches that schema first for exactly those, unless a search_path lists
/// it, and a capability's own `SET search_path` clause (or that of any function it calls, such as
/// a SECURITY DEFINER helper with `set search_path = ''`) usually does not. So on a pooled
/// connection, what one session user left there would stand in for the application's tables and
/// for built-in types in the next caller's call, run as that caller. Free unless the session has
/// a temporary schema.
pub fn refuse_temporary_relations_and_types() {
    let (mut temp, mut toast) = (pg_sys::Oid::INVALID, pg_sys::Oid::INVALID);
    // SAFETY: a plain read of backend state.
    unsafe { pg_sys::GetTempNamespaceState(&mut temp, &mut toast) };
    if temp == pg_sys::Oid::INVALID {
        return;
    }
    let held = crate::postgres::spi_read::one::<bool>(
        "select exists (select from pg_catalog.pg_depend
                         where refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass and refobjid = $1
                           and classid in ('pg_catalog.pg_class'::pg_catalog.regclass,
                                           'pg_catalog.pg_type'::pg_catalog.regclass))",
        &[temp.into()],
    );
    if held != Ok(Some(false)) {
        crate::error::raise(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "chumbo: this session holds temporary tables or types, which would stand in for the names capabilities use",
            Some("Run DISCARD TEMP, or call chumbo.http and chumbo.mcp on a session without temporary objects."),
        );
    }
}

/// The restricted operation refuses temporary tables, but where the session already has a
/// temporary schema, other objects (functions, types, domains, operators) can still be created in
/// it, and types there shadow the application's for later callers on the connection. Every
/// object in a schema depends on it, so a new pg_depend row on the temporary schema written by
/// this call (or its subtransactions) means the call left something behind: it fails, and the
/// rollback removes it. Costs nothing unless the session has a temporary schema and the call
/// wrote something.
fn refuse_new_temp_objects() {
    let (mut temp, mut toast) = (pg_sys::Oid::INVALID, pg_sys::Oid::INVALID);
    // SAFETY: plain reads of backend state.
    let wrote = unsafe {
        pg_sys::GetTempNamespaceState(&mut temp, &mut toast);
        pg_sys::GetCurrentTransactionIdIfAny()
    };
    if temp == pg_sys::Oid::INVALID || wrote == pg_sys::InvalidTransactionId {
        return;
    }
    // Transaction ids of this call's subtransactions are at least this one's: their age is at
    // most its age (age() is safe across wraparound).
    let left_behind = crate::postgres::spi_read::one::<bool>(
        "select exists (select from pg_catalog.pg_depend
                         where refclassid = 'pg_catalog.pg_namespace'::pg_catalog.regclass
                           and refobjid = $1 and pg_catalog.age(xmin) <= pg_catalog.age($2::text::pg_catalog.xid))",
        &[temp.into(), (wrote.into_inner() as i64).to_string().into()],
    );
    if left_behind != Ok(Some(false)) {
        ereport!(
            PgLogLevel::ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "cannot create temporary objects within security-restricted operation"
        );
    }
}

/// What a capability may leave in the session despite the restricted operation: session-level
/// advisory locks (they survive rollback) and currval/lastval. chumbo's entry points are made for
/// pooled connections, so they drop both after every capability call.
pub fn forget_session_state() {
    // SAFETY: the same calls pg_advisory_unlock_all() and DISCARD SEQUENCES make; both are valid
    // inside a transaction.
    unsafe {
        pg_sys::LockReleaseSession(pg_sys::USER_LOCKMETHOD as pg_sys::LOCKMETHODID);
        ResetSequenceCaches();
    }
}

/// Sets `request.jwt.claims` and the legacy `request.jwt.claim.<key>` settings for the call.
/// Both are defined by chumbo (see [crate::postgres::guards]) so that tool code cannot change them.
fn set_claims(claims: &serde_json::Value) {
    CLAIM_SETTINGS.with(|c| {
        let mut c = c.borrow_mut();
        if c.as_ref().is_none_or(|(last, _)| last != claims) {
            *c = Some((claims.clone(), claim_settings(claims)));
        }
        for (name, value) in c.as_ref().map(|(_, s)| s.as_slice()).unwrap_or_default() {
            set_config_c(name, value, pg_sys::GucAction::GUC_ACTION_SAVE);
        }
    })
}

thread_local! {
    /// The last claims and their settings: a caller's next request has the same (the settings
    /// follow from the claims alone; keys are defined once, see guards::protect_claim).
    static CLAIM_SETTINGS: RefCell<Option<(serde_json::Value, Settings)>> = const { RefCell::new(None) };
}

/// Settings as (name, value).
type Settings = Vec<(CString, CString)>;

fn claim_settings(claims: &serde_json::Value) -> Settings {
    let c = |s: String| CString::new(s).unwrap();
    let mut settings = vec![(c("request.jwt.claims".into()), c(claims.to_string()))];
    for (k, v) in claims.as_object().into_iter().flatten() {
        if crate::postgres::guards::protect_claim(k) {
            let text = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            settings.push((c(format!("request.jwt.claim.{k}")), c(text)));
        }
    }
    settings
}

/// A setting's value, read without SPI (no query, no transaction id).
pub fn current_setting(name: &str) -> Option<String> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: the name is a valid C string; missing_ok = true returns NULL for an unknown setting.
    let value = unsafe { pg_sys::GetConfigOption(name.as_ptr(), true, false) };
    if value.is_null() {
        return None;
    }
    // SAFETY: non-null (checked above) and NUL-terminated, owned by the GUC machinery for this call.
    let value = unsafe { std::ffi::CStr::from_ptr(value) }
        .to_string_lossy()
        .into_owned();
    (!value.is_empty()).then_some(value)
}

/// `SET LOCAL name = value`, without SPI.
pub fn set_local(name: &str, value: &str) {
    set_config(name, value, pg_sys::GucAction::GUC_ACTION_LOCAL);
}

/// current_user, without SPI.
pub fn current_role_name() -> String {
    // SAFETY: GetUserNameFromId(noerr = true) returns NULL for an unknown oid (checked) or a
    // palloc'd NUL-terminated copy of the name, which is copied into a String at once.
    unsafe {
        let name = pg_sys::GetUserNameFromId(pg_sys::GetUserId(), true);
        if name.is_null() {
            return String::new();
        }
        std::ffi::CStr::from_ptr(name)
            .to_string_lossy()
            .into_owned()
    }
}

/// Whether `role` holds EXECUTE on a function whose ACL grants it to `executors` (sql/reflect.sql;
/// `InvalidOid` is PUBLIC), decided as PostgreSQL's aclmask does: a superuser always; else PUBLIC,
/// or a grantee whose privileges `role` has (role membership read live, as there). From the
/// registry's copy of the ACL, which every GRANT and REVOKE renews (they write a new pg_proc row,
/// so the function is reflected again at the next request), rather than `pg_proc_aclcheck`: that
/// leaves each checked function's whole pg_proc row in the backend's syscache, 16 MB once a
/// backend has listed 10,000 tools (bench/analysis.md, issue 32 session 19).
pub fn can_execute(executors: &[pg_sys::Oid], role: pg_sys::Oid) -> bool {
    // SAFETY: role checks by oid, through PostgreSQL's role caches; no pointers involved.
    unsafe {
        pg_sys::superuser_arg(role)
            || executors
                .iter()
                .any(|&g| g == pg_sys::InvalidOid || pg_sys::has_privs_of_role(role, g))
    }
}

/// Plans kept across calls (SPI_keepplan), by SQL text (chumbo's own: FxHash). PostgreSQL's plan
/// cache invalidates them on DDL and re-plans when the role (and so RLS) differs. Bounded: cleared
/// when full; shared (Rc), so a clear cannot free one that runs.
const MAX_PLANS: usize = 2000;

type Plans = rustc_hash::FxHashMap<String, std::rc::Rc<pgrx::spi::OwnedPreparedStatement>>;
thread_local! {
    static PLANS: RefCell<Plans> = RefCell::new(Default::default());
}

/// Runs `sql` (parameters of `types`) through a plan prepared once per backend, read-write.
pub fn run_kept<'conn>(
    client: &pgrx::spi::SpiClient<'conn>,
    sql: &str,
    types: &[pg_sys::Oid],
    args: &[pgrx::datum::DatumWithOid],
) -> pgrx::spi::Result<pgrx::spi::SpiTupleTable<'conn>> {
    let plan = match PLANS.with(|p| p.borrow().get(sql).cloned()) {
        Some(plan) => plan,
        None => {
            let types: Vec<pgrx::PgOid> = types.iter().map(|t| (*t).into()).collect();
            let plan = std::rc::Rc::new(client.prepare_mut(sql, &types)?.keep());
            PLANS.with(|p| {
                let mut p = p.borrow_mut();
                if p.len() >= MAX_PLANS {
                    p.clear();
                }
                p.insert(sql.to_string(), plan.clone());
            });
            plan
        }
    };
    // `select` with a plan prepared as mutating runs read-write without pgrx's `update`, which
    // would force a transaction id: a read-only call stays a read-only transaction (no commit).
    client.select(&*plan, None, args)
}

/// Strong random bytes drawn from pg_strong_random in batches: one draw cost as much as a tenth of
/// a small tool call. Tagged with the process id, so a forked process never reuses its parent's.
const RANDOM_BATCH: usize = 256;

thread_local! {
    static RANDOM: RefCell<(i32, Vec<u8>)> = const { RefCell::new((0, Vec::new())) };
}

/// 16 hex digits from the strong random source: unpredictable, never handed out twice (a nonce;
/// two make a run id or a trace id).
pub fn random_id() -> String {
    let mut id = [0u8; 8];
    RANDOM.with(|r| {
        let (pid, pool) = &mut *r.borrow_mut();
        // SAFETY: MyProcPid is set for the life of the process.
        let me = unsafe { pg_sys::MyProcPid };
        if *pid != me {
            pool.clear();
            *pid = me;
        }
        let n = id.len();
        if pool.len() < n {
            pool.resize(RANDOM_BATCH, 0);
            // SAFETY: pg_strong_random writes exactly pool.len() bytes into the buffer it is given.
            let ok = unsafe { pg_sys::pg_strong_random(pool.as_mut_ptr().cast(), pool.len()) };
            if !ok {
                pool.clear();
                crate::error::raise(
                    pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                    "chumbo: no strong random bytes available",
                    None,
                );
            }
        }
        // Bytes handed out are removed: none is ever used twice.
        let rest = pool.len() - n;
        id.copy_from_slice(&pool[rest..]);
        pool.truncate(rest);
    });
    crate::identity::principal::hex(&id)
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    /// Whose words an error is, decided by how it was raised, never by where: chumbo's through
    /// error::raise, the application's through PL/pgSQL RAISE, anything else PostgreSQL's.
    #[pg_test]
    fn an_errors_origin_is_known_by_construction() {
        let code = PgSqlErrorCode::ERRCODE_DATA_EXCEPTION;
        let chumbo = in_subtransaction(|| crate::error::raise(code, "chumbo: refused", None));
        assert!(chumbo.unwrap_err().authored);
        // The same words raised another way (Rust code that is not chumbo's raise, such as
        // another extension's) are not chumbo's: the raise site's file told them apart before.
        let other = in_subtransaction(|| {
            ereport!(PgLogLevel::ERROR, code, "chumbo: refused");
        });
        assert!(!other.unwrap_err().authored);
        let app =
            in_subtransaction(|| Spi::run("do $$ begin raise exception 'the app says no'; end $$"));
        assert!(app.unwrap_err().authored);
        let postgres = in_subtransaction(|| Spi::run("select 1 / 0"));
        assert!(!postgres.unwrap_err().authored);
    }

    #[pg_test]
    fn capabilities_search_the_catalog_first_and_the_temporary_schema_last() {
        for (caller, capability) in [
            ("", "pg_temp"),
            (
                "\"$user\", public, extensions",
                "\"$user\", public, extensions, pg_temp",
            ),
            ("pg_temp, public", "public, pg_temp"),
            ("PG_TEMP,public", "public, pg_temp"),
            ("\"pg_temp\", public", "public, pg_temp"),
            ("pg_temp_3, app, pg_catalog", "app, pg_temp"),
            ("hijack, PG_CATALOG, public", "hijack, public, pg_temp"),
            ("\"PG_TEMP\", \"a,b\"", "\"PG_TEMP\", \"a,b\", pg_temp"),
            (" public ,, app ", "public, app, pg_temp"),
        ] {
            assert_eq!(capability_search_path(caller), capability, "{caller}");
        }
    }

    #[pg_test]
    fn own_statements_ignore_the_sessions_search_path() {
        Spi::run("set search_path = public, pg_temp").unwrap();
        let inside = as_owner(|| current_setting("search_path"));
        assert_eq!(inside.as_deref(), Some(OWN_SEARCH_PATH));
        assert_eq!(
            current_setting("search_path").as_deref(),
            Some("public, pg_temp")
        );
        // put back on error too
        let failed = in_subtransaction(|| as_owner(|| Spi::run("select 1/0")));
        assert!(failed.is_err());
        assert_eq!(
            current_setting("search_path").as_deref(),
            Some("public, pg_temp")
        );
    }
}
