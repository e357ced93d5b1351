//! What a capability returned, as the JSON value PostgreSQL's `to_json` gives for it.
//!
//! A row (a composite datum) is read column by column: values of the common types become JSON
//! values directly, so `to_json` never writes a row's text for serde to parse back (the two were
//! a third of a 50-row call). A row with a column of any other type goes through `row_to_json`,
//! the function `to_json` itself calls for a row, and its text is parsed as before.

use pgrx::pg_sys;
use serde_json::{Map, Number, Value};
use std::ffi::CStr;

/// A value PostgreSQL printed as JSON. Its text is valid JSON, so the only failure is serde's
/// nesting limit (128 levels), raised as the call's error like any other.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| {
        let reason = if e.to_string().contains("recursion limit") {
            "chumbo: the result is nested deeper than 128 levels"
        } else {
            "chumbo: the result is not valid JSON"
        };
        pgrx::ereport!(
            pgrx::PgLogLevel::ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            reason
        );
        unreachable!("ereport(ERROR) does not return")
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
                Kind::Uuid => Value::String(uuid_text(std::slice::from_raw_parts(
                    d.cast_mut_ptr::<u8>(),
                    16,
                ))),
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
    /// (attribute index, name, kind) of the live columns; None: a column needs row_to_json.
    columns: Option<Vec<(usize, String, Kind)>>,
    /// heap_deform_tuple's output, reused from row to row.
    values: Vec<pg_sys::Datum>,
    nulls: Vec<bool>,
}

impl RowReader {
    /// The JSON value of `datum`, equal to what `to_json` gives for it.
    ///
    /// # Safety
    /// `datum` is a non-null composite datum, valid for the duration of the call, and the memory
    /// context current at the first call outlives this reader.
    pub unsafe fn row(&mut self, datum: pg_sys::Datum) -> Value {
        // SAFETY: per this function's contract; the datums point into the detoasted tuple, which
        // lives in the current memory context until the call ends.
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
            let shape = match &mut self.shape {
                Some(s) if s.typid == typid && s.typmod == typmod => s,
                _ => self.shape.insert(RowShape::of(typid, typmod)),
            };
            let Some(columns) = &shape.columns else {
                let text =
                    pgrx::direct_function_call::<String>(pg_sys::row_to_json, &[Some(datum)]);
                return parse(&text.unwrap_or_default());
            };
            let mut tuple: pg_sys::HeapTupleData = std::mem::zeroed();
            tuple.t_len = pgrx::heap_tuple_header_get_datum_length(header) as u32;
            tuple.t_data = header;
            pg_sys::heap_deform_tuple(
                &mut tuple,
                shape.desc,
                shape.values.as_mut_ptr(),
                shape.nulls.as_mut_ptr(),
            );
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
}

impl RowShape {
    /// # Safety
    /// `typid`/`typmod` name a row type (taken from a composite datum).
    unsafe fn of(typid: pg_sys::Oid, typmod: i32) -> RowShape {
        // SAFETY: per this function's contract; the copy is palloc'd and never freed early.
        unsafe {
            let desc = pg_sys::lookup_rowtype_tupdesc_copy(typid, typmod);
            let natts = (*desc).natts as usize;
            let columns = (*desc)
                .attrs
                .as_slice(natts)
                .iter()
                .enumerate()
                .filter(|(_, a)| !a.attisdropped)
                .map(|(i, a)| {
                    let name = CStr::from_ptr(a.attname.data.as_ptr());
                    Kind::of(a.atttypid).map(|k| (i, name.to_string_lossy().into_owned(), k))
                })
                .collect();
            RowShape {
                typid,
                typmod,
                desc,
                columns,
                values: vec![pg_sys::Datum::from(0); natts],
                nulls: vec![false; natts],
            }
        }
    }
}

/// uuid_out's text of 16 bytes: lowercase hex in groups of 8-4-4-4-12.
fn uuid_text(b: &[u8]) -> String {
    let hex = crate::principal::hex(b);
    let mut s = String::with_capacity(36);
    for (i, group) in [0..8, 8..12, 12..16, 16..20, 20..32]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            s.push('-');
        }
        s.push_str(&hex[group]);
    }
    s
}
