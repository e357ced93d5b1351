//! chumbo: PostgreSQL as an end-user-facing MCP server. Capabilities are SQL functions in schema
//! `mcp`; every call runs as the calling user, so Row Level Security decides what each user sees.

use pgrx::prelude::*;

mod api;
mod apikey;
mod approval;
mod auth;
mod content;
mod doctor;
mod events;
mod execute;
mod guards;
mod jsonrpc;
mod ledger;
mod metadata;
mod modern;
mod mrtr;
mod policy;
mod principal;
mod protocol;
mod registry;
mod session;
mod settings;
mod types;
mod uri_template;

::pgrx::pg_module_magic!();

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    guards::init();
}

extension_sql_file!("../sql/bootstrap.sql", name = "bootstrap", bootstrap);
extension_sql_file!(
    "../sql/state.sql",
    name = "state",
    requires = [
        "bootstrap",
        principal::principal_json,
        principal::principal_partition,
        guards::now
    ]
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
            Err(e) => error!("chumbo.configure: {e}"),
        },
        _ => error!("chumbo.configure expects a JSON object"),
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
