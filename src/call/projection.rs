//! What the model sees: a tool's `@mcp {"model_output": "schema.fn"}` turns its result into the
//! result the client gets (counts instead of rows, say), and the setting `error_projection`
//! rephrases or redacts what a failed capability says. Both are the application's own functions,
//! run as the caller (RLS and EXECUTE apply), called by their catalog name: only catalog-quoted
//! identifiers reach the SQL text.

use crate::call::execute::{PublicError, Returned};
use crate::catalog::registry::{Caller, Capability};
use crate::catalog::types::ReturnShape;
use crate::error::Refusal;
use crate::identity::session::{self, CaughtSqlError};
use crate::postgres::app_function;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::{json, Value};

/// `schema.fn` taking `args`, as the quoted name the catalog gives, or None when there is no
/// such function (as the current user sees the catalog).
fn resolve(func: &str, args: &str) -> Option<String> {
    app_function::resolve(func, args)
        .ok()
        .flatten()
        .map(|f| f.qualified)
}

/// The value a projection receives: what the tool returned, as JSON (rows as
/// `{"rows": [...], "more": bool}` - one page of them, see src/call/pages.rs - a tool result object as
/// it is).
fn value_of(returned: Returned) -> Value {
    match returned {
        Returned::One(v) => v.unwrap_or(Value::Null),
        // moved, not copied (json! would serialize the rows into a new value)
        Returned::Rows(page) => Value::Object(serde_json::Map::from_iter([
            ("rows".to_string(), Value::Array(page.rows.into_values())),
            ("more".to_string(), Value::Bool(page.more)),
        ])),
    }
}

/// Applies the tool's `model_output`, if it has one, to what it returned: the shape to render
/// and the value. Runs inside the call (as the caller, in its subtransaction), so a projection
/// that fails fails the call and undoes its writes, like a result over the size limit. An object
/// is rendered as structured content, a string as text; a tool returning a whole tool result
/// gets the projection's value as its tool result.
pub fn model_output(
    cap: &Capability,
    returned: Returned,
) -> Result<(ReturnShape, Returned), Refusal> {
    let Some(func) = &cap.meta.model_output else {
        return Ok((cap.returns, returned));
    };
    let qualified = resolve(func, "jsonb").ok_or_else(|| {
        Refusal::AppFunction(format!(
            "the model_output function {func}(jsonb) of {} does not exist",
            cap.name
        ))
    })?;
    let sql = format!("select {qualified}($1)::pg_catalog.jsonb");
    let input = JsonB(value_of(returned));
    // An error raised here (the application's RAISE, a permission refusal) ends the call as an
    // error; run_as_caller's subtransaction catches it.
    // Application code whose contract is to read: it runs read-only (a write fails the call).
    let projected = session::read_only(|| {
        Spi::connect(|c| {
            c.select(&sql, Some(1), &[input.into()])?
                .first()
                .get_one::<JsonB>()
        })
    })
    .map_err(|e| {
        Refusal::AppFunction(format!(
            "the model_output function of {} failed: {e}",
            cap.name
        ))
    })?
    .map(|j| j.0)
    .unwrap_or(Value::Null);
    if cap.returns == ReturnShape::ToolResult
        && !projected.get("content").is_some_and(Value::is_array)
    {
        return Err(Refusal::AppFunction(format!(
            "the model_output function of {} must return a tool result (an object with a content array)",
            cap.name
        )));
    }
    let shape = match (cap.returns, &projected) {
        (ReturnShape::ToolResult, _) => ReturnShape::ToolResult,
        (_, Value::Object(_)) => ReturnShape::Json,
        _ => ReturnShape::Text,
    };
    let returned = match projected {
        Value::Null => Returned::One(None),
        v => Returned::One(Some(v)),
    };
    Ok((shape, returned))
}

/// Gives the setting `error_projection` (if set) the already-redacted error of a failed
/// capability; its text, when it returns one, replaces the message. The trace id always stays,
/// so the server log line can still be found. A projection that fails itself, or returns null,
/// leaves chumbo's message as it was: redaction can only ever replace an already-safe text.
pub fn model_error(
    func: Option<&str>,
    caller: &Caller,
    capability: &str,
    error: PublicError,
    caught: &CaughtSqlError,
    trace_id: &str,
    timeout_ms: u64,
) -> PublicError {
    let Some(func) = func else {
        return error;
    };
    let suffix = format!(" (trace id {trace_id})");
    let message = error
        .message
        .strip_suffix(&suffix)
        .unwrap_or(&error.message)
        .to_string();
    let func = func.to_string();
    let details = JsonB(json!({
        "message": message,
        "sqlstate": caught.sqlstate,
        "authored": caught.authored,
        "internal": error.internal,
        "trace_id": trace_id,
    }));
    let name = capability.to_string();
    let projected =
        session::run_as_caller(caller.role_oid, &caller.claims, timeout_ms, move || {
            // Resolved as the caller too: the function may live in a schema only the caller may
            // use, whoever the session user is (the edge's login role).
            let qualified = resolve(&func, "text, jsonb")?;
            let sql = format!("select {qualified}($1, $2)::pg_catalog.text");
            // Application code whose contract is to read: it runs read-only.
            session::read_only(|| {
                Spi::connect(|c| {
                    c.select(&sql, Some(1), &[name.as_str().into(), details.into()])?
                        .first()
                        .get_one::<String>()
                })
            })
            .ok()
            .flatten()
        });
    match projected {
        Ok(Some(text)) => PublicError {
            message: format!("{text}{suffix}"),
            internal: error.internal,
        },
        _ => error,
    }
}
