//! Pages of set-returning tools. A call returns one page (`page_rows` rows and `page_bytes`
//! bytes of row JSON by default) and, while more rows remain, a cursor and the exact call that
//! fetches the next page. Every page runs the function again, as the caller, so row-level
//! security decides each page afresh.
//!
//! Positions: a tool that declares `@mcp {"orderBy": [...]}` is paged by keyset (the next page
//! starts after the last row's key, so rows inserted or deleted meanwhile never shift the pages);
//! any other by offset (the next page skips the rows earlier pages returned: a row inserted
//! before the position makes the next page repeat one row, a deleted one makes it skip one).
//!
//! The cursor is a signed token (src/tokens.rs) like MRTR's requestState, signed with a key of
//! its own kind derived from chumbo.keys' 'request_state'; the payload binds the
//! principal, the tool and a digest of the arguments, and expires (`cursor_ttl_seconds`). It is
//! signed, not encrypted: a keyset cursor carries the last row's key values, which the caller
//! has just been shown. A cursor is a tool argument, so a bad one is an `isError` result the
//! model can act on (MCP: argument problems are tool execution errors), not a protocol error.

use crate::call::plan::ToolCall;
use crate::catalog::metadata::CURSOR;
use crate::catalog::registry::Capability;
use crate::catalog::types::quote_ident;
use crate::error::Refusal;
use crate::tokens::{self, Kind};
use serde_json::{json, Map, Value};

/// Bound on a cursor's length, so a client cannot make us verify unbounded data.
const MAX_CURSOR_BYTES: usize = 16 * 1024;

/// Where a page starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Position {
    Offset(u64),
    /// After the row with these key values (`{"column": value}`).
    After(Map<String, Value>),
}

/// What one call of a set-returning tool may return.
pub struct Window {
    pub rows: usize,
    pub bytes: usize,
    pub position: Position,
    /// Keyset columns (empty: offset paging).
    pub order_by: Vec<String>,
    /// Bytes of the result's hard bound kept free of rows for the words of the next call.
    pub reserve: usize,
}

/// Room for the page's footer: the words, a cursor, and the arguments once more.
const FOOTER_BYTES: usize = 1024;

/// Whether `cap` is paged: every set-returning tool is.
pub fn is_paged(cap: &Capability) -> bool {
    cap.returns_set
}

/// What a cursor is bound to.
pub struct Binding<'a> {
    pub principal: &'a str,
    pub tool: &'a str,
    /// The digest of the call's arguments without `cursor`.
    pub arguments_digest: &'a str,
}

pub fn issue(key: &[u8], b: &Binding, next: &Position, ttl_seconds: u64) -> String {
    let mut payload = json!({
        "p": b.principal, "c": b.tool, "a": b.arguments_digest,
        "x": tokens::expiry(ttl_seconds as i64),
    });
    match next {
        Position::Offset(n) => payload["o"] = json!(n),
        Position::After(k) => payload["k"] = Value::Object(k.clone()),
    }
    tokens::sign(key, Kind::PageCursor, &payload)
}

/// The position a valid cursor continues at, or the words the model gets instead.
pub fn verify(
    key: &[u8],
    cursor: &Value,
    b: &Binding,
    order_by: &[String],
) -> Result<Position, Refusal> {
    let tool = b.tool;
    let restart = format!("call {tool} without \"{CURSOR}\" to start from the first page");
    let invalid = || {
        Refusal::Cursor(format!(
            "Invalid cursor for {tool}: it is not a cursor this server issued; {restart}."
        ))
    };
    let text = cursor.as_str().ok_or_else(invalid)?;
    let p = tokens::open(key, Kind::PageCursor, text, MAX_CURSOR_BYTES).map_err(|_| invalid())?;
    if p["p"] != b.principal || p["c"] != tool || p["a"] != b.arguments_digest {
        return Err(Refusal::Cursor(format!(
            "Invalid cursor for {tool}: it was issued for another caller, tool or arguments; pass it with exactly the other arguments of the call that returned it, or {restart}."
        )));
    }
    if tokens::expired(&p) {
        return Err(Refusal::Cursor(format!(
            "The cursor for {tool} has expired; {restart}."
        )));
    }
    let stale = || {
        Refusal::Cursor(format!(
            "The cursor for {tool} no longer fits the tool (its paging changed); {restart}."
        ))
    };
    match (&p["o"], &p["k"], order_by.is_empty()) {
        (Value::Number(n), Value::Null, true) => {
            n.as_u64().map(Position::Offset).ok_or_else(invalid)
        }
        (Value::Null, Value::Object(k), false)
            if k.len() == order_by.len() && order_by.iter().all(|c| k.contains_key(c)) =>
        {
            Ok(Position::After(k.clone()))
        }
        _ => Err(stale()),
    }
}

