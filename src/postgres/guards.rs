//! Settings that decide who a capability runs for, defined by chumbo so that tool code cannot
//! change them: `request.jwt.claims`, the legacy `request.jwt.claim.<key>` settings and the test
//! clock `chumbo.pinned_now`. PostgreSQL refuses a change to a setting marked
//! `GUC_NOT_WHILE_SEC_REST` inside a security-restricted operation, which is how capabilities run
//! (see `session::run_as_caller`); `GUC_NO_RESET_ALL` keeps `RESET ALL` away from them too.

use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::pg_sys;
use pgrx::prelude::*;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::ffi::{CStr, CString};

static CLAIMS: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static PINNED_NOW: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Legacy claim keys protected from the start, whether or not a token carries them: a policy may
/// read `request.jwt.claim.email` for a caller whose token has no email.
const STANDARD_CLAIMS: [&str; 20] = [
    "sub",
    "role",
    "email",
    "phone",
    "aud",
    "iss",
    "exp",
    "iat",
    "nbf",
    "jti",
    "aal",
    "amr",
    "session_id",
    "is_anonymous",
    "client_id",
    "azp",
    "scope",
    "app_metadata",
    "user_metadata",
    "user_id",
];
/// Further keys a token may carry get a protected setting on first use, up to this many per
/// backend (each definition lives as long as the backend); keys beyond it are only in
/// `request.jwt.claims`.
const MAX_EXTRA_CLAIMS: usize = 64;

thread_local! {
    static DEFINED_CLAIMS: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    /// How many settings (placeholders included) the backend had when it last had no
    /// `request.jwt.claim.*` placeholder; -1: look again.
    static SETTINGS_SEEN: Cell<i64> = const { Cell::new(-1) };
}

fn protected() -> GucFlags {
    GucFlags::NOT_WHILE_SEC_REST | GucFlags::NO_RESET_ALL
}

pub fn init() {
    GucRegistry::define_string_guc(
        c"request.jwt.claims",
        c"The verified JWT claims of the current request (PostgREST's convention).",
        c"Set by PostgREST or by chumbo for a capability call; capabilities cannot change it.",
        &CLAIMS,
        GucContext::Userset,
        protected(),
    );
    GucRegistry::define_string_guc(
        c"chumbo.pinned_now",
        c"Pins chumbo.now() to this timestamp (tests only; superusers only).",
        c"Empty: chumbo.now() is the wall clock.",
        &PINNED_NOW,
        GucContext::Suset,
        protected(),
    );
    // SAFETY: called from _PG_init with a static NUL-terminated name; it drops placeholders
    // chumbo.* that someone set before the library was loaded and refuses new ones.
    unsafe { pg_sys::MarkGUCPrefixReserved(c"chumbo".as_ptr()) };
    for key in STANDARD_CLAIMS {
        define_claim(key);
    }
}

fn define_claim(key: &str) {
    // GUC definitions live for the whole backend, so their name and storage do too.
    let name: &'static CStr = Box::leak(
        CString::new(format!("request.jwt.claim.{key}"))
            .expect("claim keys are checked")
            .into_boxed_c_str(),
    );
    let setting: &'static GucSetting<Option<CString>> =
        Box::leak(Box::new(GucSetting::<Option<CString>>::new(None)));
    GucRegistry::define_string_guc(
        name,
        c"A verified JWT claim of the current request (PostgREST's legacy form).",
        c"Set by chumbo for a capability call; capabilities cannot change it.",
        setting,
        GucContext::Userset,
        protected(),
    );
    DEFINED_CLAIMS.with(|d| d.borrow_mut().insert(key.to_string()));
}

/// Whether chumbo sets `request.jwt.claim.<key>` for a call: only for keys that are a valid
/// setting name and have (or now get) a protected definition.
pub fn protect_claim(key: &str) -> bool {
    if !valid_claim_key(key) {
        return false;
    }
    let (known, count) = DEFINED_CLAIMS.with(|d| {
        let d = d.borrow();
        (d.contains(key), d.len())
    });
    if known {
        return true;
    }
    if count >= STANDARD_CLAIMS.len() + MAX_EXTRA_CLAIMS {
        return false;
    }
    define_claim(key);
    true
}

// A `request.jwt.claim.<key>` nobody defined is a placeholder: anyone may set it, tool code
// inside a restricted operation included, and RLS reading it would take the value as the
// caller's. So placeholders are made protected definitions before each call (what they hold is
// kept), and a call that makes a new one is refused (session::run_as_caller).

