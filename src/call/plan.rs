//! A `tools/call` resolved once, as a value: the tool, its validated arguments with their one
//! digest, who calls in which revision, and every value the request carries for the steps
//! (confirmation token, page cursor, idempotency key, earlier input rounds). The steps
//! (src/call/steps.rs) read it and nothing else of the request; it holds no live handle (no
//! registry, no role oid, no SPI state), so it serialises to jsonb: a task can store it, a worker
//! or a standby can run it later.

use crate::call::mrtr;
use crate::catalog::predicates::TOKEN_ARGUMENT;
use crate::catalog::registry::{Caller, Capability};
use crate::error::{Error, Refusal};
use crate::settings::Settings;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `_meta` key a client puts its idempotency key in.
pub const IDEMPOTENCY_META_KEY: &str = "io.chumbo/idempotency-key";
/// Bound on an idempotency key's length: it is hashed, but a client must not make us hash megabytes.
const MAX_IDEMPOTENCY_KEY_CHARS: usize = 255;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    /// Valid for the tool's inputSchema; without the control arguments (`_chumbo_confirm`, and
    /// `cursor` of a paged tool), which are below.
    pub arguments: Map<String, Value>,
    /// tokens::arguments_digest of `arguments` (see [ToolCall::arguments_digest]), kept once
    /// computed; not stored (it follows from `arguments`).
    #[serde(skip)]
    pub digest: Digest,
    pub caller: CallerFacts,
    pub era: EraFacts,
    /// The call's time bound: the tool's `timeoutMs`, else the setting `call_timeout_ms`.
    pub timeout_ms: u64,
    /// Tools that are not read-only only.
    pub idempotency_key: Option<String>,
    /// A paged tool's `cursor` argument, as given.
    pub cursor: Option<Value>,
    /// The `_chumbo_confirm` argument of a tool that needs approval, as given.
    pub confirmation_token: Option<Value>,
    pub input: Input,
    pub trace_id: String,
}

/// Who calls, as data (the live caller, with its role oid, is the steps' other argument).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallerFacts {
    /// The keyed digest of the principal (src/identity/principal.rs): what tokens and rows are bound to.
    pub principal: String,
    pub role: String,
    pub scopes: Vec<String>,
}

/// What the negotiated revision decides about this call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EraFacts {
    pub protocol_version: String,
    /// MCP 2026-07-28: the call may answer `input_required` (MRTR).
    pub can_ask_for_input: bool,
    /// 2025-06-18 and later: results carry `structuredContent`.
    pub structured_content: bool,
    /// The client's declared capabilities (2026-07-28, in `_meta`), else None.
    pub client_capabilities: Option<Value>,
}

/// The input of earlier rounds (MRTR), as the request carries it: verified by the input step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Input {
    pub request_state: Option<Value>,
    pub responses: Option<Value>,
}

impl ToolCall {
    /// The plan of a call of `cap`, whose arguments the caller's request gave as `arguments`
    /// (already validated against the inputSchema) with `params` (for `_meta`, `requestState`,
    /// `inputResponses`). Fails only on an unusable idempotency key (invalid params).
    pub fn new(
        cap: &Capability,
        caller: &Caller,
        era: EraFacts,
        mut arguments: Map<String, Value>,
        params: &Map<String, Value>,
        settings: &Settings,
    ) -> Result<ToolCall, Error> {
        let confirmation_token = arguments.remove(TOKEN_ARGUMENT);
        // a set-returning tool is paged (src/call/pages.rs)
        let cursor = if cap.returns_set {
            arguments.remove(crate::catalog::metadata::CURSOR)
        } else {
            None
        };
        let idempotency_key = if cap.read_only {
            None
        } else {
            idempotency_key(cap, &arguments, params)
                .map_err(|r| Error::InvalidParams(r.to_string()))?
        };
        Ok(ToolCall {
            tool: cap.name.clone(),
            arguments,
            digest: Digest::default(),
            caller: CallerFacts {
                principal: caller.principal.digest().to_string(),
                role: caller.principal.role.clone(),
                scopes: caller.scopes.clone(),
            },
            era,
            timeout_ms: cap.timeout_ms(settings),
            idempotency_key,
            cursor,
            confirmation_token,
            input: Input {
                request_state: params.get("requestState").cloned(),
                responses: params.get("inputResponses").cloned(),
            },
            trace_id: crate::call::scope::trace_id(),
        })
    }

