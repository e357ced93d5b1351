//! The skills family (SEP-2640, extension `io.modelcontextprotocol/skills`): skills/list,
//! skills/get, and each skill file as a resource (`skill://<name>/<path>`, listed after the
//! capability resources by resources/list, read by resources/read). Who is served what is
//! decided here per request: a grant to one of the caller's roles (like EXECUTE on a tool), then
//! the scopes the skill requires. Storage and loading are src/catalog/skills.rs.

use super::listing::{decode_cursor, next_cursor};
use super::{Context, MethodResult};
use crate::catalog::skills::{self, Skill};
use crate::error::Error;
use base64::Engine;
use serde_json::{json, Map, Value};

pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";

pub const METHODS: &[&str] = &["skills/list", "skills/get"];

pub fn handle(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    match method {
        "skills/list" => list(ctx, params),
        _ => get(ctx, params),
    }
}

/// The skills this caller is granted (scopes aside).
fn granted<'r>(ctx: &'r Context) -> impl Iterator<Item = &'r Skill> {
    ctx.registry
        .skills
        .iter()
        .filter(|s| s.granted_to(ctx.caller.role_oid))
}

fn has_scopes(ctx: &Context, s: &Skill) -> bool {
    s.scopes.iter().all(|x| ctx.caller.scopes.contains(x))
}

fn served<'r>(ctx: &'r Context) -> impl Iterator<Item = &'r Skill> {
    granted(ctx).filter(|s| has_scopes(ctx, s))
}

/// The `capabilities.extensions` entry, when the caller is served any skill.
pub fn capability(ctx: &Context) -> Option<(&'static str, Value)> {
    served(ctx).next()?;
    Some((EXTENSION_ID, json!({})))
}

/// `skills/list`: whole entries only, `page_size` of them a page.
fn list(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let offset = decode_cursor(params)?;
    let page = ctx.registry.settings.page_size.max(1);
    let all: Vec<&Skill> = served(ctx).collect();
    let skills: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(page)
        .map(|s| s.entry())
        .collect();
    let mut result = json!({ "skills": skills });
    if offset + page < all.len() {
        result["nextCursor"] = next_cursor(offset + page);
    }
    Ok(result)
}

/// `skills/get {uri}`: the entry of a skill this caller is served, by its SKILL.md URI.
fn get(ctx: &Context, params: &Map<String, Value>) -> MethodResult {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidParams("\"uri\" must be a string".into()))?;
    let unknown = |missing_scopes: Vec<String>| Error::UnknownCapability {
        kind: "skill",
        name: uri.to_string(),
        missing_scopes,
    };
    let skill = granted(ctx)
        .find(|s| s.uri("SKILL.md") == uri)
        .ok_or_else(|| unknown(vec![]))?;
    if !has_scopes(ctx, skill) {
        return Err(unknown(skill.scopes.clone()));
    }
    Ok(json!({ "skill": skill.entry() }))
}

/// Every file of every skill served to the caller, for resources/list.
pub fn resources(ctx: &Context) -> Vec<Value> {
    let mut out = vec![];
    for s in served(ctx) {
        for f in &s.files {
            let mut r = json!({"uri": s.uri(&f.path), "name": format!("{}/{}", s.name, f.path),
                               "mimeType": f.mime, "size": f.size});
            if f.path == "SKILL.md" {
                r["name"] = s.frontmatter["name"].clone();
                r["description"] = s.frontmatter["description"].clone();
            }
            out.push(r);
        }
    }
    out
}

/// resources/read of a skill file: None when `uri` is no file of a skill granted to the caller
/// (the usual resource lookup and its not-found answer follow).
pub fn read(ctx: &Context, uri: &str) -> Option<MethodResult> {
    let rest = uri.strip_prefix("skill://")?;
    let (name, path) = rest.split_once('/')?;
    let skill = granted(ctx).find(|s| s.name == name)?;
    let file = skill.files.iter().find(|f| f.path == path)?;
    if !has_scopes(ctx, skill) {
        // answered like a missing resource, plus the scope challenge
        return Some(Err(Error::ResourceNotFound {
            uri: uri.to_string(),
            stateless: ctx.era.is_stateless(),
            missing_scopes: skill.scopes.clone(),
        }));
    }
    let bytes = skills::file_content(name, path)?;
    let mut content = json!({"uri": uri, "mimeType": file.mime});
    // Exactly the hashed bytes: text only when they are UTF-8 as they are, else base64.
    match String::from_utf8(bytes) {
        Ok(text) => content["text"] = json!(text),
        Err(e) => {
            content["blob"] =
                json!(base64::engine::general_purpose::STANDARD.encode(e.into_bytes()))
        }
    }
    Some(Ok(json!({ "contents": [content] })))
}
