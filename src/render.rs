//! The text block of a page of rows: what a model reads. By default the smaller of a Markdown
//! table and one JSON object per line (wide or nested rows read better, and cost fewer tokens, as
//! JSON lines; narrow flat rows as a table). structuredContent keeps the exact JSON either way.
//! A tool may name its own renderer, `(rows jsonb) returns text`, run as the caller.

use crate::error::Refusal;
use crate::postgres::app_function;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;

/// The default text of `rows`, whose JSON lines are `lines_len` bytes (the rows' compact sizes
/// plus the line breaks, counted when the page was read): "" for none. Written straight into one
/// buffer (this runs on every page of every call): the table first, JSON lines only when they
/// are shorter. `columns`: the row type's columns in declared order, how the table lists them.
pub fn rows(rows: &[Value], lines_len: usize, columns: &[String]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    match markdown(rows, columns) {
        Some(table) if table.len() < lines_len => table,
        _ => json_lines(rows, lines_len),
    }
}

/// The compact JSON size of `v`, counted without building the text.
pub fn json_len(v: &(impl serde::Serialize + ?Sized)) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing JSON into a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// The length of the JSON text of `v` with its held texts in place (identity::spliced::write's),
/// counted without writing it.
pub fn written_len(v: &Value) -> usize {
    use crate::identity::spliced::{self, Held};
    fn held_extra(v: &Value, held: &Held) -> isize {
        match v {
            Value::String(s) => held
                .text(s)
                .map_or(0, |json| json.len() as isize - json_len(s) as isize),
            Value::Array(a) => a.iter().map(|x| held_extra(x, held)).sum(),
            Value::Object(m) => m.values().map(|x| held_extra(x, held)).sum(),
            _ => 0,
        }
    }
    let plain = json_len(v);
    if !spliced::held() {
        return plain;
    }
    spliced::with_held(|held| (plain as isize + held_extra(v, held)).max(0) as usize)
}

fn json_lines(rows: &[Value], len: usize) -> String {
    let mut out = Vec::with_capacity(len);
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        // Writing a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, r);
    }
    // serde_json writes UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// A Markdown table, when every row is an object: `declared` columns first, in that order, then
/// any other key in order of first appearance (a JSON object's keys come sorted by name).
fn markdown(rows: &[Value], declared: &[String]) -> Option<String> {
    let mut columns: Vec<&str> = declared.iter().map(String::as_str).collect();
    for r in rows {
        for k in r.as_object()?.keys() {
            if !columns.contains(&k.as_str()) {
                columns.push(k);
            }
        }
    }
    if columns.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(64 * (rows.len() + 2));
    out.push('|');
    for c in &columns {
        out.push(' ');
        push_cell(&mut out, c);
        out.push_str(" |");
    }
    out.push_str("\n|");
    for _ in &columns {
        out.push_str(" --- |");
    }
    for r in rows {
        out.push_str("\n|");
        for c in &columns {
            out.push(' ');
            match r.get(*c) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => push_cell(&mut out, s),
                Some(v) => push_cell(&mut out, &v.to_string()),
            }
            out.push_str(" |");
        }
    }
    Some(out)
}

/// A table cell: pipes escaped, line breaks as `<br>` (a cell is one line).
pub fn push_cell(out: &mut String, s: &str) {
    if !s.bytes().any(|b| matches!(b, b'\\' | b'|' | b'\r' | b'\n')) {
        out.push_str(s);
        return;
    }
    let mut chars = s.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push_str("<br>");
            }
            '\n' => out.push_str("<br>"),
            c => out.push(c),
        }
    }
}

