//! The `@mcp {…}` metadata a capability's COMMENT may carry after its description. Defined once
//! here; `chumbo.metadata_schema()` publishes the JSON Schema generated from these types, and the
//! registry parses with the same types, so editors and doctor agree.

use crate::catalog::types::ReturnShape;
use crate::postgres::app_function;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
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
    /// Page size of a set-returning tool (defaults: the settings `page_rows`, `page_bytes`).
    pub page: Option<PageMeta>,
    /// Keyset paging for a set-returning tool: result columns whose values, in this order,
    /// identify a row (ascending, not null, the last one unique). Without it pages are offsets.
    #[serde(rename = "orderBy")]
    pub order_by: Option<Vec<String>>,
    /// "schema.function" `(rows jsonb) returns text` that writes the text block of a
    /// set-returning tool's page, run as the caller (default: a Markdown table or JSON lines).
    pub text: Option<String>,
    // Model-output projection and exactly-once operations (src/call/projection.rs, src/call/idempotency.rs).
    /// "schema.function" taking `(result jsonb)` and returning `jsonb`: what the model (and the
    /// client) sees of this tool's result, run as the caller. An object becomes the
    /// `structuredContent` and its JSON the text; a string is the text alone.
    pub model_output: Option<String>,
    /// The parameter whose value is the call's idempotency key (the `_meta` key
    /// `io.chumbo/idempotency-key` works for every tool that is not read-only).
    pub idempotency_key: Option<String>,
    // Tool policies (src/catalog/predicates.rs, src/call/policy.rs, src/call/approval.rs).
    /// "schema.function" `() returns boolean`, run as the caller once per request: false hides
    /// the capability from lists and refuses calls as if it did not exist.
    pub visible: Option<String>,
    /// "schema.function" `(arguments jsonb) returns boolean`, run as the caller before every
    /// execution of the tool (again after an approval): false or an error denies the call.
    pub can_execute: Option<String>,
    /// `true`, or "schema.function" `(arguments jsonb) returns boolean` deciding per call: the
    /// user confirms exactly this call (principal, tool, arguments) before it runs.
    pub approval: Option<Approval>,
    // Durable tasks (src/call/task.rs, src/api/tasks.rs).
    /// "optional": a call becomes a durable task (MCP extension io.modelcontextprotocol/tasks)
    /// when the caller declared the extension; "required": only as a task (-32021 without it);
    /// "never" (the default).
    #[serde(default)]
    pub task: TaskSupport,
    /// The run of a task tool starts in the request: input it asks for (`chumbo.input`) is asked
    /// there, and a result it reaches is answered there; it becomes a task where it calls
    /// `chumbo.continue_as_task()`.
    #[serde(default)]
    pub task_starts_in_request: bool,
    // MCP Apps (src/catalog/apps.rs, src/protocol/apps.rs).
    /// The tool's view (MCP Apps, extension io.modelcontextprotocol/ui): its `ui://` resource and
    /// who may call the tool. `chumbo.link_app` writes it.
    pub ui: Option<UiMeta>,
}

/// `@mcp {"ui": …}`: the `_meta.ui` of a tool.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UiMeta {
    /// The `ui://` URI of the app (chumbo.create_app) rendering this tool's results.
    #[serde(rename = "resourceUri")]
    pub resource_uri: Option<String>,
    /// Who may call the tool: "model" (listed in tools/list), "app" (a view may call it through
    /// the host). Default both; ["app"] keeps the tool out of tools/list.
    pub visibility: Option<Vec<UiVisibility>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UiVisibility {
    Model,
    App,
}

impl Metadata {
    /// The tool is listed to the model (tools/list): no `ui.visibility`, or one naming "model".
    pub fn model_visible(&self) -> bool {
        match self.ui.as_ref().and_then(|u| u.visibility.as_ref()) {
            Some(v) => v.contains(&UiVisibility::Model),
            None => true,
        }
    }

    /// The `ui://` URI of the tool's app, if it has one.
    pub fn app_uri(&self) -> Option<&str> {
        self.ui.as_ref()?.resource_uri.as_deref()
    }
}

