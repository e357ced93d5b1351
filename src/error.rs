//! chumbo's one error type, and the one place it becomes a JSON-RPC error (code, message, data)
//! and an HTTP status. Messages are what the client sees: they never carry SQL text, secrets or
//! anything the caller could not see anyway (a capability it may not use is "Unknown", exactly
//! like one that does not exist).

use pgrx::{ereport, PgLogLevel, PgSqlErrorCode};
use serde_json::{json, Value};
use std::cell::RefCell;

thread_local! {
    /// The message of the last ERROR chumbo raised ([raise]), until a caught error is checked
    /// against it ([raised_by_chumbo]).
    static RAISED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Raises an ERROR in chumbo's own words: the one way chumbo raises one, so that when a call's
/// error is caught its origin is known by construction ([raised_by_chumbo]): the application's
/// (PL/pgSQL `RAISE`), chumbo's (this), or PostgreSQL's (anything else, shown only as a fixed
/// text). `detail` goes to the client with the message.
pub fn raise(code: PgSqlErrorCode, message: impl Into<String>, detail: Option<&str>) -> ! {
    let message = message.into();
    RAISED.with(|r| *r.borrow_mut() = Some(message.clone()));
    match detail {
        Some(d) => ereport!(PgLogLevel::ERROR, code, message, d),
        None => ereport!(PgLogLevel::ERROR, code, message),
    }
    unreachable!("ereport(ERROR) does not return")
}

/// An argument of chumbo's SQL API that must be given: its value, or an error naming it (rather
/// than pgrx's "argument N must not be null", or an internal error in tool code).
pub fn required<T>(value: Option<T>, function: &str, argument: &str) -> T {
    value.unwrap_or_else(|| {
        raise(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("chumbo.{function}: {argument} must not be null"),
            None,
        )
    })
}

/// Whether a caught error with `message` is the one chumbo raised last; forgets that either way.
pub fn raised_by_chumbo(message: &str) -> bool {
    RAISED
        .with(|r| r.borrow_mut().take())
        .is_some_and(|m| m == message)
}

/// Forgets what chumbo raised before (a call begins: an error raised and caught earlier is not
/// this call's).
pub fn forget_raised() {
    RAISED.with(|r| r.borrow_mut().take());
}

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Resource not found (MCP ≤ 2025-11-25).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// The `error` member of a JSON-RPC response, as it goes on the wire (made by [Error::rpc]).
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    pub fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            e["data"] = d.clone();
        }
        e
    }
}

/// A tool call refused in chumbo's own words, before the tool ran or because of what it produced:
/// the caller sees the text as the tool result's `isError` content (after the tool ran, the
/// refusal is raised inside the call, so its writes are rolled back). The kind says what was
/// refused; the text is the same whatever the kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The tool's own rate limit is reached, or cannot be checked.
    #[error("{0}")]
    RateLimit(String),
    /// The app's `can_execute` policy, or the user's approval, said no.
    #[error("{0}")]
    Denied(String),
    /// The arguments do not match the tool's inputSchema (or that schema is unusable).
    #[error("{0}")]
    Arguments(String),
    /// The idempotency key given is unusable.
    #[error("{0}")]
    IdempotencyKey(String),
    /// The page cursor is not one this server issued, has expired, or no longer fits the tool.
    #[error("{0}")]
    Cursor(String),
    /// The result does not fit: over its size bound, or not matching the outputSchema.
    #[error("{0}")]
    Result(String),
    /// An application function around the call (a renderer, a projection, the scope resolver)
    /// does not exist or failed.
    #[error("{0}")]
    AppFunction(String),
    /// The tool needs input from the user that this client's revision cannot carry.
    #[error("{0}")]
    InputUnavailable(String),
}

/// MCP 2026-07-28 error codes.
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// chumbo: this server serves reads only (a hot standby, or the edge's read path) and the call
/// must write; the edge sends it to the primary (src/postgres/standby.rs, docs/scaling.md).
pub const NEEDS_PRIMARY: i64 = -32030;
pub const NEEDS_PRIMARY_MESSAGE: &str =
    "This call must run on the primary server: this one serves reads only";
