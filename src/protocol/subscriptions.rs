//! The subscriptions family: `subscriptions/listen` (stateless era). Acknowledged here, then held
//! open by the edge: the HTTP pipeline answers it, since it opens a stream instead of returning a
//! result.

use crate::catalog::registry::{Caller, Registry};
use crate::error::Error;
use crate::identity::auth;
use serde_json::{json, Map, Value};

pub const METHOD: &str = "subscriptions/listen";

/// The acknowledgement event and the stream description for the edge. A NOTIFY on channel
/// `chumbo_capabilities` is only a hint (any role can send one): the edge re-sends the listen
/// request and forwards list-changed notifications only when `version` moved; it ends the stream
/// when the request is no longer accepted (the token expired at `expires_at`), and holds at most
/// `max_streams` per `principal`.
pub fn listen(
    msg: &Value,
    id: &Value,
    caller: &Caller,
    registry: &Registry,
) -> Result<(Value, Value), Error> {
    let requested = msg
        .pointer("/params/notifications")
        .cloned()
        .unwrap_or(json!({}));
    let Some(requested) = requested.as_object() else {
        return Err(Error::InvalidParams(
            "notifications must be an object".into(),
        ));
    };
    let mut honoured = Map::new();
    for key in [
        "toolsListChanged",
        "promptsListChanged",
        "resourcesListChanged",
    ] {
        if requested.get(key) == Some(&Value::Bool(true)) {
            honoured.insert(key.into(), json!(true));
        }
    }
    let subscription = json!({"io.modelcontextprotocol/subscriptionId": id});
    let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": honoured, "_meta": subscription}});
    let stream = json!({
        "id": id,
        "notifications": honoured,
        "principal": caller.principal.digest(),
        "version": registry.version,
        // when the database stops accepting the token: its exp plus the verification leeway
        "expires_at": caller.claims.get("exp").and_then(Value::as_i64).map(|e| e + auth::LEEWAY_SECONDS as i64),
        "max_streams": registry.settings.max_listen_streams,
    });
    Ok((ack, stream))
}