/// The SQL that runs one page: `from` is the call's FROM list with the function's rows as
/// `_chumbo_r`; $2 is the row limit, $3 the offset, $4 the keyset position (jsonb). Key values
/// are typed by the result's own row type (jsonb_populate_record), never written into the SQL.
pub fn page_sql(value: &str, from: &str, window: &Window) -> String {
    if window.order_by.is_empty() {
        return format!("select {value} from {from} offset $3 limit $2");
    }
    let cols: Vec<String> = window.order_by.iter().map(|c| quote_ident(c)).collect();
    let of = |alias: &str| -> String {
        cols.iter()
            .map(|c| format!("{alias}.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let filter = match window.position {
        Position::After(_) => format!(
            ", lateral pg_catalog.jsonb_populate_record(_chumbo_r, $4) as _chumbo_k where row({}) > row({})",
            of("_chumbo_r"),
            of("_chumbo_k")
        ),
        Position::Offset(_) => String::new(),
    };
    format!(
        "select {value} from {from}{filter} order by {} limit $2",
        of("_chumbo_r")
    )
}

/// The page's settings for `cap`: the tool's own, else the deployment's, within the hard bounds.
pub fn window(cap: &Capability, s: &crate::settings::Settings, position: Position) -> Window {
    let page = cap.meta.page.clone().unwrap_or_default();
    Window {
        rows: page.rows.unwrap_or(s.page_rows).clamp(1, s.max_rows.max(1)),
        // Half the result's hard bound at most: the text block adds the next call to the rows.
        bytes: page
            .bytes
            .unwrap_or(s.page_bytes)
            .clamp(1, (s.max_result_bytes / 2).max(1)),
        position,
        order_by: cap.meta.order_by.clone().unwrap_or_default(),
        reserve: FOOTER_BYTES,
    }
}

/// One page of rows as the tool returned them.
pub struct PageRows {
    pub rows: Rows,
    /// Whether rows remain after this page.
    pub more: bool,
    /// The rows' compact JSON size, one per line (counted once, while the page was read).
    pub lines_len: usize,
    /// The row type's columns in declared order (empty when the rows are not of a row type).
    pub columns: Vec<String>,
}

/// A page's rows: written as text while they were read (a row type's rows), or values.
pub enum Rows {
    Text(crate::result_json::TextPage),
    Values(Vec<Value>),
}

impl Rows {
    pub fn len(&self) -> usize {
        match self {
            Rows::Text(t) => t.rows(),
            Rows::Values(v) => v.len(),
        }
    }

    pub fn last(&self) -> Option<Value> {
        match self {
            Rows::Text(t) => t.last_row(),
            Rows::Values(v) => v.last().cloned(),
        }
    }

    pub fn into_values(self) -> Vec<Value> {
        match self {
            Rows::Text(t) => t.into_values(),
            Rows::Values(v) => v,
        }
    }
}

/// The rows of one page, the JSON the caller gets and the words for it.
pub struct Page<'a> {
    pub cap: &'a Capability,
    pub window: &'a Window,
    pub page: PageRows,
    /// The call: what the next page's cursor is bound to ([binding], made only for a cursor).
    pub plan: &'a ToolCall,
    pub key: &'a [u8],
    pub ttl_seconds: u64,
}

impl Page<'_> {
    /// `(text, structuredContent)` of the page; the text comes from the tool's renderer when it
    /// declares one (run as the caller, inside the call). `held`: rows read as text may stay text
    /// in structuredContent (a placeholder, see src/identity/spliced.rs) - only when nothing later needs
    /// them as values.
    pub fn finish(self, held: bool) -> Result<(String, Value), Refusal> {
        let name = &self.cap.name;
        let first = match &self.window.position {
            Position::Offset(n) => Some(*n + 1),
            Position::After(_) => None,
        };
        let n = self.page.rows.len();
        let next = if self.page.more {
            let position = if self.window.order_by.is_empty() {
                Position::Offset(first.unwrap_or(1) - 1 + n as u64)
            } else {
                let last = self.page.rows.last();
                let mut key = Map::new();
                for c in &self.window.order_by {
                    match last.as_ref().and_then(|r| r.get(c)) {
                        Some(v) if !v.is_null() => {
                            key.insert(c.clone(), v.clone());
                        }
                        _ => {
                            return Err(Refusal::Result(format!(
                                "{name}: orderBy column \"{c}\" is missing or null in a row"
                            )))
                        }
                    }
                }
                Position::After(key)
            };
            Some(issue(
                self.key,
                &binding(self.plan),
                &position,
                self.ttl_seconds,
            ))
        } else {
            None
        };
        let (body, rows) = match (&self.cap.meta.text, self.page.rows) {
            (None, Rows::Text(t)) => {
                let body = t.text(self.page.lines_len);
                let rows = if held {
                    crate::identity::spliced::hold(t.into_array())
                } else {
                    Value::Array(t.into_values())
                };
                (body, rows)
            }
            (renderer, rows) => {
                let rows = rows.into_values();
                let body = match renderer {
                    Some(f) => crate::render::with_function(f, &rows)?,
                    None => crate::render::rows(&rows, self.page.lines_len, &self.page.columns),
                };
                (body, Value::Array(rows))
            }
        };
        let mut structured = Value::Object(Map::from_iter([("rows".to_string(), rows)]));
        let span = match first {
            Some(f) if n > 0 => format!("rows {f}-{}", f + n as u64 - 1),
            _ => format!("{n} row{}", if n == 1 { "" } else { "s" }),
        };
        let footer = match next {
            Some(cursor) => {
                let mut arguments = self.plan.arguments.clone();
                arguments.insert(CURSOR.into(), json!(cursor));
                let call = json!({"name": name, "arguments": arguments});
                let words = format!(
                    "Page of {span}; more rows remain. Next page: call {name} with arguments {}",
                    call["arguments"]
                );
                structured["next_cursor"] = json!(cursor);
                structured["next_call"] = call;
                words
            }
            None if n == 0 && first == Some(1) => "No rows.".to_string(),
            None => format!("Page of {span}; this is the last page."),
        };
        let text = if body.is_empty() {
            footer
        } else {
            let mut text = body;
            text.push_str("\n\n");
            text.push_str(&footer);
            text
        };
        Ok((text, structured))
    }
}

