//! What a capability returned, as the JSON value PostgreSQL's `to_json` gives for it.
//!
//! A row (a composite datum) is read column by column: values of the common types become JSON
//! values directly, so `to_json` never writes a row's text for serde to parse back (the two were
//! a third of a 50-row call). A row with a column of any other type goes through `row_to_json`,
//! the function `to_json` itself calls for a row, and its text is parsed as before.

use pgrx::pg_sys;
use serde_json::{Map, Number, Value};
use std::ffi::CStr;
use std::io::Write;

mod text_page;
pub use text_page::TextPage;

/// A value PostgreSQL printed as JSON. Its text is valid JSON, so the only failure is serde's
/// nesting limit (128 levels), raised as the call's error like any other.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| {
        let reason = if e.to_string().contains("recursion limit") {
            "chumbo: the result is nested deeper than 128 levels"
        } else {
            "chumbo: the result is not valid JSON"
        };
        crate::error::raise(pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION, reason, None)
    })
}

/// How a column of a direct-read type becomes its value: each gives exactly the value
/// `to_json`'s text parses to. Decided once per row type, with the output function looked up then.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Int2,
    Int4,
    Int8,
    Text,
    Uuid,
    /// to_json's own encoding of dates and times (ISO 8601, "infinity" spelled out).
    DateTime(pg_sys::Oid),
    /// The output function's text: a number when it is one (the session's extra_float_digits
    /// applies as it does in to_json), a string for NaN and the infinities.
    Number(pg_sys::Oid),
    /// The output function's text, parsed (json keeps its last duplicate key, as jsonb does).
    Json(pg_sys::Oid),
}

impl Kind {
    /// The kind of a column of type `typid`; None for a type only `row_to_json` reads.
    fn of(typid: pg_sys::Oid) -> Option<Kind> {
        use pg_sys::*;
        let output = || {
            let (mut out, mut varlena) = (Oid::INVALID, false);
            // SAFETY: a catalog lookup for a type named by a live row type's descriptor.
            unsafe { getTypeOutputInfo(typid, &mut out, &mut varlena) };
            out
        };
        Some(match typid {
            BOOLOID => Kind::Bool,
            INT2OID => Kind::Int2,
            INT4OID => Kind::Int4,
            INT8OID => Kind::Int8,
            TEXTOID | VARCHAROID => Kind::Text,
            UUIDOID => Kind::Uuid,
            DATEOID | TIMESTAMPOID | TIMESTAMPTZOID => Kind::DateTime(typid),
            FLOAT4OID | FLOAT8OID | NUMERICOID => Kind::Number(output()),
            JSONOID | JSONBOID => Kind::Json(output()),
            _ => return None,
        })
    }

    /// The value of a non-null datum of this kind's type.
    ///
    /// # Safety
    /// `d` is a non-null datum of the column type this kind was made for.
    unsafe fn value(self, d: pg_sys::Datum) -> Value {
        // SAFETY: per this function's contract: each arm reads the datum as its type's
        // representation; the C strings are palloc'd and copied out at once.
        unsafe {
            let text_of =
                |out| CStr::from_ptr(pg_sys::OidOutputFunctionCall(out, d)).to_string_lossy();
            match self {
                Kind::Bool => Value::Bool(d.value() != 0),
                Kind::Int2 => Value::from(d.value() as i16),
                Kind::Int4 => Value::from(d.value() as i32),
                Kind::Int8 => Value::from(d.value() as i64),
                Kind::Text => Value::String(
                    <String as pgrx::FromDatum>::from_polymorphic_datum(d, false, pg_sys::TEXTOID)
                        .unwrap_or_default(),
                ),
                Kind::Uuid => {
                    let text = uuid_text(std::slice::from_raw_parts(d.cast_mut_ptr::<u8>(), 16));
                    Value::String(String::from_utf8_lossy(&text).into_owned())
                }
                Kind::DateTime(typid) => {
                    let s = pg_sys::JsonEncodeDateTime(
                        std::ptr::null_mut(),
                        d,
                        typid,
                        std::ptr::null(),
                    );
                    Value::String(CStr::from_ptr(s).to_string_lossy().into_owned())
                }
                Kind::Number(out) => {
                    let text = text_of(out);
                    match serde_json::from_str::<Number>(&text) {
                        Ok(n) => Value::Number(n),
                        Err(_) => Value::String(text.into_owned()),
                    }
                }
                Kind::Json(out) => parse(&text_of(out)),
            }
        }
    }
}

