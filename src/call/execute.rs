//! Running one capability for one caller: arguments bound as a single jsonb parameter and typed by
//! PostgreSQL's own input functions (as PostgREST does), the function called by its catalog name,
//! as the caller's role, in a subtransaction. No value ever becomes SQL text.

use crate::call::pages::{PageRows, Position, Rows, Window};
use crate::catalog::registry::{Caller, Capability, Integers};
use crate::catalog::types::{quote_ident, ReturnShape};
use crate::datum::JsonValue;
use crate::error::Refusal;
use crate::identity::session::{self, CaughtSqlError};
use crate::result_json::TextPage;
use pgrx::prelude::*;
use serde_json::{Map, Value};

/// What a capability returned.
pub enum Returned {
    /// A non-set function's value, as JSON (SQL NULL → None).
    One(Option<Value>),
    /// One page of a set-returning function's rows (see pages.rs), and whether more remain.
    Rows(PageRows),
}

/// The call's SQL text, kept per capability and shape (Capability::call_sql).
fn call_sql(cap: &Capability, args: &Map<String, Value>, window: &Window) -> std::rc::Rc<str> {
    let shape = (cap.params.len() <= 64).then(|| {
        let present = cap
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| args.contains_key(&p.name))
            .fold(0u64, |m, (i, _)| m | (1 << i));
        (present, matches!(window.position, Position::After(_)))
    });
    cap.call_sql(shape, || build_sql(cap, args, window))
}

fn build_sql(cap: &Capability, args: &Map<String, Value>, window: &Window) -> String {
    let present: Vec<_> = cap
        .params
        .iter()
        .filter(|p| args.contains_key(&p.name))
        .collect();
    let func = format!("mcp.{}", quote_ident(&cap.name));
    // The arguments as one typed row (PostgreSQL's input functions read each), or none.
    let (arguments, call) = if present.is_empty() {
        (None, format!("{func}()"))
    } else {
        // bytea arrives as base64 text (its inputSchema says so): decode it, rather than let
        // bytea's input function take the base64 characters as the bytes.
        let is_bytea = |t: &str| t == "pg_catalog.bytea";
        let columns: Vec<String> = present
            .iter()
            .map(|p| {
                let t = if is_bytea(&p.sql_type) {
                    "pg_catalog.text"
                } else {
                    p.sql_type.as_str()
                };
                format!("{} {t}", quote_ident(&p.name))
            })
            .collect();
        let named: Vec<String> = present
            .iter()
            .map(|p| {
                let q = quote_ident(&p.name);
                if is_bytea(&p.sql_type) {
                    format!("{q} => pg_catalog.decode(_chumbo_a.{q}, 'base64')")
                } else {
                    format!("{q} => _chumbo_a.{q}")
                }
            })
            .collect();
        (
            Some(format!(
                "pg_catalog.jsonb_to_record($1) as _chumbo_a({})",
                columns.join(", ")
            )),
            format!("{func}({})", named.join(", ")),
        )
    };
    // Rows stay composite datums, read column by column (src/result_json/mod.rs); other values as
    // JSON text: to_json writes them straight out, where to_jsonb would build a jsonb tree and
    // sort its keys only for chumbo to walk it again. serde parses the text once; jsonb's
    // normalisation (duplicate keys: the last wins) is what serde does too, so the result is the
    // same value.
    let value = |r: &str| match cap.returns {
        ReturnShape::Row => r.to_string(),
        ReturnShape::ToolResult => format!("({r})::pg_catalog.jsonb::pg_catalog.text"),
        ReturnShape::Bytes => {
            format!("pg_catalog.to_json(pg_catalog.encode({r}, 'base64'))::pg_catalog.text")
        }
        ReturnShape::Void => "'null'::pg_catalog.text".to_string(),
        ReturnShape::Json | ReturnShape::Text => {
            format!("pg_catalog.to_json({r})::pg_catalog.text")
        }
    };
    // One value that is not a row: called in the select list, so PostgreSQL evaluates it as an
    // expression (no function scan, no tuplestore; ~6,000 instructions of a do-nothing call's
    // ~374,000, callgrind, bench/analysis.md). A row type (a NULL row would read as a row of NULLs in FROM, as it always has) and void (no
    // value to select) stay in FROM, as do set-returning functions (paged, pages.rs).
    if !cap.returns_set && !matches!(cap.returns, ReturnShape::Row | ReturnShape::Void) {
        return match arguments {
            Some(from) => format!("select {} from {from}", value(&call)),
            None => format!("select {}", value(&call)),
        };
    }
    let from = match arguments {
        Some(from) => format!("{from}, lateral {call} as _chumbo_r"),
        None => format!("{call} as _chumbo_r"),
    };
    let value = value("_chumbo_r");
    if cap.returns_set {
        crate::call::pages::page_sql(&value, &from, window)
    } else {
        format!("select {value} from {from}")
    }
}

