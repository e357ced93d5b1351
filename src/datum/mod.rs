//! Datum plumbing for chumbo's entry points: jsonb in as text (so a body too deep for serde
//! becomes a JSON-RPC error rather than an ERROR while converting the argument), jsonb out built
//! straight from the response value (no JSON text written and parsed again).

use pgrx::pg_sys;
use pgrx::prelude::*;

mod json_text;
use json_text::Token;

/// A jsonb argument received as its text, parsed by us: a body too deep for serde must become a
/// JSON-RPC error, not an ERROR raised while converting the argument.
pub struct JsonbText(pub String);

impl pgrx::FromDatum for JsonbText {
    // SAFETY: pgrx passes a datum of the declared argument type (jsonb) or null; jsonb_out
    // detoasts it and returns a palloc'd copy of its text.
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null {
            return None;
        }
        let text =
            pgrx::direct_function_call::<&core::ffi::CStr>(pg_sys::jsonb_out, &[Some(datum)])?;
        Some(JsonbText(text.to_string_lossy().into_owned()))
    }
}
/// A jsonb argument type read through its FromDatum, exactly like pgrx's own jsonb argument.
macro_rules! jsonb_argument {
    ($t:ty) => {
        impl_sql_translatable!($t, arg_only = "jsonb");

        // SAFETY: the type is read through its FromDatum exactly like pgrx's own jsonb argument.
        unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for $t {
            // SAFETY: pgrx calls this with an argument of the declared (jsonb) type.
            unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                // SAFETY: forwarded from the caller's contract (a non-null jsonb argument).
                unsafe {
                    arg.unbox_arg_using_from_datum()
                        .unwrap_or_else(|| panic!("argument {index} must not be null"))
                }
            }

            // SAFETY: pgrx calls this with an argument of the declared (jsonb) type, possibly null.
            unsafe fn unbox_nullable_arg(
                arg: pgrx::callconv::Arg<'_, 'fcx>,
            ) -> pgrx::nullable::Nullable<Self> {
                // SAFETY: forwarded from the caller's contract.
                unsafe { arg.unbox_arg_using_from_datum().into() }
            }
        }
    };
}
jsonb_argument!(JsonbText);

/// A jsonb argument read off its binary form (jsonb's iterator: no jsonb_out text for serde to
/// parse again); Err([TooDeep]) when it nests deeper than serde allows, for the entry point to
/// answer with a JSON-RPC error rather than an ERROR raised while converting the argument.
pub struct JsonbArg(pub Result<serde_json::Value, TooDeep>);

/// A jsonb value nested deeper than [MAX_DEPTH] levels.
#[derive(Debug)]
pub struct TooDeep;

impl pgrx::FromDatum for JsonbArg {
    // SAFETY: pgrx passes a datum of the declared argument type (jsonb) or null.
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: a non-null jsonb datum, per the caller's contract.
        (!is_null).then(|| JsonbArg(unsafe { try_value_of_jsonb(datum) }))
    }
}
jsonb_argument!(JsonbArg);

/// jsonb_in of `text`: raises jsonb_in's own ERROR on what jsonb cannot hold.
fn jsonb_in(text: String) -> pg_sys::Datum {
    let text = std::ffi::CString::new(text).expect("serialized JSON has no NUL byte");
    // SAFETY: a NUL-terminated C string that outlives the call; jsonb_in parses and copies it
    // into a palloc'd jsonb datum (and raises an ERROR on invalid input).
    unsafe {
        pgrx::direct_function_call_as_datum(
            pg_sys::jsonb_in,
            &[Some(pg_sys::Datum::from(text.as_ptr()))],
        )
    }
    .expect("jsonb_in returns a datum or raises")
}

/// A jsonb value without JSON text in between: a result built straight from the response value
/// the way jsonb_build_object builds one (pushJsonbValue), so the response is never written out
/// for jsonb_in to parse back; and a jsonb datum (a row of a page) read with jsonb's iterator
/// instead of printed by jsonb_out for serde to parse.
pub struct JsonValue(pub serde_json::Value);

impl pgrx::IntoDatum for JsonValue {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(jsonb_of(&self.0))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::JSONBOID
    }
}

impl pgrx::FromDatum for JsonValue {
    // SAFETY: pgrx passes a datum of a jsonb column or argument, or null.
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: a non-null jsonb datum, per the caller's contract.
        (!is_null).then(|| JsonValue(unsafe { value_of_jsonb(datum) }))
    }
}