/// The names of the backend's settings that are placeholders for `request.jwt.claim.<key>`,
/// and how many settings there are.
fn claim_placeholders() -> (i64, Vec<String>) {
    let mut keys = Vec::new();
    let placeholder = pg_sys::GUC_CUSTOM_PLACEHOLDER as i32;
    let mut look = |var: *mut pg_sys::config_generic| {
        // SAFETY: `var` is one of the backend's GUC records, alive for the backend; its name is
        // a NUL-terminated string it owns.
        let (name, flags) = unsafe { (CStr::from_ptr((*var).name), (*var).flags) };
        if flags & placeholder != 0 {
            let key = name.to_bytes().strip_prefix(b"request.jwt.claim.");
            if let Some(key) = key.and_then(|k| std::str::from_utf8(k).ok()) {
                keys.push(key.to_string());
            }
        }
    };
    #[cfg(feature = "pg15")]
    // SAFETY: the backend's array of GUC records and its length; read on its only thread.
    let count = unsafe {
        let (vars, n) = (pg_sys::get_guc_variables(), pg_sys::GetNumConfigOptions());
        for i in 0..n as usize {
            look(*vars.add(i));
        }
        n
    };
    #[cfg(not(feature = "pg15"))]
    // SAFETY: get_guc_variables returns a palloc'd array of `n` pointers to the backend's GUC
    // records (alive for the backend), freed here.
    let count = unsafe {
        let mut n = 0;
        let vars = pg_sys::get_guc_variables(&mut n);
        for i in 0..n as usize {
            look(*vars.add(i));
        }
        pg_sys::pfree(vars.cast());
        n
    };
    (i64::from(count), keys)
}

/// Before a call: every `request.jwt.claim.<key>` placeholder becomes a protected definition,
/// holding the value it had (a placeholder's name is a valid setting name by construction).
pub fn protect_claim_placeholders() {
    if unchanged_since_last_look() {
        return;
    }
    let (count, keys) = claim_placeholders();
    for key in &keys {
        define_claim(key); // replaces the placeholder: the count stays
    }
    SETTINGS_SEEN.set(count);
}

/// After a call: the `request.jwt.claim.<key>` placeholders it made (it set a claim setting
/// chumbo had not defined). Such a call is refused; the next call's
/// [protect_claim_placeholders] defines them.
pub fn claim_placeholders_made() -> Vec<String> {
    if unchanged_since_last_look() {
        return Vec::new();
    }
    let (count, keys) = claim_placeholders();
    SETTINGS_SEEN.set(if keys.is_empty() { count } else { -1 });
    keys
}

/// No setting was added since the backend last had no claim placeholder. PostgreSQL 16 and
/// later export no count of settings: there the records are always listed.
fn unchanged_since_last_look() -> bool {
    #[cfg(feature = "pg15")]
    // SAFETY: reads the backend's count of GUC records.
    return SETTINGS_SEEN.get() == i64::from(unsafe { pg_sys::GetNumConfigOptions() });
    #[cfg(not(feature = "pg15"))]
    return false;
}

fn valid_claim_key(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `chumbo.now()`: the clock every time-dependent part of chumbo reads (rate windows, state and
/// sandbox expiry, MRTR state lifetime). A superuser can pin it inside a transaction with
/// `set local chumbo.pinned_now = '…'`, so tests never depend on the wall clock.
#[pg_extern(volatile, parallel_safe)]
fn now() -> TimestampWithTimeZone {
    let ts = now_timestamptz();
    TimestampWithTimeZone::try_from(ts).unwrap_or_else(|_| {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo.now: out of range",
            None,
        )
    })
}

/// chumbo.now() as PostgreSQL's TimestampTz (microseconds since 2000-01-01).
pub fn now_timestamptz() -> pg_sys::TimestampTz {
    match PINNED_NOW.get() {
        Some(text) if !text.as_bytes().is_empty() => {
            // SAFETY: timestamptz_in takes (cstring, oid, int4) and raises a clean ERROR on bad
            // input; `text` outlives the call.
            unsafe {
                pgrx::direct_function_call::<pg_sys::TimestampTz>(
                    pg_sys::timestamptz_in,
                    &[
                        Some(pg_sys::Datum::from(text.as_ptr())),
                        pg_sys::Oid::INVALID.into_datum(),
                        (-1i32).into_datum(),
                    ],
                )
                .unwrap_or_else(|| {
                    crate::error::raise(
                        pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                        "chumbo.pinned_now is not a timestamp",
                        None,
                    )
                })
            }
        }
        // SAFETY: GetCurrentTimestamp reads the clock; no pointers involved.
        _ => unsafe { pg_sys::GetCurrentTimestamp() },
    }
}

/// chumbo.now() in seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    const UNIX_TO_PG_EPOCH_SECONDS: i64 = 946_684_800;
    now_timestamptz().div_euclid(1_000_000) + UNIX_TO_PG_EPOCH_SECONDS
}
