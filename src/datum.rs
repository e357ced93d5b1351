//! Datum plumbing for chumbo's entry points: jsonb in as text (so a body too deep for serde
//! becomes a JSON-RPC error rather than an ERROR while converting the argument), jsonb out from
//! text serialized once (its size is what audit rows record).

use pgrx::pg_sys;
use pgrx::prelude::*;

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
impl_sql_translatable!(JsonbText, arg_only = "jsonb");

// SAFETY: JsonbText is read through FromDatum (above) exactly like pgrx's own jsonb argument.
unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for JsonbText {
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

/// A jsonb result handed to PostgreSQL as the JSON text we already serialized: responses are
/// serialized exactly once (their size is what audit events record).
pub struct JsonText(pub String);

impl pgrx::IntoDatum for JsonText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let text = std::ffi::CString::new(self.0).ok()?;
        // SAFETY: a NUL-terminated C string that outlives the call; jsonb_in parses and copies it
        // into a palloc'd jsonb datum (and raises an ERROR on invalid input).
        unsafe {
            pgrx::direct_function_call_as_datum(
                pg_sys::jsonb_in,
                &[Some(pg_sys::Datum::from(text.as_ptr()))],
            )
        }
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::JSONBOID
    }
}

// SAFETY: JsonText returns a jsonb datum built by into_datum, the function's declared result type.
unsafe impl pgrx::callconv::BoxRet for JsonText {
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
impl_sql_translatable!(JsonText, "jsonb");
