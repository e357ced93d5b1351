//! Tool policies declared in SQL next to the tool (issue 13): who sees a capability (`visible`),
//! whether a call may run (`can_execute`), which scopes a caller has (the `scope_resolver`
//! setting), and when a call needs the user's confirmation (`approval`, see approval.rs).
//!
//! Every policy function is the application's code: it runs exactly like a capability, as the
//! caller (claims set, role switched, security-restricted, time-bounded, in a subtransaction), and
//! its errors reach the caller only as the application's own RAISE messages. A policy function
//! that fails denies. Names are resolved through the catalog (`to_regprocedure`) with the
//! signature each hook requires; only catalog-quoted identifiers reach SQL text.

use crate::call::execute;
use crate::catalog::predicates::{resolve, ApprovalRule, Predicate, Shape};
use crate::catalog::registry::{self, Caller, Capability, Registry};
use crate::error::Refusal;
use crate::identity::session::{self, CaughtSqlError};
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};

use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;

/// Runs a policy function as the caller; SQL NULL is false.
fn eval_bool(
    p: &Predicate,
    caller: &Caller,
    arguments: Option<&Map<String, Value>>,
    timeout_ms: u64,
) -> Result<bool, CaughtSqlError> {
    let sql = p.sql.clone();
    let args = arguments.map(|a| JsonB(Value::Object(a.clone())));
    let takes = p.takes_arguments;
    session::run_as_caller(caller.role_oid, &caller.claims, timeout_ms, move || {
        session::read_only(|| {
            Spi::connect(|c| {
                let row = if takes {
                    c.select(&sql, Some(1), &[args.unwrap_or(JsonB(json!({}))).into()])?
                } else {
                    c.select(&sql, Some(1), &[])?
                };
                row.first().get_one::<bool>()
            })
        })
    })
    .and_then(|r| r.map_err(|e| CaughtSqlError::internal(e.to_string())))
    .map(|b| b.unwrap_or(false))
}

thread_local! {
    /// Visibility answers of the statement in progress, by caller and predicate: tools/list
    /// runs each distinct predicate once per request, whatever the number of tools sharing it.
    static SEEN: RefCell<((i64, i64), HashMap<String, bool>)> = RefCell::new(((0, 0), HashMap::new()));
}

fn statement_stamp() -> (i64, i64) {
    // SAFETY: reads the backend's transaction and statement start times.
    unsafe {
        (
            pg_sys::GetCurrentTransactionStartTimestamp(),
            pg_sys::GetCurrentStatementStartTimestamp(),
        )
    }
}

/// The outcome of a visibility predicate for this caller, memoized for the statement.
fn visible_outcome(
    p: &Predicate,
    caller: &Caller,
    timeout_ms: u64,
) -> Result<bool, CaughtSqlError> {
    let key = format!(
        "{}\u{1}{}\u{1}{}\u{1}{}",
        caller.role_oid.to_u32(),
        caller.principal.digest(),
        caller.claims,
        p.name
    );
    let stamp = statement_stamp();
    let known = SEEN.with(|s| {
        let mut s = s.borrow_mut();
        if s.0 != stamp {
            *s = (stamp, HashMap::new());
        }
        s.1.get(&key).copied()
    });
    if let Some(v) = known {
        return Ok(v);
    }
    let outcome = eval_bool(p, caller, None, timeout_ms);
    let shown = *outcome.as_ref().unwrap_or(&false);
    SEEN.with(|s| s.borrow_mut().1.insert(key, shown));
    outcome
}

/// Whether `caller` may see and use `c` (listings, resources/read, chumbo.surface): its scopes and
/// EXECUTE, its owner not a superuser since the registry was built (unless allowed), and its
/// visibility predicate, last, since that runs application code.
pub fn usable(registry: &Registry, caller: &Caller, c: &Capability) -> bool {
    caller.may_use(c) && !registry.refuses_definer(c) && visible(c, caller)
}

/// Whether the capability's visibility predicate (if any) shows it to the caller. Hook of
/// registry::Caller::may_use and protocol::named: a hidden capability is absent from lists and
/// unknown to calls.
pub fn visible(c: &Capability, caller: &Caller) -> bool {
    let Some(p) = &c.policy.visible else {
        return true;
    };
    let timeout_ms = registry::current().settings.call_timeout_ms;
    match visible_outcome(p, caller, timeout_ms) {
        Ok(v) => v,
        Err(e) => {
            // Logged with a trace id; the caller just does not see the capability.
            execute::public_error(&e, &crate::call::scope::trace_id());
            false
        }
    }
}