// SAFETY: JsonValue returns a jsonb datum built by into_datum, the function's declared result type.
unsafe impl pgrx::callconv::BoxRet for JsonValue {
    // SAFETY: pgrx calls this with the fcinfo of the function whose result type is jsonb.
    unsafe fn box_into<'fcx>(
        self,
        fcinfo: &mut pgrx::callconv::FcInfo<'fcx>,
    ) -> pgrx::datum::Datum<'fcx> {
        match pgrx::IntoDatum::into_datum(self) {
            // SAFETY: the datum was made for this call's result type just above.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}
impl_sql_translatable!(JsonValue, "jsonb");

/// The jsonb datum of `v`, the same value jsonb_in gives for `v`'s JSON text.
pub fn jsonb_of(v: &serde_json::Value) -> pg_sys::Datum {
    use crate::identity::spliced;
    use serde_json::Value;
    spliced::with_held(|held| {
        // A whole reply held as text (chumbo.mcp's, written for its byte count): its tokens, when
        // it is a container the reader takes.
        if let Some(tokens) = match v {
            Value::String(s) => held
                .text(s)
                .filter(|json| json.starts_with(['{', '[']))
                .and_then(|json| json_text::tokens(json, MAX_DEPTH)),
            _ => None,
        } {
            let mut state: *mut pg_sys::JsonbParseState = std::ptr::null_mut();
            // SAFETY: the tokens (and the held text they borrow) outlive JsonbValueToJsonb; a
            // container's tokens are balanced, so the last END returns the finished root.
            return unsafe {
                let root = push_tokens(&mut state, &tokens, pg_sys::JsonbIteratorToken::WJB_ELEM);
                pg_sys::Datum::from(pg_sys::JsonbValueToJsonb(root))
            };
        }
        // jsonb cannot hold U+0000 and a scalar document needs the raw-scalar wrapper: both are
        // left to jsonb_in (of the text with held texts in place), which refuses the first with
        // its own error. Neither occurs in a response.
        if !matches!(v, Value::Object(_) | Value::Array(_)) || has_nul(v, held) {
            return jsonb_in(spliced::write(v));
        }
        let mut built = Built::default();
        let mut state: *mut pg_sys::JsonbParseState = std::ptr::null_mut();
        // SAFETY: every string pointer handed to pushJsonbValue points into `v` or into `built`,
        // both of which outlive JsonbValueToJsonb (the only step that reads them: it copies them
        // into the new datum); the tokens are balanced by construction, so the last END returns
        // the finished root.
        unsafe {
            let root = push(
                &mut state,
                v,
                pg_sys::JsonbIteratorToken::WJB_ELEM,
                held,
                &mut built,
            );
            pg_sys::Datum::from(pg_sys::JsonbValueToJsonb(root))
        }
    })
}

/// The held texts read while a value is built, kept until the datum is assembled (jsonb's
/// values point into them until then).
#[derive(Default)]
struct Built<'a> {
    texts: Vec<Vec<Token<'a>>>,
}

/// Whether `v` holds U+0000 outside its placeholders (which held texts replace).
fn has_nul(v: &serde_json::Value, held: &crate::identity::spliced::Held) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => s.contains('\0') && held.text(s).is_none(),
        Value::Array(a) => a.iter().any(|x| has_nul(x, held)),
        Value::Object(m) => m.iter().any(|(k, x)| k.contains('\0') || has_nul(x, held)),
        _ => false,
    }
}

/// Pushes `v` as the next token `seq` (WJB_ELEM or WJB_VALUE); returns what pushJsonbValue
/// returned (the finished container after an END). A placeholder's held text goes in its place:
/// a JSON string decoded and pushed as a string (a page's text block: jsonb_in would lex it
/// character by character), anything else as jsonb_in makes it.
///
/// # Safety
/// `state` is a parse state built only by these calls, and `v` and `built` outlive the datum's
/// assembly.
unsafe fn push<'a>(
    state: &mut *mut pg_sys::JsonbParseState,
    v: &serde_json::Value,
    seq: pg_sys::JsonbIteratorToken::Type,
    held: &crate::identity::spliced::Held<'a>,
    built: &mut Built<'a>,
) -> *mut pg_sys::JsonbValue {
    use pg_sys::JsonbIteratorToken as T;
    use serde_json::Value;
    let null = std::ptr::null_mut();
    // SAFETY: per this function's contract.
    unsafe {
        match v {
            Value::Object(m) => {
                pg_sys::pushJsonbValue(state, T::WJB_BEGIN_OBJECT, null);
                for (k, x) in m {
                    let mut key = string(k);
                    pg_sys::pushJsonbValue(state, T::WJB_KEY, &mut key);
                    push(state, x, T::WJB_VALUE, held, built);
                }
                pg_sys::pushJsonbValue(state, T::WJB_END_OBJECT, null)
            }
            Value::Array(a) => {
                pg_sys::pushJsonbValue(state, T::WJB_BEGIN_ARRAY, null);
                for x in a {
                    push(state, x, T::WJB_ELEM, held, built);
                }
                pg_sys::pushJsonbValue(state, T::WJB_END_ARRAY, null)
            }
            Value::String(s) => match held.text(s) {
                Some(json) => push_held(state, json, seq, built),
                None => pg_sys::pushJsonbValue(state, seq, &mut string(s)),
            },
            scalar => {
                let mut jv = scalar_of(scalar);
                pg_sys::pushJsonbValue(state, seq, &mut jv)
            }
        }
    }
}

