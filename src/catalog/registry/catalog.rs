//! Reading what a registry is built from, as the extension owner in one go: the stamps of every
//! function in `mcp` (sql/reflect_stamps.sql), the functions that need reflecting
//! (sql/reflect.sql), types, settings, keys, table owners and skills; or carrying the previous
//! registry's over when only some functions changed.

use super::*;
use crate::postgres::spi_read;

/// Everything a registry is built from, read in one go as the extension owner.
pub(super) struct Catalog {
    /// Every function in `mcp`, in reflection order.
    pub(super) stamps: Vec<Stamp>,
    /// The functions that need reflecting (not reusable from the previous registry).
    pub(super) functions: Vec<ReflectedFunction>,
    pub(super) type_stamps: HashMap<u32, String>,
    pub(super) settings: Settings,
    pub(super) settings_error: Option<String>,
    pub(super) keys: HashMap<String, Vec<u8>>,
    pub(super) table_owners: Vec<pg_sys::Oid>,
    /// Installed skills, without contents (src/catalog/skills.rs).
    pub(super) skills: Vec<crate::catalog::skills::Skill>,
    /// Stored MCP Apps, without their HTML (src/catalog/apps.rs).
    pub(super) apps: Vec<crate::catalog::apps::App>,
    /// How many stamps were read (all functions', or those the changes named).
    pub(super) stamped: usize,
}

/// One row of sql/reflect_stamps.sql.
#[derive(Clone)]
pub(super) struct Stamp {
    pub(super) oid: u32,
    pub(super) name: Rc<str>,
    pub(super) stamp: Rc<str>,
    pub(super) types: Rc<[u32]>,
}

impl Catalog {
    pub(super) fn overloaded(&self) -> HashMap<&str, bool> {
        let mut counts: HashMap<&str, usize> = HashMap::default();
        for s in &self.stamps {
            *counts.entry(&*s.name).or_default() += 1;
        }
        counts.into_iter().map(|(n, c)| (n, c > 1)).collect()
    }
}

/// sql/reflect_stamps.sql: every function in `mcp`, or those of `only` still there.
pub(super) fn read_stamps(only: Option<&[u32]>) -> Vec<Stamp> {
    let only: Option<Vec<pg_sys::Oid>> = only.map(|o| o.iter().map(|&o| o.into()).collect());
    Spi::connect(|c| {
        let rows = c.select(
            include_str!("../../../sql/reflect_stamps.sql"),
            None,
            &[only.into()],
        )?;
        spi_read::decode_in_connection_memory(|| {
            let mut stamps = vec![];
            for row in rows {
                if let (Some(oid), Some(name), Some(stamp), Some(types)) = (
                    row.get::<i64>(1)?,
                    row.get::<String>(2)?,
                    row.get::<String>(3)?,
                    row.get::<Vec<pg_sys::Oid>>(4)?,
                ) {
                    stamps.push(Stamp {
                        oid: u32::try_from(oid).unwrap_or_default(),
                        name: name.into(),
                        stamp: stamp.into(),
                        types: types.into_iter().map(u32::from).collect(),
                    });
                }
            }
            Ok::<_, pgrx::spi::Error>(stamps)
        })
    })
    .unwrap_or_default()
}

/// sql/reflect_types.sql: the stamps of `types`.
pub(super) fn read_type_stamps(types: &[u32]) -> HashMap<u32, String> {
    let types: Vec<pg_sys::Oid> = types.iter().map(|&t| t.into()).collect();
    Spi::connect(|c| {
        let rows = session::run_kept(
            c,
            include_str!("../../../sql/reflect_types.sql"),
            &[pg_sys::OIDARRAYOID],
            &[types.into()],
        )?;
        spi_read::decode_in_connection_memory(|| {
            let mut stamps = HashMap::default();
            for row in rows {
                if let (Some(t), Some(stamp)) = (row.get::<i64>(1)?, row.get::<String>(2)?) {
                    stamps.insert(u32::try_from(t).unwrap_or_default(), stamp);
                }
            }
            Ok::<_, pgrx::spi::Error>(stamps)
        })
    })
    .unwrap_or_default()
}

