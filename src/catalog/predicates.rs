//! The policy functions a capability's `@mcp` metadata names (`visible`, `can_execute`,
//! `approval`) and the `scope_resolver` setting, resolved through the catalog when the registry
//! is built (so the registry can hold them); running them is src/call/policy.rs, approvals
//! src/call/approval.rs.

use crate::catalog::metadata::{self, Metadata};
use crate::identity::session;
use crate::postgres::app_function;
use serde_json::{json, Value};

/// The argument legacy clients repeat the call with (reserved prefix: no parameter can have it).
pub const TOKEN_ARGUMENT: &str = "_chumbo_confirm";

/// A resolved policy function.
#[derive(Clone, Debug)]
pub struct Predicate {
    /// As written in the metadata or setting.
    pub name: String,
    /// The query calling it, built from catalog-quoted identifiers only.
    pub(crate) sql: String,
    pub(crate) takes_arguments: bool,
}

/// What a function must look like for each hook.
#[derive(Clone, Copy)]
pub(crate) enum Shape {
    /// `() returns boolean` (visible)
    OfCaller,
    /// `(jsonb) returns boolean` (can_execute, approval)
    OfArguments,
    /// `() returns text[]` (scope_resolver)
    Scopes,
}

/// When a call needs the user's confirmation.
pub enum ApprovalRule {
    Never,
    Always,
    When(Predicate),
}

/// A capability's policies, resolved when the registry is built.
pub struct Policy {
    pub visible: Option<Predicate>,
    pub can_execute: Option<Predicate>,
    pub approval: ApprovalRule,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            visible: None,
            can_execute: None,
            approval: ApprovalRule::Never,
        }
    }
}

pub(crate) fn resolve(name: &str, shape: Shape) -> Result<Predicate, String> {
    let (args, returns) = match shape {
        Shape::OfCaller => ("", "boolean"),
        Shape::OfArguments => ("jsonb", "boolean"),
        Shape::Scopes => ("", "text[]"),
    };
    let wanted = format!("{name}({args}) returns {returns}");
    if !app_function::valid_name(name) {
        return Err(format!(
            "\"{name}\" must name a function as schema.function (plain identifiers), {wanted}"
        ));
    }
    // As the owner: whoever's request builds the registry (the edge's role, a caller) may lack
    // USAGE on the function's schema, and the answer must not depend on who came first.
    let found =
        session::in_subtransaction(|| session::as_owner(|| app_function::resolve(name, args)));
    match found {
        Ok(Ok(Some(f))) if f.in_mcp => Err(format!(
            "{name} is in schema mcp, which would expose it as a capability; policy functions belong in another schema"
        )),
        Ok(Ok(Some(f))) if f.returns == returns && !f.returns_set => {
            let takes_arguments = matches!(shape, Shape::OfArguments);
            let sql = if takes_arguments {
                format!("select {}($1)", f.qualified)
            } else {
                format!("select {}()", f.qualified)
            };
            Ok(Predicate {
                name: name.to_string(),
                sql,
                takes_arguments,
            })
        }
        Ok(Ok(Some(_))) => Err(format!("{name} must be {wanted}")),
        _ => Err(format!("{wanted} does not exist")),
    }
}

/// Resolves the policies a capability's metadata declares (at registry build time), adding
/// problems for doctor; a tool that needs approval also accepts the confirmation token argument
/// of legacy clients (approval.rs).
pub fn reflect(
    meta: &Metadata,
    is_tool: bool,
    input_schema: &mut Value,
    problems: &mut Vec<String>,
) -> Policy {
    let mut one = |key: &str, name: &Option<String>, shape| {
        name.as_deref().and_then(|n| {
            resolve(n, shape)
                .map_err(|e| problems.push(format!("@mcp {key}: {e}")))
                .ok()
        })
    };
    let visible = one("visible", &meta.visible, Shape::OfCaller);
    let can_execute = one("can_execute", &meta.can_execute, Shape::OfArguments);
    let approval = match &meta.approval {
        None | Some(metadata::Approval::Always(false)) => ApprovalRule::Never,
        Some(metadata::Approval::Always(true)) => ApprovalRule::Always,
        Some(metadata::Approval::When(n)) => {
            match one("approval", &Some(n.clone()), Shape::OfArguments) {
                Some(p) => ApprovalRule::When(p),
                None => ApprovalRule::Always,
            }
        }
    };
    if !is_tool && (can_execute.is_some() || !matches!(approval, ApprovalRule::Never)) {
        problems.push("can_execute and approval apply to tools only".into());
    }
    if !matches!(approval, ApprovalRule::Never) {
        add_token_argument(input_schema);
    }
    Policy {
        visible,
        can_execute,
        approval,
    }
}

/// Lets the tool's inputSchema accept the token (its `additionalProperties` is false).
pub fn add_token_argument(input_schema: &mut Value) {
    if let Some(props) = input_schema
        .as_object_mut()
        .and_then(|s| {
            s.entry("properties").or_insert(json!({}));
            s.get_mut("properties")
        })
        .and_then(Value::as_object_mut)
    {
        props.insert(
            TOKEN_ARGUMENT.into(),
            json!({
                "type": "string",
                "description": "Leave out. If this tool answers that it needs the user's confirmation, ask the user; if they agree, repeat the call with the same arguments and this set to the token it gave."
            }),
        );
    }
}