/// Pushes a held JSON text as the next token `seq`: read by [json_text] (no jsonb_in lexing), or
/// what jsonb_in makes of it when that reader gives up. (The reader's `\u` escapes are UTF-8, as
/// the database's are: chumbo is installed only in a UTF8 database, sql/bootstrap.sql.)
///
/// # Safety
/// As for [push].
unsafe fn push_held<'a>(
    state: &mut *mut pg_sys::JsonbParseState,
    json: &'a str,
    seq: pg_sys::JsonbIteratorToken::Type,
    built: &mut Built<'a>,
) -> *mut pg_sys::JsonbValue {
    if let Some(tokens) = json_text::tokens(json, MAX_DEPTH) {
        built.texts.push(tokens);
        let tokens = built.texts.last().expect("pushed just above");
        // SAFETY: the tokens live in `built` (per this function's contract).
        return unsafe { push_tokens(state, tokens, seq) };
    }
    let datum = jsonb_in(json.to_string());
    // SAFETY: jsonb_in returned a palloc'd, detoasted jsonb datum that lives until the call
    // ends; its root container is what a binary JsonbValue points to (pushJsonbValue unpacks it).
    unsafe {
        let jb = datum.cast_mut_ptr::<pg_sys::Jsonb>();
        let mut jv = pg_sys::JsonbValue {
            type_: pg_sys::jbvType::jbvBinary,
            val: pg_sys::JsonbValue__bindgen_ty_1 {
                binary: Default::default(),
            },
        };
        jv.val.binary.len = pgrx::varsize_any(jb.cast()) as core::ffi::c_int;
        jv.val.binary.data = &mut (*jb).root;
        pg_sys::pushJsonbValue(state, seq, &mut jv)
    }
}

/// Pushes one JSON text's tokens, the first as the next token `seq`.
///
/// # Safety
/// As for [push]; `tokens` is a whole value (balanced) and outlives the datum's assembly.
unsafe fn push_tokens(
    state: &mut *mut pg_sys::JsonbParseState,
    tokens: &[Token],
    seq: pg_sys::JsonbIteratorToken::Type,
) -> *mut pg_sys::JsonbValue {
    use pg_sys::jbvType as J;
    use pg_sys::JsonbIteratorToken as T;
    let null = std::ptr::null_mut();
    // Whether each open container is an object (its scalars are values) or an array (elements).
    let mut open: Vec<bool> = Vec::new();
    let mut last = null;
    for token in tokens {
        let next = match open.last() {
            Some(true) => T::WJB_VALUE,
            Some(false) => T::WJB_ELEM,
            None => seq,
        };
        let of = |type_, val| pg_sys::JsonbValue { type_, val };
        // SAFETY: per this function's contract; every scalar's bytes live in `tokens`.
        last = unsafe {
            match token {
                Token::BeginObject | Token::BeginArray => {
                    let object = matches!(token, Token::BeginObject);
                    open.push(object);
                    let begin = if object {
                        T::WJB_BEGIN_OBJECT
                    } else {
                        T::WJB_BEGIN_ARRAY
                    };
                    pg_sys::pushJsonbValue(state, begin, null)
                }
                Token::EndObject | Token::EndArray => {
                    open.pop();
                    let end = if matches!(token, Token::EndObject) {
                        T::WJB_END_OBJECT
                    } else {
                        T::WJB_END_ARRAY
                    };
                    pg_sys::pushJsonbValue(state, end, null)
                }
                Token::Key(k) => pg_sys::pushJsonbValue(state, T::WJB_KEY, &mut string(k)),
                Token::String(s) => pg_sys::pushJsonbValue(state, next, &mut string(s)),
                Token::Number(n) => pg_sys::pushJsonbValue(state, next, &mut numeric(n)),
                Token::Bool(b) => pg_sys::pushJsonbValue(
                    state,
                    next,
                    &mut of(J::jbvBool, pg_sys::JsonbValue__bindgen_ty_1 { boolean: *b }),
                ),
                Token::Null => pg_sys::pushJsonbValue(
                    state,
                    next,
                    &mut of(
                        J::jbvNull,
                        pg_sys::JsonbValue__bindgen_ty_1 { boolean: false },
                    ),
                ),
            }
        };
    }
    last
}

