//! Which roles may run capabilities.

use super::*;

/// Predefined roles whose members read or write past table privileges (chumbo's own tables have
/// no row-level security: privileges are what keep them private), reach the server's files or
/// programs, signal other sessions' backends, or read other sessions' queries and every setting;
/// and pg_database_owner, whose members own the database (and in PostgreSQL 15 and later, schema
/// public).
const PREDEFINED_PAST_PRIVILEGES: [u32; 9] = [
    pg_sys::ROLE_PG_READ_ALL_DATA,
    pg_sys::ROLE_PG_WRITE_ALL_DATA,
    pg_sys::ROLE_PG_READ_SERVER_FILES,
    pg_sys::ROLE_PG_WRITE_SERVER_FILES,
    pg_sys::ROLE_PG_EXECUTE_SERVER_PROGRAM,
    pg_sys::ROLE_PG_SIGNAL_BACKEND,
    pg_sys::ROLE_PG_READ_ALL_STATS,
    pg_sys::ROLE_PG_READ_ALL_SETTINGS,
    pg_sys::ROLE_PG_DATABASE_OWNER,
];

/// Whether `role` may run capabilities: named in the allow-list, exists, is neither a superuser
/// nor BYPASSRLS, cannot create roles (it could grant itself any of the others), holds none of
/// [PREDEFINED_PAST_PRIVILEGES], and has no owner's privileges (`table_owners`: owners of tables,
/// views, sequences and schemas, schema chumbo's among them): an owner's privileges would let
/// tool code read past row-level security, turn it off, or read chumbo's own tables. Returns the
/// role's oid.
/// A role that passed is checked again after any change to a role, a membership or a database
/// (the syscache invalidations PostgreSQL's own role caches follow), so an ALTER ROLE or GRANT
/// takes effect at once, as when attributes and memberships were read on every request.
pub fn check_role(
    role: &str,
    allowed: &[String],
    table_owners: &[pg_sys::Oid],
) -> Result<pg_sys::Oid, crate::error::Error> {
    watch_roles();
    let generation = ROLES_CHANGED.with(Cell::get);
    let kept = ROLE_CHECKED.with(|c| match &*c.borrow() {
        Some((g, r, a, t, oid))
            if *g == generation && r == role && a == allowed && t == table_owners =>
        {
            Some(*oid)
        }
        _ => None,
    });
    if let Some(oid) = kept {
        return Ok(oid);
    }
    // Kept under the generation read before the check: a change seen during it makes it stale.
    let oid = check_role_now(role, allowed, table_owners)?;
    let checked = (
        generation,
        role.into(),
        allowed.to_vec(),
        table_owners.to_vec(),
        oid,
    );
    ROLE_CHECKED.with(|c| *c.borrow_mut() = Some(checked));
    Ok(oid)
}

/// A role that passed [check_role], with what it was checked against.
type RoleChecked = (u64, String, Vec<String>, Vec<pg_sys::Oid>, pg_sys::Oid);

thread_local! {
    /// The last role that passed, kept until any role, membership or database changes (the
    /// syscache invalidations PostgreSQL's own role caches follow): the next request of the
    /// same caller is not checked again (~4,600 instructions, callgrind).
    static ROLE_CHECKED: RefCell<Option<RoleChecked>> = const { RefCell::new(None) };
    /// Moved by every invalidation of pg_authid, pg_auth_members and pg_database entries.
    static ROLES_CHANGED: Cell<u64> = const { Cell::new(0) };
    static WATCHING_ROLES: Cell<bool> = const { Cell::new(false) };
}

fn watch_roles() {
    if WATCHING_ROLES.with(|w| w.replace(true)) {
        return;
    }
    unsafe extern "C-unwind" fn forget(_: pg_sys::Datum, _: std::ffi::c_int, _: u32) {
        let _ = ROLES_CHANGED.try_with(|g| g.set(g.get().wrapping_add(1)));
    }
    use pg_sys::SysCacheIdentifier::{AUTHMEMROLEMEM, AUTHOID, DATABASEOID};
    for cache in [AUTHOID, AUTHMEMROLEMEM, DATABASEOID] {
        // SAFETY: registers a callback that lives as long as the backend (a plain fn).
        unsafe {
            pg_sys::CacheRegisterSyscacheCallback(
                cache as i32,
                Some(forget),
                pg_sys::Datum::from(0),
            )
        };
    }
}

fn check_role_now(
    role: &str,
    allowed: &[String],
    table_owners: &[pg_sys::Oid],
) -> Result<pg_sys::Oid, crate::error::Error> {
    if !allowed.iter().any(|r| r == role) {
        return Err(crate::error::Error::CallerRefused(format!(
            "role \"{role}\" is not allowed to call capabilities"
        )));
    }
    let name = CString::new(role).map_err(|_| {
        crate::error::Error::CallerRefused(format!("role \"{role}\" does not exist"))
    })?;
    // SAFETY: the name is a valid C string; missing_ok = true returns InvalidOid for an unknown role.
    let oid = unsafe { pg_sys::get_role_oid(name.as_ptr(), true) };
    if oid == pg_sys::Oid::INVALID {
        return Err(crate::error::Error::CallerRefused(format!(
            "role \"{role}\" does not exist"
        )));
    }
    // SAFETY: syscache lookups by an existing role's oid.
    if unsafe { pg_sys::superuser_arg(oid) || pg_sys::has_bypassrls_privilege(oid) } {
        return Err(crate::error::Error::CallerRefused(format!(
            "role \"{role}\" is a superuser or bypasses RLS and never runs capabilities"
        )));
    }
    // SAFETY: attribute and membership lookups through the role cache, by oids.
    let past_privileges = unsafe {
        pg_sys::has_createrole_privilege(oid)
            || PREDEFINED_PAST_PRIVILEGES
                .iter()
                .any(|r| pg_sys::has_privs_of_role(oid, pg_sys::Oid::from(*r)))
    };
    if past_privileges {
        return Err(crate::error::Error::CallerRefused(format!(
            "role \"{role}\" can create roles, owns the database, or holds a predefined role that reads, writes or signals past privileges (pg_read_all_data and the like), and never runs capabilities"
        )));
    }
    if table_owners
        .iter()
        // SAFETY: membership lookups through the role cache, by oids; no pointers involved.
        .any(|o| unsafe { pg_sys::has_privs_of_role(oid, *o) })
    {
        return Err(crate::error::Error::CallerRefused(format!(
            "role \"{role}\" owns (or has the privileges of the owner of) a table, view, sequence or schema, or of the chumbo extension, and never runs capabilities"
        )));
    }
    Ok(oid)
}