/// How a tool may run as a task (`@mcp {"task": …}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never a task.
    #[default]
    Never,
    /// A task when the caller declared the extension, else an ordinary call.
    Optional,
    /// Only as a task.
    Required,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageMeta {
    /// Rows in one page (at most the setting `max_rows`).
    #[schemars(range(min = 1))]
    pub rows: Option<usize>,
    /// Bytes of row JSON in one page (at most half the setting `max_result_bytes`).
    #[schemars(range(min = 1))]
    pub bytes: Option<usize>,
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

#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// serde's message names the offending key and position.
    #[error("@mcp metadata is invalid: {0}")]
    Invalid(#[from] serde_json::Error),
}

/// Splits a COMMENT into its description and parsed metadata.
pub fn parse_comment(comment: Option<&str>) -> (Option<String>, Result<Metadata, MetadataError>) {
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
        Some(text) => serde_json::from_str::<Metadata>(text.trim()).map_err(MetadataError::from),
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
        assert!(m.unwrap_err().to_string().contains("titel"));
    }

    /// Well-formed comments: (comment, description, check of the parsed metadata).
    #[pgrx::pg_test]
    fn valid_metadata_blocks_parse() {
        type Check = fn(&Metadata) -> bool;
        let cases: [(Option<&str>, Option<&str>, Check); 10] = [
            (
                Some("Note. @mcp {\"ui\": {\"resourceUri\": \"ui://notes/form\", \"visibility\": [\"app\"]}}"),
                Some("Note."),
                |m| m.app_uri() == Some("ui://notes/form") && !m.model_visible(),
            ),
            (None, None, |m| m.scopes.is_empty() && !m.prompt),
            (Some("  "), None, |m| m.resource.is_none()),
            (Some("@mcp {}"), None, |m| m.params.is_empty()),
            (Some("Greet. @mcp {\"prompt\": true}"), Some("Greet."), |m| {
                m.prompt
            }),
            (
                Some("Doc.\n@mcp {\"resource\": \"app://doc\", \"mimeType\": \"text/markdown\"}"),
                Some("Doc."),
                |m| m.resource.as_deref() == Some("app://doc") && m.mime_type.as_deref() == Some("text/markdown"),
            ),
            (
                Some("@mcp {\"completions\": {\"a\": [\"x\", \"y\"], \"b\": \"mcp.complete_b\"}}"),
                None,
                |m| {
                    matches!(m.completions.get("a"), Some(Completion::Values(v)) if v == &["x", "y"])
                        && matches!(m.completions.get("b"), Some(Completion::Function(f)) if f == "mcp.complete_b")
                },
            ),
            (
                Some("Run. @mcp {\"privileged\": true, \"rateLimit\": {\"perMinute\": 5}, \"timeoutMs\": 250, \"audit\": {\"arguments\": true}}"),
                Some("Run."),
                |m| m.privileged && m.rate_limit.as_ref().map(|r| r.per_minute) == Some(5) && m.timeout_ms == Some(250) && m.audit.as_ref().is_some_and(|a| a.arguments),
            ),
            (
                Some("@mcp {\"params\": {\"q\": {\"description\": \"Query\", \"maxLength\": 40, \"x-mcp-header\": \"Q\"}}}"),
                None,
                |m| m.params.get("q").is_some_and(|p| p.description.as_deref() == Some("Query") && p.max_length == Some(40) && p.x_mcp_header.as_deref() == Some("Q")),
            ),
            (
                Some("@mcp {\"annotations\": {\"readOnlyHint\": true}, \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}}"),
                None,
                |m| m.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true) && m.input_schema.is_some() && m.output_schema.is_some(),
            ),
        ];
        for (comment, description, check) in cases {
            let (d, m) = parse_comment(comment);
            assert_eq!(d.as_deref(), description, "{comment:?}");
            let m = m.unwrap_or_else(|e| panic!("{comment:?}: {e}"));
            assert!(check(&m), "{comment:?}: {m:?}");
        }
    }

    /// Malformed blocks: (comment, text the error must contain). serde names what is wrong.
    #[pgrx::pg_test]
    fn invalid_metadata_blocks_are_errors() {
        let cases = [
            ("@mcp", "EOF while parsing"),
            ("@mcp {", "EOF while parsing"),
            ("@mcp {} trailing", "trailing characters"),
            (
                "@mcp 42",
                "invalid type: integer `42`, expected struct Metadata",
            ),
            ("@mcp []", "invalid length 0, expected struct Metadata"),
            (
                "@mcp {\"scopes\": \"a b\"}",
                "invalid type: string \"a b\", expected a sequence",
            ),
            (
                "@mcp {\"prompt\": \"yes\"}",
                "invalid type: string \"yes\", expected a boolean",
            ),
            ("@mcp {\"rateLimit\": {}}", "missing field `perMinute`"),
            ("@mcp {\"timeoutMs\": -1}", "invalid value: integer `-1`"),
            (
                "@mcp {\"params\": {\"q\": {\"descripton\": \"x\"}}}",
                "unknown field `descripton`",
            ),
            (
                "@mcp {\"annotations\": {\"readonlyHint\": true}}",
                "unknown field `readonlyHint`",
            ),
            (
                "@mcp {\"ui\": {\"visibility\": [\"user\"]}}",
                "unknown variant `user`",
            ),
            (
                "@mcp {\"ui\": {\"resourceURI\": \"ui://x\"}}",
                "unknown field `resourceURI`",
            ),
            (
                "@mcp {\"completions\": {\"a\": 1}}",
                "did not match any variant",
            ),
        ];
        for (comment, expected) in cases {
            let (_, m) = parse_comment(Some(comment));
            let e = m.unwrap_err().to_string();
            assert!(
                e.starts_with("@mcp metadata is invalid: "),
                "{comment}: {e}"
            );
            assert!(e.contains(expected), "{comment}: {e}");
        }
    }
}