fn string(s: &str) -> pg_sys::JsonbValue {
    let mut jv = pg_sys::JsonbValue {
        type_: pg_sys::jbvType::jbvString,
        val: pg_sys::JsonbValue__bindgen_ty_1 {
            string: Default::default(),
        },
    };
    // jsonb strings are far below 2 GiB here: the response is bounded by max_result_bytes.
    jv.val.string.len = s.len() as core::ffi::c_int;
    jv.val.string.val = s.as_ptr() as *mut core::ffi::c_char;
    jv
}

/// A jsonb number of a JSON number's text: numeric_in on it, exactly what jsonb_in does.
fn numeric(text: &str) -> pg_sys::JsonbValue {
    let text = std::ffi::CString::new(text).expect("a number has no NUL");
    // SAFETY: numeric_in(cstring, oid, int4) with a valid C string that outlives the call; it
    // returns a palloc'd Numeric or raises.
    let numeric = unsafe {
        pgrx::direct_function_call_as_datum(
            pg_sys::numeric_in,
            &[
                Some(pg_sys::Datum::from(text.as_ptr())),
                Some(pg_sys::Datum::from(pg_sys::Oid::INVALID)),
                Some(pg_sys::Datum::from(-1i32)),
            ],
        )
    }
    .expect("numeric_in returns a datum or raises");
    pg_sys::JsonbValue {
        type_: pg_sys::jbvType::jbvNumeric,
        val: pg_sys::JsonbValue__bindgen_ty_1 {
            numeric: numeric.cast_mut_ptr(),
        },
    }
}

fn scalar_of(v: &serde_json::Value) -> pg_sys::JsonbValue {
    use pg_sys::jbvType as J;
    use serde_json::Value;
    let of = |type_, val| pg_sys::JsonbValue { type_, val };
    match v {
        Value::String(s) => string(s),
        Value::Bool(b) => of(J::jbvBool, pg_sys::JsonbValue__bindgen_ty_1 { boolean: *b }),
        Value::Number(n) => numeric(&n.to_string()),
        // Objects and arrays are pushed by `push`; only null is left.
        _ => of(
            J::jbvNull,
            pg_sys::JsonbValue__bindgen_ty_1 { boolean: false },
        ),
    }
}

/// How deep a value read from jsonb may nest (serde_json's parser allows as much).
const MAX_DEPTH: usize = 128;

/// The value of a jsonb datum, read off its binary form with jsonb's iterator: no JSON text is
/// printed (jsonb_out) and parsed back (serde). A row of a page passes here once.
///
/// # Safety
/// `datum` is a non-null jsonb datum, valid for the duration of the call.
pub unsafe fn value_of_jsonb(datum: pg_sys::Datum) -> serde_json::Value {
    // SAFETY: forwarded from the caller's contract.
    unsafe { try_value_of_jsonb(datum) }
        .unwrap_or_else(|TooDeep| panic!("a JSON value nested deeper than {MAX_DEPTH} levels"))
}

