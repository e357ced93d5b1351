//! JSON-RPC 2.0 envelopes: validating what arrives, shaping what leaves.

use crate::error::{Error, RpcError};
#[cfg(any(test, feature = "pg_test"))]
use crate::error::{INVALID_PARAMS, INVALID_REQUEST};
use crate::json_number;
use serde_json::{json, Map, Value};

/// A message that passed envelope validation.
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    Notification,
    /// A response sent by the client (to a server→client request). Stateless: nothing waits.
    ClientResponse,
}

/// Validates one JSON-RPC message. On failure returns the id to echo (when one could be read) and
/// the error.
pub fn parse(msg: &Value) -> Result<Message, (Value, Error)> {
    let Some(obj) = msg.as_object() else {
        return Err((
            Value::Null,
            Error::InvalidRequest("a JSON-RPC message must be an object".into()),
        ));
    };
    // Echo the id whenever it is valid, so the client can match even a rejected request.
    let id = obj.get("id").cloned();
    let echo_id = match &id {
        Some(v @ Value::String(_)) => v.clone(),
        Some(v @ Value::Number(n)) if n.is_i64() || n.is_u64() => v.clone(),
        _ => Value::Null,
    };
    let fail = |m: &str| Err((echo_id.clone(), Error::InvalidRequest(m.to_string())));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail("\"jsonrpc\" must be \"2.0\"");
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return fail("\"method\" must be a string"),
        None if obj.contains_key("result") || obj.contains_key("error") => {
            return if id.is_some() && echo_id != Value::Null {
                Ok(Message::ClientResponse)
            } else {
                fail("a response needs a string or integer \"id\"")
            };
        }
        None => return fail("\"method\" is missing"),
    };
    let params = match obj.get("params") {
        None => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(Value::Array(_)) => {
            return Err((
                echo_id,
                Error::InvalidParams("MCP params must be an object".into()),
            ))
        }
        Some(_) => return fail("\"params\" must be an object"),
    };
    match id {
        None => Ok(Message::Notification),
        Some(_) if echo_id.is_null() => {
            fail("\"id\" must be a string or an integer (MCP forbids null)")
        }
        Some(id) => match meta_fault(&params) {
            Some(m) => Err((echo_id, Error::InvalidParams(m.into()))),
            None => Ok(Message::Request { id, method, params }),
        },
    }
}

/// What is wrong with a request's `params._meta`, by the shape every MCP request shares: an
/// object, whose `progressToken` (echoed in each progress notification) is a string or a number.
/// (A null `_meta` is taken as none, as some clients write an absent field.)
fn meta_fault(params: &Map<String, Value>) -> Option<&'static str> {
    match params.get("_meta") {
        None | Some(Value::Null) => None,
        Some(Value::Object(meta)) => match meta.get("progressToken") {
            None | Some(Value::String(_) | Value::Number(_)) => None,
            Some(_) => Some("\"_meta.progressToken\" must be a string or a number"),
        },
        Some(_) => Some("\"_meta\" must be an object"),
    }
}

/// What no message may hold, though JSON may write it: a string with U+0000 (PostgreSQL's text
/// cannot hold it), and a number of more than [json_number::MAX_DIGITS] digits written out in
/// full (`1e100000`: a few bytes that every text written of the value spells out). The reason,
/// for the client.
pub fn unacceptable(v: &Value) -> Option<String> {
    const NUL: &str = "strings must not contain U+0000";
    match v {
        Value::String(s) if s.contains('\0') => Some(NUL.into()),
        Value::Number(n) if !json_number::within_max_digits(n.as_str()) => Some(format!(
            "a number must not have more than {} digits written out",
            json_number::MAX_DIGITS
        )),
        Value::Array(a) => a.iter().find_map(unacceptable),
        Value::Object(o) => o.iter().find_map(|(k, v)| {
            if k.contains('\0') {
                Some(NUL.into())
            } else {
                unacceptable(v)
            }
        }),
        _ => None,
    }
}

pub fn result(id: &Value, result: Value) -> Value {
    // Built by hand: json! would copy `result` (a whole page of rows) through serde.
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::String("2.0".into()));
    m.insert("id".into(), id.clone());
    m.insert("result".into(), result);
    Value::Object(m)
}

pub fn error(id: &Value, err: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": err.to_json()})
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    fn code(v: Value) -> i64 {
        match parse(&v) {
            Err((_, e)) => e.code(),
            Ok(_) => 0,
        }
    }

    #[pgrx::pg_test]
    fn envelope_rules() {
        // (message, expected code; 0 = accepted)
        let cases = [
            (json!({"jsonrpc":"2.0","id":1,"method":"ping"}), 0),
            (json!({"jsonrpc":"2.0","id":"a","method":"ping"}), 0),
            (
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                0,
            ),
            (
                json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
                INVALID_REQUEST,
            ),
            (json!({"id":1,"method":"ping"}), INVALID_REQUEST),
            (
                json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
                INVALID_REQUEST,
            ),
            (
                json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
                INVALID_REQUEST,
            ),
            (
                json!({"jsonrpc":"2.0","id":{},"method":"ping"}),
                INVALID_REQUEST,
            ),
            (json!({"jsonrpc":"2.0","id":1,"method":7}), INVALID_REQUEST),
            (json!({"jsonrpc":"2.0","id":1}), INVALID_REQUEST),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}),
                INVALID_PARAMS,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}),
                INVALID_REQUEST,
            ),
            (json!([1]), INVALID_REQUEST),
            (json!("ping"), INVALID_REQUEST),
            // params._meta: an object (null taken as none); a progressToken string or number
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":"x"}}),
                INVALID_PARAMS,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":[]}}),
                INVALID_PARAMS,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":null}}),
                0,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":{"a":1}}}}),
                INVALID_PARAMS,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":null}}}),
                INVALID_PARAMS,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":"t"}}}),
                0,
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":1.5}}}),
                0,
            ),
        ];
        for (msg, want) in cases {
            assert_eq!(code(msg.clone()), want, "{msg}");
        }
    }
}
