//! chumbo: PostgreSQL as an end-user-facing MCP server. Capabilities are SQL functions in schema
//! `mcp`; every call runs as the calling user, so Row Level Security decides what each user sees.

use pgrx::prelude::*;

mod alloc;
mod api;
mod apikey;
mod audit_queue;
mod auth;
mod call;
mod content;
mod datum;
mod deadline;
mod doctor;
mod error;
mod events;
mod guards;
mod jsonrpc;
#[cfg(test)]
mod layering;
mod ledger;
mod metadata;
mod mrtr;
mod predicates;
mod principal;
mod protocol;
mod registry;
mod render;
mod result_json;
mod runs;
mod scope;
mod session;
mod settings;
mod skills;
mod skills_archive;
mod spi_read;
mod spliced;
mod tokens;
mod types;
mod uri_template;

::pgrx::pg_module_magic!();

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    guards::init();
    deadline::init();
    audit_queue::init();
}

// chumbo's own SQL objects, one file per concern. pgrx orders them by `requires` (a file that
// creates an object another file's statements need at creation time is required by it); bootstrap
// runs first, finalize after every Rust-defined function.
extension_sql_file!("../sql/bootstrap.sql", name = "bootstrap", bootstrap);
extension_sql_file!(
    "../sql/registry.sql",
    name = "registry",
    requires = ["bootstrap"]
);
extension_sql_file!(
    "../sql/settings.sql",
    name = "settings",
    requires = ["registry"]
);
extension_sql_file!("../sql/audit.sql", name = "audit", requires = ["bootstrap"]);
extension_sql_file!(
    "../sql/keys.sql",
    name = "keys",
    requires = ["registry", guards::now]
);
extension_sql_file!(
    "../sql/limits.sql",
    name = "limits",
    requires = ["bootstrap", guards::now]
);
extension_sql_file!(
    "../sql/edge.sql",
    name = "edge",
    requires = ["settings", "audit", "keys"]
);
extension_sql_file!(
    "../sql/state.sql",
    name = "state",
    requires = [
        "settings",
        principal::principal_json,
        principal::principal_partition,
        guards::now
    ]
);
extension_sql_file!(
    "../sql/sandboxes.sql",
    name = "sandboxes",
    requires = ["settings", principal::principal_json, guards::now]
);
extension_sql_file!(
    "../sql/skills.sql",
    name = "skills",
    requires = ["registry", skills::skill_unpack, skills::builtin_skill]
);
// Stored outcomes of idempotent calls, the audit's run_id.
extension_sql_file!(
    "../sql/idempotency.sql",
    name = "idempotency",
    requires = ["bootstrap", guards::now, runs::run_id]
);
extension_sql_file!("../sql/finalize.sql", name = "finalize", finalize);

/// Validates a settings object (used by chumbo.configure before it commits).
#[pg_extern(name = "_check_settings")]
fn check_settings(value: pgrx::JsonB) -> bool {
    match settings::Settings::from_json(value.0) {
        Ok(_) => true,
        Err(e) => error!("{e}"),
    }
}

/// What chumbo.configure merges for `changes`: the keys a preset (supabase_url) implies added.
#[pg_extern(name = "_expand_settings")]
fn expand_settings(changes: pgrx::JsonB) -> pgrx::JsonB {
    match changes.0 {
        serde_json::Value::Object(m) => match settings::Settings::expand_presets(m) {
            Ok(m) => pgrx::JsonB(serde_json::Value::Object(m)),
            Err(e) => crate::error::raise(
                pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("chumbo.configure: {e}"),
                None,
            ),
        },
        _ => crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            "chumbo.configure expects a JSON object",
            None,
        ),
    }
}

/// The effective settings (defaults merged with chumbo.settings), secrets redacted.
#[pg_extern]
fn settings_effective() -> pgrx::JsonB {
    pgrx::JsonB(registry::current().settings.redacted())
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