/// [value_of_jsonb], or Err past [MAX_DEPTH] levels.
///
/// # Safety
/// As for [value_of_jsonb].
pub unsafe fn try_value_of_jsonb(datum: pg_sys::Datum) -> Result<serde_json::Value, TooDeep> {
    use pg_sys::JsonbIteratorToken as T;
    use serde_json::{Map, Value};
    enum Open {
        /// The elements, and whether this is a raw scalar document's wrapper.
        Array(Vec<Value>, bool),
        Object(Map<String, Value>, Option<String>),
    }
    // SAFETY: per this function's contract; the detoasted copy (if any) lives in the current
    // memory context until the call ends, and every string is copied out before it is used.
    unsafe {
        // pg_detoast_datum, not the _packed one: Jsonb needs the 4-byte header a short (1-byte
        // header) datum read from a table does not have.
        let jb = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()) as *mut pg_sys::Jsonb;
        let mut it = pg_sys::JsonbIteratorInit(&mut (*jb).root);
        let mut v: pg_sys::JsonbValue = std::mem::zeroed();
        let mut stack: Vec<Open> = vec![];
        let mut done = None;
        loop {
            let token = pg_sys::JsonbIteratorNext(&mut it, &mut v, false);
            let finished = match token {
                T::WJB_BEGIN_ARRAY => {
                    stack.push(Open::Array(vec![], v.val.array.rawScalar));
                    None
                }
                T::WJB_BEGIN_OBJECT => {
                    stack.push(Open::Object(Map::new(), None));
                    None
                }
                T::WJB_KEY => {
                    if let Some(Open::Object(_, key)) = stack.last_mut() {
                        *key = Some(text_of(&v));
                    }
                    None
                }
                T::WJB_VALUE | T::WJB_ELEM => Some(scalar_value(&v)),
                T::WJB_END_ARRAY | T::WJB_END_OBJECT => match stack.pop() {
                    // a raw scalar document is a one-element array marked rawScalar
                    Some(Open::Array(mut a, true)) if a.len() == 1 => a.pop(),
                    Some(Open::Array(a, _)) => Some(Value::Array(a)),
                    Some(Open::Object(m, _)) => Some(Value::Object(m)),
                    None => None,
                },
                _ => break,
            };
            // serde's own limit: deeper values would make its (recursive) writer and drop
            // overflow the stack.
            if stack.len() > MAX_DEPTH {
                return Err(TooDeep);
            }
            if let Some(x) = finished {
                match stack.last_mut() {
                    Some(Open::Array(a, _)) => a.push(x),
                    Some(Open::Object(m, key)) => {
                        m.insert(key.take().unwrap_or_default(), x);
                    }
                    None => done = Some(x),
                }
            }
        }
        Ok(done.unwrap_or(Value::Null))
    }
}