impl Kind {
    /// Writes a non-null datum of this kind's type into `page`: the text of [Kind::value]'s value.
    ///
    /// # Safety
    /// As for [Kind::value].
    unsafe fn write(self, d: pg_sys::Datum, page: &mut TextPage) {
        // SAFETY: per this function's contract.
        unsafe {
            match self {
                Kind::Bool | Kind::Int2 | Kind::Int4 | Kind::Int8 => {
                    let at = page.lines.len();
                    // Writing into a Vec cannot fail.
                    let _ = match self {
                        Kind::Bool => {
                            page.lines
                                .write_all(if d.value() != 0 { b"true" } else { b"false" })
                        }
                        Kind::Int2 => write!(page.lines, "{}", d.value() as i16),
                        Kind::Int4 => write!(page.lines, "{}", d.value() as i32),
                        _ => write!(page.lines, "{}", d.value() as i64),
                    };
                    page.verbatim_cell(at);
                }
                Kind::Uuid => {
                    let text = uuid_text(std::slice::from_raw_parts(d.cast_mut_ptr::<u8>(), 16));
                    page.plain_string(std::str::from_utf8(&text).unwrap_or_default());
                }
                Kind::DateTime(typid) => {
                    // Written into a buffer of ours: no palloc'd copy per value.
                    let mut buf = [0 as std::ffi::c_char; pg_sys::MAXDATELEN as usize + 1];
                    pg_sys::JsonEncodeDateTime(buf.as_mut_ptr(), d, typid, std::ptr::null());
                    page.string(CStr::from_ptr(buf.as_ptr()).to_str().unwrap_or_default());
                }
                Kind::Text => {
                    // Only a compressed or out-of-line value needs detoasting (an FFI call).
                    let raw = d.cast_mut_ptr::<pg_sys::varlena>();
                    let inline = pgrx::varlena::varatt_is_4b_u(raw)
                        || (pgrx::varlena::varatt_is_1b(raw)
                            && !pgrx::varlena::varatt_is_1b_e(raw));
                    let t = if inline {
                        raw
                    } else {
                        pg_sys::pg_detoast_datum_packed(raw)
                    };
                    match pgrx::varlena::text_to_rust_str(t) {
                        Ok(s) => page.string(s),
                        // not UTF-8, which a UTF8 database (the only kind chumbo is installed
                        // in) never stores: as the value path reads it
                        Err(_) => page.value(&self.value(d)),
                    }
                }
                other => page.value(&other.value(d)),
            }
        }
    }
}

/// Reads the rows of one result: composite datums of one row type, each as the JSON value
/// `to_json` gives for it. The row type's columns are looked up once, at the first row.
#[derive(Default)]
pub struct RowReader {
    shape: Option<RowShape>,
}

struct RowShape {
    typid: pg_sys::Oid,
    typmod: i32,
    /// A copy of the row type's descriptor, in the current memory context (no reference held).
    desc: pg_sys::TupleDesc,
    /// (attribute index, name, kind) of the live columns, by name (the order of serde's Map, so
    /// a row's text has its keys where its Value would); None: a column needs row_to_json.
    columns: Option<Vec<(usize, String, Kind)>>,
    /// `"name":` of each column, JSON-escaped, in the order of `columns`.
    keys: Vec<String>,
    /// The live columns' names in the row type's declared order: how a table lists them.
    declared: Vec<String>,
    /// For each column in declared order, its place in `columns` (None: `columns` is None).
    declared_order: Option<Vec<usize>>,
    /// heap_deform_tuple's output, reused from row to row.
    values: Vec<pg_sys::Datum>,
    nulls: Vec<bool>,
}

impl RowReader {
    /// The names of the row type's columns, in declared order (after the first row).
    pub fn declared_columns(&self) -> Option<Vec<String>> {
        self.shape.as_ref().map(|s| s.declared.clone())
    }

    /// The JSON value of `datum`, equal to what `to_json` gives for it.
    ///
    /// # Safety
    /// `datum` is a non-null composite datum, valid for the duration of the call, and the memory
    /// context current at the first call outlives this reader.
    pub unsafe fn row(&mut self, datum: pg_sys::Datum) -> Value {
        // SAFETY: per this function's contract.
        unsafe {
            let shape = self.deform(datum);
            let Some(columns) = &shape.columns else {
                return row_to_json(datum);
            };
            let mut m = Map::new();
            for (i, name, kind) in columns {
                let v = if shape.nulls[*i] {
                    Value::Null
                } else {
                    kind.value(shape.values[*i])
                };
                m.insert(name.clone(), v);
            }
            Value::Object(m)
        }
    }