/// Runs `cap` for `caller` with already-validated `args`, within `timeout_ms` (a set-returning
/// one for the page `window`, its events within `max_bytes`), and turns what it
/// returned into the answer with `finish` while still inside the call's subtransaction: when
/// `finish` rejects the result (too large, not matching the outputSchema), the call fails and
/// its writes are rolled back, so a caller told "failed" never has to fear a double write.
pub fn call<T>(
    cap: &Capability,
    caller: &Caller,
    args: &Map<String, Value>,
    window: &Window,
    max_bytes: usize,
    timeout_ms: u64,
    finish: impl FnOnce(Returned) -> Result<T, Refusal>,
) -> Result<T, CaughtSqlError> {
    let sql = call_sql(cap, args, window);
    let mut bound = args.clone();
    for p in cap.params.iter().filter(|p| p.integers != Integers::None) {
        if let Some(v) = bound.get_mut(&p.name) {
            whole_numbers_as_digits(v, &p.integers);
        }
    }
    let args_json = JsonValue(Value::Object(bound));
    // One row more than the page shows: whether another page follows.
    let limit = (window.rows + 1) as i64;
    let (offset, after) = match &window.position {
        Position::Offset(n) => (*n as i64, None),
        Position::After(key) => (0, Some(JsonValue(Value::Object(key.clone())))),
    };
    let (page_rows, page_bytes) = (window.rows, window.bytes);
    let max_bytes = max_bytes.saturating_sub(window.reserve);
    let returns_set = cap.returns_set;
    let composite = cap.returns == ReturnShape::Row;
    // Column 1 of the current row as JSON: a composite read off its datum, anything else parsed
    // from its JSON text.
    let mut reader = crate::result_json::RowReader::default();
    let value_at = move |reader: &mut crate::result_json::RowReader,
                         table: &pgrx::spi::SpiTupleTable|
          -> pgrx::spi::Result<Option<Value>> {
        Ok(if composite {
            // SAFETY: a non-null datum of column 1, whose type is the function's row type; the
            // reader lives only while SPI's memory context does (this call).
            table
                .get_datum_by_ordinal(1)?
                .map(|d| unsafe { reader.row(d) })
        } else {
            table.get::<&str>(1)?.map(crate::result_json::parse)
        })
    };
    session::run_as_caller_calling(
        cap.sets_search_path,
        caller.role_oid,
        &caller.claims,
        timeout_ms,
        move || {
            session::label_call(&crate::call::scope::trace_id());
            let returned = crate::trace_context::timed("execute", || {
                Spi::connect_mut(|client| {
                    let mut table = session::run_kept(
                        client,
                        &sql,
                        &[
                            pgrx::pg_sys::JSONBOID,
                            pgrx::pg_sys::INT8OID,
                            pgrx::pg_sys::INT8OID,
                            pgrx::pg_sys::JSONBOID,
                        ],
                        &[args_json.into(), limit.into(), offset.into(), after.into()],
                    )?;
                    if !returns_set {
                        let mut one = None;
                        while table.next().is_some() {
                            one = value_at(&mut reader, &table)?;
                        }
                        return Ok::<_, pgrx::spi::Error>(Returned::One(one));
                    }
                    // A page holds at least one row (else a row wider than the page could never be
                    // read); the events the call raised count against the result's hard bound.
                    let fits = |rows: usize, bytes: usize| {
                        rows == 0
                            || (rows < page_rows
                                && bytes <= page_bytes
                                && bytes + crate::events::bytes() <= max_bytes)
                    };
                    // A row type's rows are written as text as they are read (result_json::TextPage);
                    // a NULL row or one of another type turns the page into values from there on.
                    let mut text = composite.then(TextPage::default);
                    let (mut values, mut bytes, mut kept, mut more) =
                        (vec![], 0usize, 0usize, false);
                    while table.next().is_some() {
                        if let Some(t) = text.as_mut() {
                            let (before, mark) = (t.rows(), t.mark());
                            let written = match table.get_datum_by_ordinal(1)? {
                                // SAFETY: as in value_at.
                                Some(d) => unsafe { reader.write_row(d, t) },
                                None => false,
                            };
                            if written {
                                if !fits(before, t.lines_len() + 1) {
                                    t.truncate(mark);
                                    more = true;
                                    break;
                                }
                                continue;
                            }
                            let t = text.take().expect("matched above");
                            bytes = if t.rows() > 0 { t.lines_len() + 1 } else { 0 };
                            kept = bytes;
                            values = t.into_values();
                        }
                        let v = value_at(&mut reader, &table)?.unwrap_or(Value::Null);
                        bytes += crate::render::json_len(&v) + 1;
                        if !fits(values.len(), bytes) {
                            more = true;
                            break;
                        }
                        values.push(v);
                        kept = bytes;
                    }
                    let (rows, lines_len) = match text {
                        Some(t) => {
                            let len = t.lines_len();
                            (Rows::Text(t), len)
                        }
                        None => (Rows::Values(values), kept.saturating_sub(1)),
                    };
                    Ok(Returned::Rows(PageRows {
                        rows,
                        more,
                        lines_len,
                        columns: reader.declared_columns().unwrap_or_default(),
                    }))
                })
            });
            match returned.map(finish) {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(rejected)) => crate::error::raise(
                    PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                    format!("chumbo: {rejected}"),
                    None,
                ),
                Err(e) => Err(e),
            }
        },
    )
    .and_then(|r| r.map_err(|e| CaughtSqlError::internal(e.to_string())))
}