/// The argument chumbo adds to every paged (set-returning) tool's inputSchema (src/call/pages.rs).
pub const CURSOR: &str = "cursor";

/// Problems with a capability's paging metadata, for doctor (the capability is then hidden).
pub fn paging_problems(
    meta: &Metadata,
    returns_set: bool,
    returns: ReturnShape,
    params: &[String],
) -> Vec<String> {
    let mut problems = vec![];
    if returns_set && params.iter().any(|p| p == CURSOR) {
        problems.push(format!(
            "parameter \"{CURSOR}\" is reserved: chumbo adds it to set-returning tools for paging"
        ));
    }
    let paging_keys = meta.page.is_some() || meta.order_by.is_some() || meta.text.is_some();
    if paging_keys && !returns_set {
        problems
            .push("\"page\", \"orderBy\" and \"text\" apply to set-returning tools only".into());
    }
    if let Some(keys) = &meta.order_by {
        if keys.is_empty() {
            problems.push("\"orderBy\" must name at least one column".into());
        }
        if returns_set && returns != ReturnShape::Row {
            problems.push("\"orderBy\" needs a function returning rows (setof a table or composite type, or returns table)".into());
        }
    }
    if let Some(page) = &meta.page {
        if page.rows == Some(0) || page.bytes == Some(0) {
            problems.push("\"page\" rows and bytes must be at least 1".into());
        }
    }
    if let Some(f) = &meta.text {
        if !app_function::valid_name(f) {
            problems.push("\"text\" must name a function as \"schema.function\"".into());
        }
    }
    problems
}

/// Adds the `cursor` argument to a paged tool's inputSchema, and `next_cursor`/`next_call` to
/// its declared outputSchema's properties (its structuredContent carries them).
pub fn add_paging_to_schemas(input: &mut Value, output: Option<&mut Map<String, Value>>) {
    let cursor = json!({
        "type": "string",
        "description": "Continue a paged result: the next_cursor of the previous page (call again with the same other arguments). Omit it for the first page."
    });
    if let Some(props) = input.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(CURSOR.into(), cursor);
    } else if let Some(obj) = input.as_object_mut() {
        obj.insert("properties".into(), json!({ CURSOR: cursor }));
    }
    if let Some(props) = output
        .and_then(|o| o.get_mut("properties"))
        .and_then(Value::as_object_mut)
    {
        props.insert("next_cursor".into(), json!({"type": "string"}));
        props.insert(
            "next_call".into(),
            json!({"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}}),
        );
    }
}

/// Registry checks of the keys this module reads (a problem hides the capability; doctor shows it).
pub fn once_only_problems(
    meta: &Metadata,
    is_tool: bool,
    read_only: bool,
    params: &[String],
    problems: &mut Vec<String>,
    warnings: &mut Vec<String>,
) {
    if !is_tool && (meta.model_output.is_some() || meta.idempotency_key.is_some()) {
        problems.push("model_output and idempotency_key apply to tools only".into());
    }
    if !is_tool && (meta.task != TaskSupport::Never || meta.task_starts_in_request) {
        problems.push("task and task_starts_in_request apply to tools only".into());
    }
    if let Some(ui) = &meta.ui {
        if !is_tool {
            problems.push("ui applies to tools only".into());
        }
        if let Some(uri) = &ui.resource_uri {
            if !uri.starts_with("ui://") || uri.len() <= 5 || uri.contains(char::is_whitespace) {
                problems.push(format!("ui.resourceUri must be a ui:// URI, not {uri:?}"));
            }
        }
        if ui.visibility.as_ref().is_some_and(|v| v.is_empty()) {
            problems.push("ui.visibility must name \"model\", \"app\" or both".into());
        }
    }
    if meta.task_starts_in_request && meta.task == TaskSupport::Never {
        warnings.push(
            "task_starts_in_request is ignored: the tool never runs as a task (set \"task\")"
                .into(),
        );
    }
    if let Some(f) = &meta.model_output {
        if !app_function::valid_name(f) {
            problems.push(format!(
                "model_output must name a function as \"schema.function\", not {f:?}"
            ));
        }
    }
    if let Some(k) = &meta.idempotency_key {
        if read_only {
            warnings.push(format!(
                "idempotency_key {k:?} is ignored: the function is read-only (stable or immutable), so a retry runs it again"
            ));
        }
        if !params.iter().any(|p| p == k) {
            problems.push(format!(
                "idempotency_key names \"{k}\", which is not a parameter"
            ));
        }
    }
}
