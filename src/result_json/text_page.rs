//! A page of rows written as text while they are read: one JSON line per row (what
//! structuredContent holds) and the cells of the Markdown table in the row type's declared order.

use super::*;

/// One page of rows written as text while they are read: the rows' JSON lines (what
/// structuredContent and the JSON-lines text are made of) and the Markdown table's rows, so no
/// row becomes a Value, and none is written twice. The text is what the same rows as values
/// give (render::rows, serde's writer); result_json's tests compare the two.
#[derive(Default, Clone)]
pub struct TextPage {
    /// One compact JSON object per row, a line break between rows (compact JSON never holds a
    /// raw line break).
    pub(super) lines: Vec<u8>,
    /// The table's header; None when the rows have no columns (then there is no table).
    pub(super) header: Option<String>,
    /// The table's body, "\n| … |" per row.
    pub(super) table: String,
    pub(super) rows: usize,
    /// Where the line breaks between rows are in `lines`.
    pub(super) breaks: Vec<usize>,
    /// Where the last row's line starts, and the first key of a row is next.
    pub(super) last: usize,
    pub(super) first_key: bool,
    /// The table lists columns in declared order, the JSON keys are in serde's (by name): for
    /// each table column, the place of its cell among the row's cells as written. None: the same.
    pub(super) cell_order: Option<Vec<usize>>,
    /// Where each cell of the row being written starts in `table`.
    pub(super) cell_starts: Vec<usize>,
}

/// Where a page's text ends: [TextPage::truncate] goes back to it.
#[derive(Clone, Copy)]
pub struct Mark {
    pub(super) lines: usize,
    pub(super) table: usize,
    pub(super) last: usize,
}

impl TextPage {
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The length of the JSON lines so far (the rows' compact sizes and the line breaks).
    pub fn lines_len(&self) -> usize {
        self.lines.len()
    }

    pub fn mark(&self) -> Mark {
        Mark {
            lines: self.lines.len(),
            table: self.table.len(),
            last: self.last,
        }
    }

    /// Drops the row written after `m` (the one that did not fit the page).
    pub fn truncate(&mut self, m: Mark) {
        self.lines.truncate(m.lines);
        self.breaks
            .truncate(self.breaks.partition_point(|&b| b < m.lines));
        self.table.truncate(m.table);
        self.last = m.last;
        self.rows -= 1;
    }

    /// The JSON lines, as text.
    pub fn lines(&self) -> &str {
        // Only valid UTF-8 is ever written (serde's writer, ASCII punctuation, PostgreSQL text).
        std::str::from_utf8(&self.lines).unwrap_or_default()
    }

    /// The Markdown table of the rows, when they have columns.
    pub fn table(&self) -> Option<String> {
        let header = self.header.as_ref()?;
        let mut t = String::with_capacity(header.len() + self.table.len());
        t.push_str(header);
        t.push_str(&self.table);
        Some(t)
    }

    /// The page's default text: the same text render::rows gives for its rows as values (the
    /// smaller of the table and the JSON lines, which are `lines_len` bytes).
    pub fn text(&self, lines_len: usize) -> String {
        if self.rows == 0 {
            return String::new();
        }
        match self.table() {
            Some(table) if table.len() < lines_len => table,
            _ => self.lines().to_string(),
        }
    }

    /// The rows as one JSON array's text: the lines, each line break made a comma in place.
    pub fn into_array(self) -> String {
        let mut a = self.lines;
        for &b in &self.breaks {
            a[b] = b',';
        }
        a.insert(0, b'[');
        a.push(b']');
        // Only valid UTF-8 is ever written (see `lines`), and ASCII was swapped for ASCII.
        String::from_utf8(a).unwrap_or_default()
    }

    /// The last row, as a value.
    pub fn last_row(&self) -> Option<Value> {
        (self.rows > 0).then(|| parse(&self.lines()[self.last..]))
    }

    /// The rows, as values.
    pub fn into_values(self) -> Vec<Value> {
        if self.rows == 0 {
            return vec![];
        }
        self.lines().split('\n').map(parse).collect()
    }

    /// The table's columns, named in declared order; `order`: for each, the place of its cell
    /// among a row's cells as written (by name, serde's order).
    pub(super) fn set_columns(&mut self, names: &[String], order: Option<Vec<usize>>) {
        self.cell_order = order.filter(|o| o.iter().enumerate().any(|(i, &p)| i != p));
        let mut header = String::from("|");
        let mut rule = String::from("\n|");
        for name in names {
            header.push(' ');
            crate::render::push_cell(&mut header, name);
            header.push_str(" |");
            rule.push_str(" --- |");
        }
        if header.len() > 1 {
            header.push_str(&rule);
            self.header = Some(header);
        }
    }

    pub(super) fn begin_row(&mut self) {
        if self.rows > 0 {
            self.breaks.push(self.lines.len());
            self.lines.push(b'\n');
        }
        self.last = self.lines.len();
        self.lines.push(b'{');
        self.table.push_str("\n|");
        self.first_key = true;
        self.cell_starts.clear();
    }

    pub(super) fn key(&mut self, key: &str) {
        if !std::mem::replace(&mut self.first_key, false) {
            self.lines.push(b',');
        }
        self.lines.extend_from_slice(key.as_bytes());
        self.cell_starts.push(self.table.len());
    }

    pub(super) fn end_row(&mut self) {
        self.lines.push(b'}');
        self.rows += 1;
        if let Some(order) = &self.cell_order {
            // The row's cells were written in the keys' order: put them in the columns' order.
            let Some(&from) = self.cell_starts.first() else {
                return;
            };
            let written = self.table.split_off(from);
            let cell = |k: usize| {
                let start = self.cell_starts[k] - from;
                let end = self
                    .cell_starts
                    .get(k + 1)
                    .map_or(written.len(), |e| e - from);
                &written[start..end]
            };
            for &k in order {
                if k < self.cell_starts.len() {
                    self.table.push_str(cell(k));
                }
            }
        }
    }

    /// A SQL NULL or JSON null: `null`, an empty cell.
    pub(super) fn null(&mut self) {
        self.lines.extend_from_slice(b"null");
        self.table.push_str("  |");
    }

    /// A string: its JSON text, and itself as the cell.
    pub(super) fn string(&mut self, s: &str) {
        // Most strings need no escaping in either: one scan finds out (serde_json escapes '"',
        // '\\' and control characters, a cell '\\', '|' and line breaks, which are controls).
        if !s
            .bytes()
            .any(|b| b < 0x20 || matches!(b, b'"' | b'\\' | b'|'))
        {
            return self.plain_string(s);
        }
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.lines, s);
        self.table.push(' ');
        crate::render::push_cell(&mut self.table, s);
        self.table.push_str(" |");
    }