/// The first page's window (what resources and prompts, which never return sets, pass too).
pub fn first(cap: &Capability, s: &crate::settings::Settings) -> Window {
    window(cap, s, Position::Offset(0))
}

/// The window the call's page starts at: the first page, or where the plan's cursor continues;
/// for a bad cursor, the words the model gets.
pub fn start(
    registry: &crate::catalog::registry::Registry,
    cap: &Capability,
    plan: &ToolCall,
) -> Result<Window, Refusal> {
    let s = &registry.settings;
    if !is_paged(cap) {
        return Ok(first(cap, s));
    }
    let reserve = FOOTER_BYTES + crate::render::json_len(&plan.arguments);
    let Some(cursor) = &plan.cursor else {
        return Ok(Window {
            reserve,
            ..first(cap, s)
        });
    };
    let order_by = cap.meta.order_by.clone().unwrap_or_default();
    let position = verify(registry.token_secret(), cursor, &binding(plan), &order_by)?;
    Ok(Window {
        reserve,
        ..window(cap, s, position)
    })
}

fn binding(plan: &ToolCall) -> Binding<'_> {
    Binding {
        principal: &plan.caller.principal,
        tool: &plan.tool,
        arguments_digest: plan.arguments_digest(),
    }
}

/// `(text, structuredContent)` of one page of `cap`'s rows for the plan (see Page::finish).
pub fn result(
    registry: &crate::catalog::registry::Registry,
    cap: &Capability,
    plan: &ToolCall,
    window: &Window,
    page: PageRows,
    held: bool,
) -> Result<(String, Value), Refusal> {
    Page {
        cap,
        window,
        page,
        plan,
        key: registry.token_secret(),
        ttl_seconds: registry.settings.cursor_ttl_seconds,
    }
    .finish(held)
}
