//! PostgreSQL types → JSON Schema, from the type descriptors `chumbo._type_info` produces.

use serde::Deserialize;
use serde_json::{json, Value};

// Built-in type oids (stable across versions).
const BOOL: u32 = 16;
const BYTEA: u32 = 17;
const INT8: u32 = 20;
const INT2: u32 = 21;
const INT4: u32 = 23;
const JSON: u32 = 114;
const FLOAT4: u32 = 700;
const FLOAT8: u32 = 701;
const NUMERIC: u32 = 1700;
const UUID: u32 = 2950;
const JSONB: u32 = 3802;
const DATE: u32 = 1082;
const TIME: u32 = 1083;
const TIMESTAMP: u32 = 1114;
const TIMESTAMPTZ: u32 = 1184;
const VOID: u32 = 2278;
const RECORD: u32 = 2249;

/// One `chumbo._type_info(oid)` descriptor. `elem` and `base` stop after four levels, so a
/// deeper array or domain has none (and is reported as unsupported).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ReflectedType {
    pub oid: u32,
    /// `format_type`: what error messages name.
    pub name: String,
    /// Schema-qualified name, for generated SQL.
    pub sql: String,
    /// pg_type.typtype: b(ase), c(omposite), d(omain), e(num), p(seudo), r(ange), m(ultirange).
    pub typtype: String,
    /// pg_type.typcategory (A = array, S = string, N = numeric, D = date/time, ...).
    pub category: String,
    /// An enum's labels in sort order (None for an enum without labels, too).
    #[serde(rename = "enum")]
    pub labels: Option<Vec<String>>,
    /// An array's element type.
    pub elem: Option<Box<ReflectedType>>,
    /// A domain's base type.
    pub base: Option<Box<ReflectedType>>,
    /// A composite's attributes in order, each its name and type (None past the depth limit).
    #[serde(default)]
    pub attributes: Option<Vec<(String, ReflectedType)>>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TypeError {
    #[error("parameter type {0} is not supported")]
    Unsupported(String),
}

/// `time` and `timestamp` hold no time zone, and an RFC 3339 time or date-time (JSON Schema's
/// formats `time`, `date-time`) must carry one, which PostgreSQL drops without a word
/// (`12:00:00+05:00` arrived as 12:00, and a plain `12:00:00` was refused by the schema). They
/// take their own text: hours, minutes, optional seconds and fraction, no offset.
const LOCAL_TIME: &str = "([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,6})?)?";
const LOCAL_DATE: &str = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";

/// The JSON Schema of a parameter of type `t`, or why the type cannot be a parameter.
pub fn schema_for(t: &ReflectedType) -> Result<Value, TypeError> {
    let s = match t.oid {
        BOOL => json!({"type": "boolean"}),
        INT2 => json!({"type": "integer", "minimum": i16::MIN, "maximum": i16::MAX}),
        INT4 => json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}),
        INT8 => json!({"type": "integer"}),
        FLOAT4 | FLOAT8 | NUMERIC => json!({"type": "number"}),
        UUID => json!({"type": "string", "format": "uuid"}),
        DATE => json!({"type": "string", "format": "date"}),
        TIME => json!({"type": "string", "pattern": format!("^{LOCAL_TIME}$")}),
        TIMESTAMP => {
            json!({"type": "string", "pattern": format!("^{LOCAL_DATE}[Tt ]{LOCAL_TIME}$")})
        }
        TIMESTAMPTZ => json!({"type": "string", "format": "date-time"}),
        JSON | JSONB => json!({}),
        BYTEA => json!({"type": "string", "contentEncoding": "base64"}),
        _ => match (t.typtype.as_str(), t.category.as_str(), &t.elem) {
            ("e", _, _) => json!({"type": "string", "enum": t.labels}),
            ("d", _, _) => match &t.base {
                Some(base) => schema_for(base)?,
                // Nested too deep to describe: the base type has no name here.
                None => return Err(TypeError::Unsupported("?".into())),
            },
            (_, "A", Some(elem)) => json!({"type": "array", "items": schema_for(elem)?}),
            ("b", "S", _) => json!({"type": "string"}),
            ("b", "N", _) => json!({"type": "number"}),
            ("b", "D", _) => json!({"type": "string"}),
            ("c", _, _) => composite_schema(t),
            _ => return Err(TypeError::Unsupported(t.name.clone())),
        },
    };
    Ok(s)
}