/// What a capability's error may show the caller: an allow-list. The application's own words
/// (PL/pgSQL RAISE/ASSERT, any SQLSTATE) and chumbo's fixed messages pass as they are; every other
/// error becomes a fixed message for its kind with no values in it (PostgreSQL's texts quote
/// values, names and SQL); anything unknown is an internal error with a trace id. The full error
/// always goes to the server log with the same trace id.
pub struct PublicError {
    pub message: String,
    pub internal: bool,
}

/// The fixed message for an error PostgreSQL (not the application) raised, by SQLSTATE.
fn category(e: &CaughtSqlError) -> Option<&'static str> {
    let class = &e.sqlstate[..2];
    Some(match (e.sqlstate.as_str(), class) {
        // chumbo's identity guard: a capability tried to change who it runs as.
        ("42501", _) if e.message.starts_with("cannot set parameter") => {
            "Refused: a capability cannot change its role, session authorization or JWT claims"
        }
        ("42501", _) if e.message.contains("within security-restricted operation") => {
            "Refused: a capability cannot leave state in the session (temporary objects, held cursors, prepared statements, LISTEN)"
        }
        ("42501", _) if e.message.starts_with("new row violates row-level security") => {
            "Permission denied: row-level security refused the change"
        }
        ("42501", _) => "Permission denied",
        ("57014", _) => "The call took too long and was cancelled",
        ("25006", _) => "Refused: a write where only reading is allowed (policies, renderers, projections and completions run read-only)",
        ("22001", _) => "Invalid input: a value is too long",
        ("22003", _) => "Invalid input: a numeric value is out of range",
        ("22007" | "22008", _) => "Invalid input: a date or time value is invalid",
        ("22012", _) => "Invalid input: division by zero",
        ("22023", _) => "Invalid input: an argument value is invalid",
        ("22P02", _) => "Invalid input: a value has the wrong syntax for its type",
        ("22004", _) => "Invalid input: a required value is null",
        (_, "22") => "Invalid input: a data value is invalid",
        ("23505", _) => "Conflict: a row with the same unique value already exists",
        ("23503", _) => "Conflict: the change would break a reference between rows",
        ("23502", _) => "Invalid input: a required value is missing",
        ("23514", _) => "Invalid input: a value breaks a check constraint",
        ("23P01", _) => "Conflict: the change conflicts with an existing row",
        (_, "23") => "Conflict: the change breaks an integrity constraint",
        ("40001" | "40P01", _) => "The call conflicted with a concurrent one; retry it",
        ("P0002", _) => "The capability's query found no row",
        ("P0003", _) => "The capability's query found more than one row",
        ("0A000", _) => "Not supported",
        (_, "53") => "The server is out of resources; retry later",
        ("55P03" | "55006", _) => "The object is in use; retry later",
        (_, "55") => "The object is not in a state that allows this",
        _ => return None,
    })
}

pub fn public_error(e: &CaughtSqlError, trace_id: &str) -> PublicError {
    pgrx::ereport!(
        PgLogLevel::LOG_SERVER_ONLY,
        PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        format!(
            "chumbo trace {trace_id}: capability failed with {}: {}",
            e.sqlstate, e.message
        )
    );
    let text = if e.authored {
        Some(e.message.clone())
    } else {
        category(e).map(String::from)
    };
    match text {
        Some(t) => PublicError {
            // Only the application's own errors carry their hint (PostgreSQL's name objects).
            message: match e.hint.as_deref().filter(|h| e.authored && !h.is_empty()) {
                Some(h) => format!("{t} (trace id {trace_id})\nNext step: {h}"),
                None => format!("{t} (trace id {trace_id})"),
            },
            internal: false,
        },
        None => PublicError {
            message: format!("Internal error while running the capability (trace id {trace_id})"),
            internal: true,
        },
    }
}