/// Why a tool call may not run, as the model is told (an `isError` result).
pub struct Denied(pub String);

/// The execution predicate: before every run of the tool (step 2 of src/call/steps.rs). The application's own RAISE message is shown as it is.
pub fn may_execute(
    registry: &Registry,
    cap: &Capability,
    caller: &Caller,
    args: &Map<String, Value>,
) -> Result<(), Denied> {
    let Some(p) = &cap.policy.can_execute else {
        return Ok(());
    };
    match eval_bool(p, caller, Some(args), registry.settings.call_timeout_ms) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Denied(format!(
            "Not allowed: the application does not allow this call of {}",
            cap.name
        ))),
        Err(e) => {
            let shown = execute::public_error(&e, &crate::call::scope::trace_id());
            Err(Denied(format!("Not allowed: {}", shown.message)))
        }
    }
}

/// Whether this call of the tool needs the user's confirmation.
pub fn needs_approval(
    registry: &Registry,
    cap: &Capability,
    caller: &Caller,
    args: &Map<String, Value>,
) -> Result<bool, Denied> {
    match &cap.policy.approval {
        ApprovalRule::Never => Ok(false),
        ApprovalRule::Always => Ok(true),
        ApprovalRule::When(p) => {
            eval_bool(p, caller, Some(args), registry.settings.call_timeout_ms).map_err(|e| {
                let shown = execute::public_error(&e, &crate::call::scope::trace_id());
                Denied(format!(
                    "Not allowed: whether {} needs approval could not be decided: {}",
                    cap.name, shown.message
                ))
            })
        }
    }
}

/// (registry version, setting value, what it resolved to).
type ResolvedAt = (i64, String, Result<Predicate, Refusal>);

thread_local! {
    /// The scope resolver, resolved once per registry version.
    static RESOLVER: RefCell<Option<ResolvedAt>> = const { RefCell::new(None) };
}

fn scope_resolver(registry: &Registry) -> Option<Result<Predicate, Refusal>> {
    let name = registry.settings.scope_resolver.as_ref()?;
    let cached = RESOLVER.with(|r| {
        r.borrow()
            .as_ref()
            .filter(|(v, n, _)| *v == registry.version && n == name)
            .map(|(_, _, p)| p.clone())
    });
    Some(cached.unwrap_or_else(|| {
        let p = resolve(name, Shape::Scopes)
            .map_err(|e| Refusal::AppFunction(format!("scope_resolver: {e}")));
        RESOLVER.with(|r| *r.borrow_mut() = Some((registry.version, name.clone(), p.clone())));
        p
    }))
}

