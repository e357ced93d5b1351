//! The search_path of chumbo's own statements and of the capabilities it runs.

use super::*;

/// The search_path of chumbo's own statements: the catalog, then temporary objects (never
/// searched for functions and operators). chumbo qualifies every other name it uses, so nothing a
/// caller or a capability created can stand in for what its statements mean, however the
/// session's search_path is set and whatever its temporary schema holds.
pub(super) const OWN_SEARCH_PATH: &str = "pg_catalog, pg_temp";

thread_local! {
    /// While a request is served: the search_path its capabilities run with
    /// ([capability_search_path] of the caller's).
    static CAPABILITY_SEARCH_PATH: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The last caller's search_path and [capability_search_path] of it.
    static LAST: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// The search_path capabilities of the request being served run with.
pub(super) fn capability_path() -> Option<String> {
    CAPABILITY_SEARCH_PATH.with(|p| p.borrow().clone())
}

/// Whether setting `name` is `value`, read without copying it.
fn setting_is(name: &std::ffi::CStr, value: &str) -> bool {
    // SAFETY: a valid C string; missing_ok = true returns NULL for an unknown setting, else a
    // NUL-terminated string owned by the GUC machinery, only read here.
    unsafe {
        let v = pg_sys::GetConfigOption(name.as_ptr(), true, false);
        !v.is_null() && std::ffi::CStr::from_ptr(v).to_bytes() == value.as_bytes()
    }
}

/// Runs `f` with chumbo's own search_path unless it is already in force.
pub(super) fn with_own_search_path<R>(f: impl FnOnce() -> R) -> R {
    if setting_is(c"search_path", OWN_SEARCH_PATH) {
        f()
    } else {
        with_settings(&[("search_path", OWN_SEARCH_PATH)], f)
    }
}

/// The search_path capabilities run with: the caller's, with pg_catalog first and the temporary
/// schema last. Otherwise a session (an edge's pooled login, say) could make its own objects
/// stand in for the application's in the capabilities of whoever calls next, run as that
/// caller: PostgreSQL searches the temporary schema first for tables and types (a temporary
/// `projects`, a temporary domain named `text`), and a schema listed before pg_catalog comes
/// before the built-in types and functions.
pub(super) fn capability_search_path(caller: &str) -> String {
    // Split at the commas outside double quotes, as PostgreSQL reads the list.
    let mut items: Vec<&str> = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in caller.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(&caller[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&caller[start..]);
    // Left out: pg_catalog (unlisted, PostgreSQL searches it first) and every name that starts
    // with pg_temp: the session's temporary schema (pg_temp, pg_temp_N) or one that cannot exist
    // (the pg_ prefix is reserved). Unquoted names are folded to lower case, as PostgreSQL does.
    let placed = |item: &str| {
        let name = match item.strip_prefix('"').and_then(|i| i.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => item.to_ascii_lowercase(),
        };
        name == "pg_catalog" || name.starts_with("pg_temp")
    };
    let mut kept: Vec<&str> = items
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty() && !placed(i))
        .collect();
    kept.push("pg_temp");
    kept.join(", ")
}

/// Serves one request of an entry point: chumbo's own statements run with [OWN_SEARCH_PATH], its
/// capabilities with [capability_search_path] of the caller's search_path.
pub fn serve_request<R>(f: impl FnOnce() -> R) -> R {
    let caller = current_setting("search_path").unwrap_or_default();
    // The same caller's search_path as last time (a pooled login's): the same answer.
    let path = LAST.with(|l| {
        let mut l = l.borrow_mut();
        match &*l {
            Some((c, p)) if *c == caller => p.clone(),
            _ => {
                let p = capability_search_path(&caller);
                *l = Some((caller, p.clone()));
                p
            }
        }
    });
    CAPABILITY_SEARCH_PATH.with(|p| *p.borrow_mut() = Some(path));
    PgTryBuilder::new(std::panic::AssertUnwindSafe(|| {
        with_settings(&[("search_path", OWN_SEARCH_PATH)], f)
    }))
    .finally(|| CAPABILITY_SEARCH_PATH.with(|p| *p.borrow_mut() = None))
    .execute()
}