    /// A string that needs no escaping, neither in JSON nor in a cell.
    pub(super) fn plain_string(&mut self, s: &str) {
        self.lines.push(b'"');
        self.lines.extend_from_slice(s.as_bytes());
        self.lines.push(b'"');
        self.table.push(' ');
        self.table.push_str(s);
        self.table.push_str(" |");
    }

    /// The JSON written to the lines from `at` on is the cell too, as it is (a number, a boolean).
    pub(super) fn verbatim_cell(&mut self, at: usize) {
        self.table.push(' ');
        self.table
            .push_str(std::str::from_utf8(&self.lines[at..]).unwrap_or_default());
        self.table.push_str(" |");
    }

    /// Any value: its JSON text, and the cell render::markdown gives it.
    pub(super) fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.null(),
            Value::String(s) => self.string(s),
            other => {
                let at = self.lines.len();
                let _ = serde_json::to_writer(&mut self.lines, other);
                self.table.push(' ');
                let json = std::str::from_utf8(&self.lines[at..]).unwrap_or_default();
                crate::render::push_cell(&mut self.table, json);
                self.table.push_str(" |");
            }
        }
    }

    /// A row that is a value already (read by row_to_json), whose columns are `declared`.
    pub(super) fn push_value(&mut self, row: &Value, declared: &[String]) {
        let Some(m) = row.as_object() else {
            return;
        };
        if self.rows == 0 {
            let order = declared
                .iter()
                .map(|name| m.keys().position(|k| k == name))
                .collect::<Option<Vec<_>>>();
            match order {
                Some(order) if order.len() == m.len() => self.set_columns(declared, Some(order)),
                _ => self.set_columns(&m.keys().cloned().collect::<Vec<_>>(), None),
            }
        }
        self.begin_row();
        for (k, v) in m {
            self.key(&json_key(k));
            self.value(v);
        }
        self.end_row();
    }
}