/// The caller's scopes from the scope resolver, or why there are none.
fn resolved_scopes(registry: &Registry, caller: &Caller) -> Option<Result<Vec<String>, Refusal>> {
    let p = match scope_resolver(registry)? {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let sql = p.sql.clone();
    let outcome = session::run_as_caller(
        caller.role_oid,
        &caller.claims,
        registry.settings.call_timeout_ms,
        move || {
            session::read_only(|| {
                Spi::connect(|c| {
                    c.select(&sql, Some(1), &[])?
                        .first()
                        .get_one::<Vec<Option<String>>>()
                })
            })
        },
    )
    .and_then(|r| r.map_err(|e| CaughtSqlError::internal(e.to_string())));
    Some(match outcome {
        Ok(list) => Ok(list.unwrap_or_default().into_iter().flatten().collect()),
        Err(e) => Err(Refusal::AppFunction(format!(
            "scope_resolver {} failed: {}",
            p.name,
            execute::public_error(&e, &crate::call::scope::trace_id()).message
        ))),
    })
}

/// Replaces the token's scopes by the scope resolver's answer when the setting names one (hook
/// of api::caller_from and doctor::surface). Only run when some capability requires scopes;
/// a resolver that fails gives no scopes.
pub fn resolve_scopes(registry: &Registry, caller: &mut Caller) {
    if registry.settings.scope_resolver.is_none() || !registry.capabilities.require_scopes() {
        return;
    }
    caller.scopes = match resolved_scopes(registry, caller) {
        Some(Ok(s)) => s,
        _ => vec![],
    };
}

/// The scopes an HTTP 403 `insufficient_scope` may ask the client to obtain (hook of
/// protocol::named and read_resource): none when the application resolves scopes itself, since
/// no token can carry them; the capability is then simply unknown to the caller (-32602).
pub fn scopes_to_request(registry: &Registry, cap: &Capability) -> Vec<String> {
    if registry.settings.scope_resolver.is_some() {
        vec![]
    } else {
        cap.meta.scopes.clone()
    }
}

/// What doctor() adds about a capability's policies.
pub fn notes(c: &Capability) -> Vec<String> {
    let mut notes = vec![];
    if let Some(p) = &c.policy.visible {
        notes.push(format!(
            "shown only to callers for whom {}() is true",
            p.name
        ));
    }
    if let Some(p) = &c.policy.can_execute {
        notes.push(format!(
            "each call runs only if {}(arguments) is true",
            p.name
        ));
    }
    match &c.policy.approval {
        ApprovalRule::Never => {}
        ApprovalRule::Always => notes.push("each call needs the user's approval".into()),
        ApprovalRule::When(p) => notes.push(format!(
            "a call needs the user's approval when {}(arguments) is true",
            p.name
        )),
    }
    notes
}

/// The caller doctor() explains for: the one whose claims are in `request.jwt.claims`, when the
/// owner set them for the transaction (`set_config('request.jwt.claims', …, true)`).
pub struct Explained {
    caller: Option<Caller>,
    /// What doctor() says about the caller itself (role refused, where the scopes come from).
    pub summary: Vec<String>,
}

pub fn caller_for_doctor(registry: &Registry) -> Option<Explained> {
    let claims: Value = session::current_setting("request.jwt.claims")
        .and_then(|c| serde_json::from_str(&c).ok())
        .filter(Value::is_object)?;
    let role = claims
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("anon")
        .to_string();
    let role_oid = match session::check_role(
        &role,
        &registry.settings.allowed_roles,
        &registry.table_owners,
    ) {
        Ok(o) => o,
        Err(e) => {
            return Some(Explained {
                caller: None,
                summary: vec![format!("the caller in request.jwt.claims is refused: {e}")],
            })
        }
    };
    let key = registry
        .keys
        .get("state")
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut caller = Caller {
        principal: crate::identity::principal::Principal::from_claims(&claims, &role, None, key),
        scopes: registry::scopes_of(&claims),
        role_oid,
        claims,
    };
    let scopes = match resolved_scopes(registry, &caller) {
        None => format!("scopes from the token: [{}]", caller.scopes.join(" ")),
        Some(Ok(s)) => {
            caller.scopes = s;
            format!(
                "scopes from scope_resolver {}: [{}]",
                registry.settings.scope_resolver.as_deref().unwrap_or(""),
                caller.scopes.join(" ")
            )
        }
        Some(Err(e)) => {
            caller.scopes = vec![];
            format!("no scopes: {e}")
        }
    };
    Some(Explained {
        caller: Some(caller),
        summary: vec![format!("caller: role {role}, {scopes}")],
    })
}

/// Why the capability is hidden from the explained caller (empty: they see it), each policy
/// function evaluated as that caller.
pub fn why_hidden(registry: &Registry, c: &Capability, explained: &Explained) -> Vec<String> {
    let Some(caller) = &explained.caller else {
        return vec!["hidden from this caller: its role is refused".into()];
    };
    let mut reasons = vec![];
    if !session::can_execute(&c.executors, caller.role_oid) {
        reasons.push(format!(
            "hidden from this caller: role {} has no EXECUTE on it",
            caller.principal.role
        ));
    }
    let missing: Vec<&str> = c
        .meta
        .scopes
        .iter()
        .filter(|s| !caller.scopes.contains(s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        reasons.push(format!(
            "hidden from this caller: lacks scopes {}",
            missing.join(" ")
        ));
    }
    if let Some(p) = &c.policy.visible {
        match eval_bool(p, caller, None, registry.settings.call_timeout_ms) {
            Ok(true) => {}
            Ok(false) => reasons.push(format!("hidden from this caller: {}() is false", p.name)),
            Err(e) => reasons.push(format!(
                "hidden from this caller: {}() failed: {}",
                p.name,
                execute::public_error(&e, &crate::call::scope::trace_id()).message
            )),
        }
    }
    reasons
}