    /// What a requestState of this call is bound to.
    pub fn input_binding(&self) -> mrtr::Binding<'_> {
        mrtr::Binding {
            principal: &self.caller.principal,
            method: "tools/call",
            capability: &self.tool,
            arguments_digest: self.arguments_digest(),
        }
    }

    /// What requestStates, page cursors, confirmation tokens and stored idempotent outcomes are
    /// bound to: computed when a step first needs it (a plain call needs none: a SHA-256 over
    /// the arguments' text, ~4,400 instructions of a do-nothing call, callgrind).
    pub fn arguments_digest(&self) -> &str {
        self.digest
            .0
            .get_or_init(|| crate::tokens::arguments_digest(&self.arguments))
    }
}

/// A [ToolCall]'s arguments digest, computed on first use. Equal whatever it holds: it follows
/// from the arguments, which the plan's equality compares.
#[derive(Debug, Clone, Default)]
pub struct Digest(std::cell::OnceCell<String>);

impl PartialEq for Digest {
    fn eq(&self, _: &Digest) -> bool {
        true
    }
}

/// The call's idempotency key: the `_meta` key, else the value of the parameter the tool declares
/// as its key (`@mcp {"idempotency_key": …}`).
fn idempotency_key(
    cap: &Capability,
    arguments: &Map<String, Value>,
    params: &Map<String, Value>,
) -> Result<Option<String>, Refusal> {
    let bad = |why: &str| Refusal::IdempotencyKey(format!("{IDEMPOTENCY_META_KEY} {why}"));
    let given = params
        .get("_meta")
        .and_then(|m| m.get(IDEMPOTENCY_META_KEY))
        .or_else(|| {
            cap.meta
                .idempotency_key
                .as_ref()
                .and_then(|name| arguments.get(name))
        });
    let key = match given {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(_) => return Err(bad("must be a string")),
    };
    if key.is_empty() || key.chars().count() > MAX_IDEMPOTENCY_KEY_CHARS {
        return Err(bad(&format!(
            "must have 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters"
        )));
    }
    Ok(Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_plan_round_trips_through_json() {
        let plan = ToolCall {
            tool: "add_note".into(),
            arguments: json!({"title": "a"}).as_object().cloned().unwrap(),
            digest: Digest::default(),
            caller: CallerFacts {
                principal: "ab12".into(),
                role: "authenticated".into(),
                scopes: vec!["notes:write".into()],
            },
            era: EraFacts {
                protocol_version: "2026-07-28".into(),
                can_ask_for_input: true,
                structured_content: true,
                client_capabilities: Some(json!({"elicitation": {}})),
            },
            timeout_ms: 1000,
            idempotency_key: Some("k1".into()),
            cursor: None,
            confirmation_token: Some(json!("t")),
            input: Input {
                request_state: Some(json!("s")),
                responses: Some(json!({"x": {"action": "accept"}})),
            },
            trace_id: "0011223344556677".into(),
        };
        let stored = serde_json::to_string(&plan).unwrap();
        let back = serde_json::from_str::<ToolCall>(&stored).unwrap();
        assert_eq!(back, plan);
        assert_eq!(
            back.arguments_digest(),
            crate::tokens::arguments_digest(&json!({"title": "a"}))
        );
        // data only: no oid of this database, nothing a standby or a later worker could not use
        assert!(!stored.contains("oid"), "{stored}");
    }
}
