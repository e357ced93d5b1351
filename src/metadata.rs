//! The `@mcp {…}` metadata a capability's COMMENT may carry after its description. Defined once
//! here; `chumbo.metadata_schema()` publishes the JSON Schema generated from these types, and the
//! registry parses with the same types, so editors and doctor agree.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    /// Human-friendly display name.
    pub title: Option<String>,
    /// Tool behaviour hints (untrusted by clients).
    pub annotations: Option<Annotations>,
    /// OAuth scopes the caller's token must carry; without them the capability is hidden and
    /// uncallable.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Per-parameter JSON Schema refinements, keyed by parameter name.
    #[serde(default)]
    pub params: BTreeMap<String, ParamMeta>,
    /// A complete input JSON Schema replacing the one derived from the parameters (for `$defs`,
    /// `$ref`, composition). Its properties must be parameters of the function.
    #[serde(rename = "inputSchema")]
    pub input_schema: Option<Map<String, Value>>,
    /// JSON Schema the tool's structuredContent conforms to.
    #[serde(rename = "outputSchema")]
    pub output_schema: Option<Map<String, Value>>,
    /// Icons shown by clients.
    pub icons: Option<Vec<Value>>,
    /// Makes the function a resource (a URI) or resource template (RFC 6570 level 1, variables
    /// are the function's parameters) instead of a tool.
    pub resource: Option<String>,
    /// MIME type of the resource's contents.
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
    /// Resource name (default: the function name).
    pub name: Option<String>,
    /// Makes the function a prompt; its parameters are the prompt's arguments.
    #[serde(default)]
    pub prompt: bool,
    /// Completions for prompt arguments or template variables: a list of values, or the name of
    /// a function `(value text) returns setof text` run as the caller.
    #[serde(default)]
    pub completions: BTreeMap<String, Completion>,
    /// Allow a SECURITY DEFINER function to be exposed (a privileged capability).
    #[serde(default)]
    pub privileged: bool,
    /// Calls per minute per principal for this capability.
    #[serde(rename = "rateLimit")]
    pub rate_limit: Option<RateLimit>,
    /// What audit events of this capability may additionally record.
    pub audit: Option<AuditOptIn>,
    /// Time bound of one call of this capability in milliseconds (default: the setting
    /// `call_timeout_ms`).
    #[serde(rename = "timeoutMs")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    // -- policy (issue 13: visibility, execution predicate, approval; see src/policy.rs) --
    /// "schema.function" `() returns boolean`, run as the caller once per request: false hides
    /// the capability from lists and refuses calls as if it did not exist.
    pub visible: Option<String>,
    /// "schema.function" `(arguments jsonb) returns boolean`, run as the caller before every
    /// execution of the tool (again after an approval): false or an error denies the call.
    pub can_execute: Option<String>,
    /// `true`, or "schema.function" `(arguments jsonb) returns boolean` deciding per call: the
    /// user confirms exactly this call (principal, tool, arguments) before it runs.
    pub approval: Option<Approval>,
    // -- end policy --
}

/// When a tool needs the user's confirmation.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Approval {
    Always(bool),
    When(String),
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    #[serde(rename = "perMinute")]
    pub per_minute: u32,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditOptIn {
    /// Record the call's arguments in the audit event.
    #[serde(default)]
    pub arguments: bool,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Annotations {
    pub title: Option<String>,
    #[serde(rename = "readOnlyHint")]
    pub read_only_hint: Option<bool>,
    #[serde(rename = "destructiveHint")]
    pub destructive_hint: Option<bool>,
    #[serde(rename = "idempotentHint")]
    pub idempotent_hint: Option<bool>,
    #[serde(rename = "openWorldHint")]
    pub open_world_hint: Option<bool>,
}

/// JSON Schema keywords a parameter may add to its derived schema.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParamMeta {
    pub description: Option<String>,
    pub title: Option<String>,
    #[serde(rename = "enum")]
    pub enum_values: Option<Vec<Value>>,
    pub format: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    #[serde(rename = "minLength")]
    pub min_length: Option<u64>,
    #[serde(rename = "maxLength")]
    pub max_length: Option<u64>,
    pub pattern: Option<String>,
    pub examples: Option<Vec<Value>>,
    pub default: Option<Value>,
    /// MCP 2026: mirror this argument into an `Mcp-Param-{name}` header.
    #[serde(rename = "x-mcp-header")]
    pub x_mcp_header: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Completion {
    Values(Vec<String>),
    Function(String),
}

/// Splits a COMMENT into its description and parsed metadata.
pub fn parse_comment(comment: Option<&str>) -> (Option<String>, Result<Metadata, String>) {
    let Some(comment) = comment else {
        return (None, Ok(Metadata::default()));
    };
    let (description, meta) = match comment.find("@mcp") {
        Some(at) => (&comment[..at], Some(&comment[at + 4..])),
        None => (comment, None),
    };
    let description = description.trim();
    let description = (!description.is_empty()).then(|| description.to_string());
    let meta = match meta {
        None => Ok(Metadata::default()),
        Some(text) => serde_json::from_str::<Metadata>(text.trim())
            .map_err(|e| format!("@mcp metadata is invalid: {e}")),
    };
    (description, meta)
}

pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Metadata)).unwrap_or(Value::Null)
}

impl ParamMeta {
    /// Adds the refinements to a derived parameter schema.
    pub fn apply(&self, schema: &mut Map<String, Value>) {
        if let Ok(Value::Object(extra)) = serde_json::to_value(self) {
            for (k, v) in extra {
                if !v.is_null() {
                    schema.insert(k, v);
                }
            }
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    #[pgrx::pg_test]
    fn comment_without_metadata_is_all_description() {
        let (d, m) = parse_comment(Some("List the projects you can see."));
        assert_eq!(d.as_deref(), Some("List the projects you can see."));
        assert!(m.unwrap().scopes.is_empty());
    }

    #[pgrx::pg_test]
    fn metadata_after_description_is_parsed() {
        let (d, m) = parse_comment(Some("Read a project.\n@mcp {\"resource\":\"app://projects/{id}\",\"scopes\":[\"projects:read\"]}"));
        assert_eq!(d.as_deref(), Some("Read a project."));
        let m = m.unwrap();
        assert_eq!(m.resource.as_deref(), Some("app://projects/{id}"));
        assert_eq!(m.scopes, vec!["projects:read"]);
    }

    #[pgrx::pg_test]
    fn unknown_metadata_keys_are_errors() {
        let (_, m) = parse_comment(Some("x @mcp {\"titel\": \"typo\"}"));
        assert!(m.unwrap_err().contains("titel"));
    }
}
