//! PostgreSQL types → JSON Schema, from the type descriptors `chumbo._type_info` produces.

use serde_json::{json, Value};

// Built-in type oids (stable across versions).
const BOOL: i64 = 16;
const BYTEA: i64 = 17;
const INT8: i64 = 20;
const INT2: i64 = 21;
const INT4: i64 = 23;
const JSON: i64 = 114;
const FLOAT4: i64 = 700;
const FLOAT8: i64 = 701;
const NUMERIC: i64 = 1700;
const UUID: i64 = 2950;
const JSONB: i64 = 3802;
const DATE: i64 = 1082;
const TIME: i64 = 1083;
const TIMESTAMP: i64 = 1114;
const TIMESTAMPTZ: i64 = 1184;
pub const VOID: i64 = 2278;
pub const RECORD: i64 = 2249;

pub fn oid(t: &Value) -> i64 {
    t["oid"].as_i64().unwrap_or(0)
}

pub fn name(t: &Value) -> &str {
    t["name"].as_str().unwrap_or("?")
}

/// The JSON Schema of a parameter of type `t`, or why the type cannot be a parameter.
pub fn schema_for(t: &Value) -> Result<Value, String> {
    let o = oid(t);
    let s = match o {
        BOOL => json!({"type": "boolean"}),
        INT2 => json!({"type": "integer", "minimum": i16::MIN, "maximum": i16::MAX}),
        INT4 => json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}),
        INT8 => json!({"type": "integer"}),
        FLOAT4 | FLOAT8 | NUMERIC => json!({"type": "number"}),
        UUID => json!({"type": "string", "format": "uuid"}),
        DATE => json!({"type": "string", "format": "date"}),
        TIME => json!({"type": "string", "format": "time"}),
        TIMESTAMP | TIMESTAMPTZ => json!({"type": "string", "format": "date-time"}),
        JSON | JSONB => json!({}),
        BYTEA => json!({"type": "string", "contentEncoding": "base64"}),
        _ => match (t["typtype"].as_str(), t["category"].as_str()) {
            (Some("e"), _) => json!({"type": "string", "enum": t["enum"].clone()}),
            (Some("d"), _) => schema_for(&t["base"])?,
            (_, Some("A")) if t["elem"].is_object() => {
                json!({"type": "array", "items": schema_for(&t["elem"])?})
            }
            (Some("b"), Some("S")) => json!({"type": "string"}),
            (Some("b"), Some("N")) => json!({"type": "number"}),
            (Some("b"), Some("D")) => json!({"type": "string"}),
            (Some("c"), _) => json!({"type": "object"}),
            _ => return Err(format!("parameter type {} is not supported", name(t))),
        },
    };
    Ok(s)
}

/// How a function's return value becomes an MCP result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReturnShape {
    /// `chumbo.tool_result`: already an MCP result.
    ToolResult,
    /// json/jsonb: structured.
    Json,
    /// A row type: structured object.
    Row,
    /// bytea: base64 blob.
    Bytes,
    /// text-like or any other scalar: text.
    Text,
    Void,
}

pub fn return_shape(t: &Value) -> ReturnShape {
    if t["sql"] == "chumbo.tool_result" {
        return ReturnShape::ToolResult;
    }
    match oid(t) {
        JSON | JSONB => ReturnShape::Json,
        BYTEA => ReturnShape::Bytes,
        VOID => ReturnShape::Void,
        RECORD => ReturnShape::Row,
        _ => match t["typtype"].as_str() {
            Some("c") => ReturnShape::Row,
            Some("d") => return_shape(&t["base"]),
            _ => ReturnShape::Text,
        },
    }
}