    /// Writes `datum` into `page` as text: its JSON line (the text of [RowReader::row]'s value)
    /// and its Markdown table row. false, and nothing written, when the row is of another type
    /// than the page's earlier rows (the page then has to be read as values).
    ///
    /// # Safety
    /// As for [RowReader::row].
    pub unsafe fn write_row(&mut self, datum: pg_sys::Datum, page: &mut TextPage) -> bool {
        // SAFETY: per this function's contract.
        unsafe {
            let before = self.shape.as_ref().map(|s| (s.typid, s.typmod));
            let shape = self.deform(datum);
            if page.rows > 0 && before != Some((shape.typid, shape.typmod)) {
                return false;
            }
            let Some(columns) = &shape.columns else {
                page.push_value(&row_to_json(datum), &shape.declared);
                return true;
            };
            if page.rows == 0 {
                page.set_columns(&shape.declared, shape.declared_order.clone());
            }
            page.begin_row();
            for ((i, _, kind), key) in columns.iter().zip(&shape.keys) {
                page.key(key);
                if shape.nulls[*i] {
                    page.null();
                } else {
                    kind.write(shape.values[*i], page);
                }
            }
            page.end_row();
            true
        }
    }

    /// The row type's shape, with `datum`'s columns deformed into it.
    ///
    /// # Safety
    /// As for [RowReader::row].
    unsafe fn deform(&mut self, datum: pg_sys::Datum) -> &RowShape {
        // SAFETY: per the contract of [RowReader::row]; the datums point into the detoasted
        // tuple, which lives in the current memory context until the call ends.
        unsafe {
            // A row from a function scan is a plain in-memory tuple: detoast (an FFI call, as
            // costly as reading a column) only a compressed or out-of-line one.
            let raw = datum.cast_mut_ptr::<pg_sys::varlena>();
            let header = if pgrx::varlena::varatt_is_4b_u(raw) {
                raw as pg_sys::HeapTupleHeader
            } else {
                pg_sys::pg_detoast_datum(raw) as pg_sys::HeapTupleHeader
            };
            let (typid, typmod) = (
                pgrx::heap_tuple_header_get_type_id(header),
                pgrx::heap_tuple_header_get_typmod(header),
            );
            if !matches!(&self.shape, Some(s) if s.typid == typid && s.typmod == typmod) {
                self.shape = Some(RowShape::of(typid, typmod));
            }
            let shape = self.shape.as_mut().expect("set just above");
            if shape.columns.is_some() {
                let mut tuple: pg_sys::HeapTupleData = std::mem::zeroed();
                tuple.t_len = pgrx::heap_tuple_header_get_datum_length(header) as u32;
                tuple.t_data = header;
                pg_sys::heap_deform_tuple(
                    &mut tuple,
                    shape.desc,
                    shape.values.as_mut_ptr(),
                    shape.nulls.as_mut_ptr(),
                );
            }
            shape
        }
    }
}

/// `"name":`, the name JSON-escaped.
fn json_key(name: &str) -> String {
    let mut k = serde_json::to_string(name).unwrap_or_default();
    k.push(':');
    k
}

/// row_to_json's value of a composite datum (a row with a column of a type read no other way).
///
/// # Safety
/// `datum` is a non-null composite datum.
unsafe fn row_to_json(datum: pg_sys::Datum) -> Value {
    let text = pgrx::direct_function_call::<String>(pg_sys::row_to_json, &[Some(datum)]);
    parse(&text.unwrap_or_default())
}

impl RowShape {
    /// # Safety
    /// `typid`/`typmod` name a row type (taken from a composite datum).
    unsafe fn of(typid: pg_sys::Oid, typmod: i32) -> RowShape {
        // SAFETY: per this function's contract; the copy is palloc'd and never freed early.
        unsafe {
            let desc = pg_sys::lookup_rowtype_tupdesc_copy(typid, typmod);
            let natts = (*desc).natts as usize;
            // PgTupleDesc finds the attributes on every major (18 moved them behind compact_attrs);
            // unchecked: it neither releases nor frees the copy, which RowShape keeps.
            let live: Vec<(usize, String, pg_sys::Oid)> =
                pgrx::PgTupleDesc::from_pg_unchecked(desc)
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| !a.attisdropped)
                    .map(|(i, a)| {
                        let name = CStr::from_ptr(a.attname.data.as_ptr());
                        (i, name.to_string_lossy().into_owned(), a.atttypid)
                    })
                    .collect();
            let declared: Vec<String> = live.iter().map(|(_, name, _)| name.clone()).collect();
            let columns = live
                .into_iter()
                .map(|(i, name, typ)| Kind::of(typ).map(|k| (i, name, k)))
                .collect::<Option<Vec<_>>>()
                .map(|mut c| {
                    c.sort_by(|a, b| a.1.cmp(&b.1));
                    c
                });
            // Sorted by name, a column's place; in declared (attribute) order, where it went.
            let declared_order = columns.as_ref().map(|c| {
                let mut order: Vec<usize> = (0..c.len()).collect();
                order.sort_by_key(|&k| c[k].0);
                order
            });
            let keys = columns
                .iter()
                .flatten()
                .map(|(_, name, _)| json_key(name))
                .collect();
            RowShape {
                typid,
                typmod,
                desc,
                columns,
                keys,
                declared,
                declared_order,
                values: vec![pg_sys::Datum::from(0); natts],
                nulls: vec![false; natts],
            }
        }
    }
}

