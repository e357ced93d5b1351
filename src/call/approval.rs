//! Approvals (issue 13): a tool declared with `@mcp {"approval": …}` runs only after the user
//! confirmed exactly this call: this principal, this tool, these arguments.
//!
//! - MCP 2026-07-28, client with elicitation: the call answers `input_required` with an
//!   elicitation describing the call (key `io.chumbo/approval`) and a requestState (mrtr.rs:
//!   HMAC-bound to principal, method, tool and argument digest, expiring, single use) that records
//!   that chumbo asked. The retry carrying that state and an accepting response runs the tool.
//! - Legacy revisions (and modern clients without elicitation), where the server cannot ask: the
//!   call answers an `isError` result saying what would run, with a confirmation token
//!   (a signed token, src/tokens.rs: same binding, 5 minutes, single use); the call runs
//!   when repeated with the same arguments plus the token in the argument `_chumbo_confirm`.
//!
//! Single use is durable: nonces are redeemed in chumbo.request_state_uses (pruned as states
//! are). Every decision (asked, approved, declined, refused) is an audit event.

use crate::bookkeeping::ledger;
use crate::call::mrtr;
use crate::call::plan::ToolCall;
use crate::call::policy::{self, Denied};
use crate::catalog::predicates::TOKEN_ARGUMENT;
use crate::catalog::registry::{Caller, Capability, Registry};
use crate::error::Error;
use crate::identity::session;
use crate::tokens::{self, Kind, Refused};
use pgrx::prelude::*;
use serde_json::{json, Map, Value};

/// The key of the approval in inputRequests/inputResponses.
pub const INPUT_KEY: &str = "io.chumbo/approval";
/// Carried in the requestState chumbo signs when it asks: the proof that it asked for this call.
/// Only the gate writes it; a client's inputResponses never carry it into a signed state
/// (`from_client`).
const ASKED_KEY: &str = "io.chumbo/approval-asked";
const TOKEN_TTL_SECONDS: i64 = 300;
const MAX_TOKEN_BYTES: usize = 2048;

/// What the approval step decided about a tools/call.
pub enum Gate {
    /// Run, with these input responses: the verified ones of earlier rounds and this request's,
    /// the approval's own answer kept (with the proof that chumbo asked) so later input rounds
    /// of the tool carry it forward.
    Run(Map<String, Value>),
    /// An `isError` result with this text.
    Deny(String),
    /// This result (input_required, or the confirmation request of legacy clients).
    Reply(Value),
    /// A protocol error (a requestState that is invalid, used, or someone else's).
    Invalid(Error),
}

/// The approval step of the plan (src/call/steps.rs), after the execution predicate: a tool that
/// needs the user's confirmation runs only with a valid confirmation token, or with the user's
/// accepting answer to the elicitation chumbo asked for this very call. `input`: the input
/// step's outcome (earlier rounds verified, this request's responses added).
pub fn gate(
    registry: &Registry,
    caller: &Caller,
    cap: &Capability,
    plan: &ToolCall,
    input: Result<Map<String, Value>, Error>,
) -> Gate {
    match policy::needs_approval(registry, cap, caller, &plan.arguments) {
        Err(Denied(m)) => return Gate::Deny(m),
        Ok(false) => {
            return match input {
                Ok(responses) => Gate::Run(responses),
                Err(e) => Gate::Invalid(e),
            }
        }
        Ok(true) => {}
    }
    let era = if plan.era.client_capabilities.is_some() {
        "modern"
    } else {
        "legacy"
    };
    let audit = |decision: &str, via: &str, reason: Option<&str>| {
        if registry.settings.audit {
            ledger::audit(
                false,
                ledger::Event {
                    trace_id: &plan.trace_id,
                    era,
                    method: Some("approval"),
                    capability: Some(&cap.name),
                    principal: &plan.caller.principal,
                    outcome: decision,
                    duration_ms: 0.0,
                    bytes: 0,
                    detail: Some(
                        json!({"via": via, "arguments_sha256": plan.arguments_digest(), "reason": reason}),
                    ),
                    run_id: None,
                },
            );
        }
    };
    let key = registry.token_secret();
    if let Some(token) = &plan.confirmation_token {
        let token = token.as_str().unwrap_or("");
        return match redeem_token(key, token, plan) {
            Ok(()) => {
                audit("approved", "confirmation token", None);
                match input {
                    Ok(responses) => Gate::Run(responses),
                    Err(e) => Gate::Invalid(e),
                }
            }
            Err(why) => {
                audit("refused", "confirmation token", Some(why));
                Gate::Deny(format!(
                    "Not run: the confirmation token {why}. Call {} again without {TOKEN_ARGUMENT} to get a new one, and ask the user again.",
                    cap.name
                ))
            }
        };
    }
    let can_ask = plan
        .era
        .client_capabilities
        .as_ref()
        .is_some_and(|c| c.get("elicitation").is_some());
    if !can_ask {
        audit("asked", "confirmation token", None);
        return Gate::Reply(confirmation_request(key, cap, plan));
    }
    let mut responses = match input {
        Ok(r) => r,
        Err(e) => {
            audit("refused", "input request", Some(&e.to_string()));
            return Gate::Invalid(e);
        }
    };
    // Only a state chumbo signed carries the proof that it asked (from_client drops the key).
    let asked = responses.remove(ASKED_KEY);
    let answer = responses.get(INPUT_KEY).cloned();
    match (asked, answer) {
        (Some(asked), Some(answer)) => {
            if answer["action"] == "accept"
                && answer.pointer("/content/approve") == Some(&json!(true))
            {
                audit("approved", "input request", None);
                responses.insert(ASKED_KEY.into(), asked);
                Gate::Run(responses)
            } else {
                audit("declined", "input request", None);
                Gate::Deny(format!(
                    "Not run: the user did not approve this call of {}",
                    cap.name
                ))
            }
        }
        _ => {
            audit("asked", "input request", None);
            responses.remove(INPUT_KEY);
            responses.insert(
                ASKED_KEY.into(),
                json!({"arguments_sha256": plan.arguments_digest()}),
            );
            let binding = plan.input_binding();
            Gate::Reply(json!({
                "resultType": "input_required",
                "inputRequests": {INPUT_KEY: elicitation(cap, &plan.arguments)},
                "requestState": mrtr::issue(key, &binding, &responses),
            }))
        }
    }
}

