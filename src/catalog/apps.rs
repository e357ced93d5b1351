//! MCP Apps (SEP-1865, extension `io.modelcontextprotocol/ui`): the views the owner stored with
//! chumbo.create_app (sql/apps.sql). The listing is part of the registry (rebuilt when
//! chumbo.schema_version moves); a view's HTML is read on demand, as the owner when it is stored,
//! or by its render function as the caller. Who is served which app (the callers who may see one
//! of its tools) is decided per request in src/protocol/apps.rs.

use crate::identity::session;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde::Deserialize;
use serde_json::{json, Map, Value};

pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

#[derive(Clone, Deserialize)]
pub struct App {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The oid of its render function, if its view is rendered rather than stored.
    pub render: Option<u32>,
    pub csp: Option<Map<String, Value>>,
    pub permissions: Option<Map<String, Value>>,
    pub domain: Option<String>,
    pub prefers_border: Option<bool>,
}

impl App {
    /// `_meta.ui` of the resource (list entry and read content).
    pub fn meta_ui(&self) -> Option<Value> {
        let mut ui = Map::new();
        if let Some(c) = &self.csp {
            ui.insert("csp".into(), Value::Object(c.clone()));
        }
        if let Some(p) = &self.permissions {
            ui.insert("permissions".into(), Value::Object(p.clone()));
        }
        if let Some(d) = &self.domain {
            ui.insert("domain".into(), json!(d));
        }
        if let Some(b) = self.prefers_border {
            ui.insert("prefersBorder".into(), json!(b));
        }
        (!ui.is_empty()).then(|| json!({ "ui": ui }))
    }
}

/// Every stored app without its HTML, as the extension owner (called by registry::build).
pub fn load() -> Vec<App> {
    // A database still at 0.4.0 (updated library, `alter extension` not yet run) has no apps.
    if !crate::postgres::spi_read::relation_exists("chumbo.apps") {
        return vec![];
    }
    Spi::connect(|c| {
        c.select(
            "select coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                    'uri', a.uri, 'name', a.name, 'title', a.title, 'description', a.description,
                    'render', a.render::oid::int8, 'csp', a.csp, 'permissions', a.permissions,
                    'domain', a.domain, 'prefers_border', a.prefers_border)) order by a.uri), '[]')
               from chumbo.apps a",
            Some(1),
            &[],
        )?
        .first()
        .get_one::<JsonB>()
    })
    .ok()
    .flatten()
    .and_then(|j| serde_json::from_value(j.0).ok())
    .unwrap_or_default()
}

/// Why a view could not be produced (the caller is told only that it could not).
pub enum Unavailable {
    /// The stored row is gone, or the render function failed or returned null.
    Missing,
    /// More bytes than the setting `max_app_bytes`.
    TooLarge(usize),
}

/// Who a render function runs as: the caller's role and claims, and the call's time bound.
pub struct Caller<'a> {
    pub role: pg_sys::Oid,
    pub claims: &'a Value,
    pub budget_ms: u64,
}

/// The view's HTML: the stored document (read as the owner), or what its render function
/// returns, run as the caller.
pub fn html(app: &App, max_bytes: usize, caller: Caller) -> Result<String, Unavailable> {
    let text = match app.render {
        None => {
            let uri = app.uri.clone();
            session::as_owner(move || {
                Spi::connect(|c| {
                    c.select(
                        "select html from chumbo.apps where uri = $1",
                        Some(1),
                        &[uri.into()],
                    )?
                    .first()
                    .get_one::<String>()
                })
            })
            .ok()
            .flatten()
        }
        Some(oid) => render(oid, caller),
    };
    let text = text.ok_or(Unavailable::Missing)?;
    if text.len() > max_bytes {
        return Err(Unavailable::TooLarge(text.len()));
    }
    Ok(text)
}

/// Runs a render function `() returns text` as the caller (role, claims, RLS, read-only, the
/// call's time bound), in a subtransaction: its error leaves the request usable and is not shown.
/// Only the catalog's quoted name reaches SQL.
fn render(oid: u32, caller: Caller) -> Option<String> {
    let qualified = Spi::connect(|c| {
        c.select(
            "select pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname)
               from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
              where p.oid = $1 and p.pronargs = 0 and p.prorettype = 'text'::pg_catalog.regtype
                and not p.proretset",
            Some(1),
            &[pg_sys::Oid::from(oid).into()],
        )?
        .first()
        .get_one::<String>()
    })
    .ok()
    .flatten()?;
    session::run_as_caller(caller.role, caller.claims, caller.budget_ms, move || {
        session::read_only(|| {
            crate::postgres::spi_read::one::<String>(&format!("select {qualified}()"), &[])
        })
    })
    .ok()?
    .ok()
    .flatten()
}