/// uuid_out's text of 16 bytes: lowercase hex in groups of 8-4-4-4-12.
fn uuid_text(b: &[u8]) -> [u8; 36] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = [b'-'; 36];
    let mut at = 0;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1; // the dash already there
        }
        s[at] = DIGITS[(byte >> 4) as usize];
        s[at + 1] = DIGITS[(byte & 15) as usize];
        at += 2;
    }
    s
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use pgrx::prelude::*;

    /// Reads `query`'s first column (composite rows) both ways: as values (RowReader::row) and as
    /// text (RowReader::write_row). Returns (values, page, whether every row was written, the
    /// declared columns).
    fn both(query: &str) -> (Vec<Value>, TextPage, bool, Vec<String>) {
        Spi::connect(|client| {
            let mut table = client.select(query, None, &[]).expect("the query runs");
            let (mut values_reader, mut text_reader) = (RowReader::default(), RowReader::default());
            let (mut values, mut page, mut all) = (vec![], TextPage::default(), true);
            while table.next().is_some() {
                let d = table
                    .get_datum_by_ordinal(1)
                    .expect("a column")
                    .expect("a row");
                // SAFETY: non-null composite datums, read while SPI's context lives.
                unsafe {
                    values.push(values_reader.row(d));
                    all &= text_reader.write_row(d, &mut page);
                }
            }
            let declared = text_reader.declared_columns().unwrap_or_default();
            (values, page, all, declared)
        })
    }

    /// The text a page gets as text is the text its rows get as values: JSON lines, the table,
    /// the rendered body, the structuredContent array, the last row.
    fn assert_same(query: &str) {
        let (values, page, all, declared) = both(query);
        assert!(all, "{query}: every row is written as text");
        let lines: Vec<String> = values.iter().map(Value::to_string).collect();
        assert_eq!(page.lines(), lines.join("\n"), "{query}: JSON lines");
        assert_eq!(page.lines_len(), page.lines().len());
        assert_eq!(
            page.text(page.lines_len()),
            crate::render::rows(&values, page.lines_len(), &declared),
            "{query}: rendered text"
        );
        let array = page.clone().into_array();
        assert_eq!(
            serde_json::from_str::<Value>(&array).unwrap(),
            Value::Array(values.clone()),
            "{query}: structuredContent rows"
        );
        assert_eq!(array, Value::Array(values.clone()).to_string());
        assert_eq!(page.last_row(), values.last().cloned());
        assert_eq!(page.into_values(), values);
    }

    #[pg_test]
    fn rows_as_text_equal_rows_as_values() {
        Spi::run(
            "create type pg_temp.every_kind as (b boolean, s smallint, i integer, l bigint,
                 t text, v varchar, u uuid, d date, ts timestamp, tz timestamptz, r real,
                 f double precision, n numeric, j json, jb jsonb, \"a|b\" text, \"Z\" int)",
        )
        .unwrap();
        let every_kind = "select row(true, -32768, 2147483647, 9007199254740993,
              e'a|b\\\\c\\nd\\r\\ne\\rf \"q\" \\u00e9 \\t', 'x', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
              '0044-03-15 BC', 'infinity', '2026-12-01 10:00:00.123456+02', 'NaN', '1e300', 12345678901234567890.123,
              '{\"z\":1,\"a\":[1,\"x|y\",null],\"a\":2}', '{\"k\":\"v\"}', 'pipe', 7)::pg_temp.every_kind
            union all select row(false, 0, 0, 0, '', '', null, 'infinity', '-infinity', null, '-Infinity',
              '0.1', 'NaN', '\"just a string\"', 'null', null, null)::pg_temp.every_kind
            union all select row(null, null, null, null, null, null, null, null, null, null, null, null,
              null, null, null, null, null)::pg_temp.every_kind";
        assert_same(every_kind);
        // narrow flat rows become a table, one row stays JSON lines
        Spi::run("create type pg_temp.narrow as (id int, name text)").unwrap();
        assert_same("select (i, 'n')::pg_temp.narrow from generate_series(1, 20) i");
        // the table lists columns as declared (the JSON keys stay sorted): both ways
        Spi::run("create type pg_temp.note as (title text, id int, created_at date)").unwrap();
        let notes =
            "select ('t' || i, i, date '2026-12-01')::pg_temp.note from generate_series(1, 20) i";
        assert_same(notes);
        let (_, page, _, _) = both(notes);
        let table = page.table().unwrap();
        assert!(
            table.starts_with(
                "| title | id | created_at |\n| --- | --- | --- |\n| t1 | 1 | 2026-12-01 |"
            ),
            "{table}"
        );
        assert!(page
            .lines()
            .starts_with(r#"{"created_at":"2026-12-01","id":1,"title":"t1"}"#));
        // a text compressed in its table's row stays compressed in the whole-row value: it is
        // detoasted, not read as it lies (this checks the text; that compressed bytes read as they
        // lie would mostly fail UTF-8 and fall back to the value path is why it cannot check more)
        Spi::run(
            "create temp table long_texts (id int, body text);
             insert into long_texts select i, repeat('ab|c', 2000 * i) from generate_series(1, 2) i",
        )
        .unwrap();
        assert!(Spi::get_one::<bool>(
            "select bool_and(pg_column_compression(body) is not null) from long_texts"
        )
        .unwrap()
        .unwrap());
        assert_same("select t from long_texts t");
        assert_same("select row(1, 'n')::pg_temp.narrow");
        // a type chumbo reads through row_to_json (an array column), and a dropped column
        Spi::run("create type pg_temp.with_array as (id int, tags text[])").unwrap();
        assert_same("select row(1, array['a', 'b|c'])::pg_temp.with_array");
        Spi::run("create table pg_temp.dropped (a int, gone text, z text)").unwrap();
        Spi::run("alter table pg_temp.dropped drop column gone").unwrap();
        assert_same("select row(1, 'z')::pg_temp.dropped");
        // extra_float_digits reaches numbers as it does to_json
        Spi::run("create type pg_temp.float_pair as (id int, x float8)").unwrap();
        Spi::run("set local extra_float_digits = 0").unwrap();
        assert_same("select row(1, 0.1::float8)::pg_temp.float_pair");
    }

    #[pg_test]
    fn a_row_of_another_type_is_not_written() {
        Spi::run("create type pg_temp.one_t as (a int)").unwrap();
        Spi::run("create type pg_temp.two_t as (b int)").unwrap();
        Spi::connect(|client| {
            let (mut reader, mut page) = (RowReader::default(), TextPage::default());
            for (query, written) in [
                ("select row(1)::pg_temp.one_t", true),
                ("select row(2)::pg_temp.two_t", false),
            ] {
                let mut t = client.select(query, None, &[]).unwrap();
                t.next();
                let d = t.get_datum_by_ordinal(1).unwrap().unwrap();
                // SAFETY: a non-null composite datum, read while SPI's context lives.
                assert_eq!(unsafe { reader.write_row(d, &mut page) }, written);
            }
            assert_eq!(page.rows(), 1);
            assert_eq!(page.lines(), r#"{"a":1}"#);
        });
    }

    /// A row that did not fit the page is taken back whole.
    #[pg_test]
    fn truncate_takes_the_last_row_back() {
        Spi::run("create type pg_temp.pair as (id int, name text)").unwrap();
        Spi::connect(|client| {
            let mut t = client
                .select(
                    "select row(i, 'n' || i)::pg_temp.pair from generate_series(1, 2) i",
                    None,
                    &[],
                )
                .unwrap();
            let (mut reader, mut page, mut mark) =
                (RowReader::default(), TextPage::default(), None);
            while t.next().is_some() {
                let d = t.get_datum_by_ordinal(1).unwrap().unwrap();
                mark = Some(page.mark());
                // SAFETY: a non-null composite datum, read while SPI's context lives.
                assert!(unsafe { reader.write_row(d, &mut page) });
            }
            assert_eq!(page.rows(), 2);
            page.truncate(mark.unwrap());
            assert_eq!(page.rows(), 1);
            assert_eq!(page.lines(), r#"{"id":1,"name":"n1"}"#);
            assert_eq!(
                page.table().unwrap(),
                "| id | name |\n| --- | --- |\n| 1 | n1 |"
            );
            assert_eq!(page.into_array(), r#"[{"id":1,"name":"n1"}]"#);
        });
    }
}