/// Step 1: the catalog; of the functions, only those `previous` cannot reuse. A failed read
/// leaves that part empty (no capabilities, strict defaults).
pub(super) fn read_catalog(previous: Option<&Registry>, touched: Option<&[u32]>) -> Catalog {
    let mut catalog = match previous.zip(touched) {
        Some((p, touched)) => carried_over(p, touched),
        None => None,
    }
    .unwrap_or_else(read_all_but_functions);
    let overloaded = catalog.overloaded();
    let wanted: Vec<pg_sys::Oid> = catalog
        .stamps
        .iter()
        .filter(|s| {
            previous
                .and_then(|p| p.reusable(s, overloaded[&*s.name], &catalog.type_stamps))
                .is_none()
        })
        .map(|s| pg_sys::Oid::from(s.oid))
        .collect();
    drop(overloaded);
    if !wanted.is_empty() {
        catalog.functions = Spi::connect(|c| {
            let rows = session::run_kept(
                c,
                include_str!("../../../sql/reflect_type_descriptors.sql"),
                &[pg_sys::OIDARRAYOID],
                &[wanted.clone().into()],
            )?;
            let descriptors = spi_read::decode_in_connection_memory(|| {
                let mut descriptors = HashMap::default();
                for row in rows {
                    let (Some(oid), Some(t)) = (row.get::<i64>(1)?, row.get::<String>(2)?) else {
                        continue;
                    };
                    // one that cannot be read is left out (TypeRef: a parameter of it is its
                    // function's problem, a result of it text)
                    if let Ok(t) = serde_json::from_str::<ReflectedType>(&t) {
                        descriptors.insert(oid as u32, Rc::new(t));
                    }
                }
                Ok::<_, pgrx::spi::Error>(descriptors)
            })?;
            let rows = session::run_kept(
                c,
                include_str!("../../../sql/reflect.sql"),
                &[pg_sys::OIDARRAYOID],
                &[wanted.into()],
            )?;
            spi_read::decode_in_connection_memory(|| {
                let mut functions = vec![];
                for row in rows {
                    if let Some(f) = row.get::<String>(1)? {
                        let mut f = serde_json::from_str::<ReflectedFunction>(&f);
                        if let Ok(f) = &mut f {
                            f.resolve(&descriptors);
                        }
                        functions.push(f);
                    }
                }
                Ok::<_, pgrx::spi::Error>(functions)
            })
        })
        .ok()
        .and_then(|rows| rows.into_iter().collect::<Result<Vec<_>, _>>().ok())
        .unwrap_or_default();
    }
    catalog
}

/// The catalog after changes that touched only the functions `touched` (and, re-read each time,
/// those whose policies name other functions): `previous`'s, with their stamps read again. None
/// when the set of functions in `mcp` or one of their names moved: their order and overloading
/// may have changed, so everything is read again.
pub(super) fn carried_over(previous: &Registry, touched: &[u32]) -> Option<Catalog> {
    let mut only: Vec<u32> = touched.to_vec();
    only.extend(
        previous
            .reflected
            .iter()
            .filter(|(_, r)| !r.reusable)
            .map(|(&oid, _)| oid),
    );
    only.sort_unstable();
    only.dedup();
    let mut fresh: HashMap<u32, Stamp> = read_stamps(Some(&only))
        .into_iter()
        .map(|s| (s.oid, s))
        .collect();
    let before: HashMap<u32, &Stamp> = previous.stamps.iter().map(|s| (s.oid, s)).collect();
    let same_function = |oid| match (before.get(oid), fresh.get(oid)) {
        (Some(b), Some(f)) => b.name == f.name,
        // a function outside `mcp`
        (None, None) => true,
        _ => false,
    };
    if !only.iter().all(same_function) {
        return None;
    }
    let new_types: Vec<u32> = fresh
        .values()
        .flat_map(|s| s.types.iter().copied())
        .filter(|t| !previous.type_stamps.contains_key(t))
        .collect();
    let mut type_stamps = previous.type_stamps.clone();
    if !new_types.is_empty() {
        type_stamps.extend(read_type_stamps(&new_types));
    }
    Some(Catalog {
        stamped: fresh.len(),
        stamps: previous
            .stamps
            .iter()
            .map(|s| fresh.remove(&s.oid).unwrap_or_else(|| s.clone()))
            .collect(),
        functions: vec![],
        type_stamps,
        settings: previous.settings.clone(),
        settings_error: previous.settings_error.clone(),
        keys: previous.keys.clone(),
        table_owners: previous.table_owners.clone(),
        skills: previous.skills.clone(),
        apps: previous.apps.clone(),
    })
}