/// A jsonb string's text (UTF-8: the database's encoding, as jsonb_out's text would be).
///
/// # Safety
/// `v` is a jbvString value from the iterator.
unsafe fn text_of(v: &pg_sys::JsonbValue) -> String {
    // SAFETY: per this function's contract: val/len describe the string inside the datum.
    unsafe {
        let s = v.val.string;
        let bytes = std::slice::from_raw_parts(s.val as *const u8, s.len as usize);
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// A scalar from the iterator as a serde value; a number goes through its numeric text, as
/// jsonb_out would print it.
///
/// # Safety
/// `v` is a scalar value from the iterator.
unsafe fn scalar_value(v: &pg_sys::JsonbValue) -> serde_json::Value {
    use pg_sys::jbvType as J;
    use serde_json::Value;
    // SAFETY: per this function's contract: the union member read is the one `type_` names.
    unsafe {
        match v.type_ {
            J::jbvString => Value::String(text_of(v)),
            J::jbvBool => Value::Bool(v.val.boolean),
            J::jbvNumeric => {
                let text = pgrx::direct_function_call::<&core::ffi::CStr>(
                    pg_sys::numeric_out,
                    &[Some(pg_sys::Datum::from(v.val.numeric))],
                )
                .expect("numeric_out returns a string");
                serde_json::from_str(text.to_str().expect("numeric text is ASCII"))
                    .expect("numeric_out prints a JSON number")
            }
            _ => Value::Null,
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Text held outside a value (src/identity/spliced.rs) is in the jsonb jsonb_of builds.
    #[pgrx::pg_test]
    fn jsonb_of_fills_in_held_text() {
        crate::identity::spliced::clear();
        let page =
            json!({"rows": crate::identity::spliced::hold(r#"[{"a":1},{"a":"x\ny"}]"#.into())});
        let datum = jsonb_of(&page);
        // SAFETY: a jsonb datum built just above.
        let back = unsafe { value_of_jsonb(datum) };
        crate::identity::spliced::clear();
        assert_eq!(back, json!({"rows": [{"a": 1}, {"a": "x\ny"}]}));
    }

    fn printed(datum: pg_sys::Datum) -> String {
        // SAFETY: a jsonb datum built in this call; jsonb_out returns its palloc'd text.
        unsafe { pgrx::direct_function_call::<&core::ffi::CStr>(pg_sys::jsonb_out, &[Some(datum)]) }
            .expect("jsonb_out prints")
            .to_string_lossy()
            .into_owned()
    }

    /// Every kind of held text builds the jsonb that jsonb_in makes of the written response:
    /// a JSON string (decoded and pushed as a string), containers and scalars (jsonb_in's datum
    /// pushed in), side by side with plain values, nested anywhere.
    #[pgrx::pg_test]
    fn held_texts_build_what_the_written_text_gives() {
        use crate::identity::spliced;
        let texts = [
            r#""| id | name |\n| --- | --- |\n| 1 | \"quoted\" \\ é ✓ 😀 \u0001 |\n""#,
            r#"[{"b":1,"a":[true,null,1.50]},{"a":"x\ny"},[],{}]"#,
            r#"{"z":{"y":[1,2,{"x":-0.0}]},"a":"b"}"#,
            "42",
            "null",
            r#""""#,
        ];
        for text in texts {
            spliced::clear();
            let v = json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": spliced::hold(text.to_string())}],
                "structuredContent": {"rows": spliced::hold(text.to_string()), "n": 1},
                "plain": "\u{1}é"}});
            let written = spliced::write(&v);
            let built = printed(jsonb_of(&v));
            // the whole reply held as text (chumbo.mcp's)
            let whole = printed(jsonb_of(&spliced::hold(written.clone())));
            spliced::clear();
            assert_eq!(whole, built, "{text}");
            // jsonb's printed text is canonical: equal texts are equal values, a numeric's scale
            // included (1.50 stays 1.50).
            assert_eq!(built, printed(jsonb_in(written)), "{text}");
        }
    }

    fn samples() -> Vec<Value> {
        vec![
            json!({}),
            json!([]),
            json!({"a": 1, "b": [true, false, null], "c": {"d": "e"}}),
            json!([
                1,
                -1,
                0,
                1.5,
                -0.25,
                1e20,
                12345678901234567i64,
                u64::MAX,
                3.0
            ]),
            json!({"text": "quote \" backslash \\ tab \t newline \n é ✓ 😀 \u{1}"}),
            json!({"": "empty key", "zz": 1, "a": 2, "bb": 3, "b": [[], {}, [[1]]]}),
        ]
    }

    /// The jsonb built from a value is the one jsonb_in makes of its text.
    #[pg_test]
    fn built_jsonb_is_what_jsonb_in_gives() {
        for v in samples() {
            let same = Spi::get_one_with_args::<bool>(
                "select $1 = $2::jsonb and $1::text = $2::jsonb::text",
                &[JsonValue(v.clone()).into(), v.to_string().into()],
            )
            .unwrap();
            assert_eq!(same, Some(true), "{v}");
        }
    }

    /// A value read off jsonb is the one serde makes of jsonb_out's text.
    #[pg_test]
    fn read_jsonb_is_what_its_text_gives() {
        let mut texts: Vec<String> = samples().iter().map(Value::to_string).collect();
        texts.extend(["\"raw\"", "42", "null", "true", "1.50", "[1.0, 2.000]"].map(String::from));
        for text in texts {
            let (read, printed) = Spi::get_two_with_args::<JsonValue, String>(
                "select $1::jsonb, $1::jsonb::text",
                &[text.as_str().into()],
            )
            .unwrap();
            let expected: Value = serde_json::from_str(&printed.unwrap()).unwrap();
            assert_eq!(read.unwrap().0, expected, "{text}");
        }
    }

    /// A small jsonb read from a table has a 1-byte varlena header: it must be read as well.
    #[pg_test]
    fn stored_short_jsonb_is_read() {
        Spi::run("create temp table short_jsonb (j jsonb); insert into short_jsonb values ('{\"a\": [1, \"b\"]}')").unwrap();
        let read = Spi::get_one::<JsonValue>("select j from short_jsonb").unwrap();
        assert_eq!(read.unwrap().0, json!({"a": [1, "b"]}));
    }

    /// U+0000 cannot be in jsonb: the response fails with jsonb_in's own error, as before.
    #[pg_test(error = "unsupported Unicode escape sequence")]
    fn nul_is_refused_like_jsonb_in_does() {
        let v = json!({"a": "x\u{0}y"});
        Spi::get_one_with_args::<bool>("select $1 is null", &[JsonValue(v).into()]).unwrap();
    }

    /// Reading stops at serde's depth limit instead of building a value too deep to drop.
    #[pg_test(error = "a JSON value nested deeper than 128 levels")]
    fn deep_jsonb_is_refused() {
        let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
        Spi::get_one_with_args::<JsonValue>("select $1::jsonb", &[text.as_str().into()]).unwrap();
    }
}
