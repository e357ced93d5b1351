//! chumbo's one error type, and the one place it becomes a JSON-RPC error (code, message, data)
//! and an HTTP status. Messages are what the client sees: they never carry SQL text, secrets or
//! anything the caller could not see anyway (a capability it may not use is "Unknown", exactly
//! like one that does not exist).

use crate::jsonrpc::{
    RpcError, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    RESOURCE_NOT_FOUND,
};
use serde_json::{json, Value};

/// MCP 2026-07-28 error codes.
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    // The transport (HTTP), before any method runs.
    #[error("Unsupported Media Type: the body must be application/json")]
    UnsupportedMediaType,
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
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        requested: String,
        supported: Vec<&'static str>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn code(&self) -> i64 {
        match self {
            Error::UnsupportedMediaType
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
            _ => e,
        }
    }

    /// The HTTP status of a request that this error ends on its own (a single message).
    pub fn status(&self, stateless: bool) -> u16 {
        match self {
            Error::UnsupportedMediaType => 415,
            Error::PayloadTooLarge => 413,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) => 403,
            Error::TooManyRequests(_) => 429,
            Error::BadRequest(_) => 400,
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
