//! Paged lists of what the caller may use (tools/list, resources/list, …), shared by the families.

use super::call::visible;
use super::{Context, MethodResult};
use crate::error::Error;
use crate::registry::Capability;
use base64::Engine;
use serde_json::{json, Map, Value};

fn decode_cursor(params: &Map<String, Value>) -> Result<usize, Error> {
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

pub(super) fn list(
    ctx: &Context,
    params: &Map<String, Value>,
    key: &str,
    kind: impl Fn(&Capability) -> bool,
    render: fn(&Capability) -> Value,
) -> MethodResult {
    let offset = decode_cursor(params)?;
    let page = ctx.registry.settings.page_size.max(1);
    let all: Vec<&Capability> = visible(ctx, kind).collect();
    let items: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(page)
        .map(|c| render(c))
        .collect();
    let mut result = json!({ key: items });
    if offset + page < all.len() {
        let cursor = format!("offset:{}", offset + page);
        result["nextCursor"] =
            json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(cursor));
    }
    Ok(result)
}

pub(super) fn put_opt(v: &mut Value, key: &str, value: Option<impl serde::Serialize>) {
    if let Some(x) = value {
        v[key] = json!(x);
    }
}