/// Every whole number in `v` (a number, or an array of them at any depth) that is written with a
/// fraction or an exponent, rewritten as its digits: `2.0` → `2`, `1e2` → `100`. JSON Schema
/// counts those as integers, so they pass an integer parameter's inputSchema, and a client may
/// well send them (Python writes a float 2.0 as `2.0`); PostgreSQL's integer input reads digits
/// only, and would refuse them as "wrong syntax".
fn whole_numbers_as_digits(v: &mut Value, at: &Integers) {
    match (v, at) {
        (Value::Number(n), Integers::Here) => {
            if let Some(digits) = crate::json_number::whole_digits(n.as_str()) {
                *n = digits.parse().expect("digits are a JSON number");
            }
        }
        (Value::Array(items), Integers::Items(inner)) => items
            .iter_mut()
            .for_each(|item| whole_numbers_as_digits(item, inner)),
        (Value::Object(fields), Integers::Fields(named)) => {
            for (name, inner) in named {
                if let Some(field) = fields.get_mut(name) {
                    whole_numbers_as_digits(field, inner);
                }
            }
        }
        _ => {}
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_written_as_digits() {
        // an int[] (a fraction is left for PostgreSQL's input to refuse)
        let mut v: Value = serde_json::from_str("[2.0, 1e1, 3, 4.5]").unwrap();
        let items = |i| Integers::Items(Box::new(i));
        whole_numbers_as_digits(&mut v, &items(Integers::Here));
        assert_eq!(v.to_string(), "[2,10,3,4.5]");
        // a composite's integer attribute, in an array of them; its other attributes untouched
        let mut v: Value =
            serde_json::from_str(r#"[{"qty": 2.0, "price": 2.0}, {"qty": 3e0}]"#).unwrap();
        let qty = Integers::Fields(vec![("qty".into(), Integers::Here)]);
        whole_numbers_as_digits(&mut v, &items(qty));
        assert_eq!(v.to_string(), r#"[{"price":2.0,"qty":2},{"qty":3}]"#);
    }

    fn shown(sqlstate: &str, message: &str, authored: bool) -> PublicError {
        let e = CaughtSqlError {
            sqlstate: sqlstate.into(),
            message: message.into(),
            authored,
            hint: None,
        };
        public_error(&e, "0123456789abcdef")
    }

    /// PostgreSQL's own messages quote values, names and SQL: none of it may reach the model,
    /// whatever the class.
    #[pgrx::pg_test]
    fn postgres_errors_become_messages_without_their_text() {
        let cases = [
            (
                "22003",
                "value \"98765432109\" is out of range for type integer",
            ),
            (
                "22P02",
                "invalid input syntax for type integer: \"98765432109x\"",
            ),
            (
                "23505",
                "duplicate key value violates unique constraint \"secret_98765432109\"",
            ),
            (
                "23503",
                "insert or update on table \"secret_98765432109\" violates foreign key constraint",
            ),
            (
                "23514",
                "new row for relation \"secret_98765432109\" violates check constraint",
            ),
            ("42501", "permission denied for table secret_98765432109"),
            (
                "42501",
                "new row violates row-level security policy for table \"secret_98765432109\"",
            ),
            ("42P01", "relation \"secret_98765432109\" does not exist"),
            ("42601", "syntax error at or near \"98765432109\""),
            ("XX000", "secret_98765432109"),
            ("P0002", "query returned no rows: secret_98765432109"),
            (
                "55000",
                "currval of sequence \"secret_98765432109\" is not yet defined",
            ),
        ];
        for (state, message) in cases {
            let p = shown(state, message, false);
            assert!(!p.message.contains("98765432109"), "{state}: {}", p.message);
            assert!(
                p.message.ends_with("(trace id 0123456789abcdef)"),
                "{}",
                p.message
            );
        }
        assert!(shown("42P01", "relation \"x\" does not exist", false).internal);
        assert!(!shown("22003", "value \"1\" is out of range", false).internal);
    }

    /// The application's own words (RAISE) pass as they are, whatever their SQLSTATE.
    #[pgrx::pg_test]
    fn application_messages_pass() {
        for state in ["P0001", "22003", "MC001"] {
            let p = shown(state, "Quota reached: 98765432109 calls", true);
            assert_eq!(
                p.message,
                "Quota reached: 98765432109 calls (trace id 0123456789abcdef)"
            );
            assert!(!p.internal);
        }
    }

    /// Identity and session-state refusals get their own fixed words.
    #[pgrx::pg_test]
    fn identity_refusals_are_named() {
        let role = shown(
            "42501",
            "cannot set parameter \"role\" within security-restricted operation",
            false,
        );
        assert!(role
            .message
            .starts_with("Refused: a capability cannot change its role"));
        let cursor = shown(
            "42501",
            "cannot create a cursor WITH HOLD within security-restricted operation",
            false,
        );
        assert!(cursor
            .message
            .starts_with("Refused: a capability cannot leave state"));
    }
}
