//! chumbo: PostgreSQL as an end-user-facing MCP server. Capabilities are SQL functions in schema
//! `mcp`; every call runs as the calling user, so Row Level Security decides what each user sees.

use pgrx::prelude::*;

mod api;
mod bookkeeping;
mod call;
mod catalog;
mod content;
mod datum;
mod error;
mod events;
mod identity;
mod json_number;
mod jsonrpc;
#[cfg(test)]
mod layering;
mod postgres;
mod protocol;
mod render;
mod result_json;
mod settings;
mod tokens;
mod trace_context;

::pgrx::pg_module_magic!();

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    postgres::guards::init();
    postgres::deadline::init();
    bookkeeping::audit_queue::init();
    api::tasks::init();
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
    requires = ["registry", postgres::guards::now]
);
extension_sql_file!(
    "../sql/limits.sql",
    name = "limits",
    requires = ["bootstrap", postgres::guards::now]
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
        identity::principal::principal_json,
        identity::principal::principal_partition,
        postgres::guards::now
    ]
);
extension_sql_file!(
    "../sql/sandboxes.sql",
    name = "sandboxes",
    requires = [
        "settings",
        identity::principal::principal_json,
        postgres::guards::now
    ]
);
extension_sql_file!(
    "../sql/skills.sql",
    name = "skills",
    requires = [
        "registry",
        catalog::skills::skill_unpack,
        catalog::skills::builtin_skill
    ]
);
extension_sql_file!(
    "../sql/apps.sql",
    name = "apps",
    requires = ["registry", "settings"]
);
// Stored outcomes of idempotent calls, the audit's run_id.
extension_sql_file!(
    "../sql/idempotency.sql",
    name = "idempotency",
    requires = [
        "bootstrap",
        postgres::guards::now,
        bookkeeping::runs::run_id
    ]
);
// Durable tasks and their fallback runner.
extension_sql_file!(
    "../sql/tasks.sql",
    name = "tasks",
    requires = ["bootstrap", api::tasks::task_claim, api::tasks::task_run]
);
// The edge's read path on a replicated database (src/api/replica.rs).
extension_sql_file!(
    "../sql/replication.sql",
    name = "replication",
    requires = ["bootstrap"]
);
extension_sql_file!("../sql/finalize.sql", name = "finalize", finalize);

/// Validates a settings object (used by chumbo.configure before it commits).
#[pg_extern(name = "_check_settings")]
fn check_settings(value: pgrx::JsonB) -> bool {
    let settings = match settings::Settings::from_json(value.0) {
        Ok(s) => s,
        Err(e) => error::raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, e, None),
    };
    if let Some(name) = settings.zero_bound() {
        error::raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid chumbo settings: {name} must be at least 1"),
            None,
        );
    }
    for (key, name) in settings.app_function_names() {
        if !postgres::app_function::valid_name(name) {
            error::raise(
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("invalid chumbo settings: {key} must name a function as \"schema.function\" (plain identifiers), not {name:?}"),
                None,
            );
        }
    }
    true
}

/// What chumbo.configure merges for `changes`: the keys a preset (supabase_url) implies added.
#[pg_extern(name = "_expand_settings")]
fn expand_settings(changes: pgrx::JsonB) -> pgrx::JsonB {
    match changes.0 {
        serde_json::Value::Object(m) => match settings::Settings::expand_presets(m) {
            Ok(m) => pgrx::JsonB(serde_json::Value::Object(m)),
            Err(e) => crate::error::raise(
                pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("chumbo.configure: {e}"),
                None,
            ),
        },
        _ => crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "chumbo.configure expects a JSON object",
            None,
        ),
    }
}

/// The effective settings (defaults merged with chumbo.settings), secrets redacted.
#[pg_extern]
fn settings_effective() -> pgrx::JsonB {
    pgrx::JsonB(catalog::registry::current().settings.redacted())
}

#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec![]
    }
}
