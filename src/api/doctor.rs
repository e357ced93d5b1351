//! `chumbo.doctor()`: every function in schema mcp, whether it is exposed, to whom, and why not.

use crate::catalog::registry;
use crate::identity::session;
use pgrx::prelude::*;
use pgrx::JsonB;

#[pg_extern]
#[allow(clippy::type_complexity)] // pgrx spells a table's columns as a tuple type
fn doctor() -> TableIterator<
    'static,
    (
        name!(function, String),
        name!(kind, String),
        name!(state, String),
        name!(exposed_to, Vec<String>),
        name!(reasons, Vec<String>),
    ),
> {
    let registry = registry::current();
    let mut rows = vec![];
    if let Some(e) = &registry.settings_error {
        rows.push((
            "chumbo.settings".to_string(),
            "settings".to_string(),
            "error".to_string(),
            vec![],
            vec![e.clone()],
        ));
    }
    // With claims in request.jwt.claims, doctor explains for that caller.
    let explained = crate::call::policy::caller_for_doctor(&registry);
    if let Some(x) = &explained {
        rows.push((
            "request.jwt.claims".to_string(),
            "caller".to_string(),
            "explained".to_string(),
            vec![],
            x.summary.clone(),
        ));
    }
    for entry in &registry.entries {
        let mut reasons = entry.problems.clone();
        reasons.extend(entry.warnings.iter().cloned());
        let (state, exposed_to) = if !entry.problems.is_empty() {
            ("hidden".to_string(), vec![])
        } else {
            let capability = registry.capabilities.find(&entry.name, entry.kind);
            let roles: Vec<String> = registry
                .settings
                .allowed_roles
                .iter()
                .filter(|r| {
                    crate::postgres::spi_read::one::<pgrx::pg_sys::Oid>(
                        "select oid from pg_catalog.pg_roles where rolname = $1",
                        &[r.as_str().into()],
                    )
                    .ok()
                    .flatten()
                    .is_some_and(|oid| {
                        capability.is_some_and(|c| session::can_execute(&c.executors, oid))
                    })
                })
                .cloned()
                .collect();
            let mut return_hidden = false;
            if roles.is_empty() {
                reasons.push(format!(
                    "no allowed role ({}) has EXECUTE on it",
                    registry.settings.allowed_roles.join(", ")
                ));
                ("hidden".to_string(), roles)
            } else {
                if let Some(c) = capability {
                    if !c.meta.scopes.is_empty() {
                        reasons.push(format!("needs scopes: {}", c.meta.scopes.join(" ")));
                    }
                    // What visible/can_execute/approval do.
                    reasons.extend(crate::call::policy::notes(c));
                    if let Some(x) = &explained {
                        let hidden = crate::call::policy::why_hidden(&registry, c, x);
                        if !hidden.is_empty() {
                            reasons.extend(hidden);
                            return_hidden = true;
                        }
                    }
                }
                if return_hidden {
                    ("hidden".to_string(), roles)
                } else {
                    ("exposed".to_string(), roles)
                }
            }
        };
        rows.push((
            entry.identity.clone(),
            entry.kind.as_str().to_string(),
            state,
            exposed_to,
            reasons,
        ));
    }
    TableIterator::new(rows)
}

/// The JSON Schema of `@mcp {…}` metadata, generated from the Rust types the registry parses with.
#[pg_extern(immutable)]
fn metadata_schema() -> JsonB {
    JsonB(crate::catalog::metadata::schema())
}

/// The effective tool catalogue of the calling role (with the scopes in `request.jwt.claims`)
/// and a SHA-256 digest over its canonical JSON: a "surface proof" that two deployments, or the
/// same one at two times, expose exactly the same tools to a caller.
#[pg_extern]
fn surface() -> JsonB {
    let registry = registry::current();
    let role = crate::identity::session::current_role_name();
    let claims = crate::identity::session::current_setting("request.jwt.claims")
        .and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok())
        .unwrap_or(serde_json::json!({}));
    // SAFETY: GetUserId reads the backend's current user id; no pointers involved.
    let role_oid = unsafe { pgrx::pg_sys::GetUserId() };
    let mut caller = registry::Caller {
        principal: crate::identity::principal::Principal::from_claims(&claims, &role, None, &[]),
        scopes: registry::scopes_of(&claims),
        role_oid,
        claims,
    };
    // The scope resolver replaces the token's scopes.
    crate::call::policy::resolve_scopes(&registry, &mut caller);
    let tools: Vec<serde_json::Value> = registry
        .capabilities
        .of_kind(registry::Kind::Tool)
        .filter(|c| crate::call::policy::usable(&registry, &caller, c))
        .map(crate::protocol::tool_json)
        .collect();
    // serde_json's maps are ordered by key, so this serialization is canonical.
    let canonical = serde_json::Value::Array(tools.clone()).to_string();
    let digest = crate::identity::principal::hex(&sha2::Digest::finalize(
        sha2::Digest::chain_update(sha2::Sha256::default(), canonical.as_bytes()),
    ));
    JsonB(serde_json::json!({"role": role, "tools": tools, "digest": format!("sha256:{digest}")}))
}
