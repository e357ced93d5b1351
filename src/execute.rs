//! Running one capability for one caller: arguments bound as a single jsonb parameter and typed by
//! PostgreSQL's own input functions (as PostgREST does), the function called by its catalog name,
//! as the caller's role, in a subtransaction. No value ever becomes SQL text.

use crate::registry::{Caller, Capability};
use crate::session::{self, CaughtSqlError};
use crate::types::ReturnShape;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{Map, Value};

pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// What a capability returned.
pub enum Returned {
    /// A non-set function's value, as JSON (SQL NULL → None).
    One(Option<Value>),
    /// A set-returning function's rows, bounded by rows and bytes.
    Rows { rows: Vec<Value>, truncated: bool },
}

fn call_sql(cap: &Capability, args: &Map<String, Value>) -> String {
    let present: Vec<_> = cap
        .params
        .iter()
        .filter(|p| args.contains_key(&p.name))
        .collect();
    let func = format!("mcp.{}", quote_ident(&cap.name));
    let from = if present.is_empty() {
        format!("{func}() as r")
    } else {
        let columns: Vec<String> = present
            .iter()
            .map(|p| format!("{} {}", quote_ident(&p.name), p.sql_type))
            .collect();
        let named: Vec<String> = present
            .iter()
            .map(|p| format!("{q} => _a.{q}", q = quote_ident(&p.name)))
            .collect();
        format!(
            "pg_catalog.jsonb_to_record($1) as _a({}), lateral {func}({}) as r",
            columns.join(", "),
            named.join(", ")
        )
    };
    let value = match cap.returns {
        ReturnShape::ToolResult => "r::pg_catalog.jsonb",
        ReturnShape::Bytes => "pg_catalog.to_jsonb(pg_catalog.encode(r, 'base64'))",
        ReturnShape::Void => "'null'::pg_catalog.jsonb",
        ReturnShape::Json | ReturnShape::Row | ReturnShape::Text => "pg_catalog.to_jsonb(r)",
    };
    if cap.returns_set {
        format!("select {value} from {from} limit $2")
    } else {
        format!("select {value} from {from}")
    }
}

/// Runs `cap` for `caller` with already-validated `args`.
pub fn call(
    cap: &Capability,
    caller: &Caller,
    args: &Map<String, Value>,
    max_rows: usize,
    max_bytes: usize,
) -> Result<Returned, CaughtSqlError> {
    let sql = call_sql(cap, args);
    let args_json = JsonB(Value::Object(args.clone()));
    let limit = (max_rows + 1) as i64;
    let returns_set = cap.returns_set;
    session::run_as_caller(&caller.role, &caller.claims, move || {
        Spi::connect_mut(|client| {
            let table = session::run_kept(
                client,
                &sql,
                &[pgrx::pg_sys::JSONBOID, pgrx::pg_sys::INT8OID],
                &[args_json.into(), limit.into()],
            )?;
            if !returns_set {
                let mut one = None;
                for row in table {
                    one = row.get::<JsonB>(1)?.map(|j| j.0);
                }
                return Ok::<_, pgrx::spi::Error>(Returned::One(one));
            }
            // Leave room for the {"rows": …, "truncated": true} around the rows.
            let row_budget = max_bytes.saturating_sub(64);
            let (mut rows, mut bytes, mut truncated) = (vec![], 0usize, false);
            for row in table {
                let v = row.get::<JsonB>(1)?.map(|j| j.0).unwrap_or(Value::Null);
                bytes += v.to_string().len() + 1;
                if rows.len() >= max_rows || bytes > row_budget {
                    truncated = true;
                    break;
                }
                rows.push(v);
            }
            Ok(Returned::Rows { rows, truncated })
        })
    })
    .and_then(|r| {
        r.map_err(|e| CaughtSqlError {
            sqlstate: "XX000".into(),
            message: e.to_string(),
        })
    })
}

/// What a capability's error may show the caller. Only messages that cannot carry SQL text or
/// other rows' values pass; the rest become a generic message with the trace id (`internal`), and
/// the full error goes to the server log only.
pub struct PublicError {
    pub message: String,
    pub internal: bool,
}

pub fn public_error(e: &CaughtSqlError, trace_id: &str) -> PublicError {
    let class = &e.sqlstate[..2];
    let text = match (e.sqlstate.as_str(), class) {
        // RAISE EXCEPTION 'message' in the capability: the app speaks to the model.
        ("P0001", _) => Some(e.message.clone()),
        // Permission and row-level security refusals name the table, nothing else.
        ("42501", _) => Some(format!("Permission denied: {}", e.message)),
        ("57014", _) => Some("The call took too long and was cancelled".into()),
        // chumbo's own state and sandbox errors name the problem and never another caller's data.
        ("40001" | "54000" | "P0002", _) if e.message.starts_with("chumbo: ") => {
            Some(e.message.clone())
        }
        // Data exceptions and constraint violations: keep the kind, drop quoted values.
        (_, "22") | (_, "23") => Some(format!(
            "Invalid input: {}",
            e.message.split(": \"").next().unwrap_or("")
        )),
        _ => None,
    };
    pgrx::ereport!(
        PgLogLevel::LOG_SERVER_ONLY,
        PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        format!(
            "chumbo trace {trace_id}: capability failed with {}: {}",
            e.sqlstate, e.message
        )
    );
    match text {
        Some(t) => PublicError {
            message: format!("{t} (trace id {trace_id})"),
            internal: false,
        },
        None => PublicError {
            message: format!("Internal error while running the capability (trace id {trace_id})"),
            internal: true,
        },
    }
}
