//! Helpers capability functions use to answer with full MCP content (images, audio, links,
//! embedded resources) and prompt messages.

use base64::Engine;
use pgrx::prelude::*;
use pgrx::JsonB;
use serde_json::json;

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[pg_extern(immutable, parallel_safe)]
fn content_text(text: &str) -> JsonB {
    JsonB(json!({"type": "text", "text": text}))
}

#[pg_extern(immutable, parallel_safe)]
fn content_image(data: &[u8], mime_type: &str) -> JsonB {
    JsonB(json!({"type": "image", "data": b64(data), "mimeType": mime_type}))
}

#[pg_extern(immutable, parallel_safe)]
fn content_audio(data: &[u8], mime_type: &str) -> JsonB {
    JsonB(json!({"type": "audio", "data": b64(data), "mimeType": mime_type}))
}

#[pg_extern(immutable, parallel_safe)]
fn content_resource_link(
    uri: Option<&str>,
    name: Option<&str>,
    description: default!(Option<&str>, "NULL"),
    mime_type: default!(Option<&str>, "NULL"),
) -> JsonB {
    let uri = crate::error::required(uri, "content_resource_link", "uri");
    let name = crate::error::required(name, "content_resource_link", "name");
    let mut v = json!({"type": "resource_link", "uri": uri, "name": name});
    if let Some(d) = description {
        v["description"] = json!(d);
    }
    if let Some(m) = mime_type {
        v["mimeType"] = json!(m);
    }
    JsonB(v)
}

#[pg_extern(immutable, parallel_safe)]
fn content_resource(uri: &str, text: &str, mime_type: default!(&str, "'text/plain'")) -> JsonB {
    JsonB(
        json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "text": text}}),
    )
}

#[pg_extern(immutable, parallel_safe)]
fn content_blob_resource(uri: &str, data: &[u8], mime_type: &str) -> JsonB {
    JsonB(
        json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime_type, "blob": b64(data)}}),
    )
}

#[pg_extern(immutable, parallel_safe)]
fn message(role: &str, content: JsonB) -> JsonB {
    if role != "user" && role != "assistant" {
        crate::error::raise(
            pgrx::PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "chumbo.message: role must be 'user' or 'assistant'",
            None,
        );
    }
    JsonB(json!({"role": role, "content": content.0}))
}
