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

/// Column types read without `to_json`: each gives exactly the value `to_json`'s text parses to.
fn read_directly(typid: pg_sys::Oid) -> bool {
    use pg_sys::*;
    [
        BOOLOID,
        INT2OID,
        INT4OID,
        INT8OID,
        FLOAT4OID,
        FLOAT8OID,
        NUMERICOID,
        TEXTOID,
        VARCHAROID,
        UUIDOID,
        DATEOID,
        TIMESTAMPOID,
        TIMESTAMPTZOID,
        JSONOID,
        JSONBOID,
    ]
    .contains(&typid)
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
    /// (attribute index, name, type) of the live columns; None: a column needs row_to_json.
    columns: Option<Vec<(usize, String, pg_sys::Oid)>>,
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
            let shape = match &self.shape {
                Some(s) if s.typid == typid && s.typmod == typmod => s,
                _ => self.shape.insert(RowShape::of(typid, typmod)),
            };
            let Some(columns) = &shape.columns else {
                let text =
                    pgrx::direct_function_call::<String>(pg_sys::row_to_json, &[Some(datum)]);
                return parse(&text.unwrap_or_default());
            };
            let natts = (*shape.desc).natts as usize;
            let mut values = vec![pg_sys::Datum::from(0); natts];
            let mut nulls = vec![false; natts];
            let mut tuple: pg_sys::HeapTupleData = std::mem::zeroed();
            tuple.t_len = pgrx::heap_tuple_header_get_datum_length(header) as u32;
            tuple.t_data = header;
            pg_sys::heap_deform_tuple(
                &mut tuple,
                shape.desc,
                values.as_mut_ptr(),
                nulls.as_mut_ptr(),
            );
            let mut m = Map::new();
            for (i, name, typid) in columns {
                let v = if nulls[*i] {
                    Value::Null
                } else {
                    column(values[*i], *typid)
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
            let attrs = (*desc).attrs.as_slice((*desc).natts as usize);
            let columns = attrs
                .iter()
                .enumerate()
                .filter(|(_, a)| !a.attisdropped)
                .map(|(i, a)| {
                    read_directly(a.atttypid).then(|| {
                        let name = CStr::from_ptr(a.attname.data.as_ptr());
                        (i, name.to_string_lossy().into_owned(), a.atttypid)
                    })
                })
                .collect();
            RowShape {
                typid,
                typmod,
                desc,
                columns,
            }
        }
    }
}

/// One non-null column of a type [read_directly] accepts.
///
/// # Safety
/// `d` is a non-null datum of type `typid`.
unsafe fn column(d: pg_sys::Datum, typid: pg_sys::Oid) -> Value {
    use pg_sys::*;
    // SAFETY: per this function's contract: each arm reads the datum as its type's representation.
    unsafe {
        match typid {
            BOOLOID => Value::Bool(d.value() != 0),
            INT2OID => Value::from(d.value() as i16),
            INT4OID => Value::from(d.value() as i32),
            INT8OID => Value::from(d.value() as i64),
            TEXTOID | VARCHAROID => Value::String(
                <std::string::String as pgrx::FromDatum>::from_polymorphic_datum(d, false, typid)
                    .unwrap_or_default(),
            ),
            UUIDOID => Value::String(uuid_text(std::slice::from_raw_parts(
                d.cast_mut_ptr::<u8>(),
                16,
            ))),
            // to_json's own encoding of dates and times (ISO 8601, "infinity" spelled out)
            DATEOID | TIMESTAMPOID | TIMESTAMPTZOID => {
                let s =
                    pg_sys::JsonEncodeDateTime(std::ptr::null_mut(), d, typid, std::ptr::null());
                Value::String(CStr::from_ptr(s).to_string_lossy().into_owned())
            }
            // to_json writes the output function's text: a number when it is one (the session's
            // extra_float_digits applies as it does there), a string for NaN and the infinities
            _ => {
                let (mut out, mut varlena) = (pg_sys::Oid::INVALID, false);
                pg_sys::getTypeOutputInfo(typid, &mut out, &mut varlena);
                let text = CStr::from_ptr(pg_sys::OidOutputFunctionCall(out, d)).to_string_lossy();
                match typid {
                    JSONOID | JSONBOID => parse(&text),
                    _ => match serde_json::from_str::<Number>(&text) {
                        Ok(n) => Value::Number(n),
                        Err(_) => Value::String(text.into_owned()),
                    },
                }
            }
        }
    }
}

/// uuid_out's text of 16 bytes: lowercase hex in groups of 8-4-4-4-12.
fn uuid_text(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(HEX[(byte >> 4) as usize] as char);
        s.push(HEX[(byte & 15) as usize] as char);
    }
    s
}