/// A composite's object: its attributes, each by its type's schema (any value for a type that
/// has none: such attributes were taken before there were schemas for them), and no other key
/// (jsonb_to_record would drop a misspelt one without a word). A left-out attribute is NULL.
fn composite_schema(t: &ReflectedType) -> Value {
    let Some(attributes) = &t.attributes else {
        return json!({"type": "object"}); // nested too deep to describe
    };
    let properties: serde_json::Map<String, Value> = attributes
        .iter()
        .map(|(name, ty)| (name.clone(), schema_for(ty).unwrap_or_else(|_| json!({}))))
        .collect();
    json!({"type": "object", "properties": properties, "additionalProperties": false})
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

pub fn return_shape(t: &ReflectedType) -> ReturnShape {
    if t.sql == "chumbo.tool_result" {
        return ReturnShape::ToolResult;
    }
    match t.oid {
        JSON | JSONB => ReturnShape::Json,
        BYTEA => ReturnShape::Bytes,
        VOID => ReturnShape::Void,
        RECORD => ReturnShape::Row,
        _ => match (t.typtype.as_str(), &t.base) {
            ("c", _) => ReturnShape::Row,
            ("d", Some(base)) => return_shape(base),
            _ => ReturnShape::Text,
        },
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use pgrx::prelude::*;

    /// The descriptor chumbo._type_info gives for a type expression, typed.
    fn reflected(ty: &str) -> ReflectedType {
        let info = Spi::get_one_with_args::<pgrx::JsonB>(
            "select chumbo._type_info(to_regtype($1))",
            &[ty.into()],
        )
        .unwrap()
        .unwrap_or_else(|| panic!("no type {ty}"));
        serde_json::from_value(info.0).unwrap()
    }

    fn create_test_types() {
        Spi::run(
            "create schema t;
             create type t.mood as enum ('sad', 'ok', 'happy');
             create domain t.percent as int4 check (value between 0 and 100);
             create domain t.tags as text[];
             create domain t.doc as jsonb;
             create type t.pair as (a int, b text)",
        )
        .unwrap();
    }

    #[pgrx::pg_test]
    fn parameter_types_map_to_json_schema() {
        create_test_types();
        let cases = [
            ("bool", json!({"type": "boolean"})),
            (
                "int2",
                json!({"type": "integer", "minimum": -32768, "maximum": 32767}),
            ),
            (
                "int4",
                json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}),
            ),
            ("int8", json!({"type": "integer"})),
            ("float4", json!({"type": "number"})),
            ("numeric", json!({"type": "number"})),
            ("money", json!({"type": "number"})),
            ("uuid", json!({"type": "string", "format": "uuid"})),
            ("date", json!({"type": "string", "format": "date"})),
            (
                "time",
                json!({"type": "string", "pattern": format!("^{LOCAL_TIME}$")}),
            ),
            (
                "timestamp",
                json!({"type": "string", "pattern": format!("^{LOCAL_DATE}[Tt ]{LOCAL_TIME}$")}),
            ),
            (
                "timestamptz",
                json!({"type": "string", "format": "date-time"}),
            ),
            ("json", json!({})),
            ("jsonb", json!({})),
            (
                "bytea",
                json!({"type": "string", "contentEncoding": "base64"}),
            ),
            ("text", json!({"type": "string"})),
            ("varchar", json!({"type": "string"})),
            ("timetz", json!({"type": "string"})),
            (
                "int4[]",
                json!({"type": "array", "items": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}}),
            ),
            (
                "text[]",
                json!({"type": "array", "items": {"type": "string"}}),
            ),
            (
                "t.mood",
                json!({"type": "string", "enum": ["sad", "ok", "happy"]}),
            ),
            (
                "t.percent",
                json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX}),
            ),
            (
                "t.tags",
                json!({"type": "array", "items": {"type": "string"}}),
            ),
            ("t.doc", json!({})),
            (
                "t.pair",
                json!({"type": "object", "additionalProperties": false, "properties": {
                    "a": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                    "b": {"type": "string"}}}),
            ),
            (
                "t.mood[]",
                json!({"type": "array", "items": {"type": "string", "enum": ["sad", "ok", "happy"]}}),
            ),
        ];
        for (ty, expected) in cases {
            assert_eq!(schema_for(&reflected(ty)), Ok(expected), "{ty}");
        }
    }

    #[pgrx::pg_test]
    fn unsupported_parameter_types_are_named() {
        let cases = [
            ("interval", "parameter type interval is not supported"),
            ("point", "parameter type point is not supported"),
            ("inet", "parameter type inet is not supported"),
            ("int4range", "parameter type int4range is not supported"),
            ("interval[]", "parameter type interval is not supported"),
            ("record", "parameter type record is not supported"),
        ];
        for (ty, message) in cases {
            let e = schema_for(&reflected(ty)).unwrap_err();
            assert_eq!(e.to_string(), message, "{ty}");
        }
    }

    /// _type_info stops after four levels: a deeper domain has no base to describe.
    #[pgrx::pg_test]
    fn types_nested_too_deep_are_unsupported() {
        Spi::run(
            "create schema t; create domain t.d1 as int4; create domain t.d2 as t.d1;
             create domain t.d3 as t.d2; create domain t.d4 as t.d3;
             create domain t.d5 as t.d4",
        )
        .unwrap();
        assert!(schema_for(&reflected("t.d4")).is_ok());
        assert_eq!(
            schema_for(&reflected("t.d5")).unwrap_err().to_string(),
            "parameter type ? is not supported"
        );
        assert_eq!(return_shape(&reflected("t.d5")), ReturnShape::Text);
    }

    #[pgrx::pg_test]
    fn return_types_map_to_result_shapes() {
        create_test_types();
        let cases = [
            ("chumbo.tool_result", ReturnShape::ToolResult),
            ("json", ReturnShape::Json),
            ("jsonb", ReturnShape::Json),
            ("t.doc", ReturnShape::Json),
            ("bytea", ReturnShape::Bytes),
            ("void", ReturnShape::Void),
            ("record", ReturnShape::Row),
            ("t.pair", ReturnShape::Row),
            ("text", ReturnShape::Text),
            ("int4", ReturnShape::Text),
            ("t.percent", ReturnShape::Text),
            ("t.mood", ReturnShape::Text),
            ("int4[]", ReturnShape::Text),
        ];
        for (ty, shape) in cases {
            assert_eq!(return_shape(&reflected(ty)), shape, "{ty}");
        }
    }
}

/// A PostgreSQL identifier, quoted: what chumbo puts into the SQL it builds for names it reflected.
pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}