/// The request's `inputResponses`, without the key only chumbo may sign: a client that sends
/// `io.chumbo/approval-asked` must not get it into a requestState (through a tool's own input
/// round) that a later approval gate would take as proof that the user was asked.
pub fn from_client(given: Option<&Value>) -> Result<Map<String, Value>, Error> {
    match given {
        None => Ok(Map::new()),
        Some(Value::Object(given)) => {
            let mut responses = Map::new();
            for (k, v) in given {
                if !v.is_object() {
                    return Err(Error::InvalidParams(format!(
                        "inputResponses[\"{k}\"] must be an object"
                    )));
                }
                if k != ASKED_KEY {
                    responses.insert(k.clone(), v.clone());
                }
            }
            Ok(responses)
        }
        Some(_) => Err(Error::InvalidParams(
            "inputResponses must be an object".into(),
        )),
    }
}

fn describe(cap: &Capability, args: &Map<String, Value>) -> String {
    let arguments = serde_json::to_string_pretty(&Value::Object(args.clone())).unwrap_or_default();
    let about = cap
        .description
        .as_deref()
        .map(|d| format!("\n\n{}: {d}", cap.name))
        .unwrap_or_default();
    format!(
        "{} will run with these arguments:\n{arguments}{about}",
        cap.name
    )
}

fn elicitation(cap: &Capability, args: &Map<String, Value>) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": format!("{}\n\nApprove this call?", describe(cap, args)),
            "requestedSchema": {
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": format!("Run {}", cap.name)}},
                "required": ["approve"],
            },
        },
    })
}

fn confirmation_request(key: &[u8], cap: &Capability, plan: &ToolCall) -> Value {
    let payload = json!({
        "p": plan.caller.principal, "c": plan.tool, "a": plan.arguments_digest(),
        "x": tokens::expiry(TOKEN_TTL_SECONDS), "n": session::random_id(),
    });
    let token = tokens::sign(key, Kind::ApprovalToken, &payload);
    let text = format!(
        "Not run yet: this call needs the user's confirmation.\n\n{}\n\nAsk the user whether to run it. If they agree, call {} again with exactly the same arguments plus \"{TOKEN_ARGUMENT}\": \"{token}\" (valid for {} minutes, once).",
        describe(cap, &plan.arguments),
        cap.name,
        TOKEN_TTL_SECONDS / 60
    );
    json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": {"io.chumbo/confirmation": {"token": token, "argument": TOKEN_ARGUMENT, "expiresInSeconds": TOKEN_TTL_SECONDS}},
    })
}

/// Checks a confirmation token against this call and consumes it.
fn redeem_token(key: &[u8], token: &str, plan: &ToolCall) -> Result<(), &'static str> {
    let p =
        tokens::open(key, Kind::ApprovalToken, token, MAX_TOKEN_BYTES).map_err(|r| match r {
            Refused::Malformed => "is malformed",
            Refused::Forged => "failed its integrity check",
        })?;
    if tokens::expired(&p) {
        return Err("has expired");
    }
    if p["p"] != plan.caller.principal.as_str()
        || p["c"] != plan.tool.as_str()
        || p["a"] != plan.arguments_digest()
    {
        return Err("was issued for another user, tool or arguments");
    }
    let nonce = format!("approval:{}", p["n"].as_str().unwrap_or(""));
    let fresh = session::as_owner(|| {
        // A write (the token is recorded as used), meant to take a transaction id.
        #[allow(clippy::disallowed_methods)]
        Spi::get_one_with_args::<bool>(
            "select chumbo._redeem_request_state($1)",
            &[nonce.as_str().into()],
        )
    });
    if !matches!(fresh, Ok(Some(true))) {
        return Err("was already used");
    }
    Ok(())
}