/// Everything a full build reads but the functions' own rows.
pub(super) fn read_all_but_functions() -> Catalog {
    let stamps = read_stamps(None);
    let mut types: Vec<u32> = stamps
        .iter()
        .flat_map(|s| s.types.iter().copied())
        .collect();
    types.sort_unstable();
    types.dedup();
    let type_stamps = read_type_stamps(&types);
    let settings = Spi::connect(|c| {
        c.select("select value from chumbo.settings", Some(1), &[])?
            .first()
            .get_one::<JsonB>()
    })
    .ok()
    .flatten()
    .map(|j| j.0)
    .unwrap_or(json!({}));
    let (settings, settings_error) = match Settings::from_json(settings) {
        Ok(s) => (s, None),
        // Broken settings must not silently loosen anything: defaults are the strict choice.
        Err(e) => (Settings::default(), Some(e)),
    };
    // Owners of tables, views, sequences and schemas, schema chumbo's among them (the extension
    // owner, who owns chumbo's own tables): a role with their privileges could read past
    // row-level security (RLS enabled but not forced), turn it off or change the policies (an
    // owner may ALTER its table, and a schema's owner drop or rename what is in it, even inside
    // the restricted operation capabilities run in), or read chumbo.keys and everyone's state
    // (see session::check_role). Temporary tables do not count (any login could otherwise lock a
    // role out by creating one).
    let table_owners: Vec<pg_sys::Oid> = Spi::connect(|c| {
        let mut owners = vec![];
        for row in c.select(
            "select relowner from pg_catalog.pg_class
              where relkind in ('r', 'p', 'v', 'm', 'f', 'S') and relpersistence <> 't'
             union
             select nspowner from pg_catalog.pg_namespace
              where nspname not in ('pg_catalog', 'information_schema')
                and nspname !~ '^pg_(toast|temp_|toast_temp_)'",
            None,
            &[],
        )? {
            if let Some(o) = row.get::<pg_sys::Oid>(1)? {
                owners.push(o);
            }
        }
        Ok::<_, pgrx::spi::Error>(owners)
    })
    .unwrap_or_default();
    let keys: HashMap<String, Vec<u8>> = Spi::connect(|c| {
        let mut keys = HashMap::default();
        for row in c.select("select name, secret from chumbo.keys", None, &[])? {
            if let (Some(n), Some(k)) = (row.get::<String>(1)?, row.get::<Vec<u8>>(2)?) {
                keys.insert(n, k);
            }
        }
        Ok::<_, pgrx::spi::Error>(keys)
    })
    .unwrap_or_default();
    Catalog {
        stamped: stamps.len(),
        stamps,
        functions: vec![],
        type_stamps,
        settings,
        settings_error,
        keys,
        table_owners,
        skills: crate::catalog::skills::load(),
        apps: crate::catalog::apps::load(),
    }
}
