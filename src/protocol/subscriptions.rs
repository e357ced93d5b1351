//! The subscriptions family: `subscriptions/listen` (stateless era). Acknowledged here, then held
//! open by the edge: the HTTP pipeline answers it, since it opens a stream instead of returning a
//! result.

use crate::catalog::registry::{Caller, Registry};
use crate::error::Error;
use crate::identity::auth;
use serde_json::{json, Map, Value};

pub const METHOD: &str = "subscriptions/listen";
/// Task ids one listen request may watch.
const MAX_TASK_IDS: usize = 100;

/// The acknowledgement event and the stream description for the edge. A NOTIFY on channel
/// `chumbo_capabilities` is only a hint (any role can send one): the edge re-sends the listen
/// request and forwards list-changed notifications only when `version` moved; it ends the stream
/// when the request is no longer accepted (the token expired at `expires_at`), and holds at most
/// `max_streams` per `principal`. `notifications.taskIds` (the caller's own tasks): on a NOTIFY
/// on channel `chumbo_tasks` naming one (again only a hint), the edge asks `tasks/get` with the
/// stream's credentials and sends `notifications/tasks` when the status moved.
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
    // notifications/tasks (SEP-2663): for the caller's own tasks only, when it declared the
    // extension; an id it cannot see is left out, as an unknown one would be.
    let opted_in = crate::call::task::opted_in(
        msg.pointer("/params/_meta/io.modelcontextprotocol~1clientCapabilities"),
    );
    if let (true, Some(ids)) = (opted_in, requested.get("taskIds")) {
        let Some(ids) = ids.as_array().filter(|a| a.len() <= MAX_TASK_IDS) else {
            return Err(Error::InvalidParams(format!(
                "notifications.taskIds must be an array of at most {MAX_TASK_IDS} task ids"
            )));
        };
        let mut own = vec![];
        for id in ids.iter().filter_map(Value::as_str) {
            if crate::call::task::get(caller.principal.digest(), id)?.is_some() {
                own.push(json!(id));
            }
        }
        honoured.insert("taskIds".into(), Value::Array(own));
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