/// In the error's data (`chumbo`) and the answer's `chumbo-route` header.
pub const NEEDS_PRIMARY_MARKER: &str = "needs-primary";

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    // The transport (HTTP), before any method runs.
    /// What the body must be that it is not (the client's header is not echoed).
    #[error("Unsupported Media Type: the body must be {0}")]
    UnsupportedMediaType(&'static str),
    #[error("Invalid Request: the body is too large")]
    PayloadTooLarge,
    /// 401; the challenge header is the authenticate step's business.
    #[error("{0}")]
    Unauthorized(String),
    #[error("Forbidden: {0}")]
    Forbidden(String),
    #[error("Too many requests: {0}")]
    TooManyRequests(String),
    #[error("Bad Request: {0}")]
    BadRequest(String),
    /// Why a role may not run capabilities (the entry point says how it is refused).
    #[error("{0}")]
    CallerRefused(String),

    // JSON-RPC.
    #[error("Parse error: {0}")]
    Parse(String),
    #[error("Invalid Request: {0}")]
    InvalidRequest(String),
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    #[error("Invalid params: {0}")]
    InvalidParams(String),

    // MCP.
    /// A capability that does not exist or that the caller may not use: the same answer.
    /// `missing_scopes`: the scopes whose absence hid it (the HTTP answer is then a 403).
    #[error("Unknown {kind}: {name}")]
    UnknownCapability {
        kind: &'static str,
        name: String,
        missing_scopes: Vec<String>,
    },
    /// -32002 up to 2025-11-25, -32602 from 2026-07-28 (`stateless`).
    #[error("Resource not found: {uri}")]
    ResourceNotFound {
        uri: String,
        stateless: bool,
        missing_scopes: Vec<String>,
    },
    /// A capability failed: refusing its input is the caller's to fix (-32602), anything else is
    /// internal (-32603). The message is already what the caller may see.
    #[error("{message}")]
    Capability {
        message: String,
        internal: bool,
        uri: Option<String>,
    },
    /// Something chumbo did not expect; the message carries the trace id of the server log line.
    #[error("{0}")]
    Internal(String),
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),
    #[error("Missing required client capability: {names}")]
    MissingClientCapability { names: String, required: Value },
    /// A capability ended its call with a JSON-RPC error of its own (`chumbo.jsonrpc_error`,
    /// src/call/task.rs): the code is one [application_code] allows.
    #[error("{message}")]
    Application { code: i64, message: String },
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        requested: String,
        supported: Vec<&'static str>,
    },
    /// The call must write and this server serves reads only: HTTP 421, data `{"chumbo":
    /// "needs-primary"}`, so the edge retries it on the primary.
    #[error("{}", NEEDS_PRIMARY_MESSAGE)]
    NeedsPrimary,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn code(&self) -> i64 {
        match self {
            Error::UnsupportedMediaType(_)
            | Error::PayloadTooLarge
            | Error::Unauthorized(_)
            | Error::Forbidden(_)
            | Error::TooManyRequests(_)
            | Error::BadRequest(_)
            | Error::CallerRefused(_)
            | Error::InvalidRequest(_) => INVALID_REQUEST,
            Error::Parse(_) => PARSE_ERROR,
            Error::MethodNotFound(_) => METHOD_NOT_FOUND,
            Error::InvalidParams(_) | Error::UnknownCapability { .. } => INVALID_PARAMS,
            Error::ResourceNotFound { stateless, .. } => {
                if *stateless {
                    INVALID_PARAMS
                } else {
                    RESOURCE_NOT_FOUND
                }
            }
            Error::Capability { internal, .. } => {
                if *internal {
                    INTERNAL_ERROR
                } else {
                    INVALID_PARAMS
                }
            }
            Error::Internal(_) => INTERNAL_ERROR,
            Error::HeaderMismatch(_) => HEADER_MISMATCH,
            Error::MissingClientCapability { .. } => MISSING_CLIENT_CAPABILITY,
            Error::UnsupportedVersion { .. } => UNSUPPORTED_VERSION,
            Error::Application { code, .. } => *code,
            Error::NeedsPrimary => NEEDS_PRIMARY,
        }
    }

    /// The JSON-RPC error object.
    pub fn rpc(&self) -> RpcError {
        let e = RpcError::new(self.code(), self.to_string());
        match self {
            Error::ResourceNotFound { uri, .. } => e.with_data(json!({ "uri": uri })),
            Error::Capability { uri: Some(uri), .. } => e.with_data(json!({ "uri": uri })),
            Error::MissingClientCapability { required, .. } => {
                e.with_data(json!({ "requiredCapabilities": required }))
            }
            Error::UnsupportedVersion {
                requested,
                supported,
            } => e.with_data(json!({"supported": supported, "requested": requested})),
            Error::NeedsPrimary => e.with_data(json!({ "chumbo": NEEDS_PRIMARY_MARKER })),
            _ => e,
        }
    }

    /// The HTTP status of a request that this error ends on its own (a single message).
    pub fn status(&self, stateless: bool) -> u16 {
        match self {
            Error::UnsupportedMediaType(_) => 415,
            Error::PayloadTooLarge => 413,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) => 403,
            Error::TooManyRequests(_) => 429,
            Error::BadRequest(_) => 400,
            Error::NeedsPrimary => 421,
            _ if !self.missing_scopes().is_empty() => 403,
            _ => status_of_code(self.code(), stateless),
        }
    }

    /// The scopes whose absence caused this error, if that is why.
    pub fn missing_scopes(&self) -> &[String] {
        match self {
            Error::UnknownCapability { missing_scopes, .. }
            | Error::ResourceNotFound { missing_scopes, .. } => missing_scopes,
            _ => &[],
        }
    }
}

