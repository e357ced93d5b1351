//! Paged lists of what the caller may use (tools/list, resources/list, …), shared by the families.

use super::call::visible;
use super::{Context, MethodResult};
use crate::catalog::registry::Capability;
use crate::error::Error;
use base64::Engine;
use serde_json::{json, Map, Value};

pub(super) fn decode_cursor(params: &Map<String, Value>) -> Result<usize, Error> {
    let Some(cursor) = params.get("cursor") else {
        return Ok(0);
    };
    let bad = || Error::InvalidParams("invalid cursor".into());
    let text = cursor.as_str().ok_or_else(bad)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| bad())?;
    String::from_utf8(bytes)
        .ok()
        .and_then(|s| s.strip_prefix("offset:")?.parse().ok())
        .ok_or_else(bad)
}

pub(super) fn list<'r>(
    ctx: &'r Context,
    params: &Map<String, Value>,
    key: &str,
    candidates: impl Iterator<Item = &'r Capability> + 'r,
    render: fn(&Capability) -> Value,
) -> MethodResult {
    list_then(ctx, params, key, candidates, render, vec![])
}

/// [list], going on with `more` items after the capabilities (one offset spans both).
pub(super) fn list_then<'r>(
    ctx: &'r Context,
    params: &Map<String, Value>,
    key: &str,
    candidates: impl Iterator<Item = &'r Capability> + 'r,
    render: fn(&Capability) -> Value,
    more: Vec<Value>,
) -> MethodResult {
    let offset = decode_cursor(params)?;
    let page = ctx.registry.settings.page_size.max(1);
    // Only as far as the page's last item and one more (is there a next page?): a page costs the
    // same with 100 or 10,000 tools, and visibility predicates run for no capability past it.
    let mut items = Vec::with_capacity(page);
    let mut seen = 0; // visible capabilities so far
    let mut next = false;
    for c in visible(ctx, candidates) {
        if seen >= offset {
            if items.len() == page {
                next = true;
                break;
            }
            items.push(render(c));
        }
        seen += 1;
    }
    if !next {
        // Every capability seen (`seen` of them): the offset goes on into `more`.
        let mut rest = more.into_iter().skip(offset.saturating_sub(seen));
        items.extend(rest.by_ref().take(page - items.len()));
        next = rest.next().is_some();
    }
    let mut result = json!({ key: items });
    if next {
        result["nextCursor"] = next_cursor(offset + page);
    }
    Ok(result)
}

/// The opaque cursor of the page starting at `offset`.
pub(super) fn next_cursor(offset: usize) -> Value {
    json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("offset:{offset}")))
}

pub(super) fn put_opt(v: &mut Value, key: &str, value: Option<impl serde::Serialize>) {
    if let Some(x) = value {
        v[key] = json!(x);
    }
}