/// The text the tool's renderer `func` writes for `rows`. Runs inside the call (as the caller,
/// in its subtransaction and time bound): its errors fail the call like the tool's own. The name
/// is resolved to a catalog entry first; only catalog-quoted identifiers reach the SQL text.
pub fn with_function(func: &str, rows: &[Value]) -> Result<String, Refusal> {
    let qualified = app_function::resolve(func, "jsonb")
        .ok()
        .flatten()
        .ok_or_else(|| {
            Refusal::AppFunction(format!("the text renderer {func}(jsonb) does not exist"))
        })?
        .qualified;
    let sql = format!("select {qualified}($1)::pg_catalog.text");
    let arg = JsonB(Value::Array(rows.to_vec()));
    let text = crate::identity::session::read_only(|| {
        Spi::connect(|c| {
            c.select(sql.as_str(), Some(1), &[arg.into()])?
                .first()
                .get_one::<String>()
        })
    })
    .map_err(|_| Refusal::AppFunction(format!("the text renderer {func} failed")))?;
    Ok(text.unwrap_or_default())
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::json;

    /// What execute::call counts while it reads a page.
    fn counted(r: &[Value]) -> usize {
        r.iter()
            .map(|v| json_len(v) + 1)
            .sum::<usize>()
            .saturating_sub(1)
    }

    /// The length counted without writing is the written text's.
    #[pgrx::pg_test]
    fn written_len_is_the_written_texts_length() {
        crate::identity::spliced::clear();
        let plain = json!({"a": ["é", "\u{1}", 1.5]});
        assert_eq!(
            written_len(&plain),
            crate::identity::spliced::write(&plain).len()
        );
        let rows = crate::identity::spliced::hold(r#"[{"a":1},{"a":"x\ny"}]"#.to_string());
        let text = crate::identity::spliced::hold(r#""| a |\n| 1 |""#.to_string());
        let reply = json!({"result": {"content": [{"text": text}], "rows": rows, "again": rows}});
        assert_eq!(
            written_len(&reply),
            crate::identity::spliced::write(&reply).len()
        );
        crate::identity::spliced::clear();
    }

    #[pgrx::pg_test]
    fn table_cells_are_escaped() {
        let r = vec![
            json!({"id": 1, "name": "a|b\nc"}),
            json!({"id": 2, "name": null}),
        ];
        assert_eq!(
            markdown(&r, &[]).unwrap(),
            "| id | name |\n| --- | --- |\n| 1 | a\\|b<br>c |\n| 2 |  |"
        );
    }

    /// The smaller text wins: a table once its header pays for itself.
    #[pgrx::pg_test]
    fn many_flat_rows_are_a_table() {
        let r: Vec<Value> = (1..=20).map(|i| json!({"id": i, "name": "n"})).collect();
        assert!(rows(&r, counted(&r), &[]).starts_with("| id | name |"));
        assert!(rows(&r[..1], counted(&r[..1]), &[]).starts_with('{'));
    }

    /// The one-buffer writers give what the plain ones gave: compact JSON lines, cells escaped.
    #[pgrx::pg_test]
    fn buffered_text_matches_plain_text() {
        let r = vec![
            json!({"a": "x\\y|z\r\nw\rv", "b": [1, {"c": "d"}], "n": 1.5}),
            json!({"a": null, "m": true}),
        ];
        let lines: Vec<String> = r.iter().map(Value::to_string).collect();
        assert_eq!(json_lines(&r, 0), lines.join("\n"));
        for v in &r {
            assert_eq!(json_len(v), v.to_string().len());
        }
        assert_eq!(
            markdown(&r, &[]).unwrap(),
            "| a | b | n | m |\n| --- | --- | --- | --- |\n| x\\\\y\\|z<br>w<br>v | [1,{\"c\":\"d\"}] | 1.5 |  |\n|  |  |  | true |"
        );
    }

    /// Declared columns come first, in their order; other keys follow as they appear.
    #[pgrx::pg_test]
    fn declared_columns_lead_the_table() {
        let r = vec![json!({"created_at": "t", "id": 1, "title": "x", "z": 0})];
        let declared = ["id".to_string(), "title".into(), "created_at".into()];
        assert_eq!(
            markdown(&r, &declared).unwrap(),
            "| id | title | created_at | z |\n| --- | --- | --- | --- |\n| 1 | x | t | 0 |"
        );
    }

    #[pgrx::pg_test]
    fn wide_text_is_json_lines() {
        let r = vec![json!({"body": "x\ny".repeat(40)}), json!([1, 2])];
        assert_eq!(rows(&r, counted(&r), &[]).lines().count(), 2);
        assert!(rows(&r, counted(&r), &[]).starts_with("{\"body\""));
    }
}
