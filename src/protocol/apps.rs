//! MCP Apps (SEP-1865, extension `io.modelcontextprotocol/ui`): each stored app as a `ui://`
//! resource (listed after the capability resources by resources/list, read by resources/read),
//! and the `_meta.ui` of the tools linked to one. An app is served to exactly the callers who may
//! see one of its tools (EXECUTE, scopes, `visible` policies, like tools/list); to anyone else its
//! URI is unknown. Storage and loading are src/catalog/apps.rs.

use super::call::visible;
use super::{Context, MethodResult};
use crate::catalog::apps::{self, App, Unavailable};
use crate::catalog::registry::Capability;
use crate::error::Error;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The URIs of the apps linked to a tool this caller may see.
fn linked<'r>(ctx: &'r Context) -> BTreeSet<&'r str> {
    visible(ctx, ctx.registry.capabilities.linked_to_apps())
        .filter_map(|c| c.meta.app_uri())
        .collect()
}

fn served<'r>(ctx: &'r Context) -> Vec<&'r App> {
    let uris = linked(ctx);
    ctx.registry
        .apps
        .iter()
        .filter(|a| uris.contains(a.uri.as_str()))
        .collect()
}

/// The `capabilities.extensions` entry, when the caller is served any app.
pub fn capability(ctx: &Context) -> Option<(&'static str, Value)> {
    if served(ctx).is_empty() {
        return None;
    }
    Some((EXTENSION_ID, json!({"mimeTypes": [apps::MIME_TYPE]})))
}

/// The apps served to the caller, for resources/list.
pub fn resources(ctx: &Context) -> Vec<Value> {
    served(ctx)
        .into_iter()
        .map(|a| {
            let mut r = json!({"uri": a.uri, "name": a.name, "mimeType": apps::MIME_TYPE});
            if let Some(t) = &a.title {
                r["title"] = json!(t);
            }
            if let Some(d) = &a.description {
                r["description"] = json!(d);
            }
            if let Some(m) = a.meta_ui() {
                r["_meta"] = m;
            }
            r
        })
        .collect()
}

/// resources/read of an app: None when `uri` is no app served to the caller (the usual resource
/// lookup and its not-found answer follow, so a hidden app is exactly an unknown URI).
pub fn read(ctx: &Context, uri: &str) -> Option<MethodResult> {
    if !uri.starts_with("ui://") {
        return None;
    }
    let app = served(ctx).into_iter().find(|a| a.uri == uri)?;
    let caller = apps::Caller {
        role: ctx.caller.role_oid,
        claims: &ctx.caller.claims,
        budget_ms: ctx.registry.settings.call_timeout_ms,
    };
    let html = match apps::html(app, ctx.registry.settings.max_app_bytes, caller) {
        Ok(html) => html,
        Err(Unavailable::Missing) => {
            return Some(Err(Error::ResourceNotFound {
                uri: uri.to_string(),
                stateless: ctx.era.is_stateless(),
                missing_scopes: vec![],
            }))
        }
        Err(Unavailable::TooLarge(n)) => {
            return Some(Err(Error::Capability {
                message: format!(
                    "The app {uri} is {n} bytes, more than the setting max_app_bytes ({})",
                    ctx.registry.settings.max_app_bytes
                ),
                internal: true,
                uri: Some(uri.to_string()),
            }))
        }
    };
    let mut content = json!({"uri": uri, "mimeType": apps::MIME_TYPE, "text": html});
    if let Some(m) = app.meta_ui() {
        content["_meta"] = m;
    }
    Some(Ok(json!({ "contents": [content] })))
}

/// The `_meta` of a tool linked to an app: `ui` (resourceUri, visibility) and the deprecated
/// flat `ui/resourceUri` for older hosts. None for a tool without `@mcp {"ui": …}`.
pub fn tool_meta(c: &Capability) -> Option<Value> {
    let ui = c.meta.ui.as_ref()?;
    let mut meta = json!({"ui": ui});
    if let Some(obj) = meta["ui"].as_object_mut() {
        obj.retain(|_, v| !v.is_null());
    }
    if let Some(uri) = &ui.resource_uri {
        meta["ui/resourceUri"] = json!(uri);
    }
    Some(meta)
}
