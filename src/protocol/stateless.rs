//! The stateless revision (MCP 2026-07-28) on the same endpoint: era classification from the
//! body, the per-request `_meta` envelope, header cross-checks, and the shape every stateless
//! result carries.

use super::versions::{self, Envelope, STATELESS};
use crate::error::{Error, Result};
use base64::Engine;
use serde_json::{json, Map, Value};

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Whether a message is of the stateless era: its `_meta` names a protocol version, or the
/// `MCP-Protocol-Version` header names the stateless revision (or a later one).
pub fn is_stateless(msg: &Value, header_version: Option<&str>) -> bool {
    msg.pointer("/params/_meta")
        .and_then(|m| m.get(META_VERSION))
        .is_some()
        || header_version.is_some_and(versions::names_stateless_or_later)
}

/// Validates the envelope: required `_meta` keys (-32602), a supported version (-32022).
pub fn envelope(msg: &Value) -> Result<Envelope> {
    let meta = msg.pointer("/params/_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let Some(version) = version else {
        return Err(Error::InvalidParams(format!(
            "params._meta[\"{META_VERSION}\"] is required"
        )));
    };
    if version != STATELESS {
        return Err(Error::UnsupportedVersion {
            requested: version.to_string(),
            supported: vec![STATELESS],
        });
    }
    let capabilities = meta.and_then(|m| m.get(META_CAPABILITIES));
    let Some(capabilities @ Value::Object(_)) = capabilities else {
        return Err(Error::InvalidParams(format!(
            "params._meta[\"{META_CAPABILITIES}\"] must be an object"
        )));
    };
    let log_level = meta
        .and_then(|m| m.get(META_LOG_LEVEL))
        .and_then(Value::as_str)
        .map(String::from);
    Ok(Envelope {
        client_capabilities: capabilities.clone(),
        log_level,
    })
}

/// A header value as the client meant it: trimmed, `=?base64?…?=` decoded.
pub fn header_value(raw: &str) -> Result<String> {
    let v = raw.trim();
    match v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| mismatch("a header holds invalid Base64")),
        None => Ok(v.to_string()),
    }
}

pub fn mismatch(why: &str) -> Error {
    Error::HeaderMismatch(why.to_string())
}

/// The standard headers agree with the body: MCP-Protocol-Version, Mcp-Method, Mcp-Name.
pub fn check_headers(headers: &Map<String, Value>, msg: &Value) -> Result<()> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_str())
    };
    let expect = |name: &str, want: &str| -> Result<()> {
        match get(name) {
            None => Err(mismatch(&format!("the {name} header is required"))),
            Some(raw) if header_value(raw)? == want => Ok(()),
            Some(_) => Err(mismatch(&format!(
                "the {name} header does not match the body"
            ))),
        }
    };
    expect("mcp-protocol-version", STATELESS)?;
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    expect("mcp-method", method)?;
    let name = match method {
        "tools/call" | "prompts/get" => msg.pointer("/params/name"),
        "resources/read" => msg.pointer("/params/uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => msg.pointer("/params/taskId"),
        _ => None,
    };
    if let Some(name) = name {
        expect("mcp-name", name.as_str().unwrap_or(""))?;
    }
    Ok(())
}

/// `Mcp-Param-*` headers for the arguments whose schema declares `x-mcp-header`.
pub fn check_param_headers(
    headers: &Map<String, Value>,
    input_schema: &Value,
    arguments: &Map<String, Value>,
) -> Result<()> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (arg, schema) in properties {
        let Some(header) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let name = format!("mcp-param-{header}");
        let sent = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(&name))
            .and_then(|(_, v)| v.as_str());
        let value = arguments.get(arg).filter(|v| !v.is_null());
        match (value, sent) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(&format!(
                    "Mcp-Param-{header} is sent but \"{arg}\" is not"
                )))
            }
            (Some(_), None) => {
                return Err(mismatch(&format!(
                    "the Mcp-Param-{header} header is required"
                )))
            }
            (Some(v), Some(raw)) => {
                let got = header_value(raw)?;
                let same = match v {
                    Value::String(s) => *s == got,
                    Value::Bool(b) => got == b.to_string(),
                    Value::Number(n) => match (n.as_i64(), got.parse::<i64>()) {
                        (Some(a), Ok(b)) => a == b,
                        _ => n.to_string() == got,
                    },
                    _ => false,
                };
                if !same {
                    return Err(mismatch(&format!(
                        "Mcp-Param-{header} does not match \"{arg}\""
                    )));
                }
            }
        }
    }
    Ok(())
}

pub fn server_info() -> Value {
    json!({"name": versions::SERVER_NAME, "version": versions::SERVER_VERSION})
}

/// Adds what every stateless result carries, and cache hints where the method is cacheable.
/// Everything chumbo lists or reads depends on the caller's privileges, scopes or RLS: private.
pub fn decorate(method: &str, mut result: Value, ttl_ms: u64) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.entry("resultType").or_insert(json!("complete"));
        let meta = obj.entry("_meta").or_insert(json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert("io.modelcontextprotocol/serverInfo".into(), server_info());
        }
        let cacheable = matches!(
            method,
            "server/discover"
                | "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
                | "skills/list"
                | "skills/get"
        );
        if cacheable && obj.get("resultType") == Some(&json!("complete")) {
            obj.insert(
                "ttlMs".into(),
                json!(if method == "resources/read" {
                    0
                } else {
                    ttl_ms
                }),
            );
            obj.insert("cacheScope".into(), json!("private"));
        }
    }
    result
}

/// Whether a notification of this level passes the request's threshold.
pub fn log_passes(threshold: Option<&str>, level: &str) -> bool {
    let rank = |l: &str| crate::events::LEVELS.iter().position(|x| *x == l);
    match threshold {
        None => false,
        Some(t) => matches!((rank(level), rank(t)), (Some(a), Some(b)) if a >= b),
    }
}