/// The codes application code may end a call with (`chumbo.jsonrpc_error`): internal error and
/// invalid params, -32099..=-32050 (implementation-defined server errors MCP assigns none of), and
/// any code outside JSON-RPC's reserved range; never one with a protocol meaning (-32601,
/// -32021, -32042, ...), which a client would act on.
pub fn application_code(code: i64) -> bool {
    code == INTERNAL_ERROR
        || code == INVALID_PARAMS
        || (-32099..=-32050).contains(&code)
        || !(-32768..=-32000).contains(&code)
}

/// The HTTP status of a single message's JSON-RPC error. Stateless: unknown methods are 404,
/// internal errors 500, everything else 400. Legacy: envelope errors are the transport's business
/// (400); method errors ride a 200.
pub fn status_of_code(code: i64, stateless: bool) -> u16 {
    match (stateless, code) {
        (true, METHOD_NOT_FOUND) => 404,
        (true, INTERNAL_ERROR) => 500,
        (true, _) => 400,
        (false, PARSE_ERROR | INVALID_REQUEST) => 400,
        (false, _) => 200,
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    /// Each error: its code, its HTTP status in the legacy and the stateless era, its message.
    #[pgrx::pg_test]
    fn every_error_maps_to_one_code_status_and_message() {
        let s = |t: &str| t.to_string();
        let cases: Vec<(Error, i64, u16, u16, &str)> = vec![
            (
                Error::UnsupportedMediaType("application/json"),
                INVALID_REQUEST,
                415,
                415,
                "Unsupported Media Type: the body must be application/json",
            ),
            (
                Error::PayloadTooLarge,
                INVALID_REQUEST,
                413,
                413,
                "Invalid Request: the body is too large",
            ),
            (
                Error::Unauthorized(s("Authorization required")),
                INVALID_REQUEST,
                401,
                401,
                "Authorization required",
            ),
            (
                Error::Forbidden(s("role \"x\" is not allowed")),
                INVALID_REQUEST,
                403,
                403,
                "Forbidden: role \"x\" is not allowed",
            ),
            (
                Error::TooManyRequests(s("retry in 3 s")),
                INVALID_REQUEST,
                429,
                429,
                "Too many requests: retry in 3 s",
            ),
            (
                Error::BadRequest(s("unsupported protocol version 1999-01-01")),
                INVALID_REQUEST,
                400,
                400,
                "Bad Request: unsupported protocol version 1999-01-01",
            ),
            (
                Error::CallerRefused(s("claims must be a JSON object")),
                INVALID_REQUEST,
                400,
                400,
                "claims must be a JSON object",
            ),
            (
                Error::Parse(s("the body is not valid JSON")),
                PARSE_ERROR,
                400,
                400,
                "Parse error: the body is not valid JSON",
            ),
            (
                Error::InvalidRequest(s("empty batch")),
                INVALID_REQUEST,
                400,
                400,
                "Invalid Request: empty batch",
            ),
            (
                Error::MethodNotFound(s("ping")),
                METHOD_NOT_FOUND,
                200,
                404,
                "Method not found: ping",
            ),
            (
                Error::InvalidParams(s("invalid cursor")),
                INVALID_PARAMS,
                200,
                400,
                "Invalid params: invalid cursor",
            ),
            (
                Error::UnknownCapability {
                    kind: "tool",
                    name: s("x"),
                    missing_scopes: vec![],
                },
                INVALID_PARAMS,
                200,
                400,
                "Unknown tool: x",
            ),
            (
                Error::UnknownCapability {
                    kind: "tool",
                    name: s("x"),
                    missing_scopes: vec![s("admin")],
                },
                INVALID_PARAMS,
                403,
                403,
                "Unknown tool: x",
            ),
            (
                Error::ResourceNotFound {
                    uri: s("a://b"),
                    stateless: false,
                    missing_scopes: vec![],
                },
                RESOURCE_NOT_FOUND,
                200,
                400,
                "Resource not found: a://b",
            ),
            (
                Error::ResourceNotFound {
                    uri: s("a://b"),
                    stateless: true,
                    missing_scopes: vec![],
                },
                INVALID_PARAMS,
                200,
                400,
                "Resource not found: a://b",
            ),
            (
                Error::Capability {
                    message: s("amount must be positive"),
                    internal: false,
                    uri: None,
                },
                INVALID_PARAMS,
                200,
                400,
                "amount must be positive",
            ),
            (
                Error::Capability {
                    message: s("failed (trace id 1)"),
                    internal: true,
                    uri: None,
                },
                INTERNAL_ERROR,
                200,
                500,
                "failed (trace id 1)",
            ),
            (
                Error::Internal(s("Internal error (trace id 1)")),
                INTERNAL_ERROR,
                200,
                500,
                "Internal error (trace id 1)",
            ),
            (
                Error::NeedsPrimary,
                NEEDS_PRIMARY,
                421,
                421,
                "This call must run on the primary server: this one serves reads only",
            ),
            (
                Error::HeaderMismatch(s("the Mcp-Method header is required")),
                HEADER_MISMATCH,
                200,
                400,
                "Header mismatch: the Mcp-Method header is required",
            ),
            (
                Error::MissingClientCapability {
                    names: s("[\"elicitation\"]"),
                    required: json!({"elicitation": {}}),
                },
                MISSING_CLIENT_CAPABILITY,
                200,
                400,
                "Missing required client capability: [\"elicitation\"]",
            ),
            (
                Error::UnsupportedVersion {
                    requested: s("2099-01-01"),
                    supported: vec!["2026-07-28"],
                },
                UNSUPPORTED_VERSION,
                200,
                400,
                "Unsupported protocol version: 2099-01-01",
            ),
        ];
        for (e, code, legacy, stateless, message) in cases {
            assert_eq!(e.code(), code, "{e:?}");
            assert_eq!(e.status(false), legacy, "legacy {e:?}");
            assert_eq!(e.status(true), stateless, "stateless {e:?}");
            let rpc = e.rpc();
            assert_eq!((rpc.code, rpc.message.as_str()), (code, message), "{e:?}");
        }
        // data where the client needs it to act
        let data = |e: Error| e.rpc().data;
        assert_eq!(
            data(Error::ResourceNotFound {
                uri: s("a://b"),
                stateless: true,
                missing_scopes: vec![]
            }),
            Some(json!({"uri": "a://b"}))
        );
        assert_eq!(
            data(Error::UnsupportedVersion {
                requested: s("2099-01-01"),
                supported: vec!["2026-07-28"]
            }),
            Some(json!({"supported": ["2026-07-28"], "requested": "2099-01-01"}))
        );
        assert_eq!(
            data(Error::MissingClientCapability {
                names: s("x"),
                required: json!({"roots": {}})
            }),
            Some(json!({"requiredCapabilities": {"roots": {}}}))
        );
        assert_eq!(data(Error::InvalidParams(s("x"))), None);
    }
}
