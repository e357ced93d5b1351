//! The text block of a page of rows: what a model reads. By default the smaller of a Markdown
//! table and one JSON object per line (wide or nested rows read better, and cost fewer tokens, as
//! JSON lines; narrow flat rows as a table). structuredContent keeps the exact JSON either way.
//! A tool may name its own renderer, `(rows jsonb) returns text`, run as the caller.

use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::Value;

/// The default text of `rows`: "" for none.
pub fn rows(rows: &[Value]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let lines = json_lines(rows);
    match markdown(rows) {
        Some(table) if table.len() < lines.len() => table,
        _ => lines,
    }
}

fn json_lines(rows: &[Value]) -> String {
    rows.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Markdown table, when every row is an object (columns in order of first appearance).
fn markdown(rows: &[Value]) -> Option<String> {
    let mut columns: Vec<&str> = vec![];
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
    let line = |cells: Vec<String>| format!("| {} |", cells.join(" | "));
    let mut out = vec![
        line(columns.iter().map(|c| cell_text(c)).collect()),
        line(columns.iter().map(|_| "---".to_string()).collect()),
    ];
    for r in rows {
        out.push(line(
            columns
                .iter()
                .map(|c| match r.get(*c) {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => cell_text(s),
                    Some(v) => cell_text(&v.to_string()),
                })
                .collect(),
        ));
    }
    Some(out.join("\n"))
}

/// A table cell: pipes escaped, line breaks as `<br>` (a cell is one line).
fn cell_text(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace("\r\n", "<br>")
        .replace(['\n', '\r'], "<br>")
}

/// The text the tool's renderer `func` writes for `rows`. Runs inside the call (as the caller,
/// in its subtransaction and time bound): its errors fail the call like the tool's own. The name
/// is resolved to a catalog entry first; only catalog-quoted identifiers reach the SQL text.
pub fn with_function(func: &str, rows: &[Value]) -> Result<String, String> {
    let missing = || format!("the text renderer {func}(jsonb) does not exist");
    let qualified = Spi::connect(|c| {
        c.select(
            "select pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(p.proname)
               from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
              where p.oid = pg_catalog.to_regprocedure($1 || '(jsonb)')",
            Some(1),
            &[func.into()],
        )?
        .first()
        .get_one::<String>()
    })
    .ok()
    .flatten()
    .ok_or_else(missing)?;
    let sql = format!("select {qualified}($1)::pg_catalog.text");
    let arg = JsonB(Value::Array(rows.to_vec()));
    let text = Spi::connect(|c| {
        c.select(sql.as_str(), Some(1), &[arg.into()])?
            .first()
            .get_one::<String>()
    })
    .map_err(|_| format!("the text renderer {func} failed"))?;
    Ok(text.unwrap_or_default())
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::json;

    #[pgrx::pg_test]
    fn table_cells_are_escaped() {
        let r = vec![
            json!({"id": 1, "name": "a|b\nc"}),
            json!({"id": 2, "name": null}),
        ];
        assert_eq!(
            markdown(&r).unwrap(),
            "| id | name |\n| --- | --- |\n| 1 | a\\|b<br>c |\n| 2 |  |"
        );
    }

    /// The smaller text wins: a table once its header pays for itself.
    #[pgrx::pg_test]
    fn many_flat_rows_are_a_table() {
        let r: Vec<Value> = (1..=20).map(|i| json!({"id": i, "name": "n"})).collect();
        assert!(rows(&r).starts_with("| id | name |"));
        assert!(rows(&r[..1]).starts_with('{'));
    }

    #[pgrx::pg_test]
    fn wide_text_is_json_lines() {
        let r = vec![json!({"body": "x\ny".repeat(40)}), json!([1, 2])];
        assert_eq!(rows(&r).lines().count(), 2);
        assert!(rows(&r).starts_with("{\"body\""));
    }
}
