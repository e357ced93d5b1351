//! Why a function in `mcp` is not a capability, and the warnings doctor gives: the texts are part
//! of the contract (regress expected files assert them).

use super::*;

/// Why a function in `mcp` is not a capability; doctor shows these texts.
#[derive(Debug, thiserror::Error)]
pub(super) enum Problem {
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error("resource URI template: {0}")]
    Template(String),
    #[error("metadata declares both \"resource\" and \"prompt\"")]
    ResourceAndPrompt,
    #[error(
        "only functions can be capabilities (this is a procedure, aggregate or window function)"
    )]
    NotAFunction,
    #[error("\"{0}\" is overloaded; capability names must be unique")]
    Overloaded(String),
    #[error("name must be 1-128 characters from A-Z, a-z, 0-9, '_', '.', '-'")]
    InvalidName,
    #[error("variadic functions are not supported")]
    Variadic,
    #[error("SECURITY DEFINER functions run with their owner's privileges, bypassing the caller's RLS; declare \"privileged\": true in @mcp metadata to expose it")]
    SecurityDefiner,
    #[error("@mcp params names \"{0}\", which is not a parameter")]
    UnknownParamMeta(String),
    #[error("completions apply to prompts and resource templates only")]
    CompletionsOnTool,
    #[error("completions of \"{0}\" must name a function as \"schema.function\", not {1:?}")]
    CompletionFunctionName(String, String),
    #[error("parameter {0} has no name")]
    UnnamedParam(usize),
    #[error(
        "parameter names starting with {} are reserved for chumbo",
        RESERVED_PREFIX
    )]
    ReservedParam,
    #[error("{0}: {1}")]
    ParamType(String, TypeError),
    #[error("inputSchema must have \"type\": \"object\"")]
    InputSchemaNotObject,
    #[error("inputSchema property \"{0}\" is not a parameter")]
    InputSchemaExtraProperty(String),
    #[error("inputSchema lacks the required parameter \"{0}\"")]
    InputSchemaLacksRequired(String),
    #[error("URI template variable {{{0}}} is not a parameter")]
    TemplateVariableNotParam(String),
    #[error("required parameter \"{0}\" is not a URI template variable")]
    RequiredNotTemplateVariable(String),
    #[error("a {} must not return a set", .0.as_str())]
    ReturnsSet(Kind),
    #[error("outputSchema is not a valid JSON Schema")]
    InvalidOutputSchema,
    #[error("inputSchema is not a valid JSON Schema: {0}")]
    InvalidInputSchema(String),
    /// Paging, projection or idempotency metadata that cannot work (metadata.rs says why).
    #[error("{0}")]
    Rule(String),
}

pub(super) const PROBLEM_SUPERUSER_DEFINER: &str = "SECURITY DEFINER and owned by a superuser: every call would run as superuser, past every privilege and row-level security; give the function a non-superuser owner (ALTER FUNCTION ... OWNER TO ...), or set dangerously_allow_superuser_tools";
pub(super) const WARN_SUPERUSER_DEFINER: &str = "DANGER: SECURITY DEFINER and owned by a superuser, exposed because dangerously_allow_superuser_tools is set: every call runs as superuser, past every privilege and row-level security";
pub(super) const WARN_PRIVILEGED: &str =
    "SECURITY DEFINER: runs with its owner's privileges (declared privileged)";
pub(super) const WARN_PUBLIC_EXECUTE: &str = "PUBLIC may execute it, so every allowed role (anon too) can use it; `revoke execute ... from public` and grant it to the roles that should";

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    /// Doctor's texts are part of the contract (regress expected files assert them).
    #[pgrx::pg_test]
    fn problem_texts_are_stable() {
        let cases = [
            (
                Problem::Overloaded("f".into()),
                "\"f\" is overloaded; capability names must be unique",
            ),
            (Problem::UnnamedParam(2), "parameter 2 has no name"),
            (
                Problem::ReservedParam,
                "parameter names starting with _chumbo are reserved for chumbo",
            ),
            (
                Problem::ParamType("d".into(), TypeError::Unsupported("interval".into())),
                "d: parameter type interval is not supported",
            ),
            (
                Problem::TemplateVariableNotParam("v".into()),
                "URI template variable {v} is not a parameter",
            ),
            (
                Problem::ReturnsSet(Kind::Prompt),
                "a prompt must not return a set",
            ),
            (Problem::Template("x".into()), "resource URI template: x"),
            (
                Problem::InvalidInputSchema("x".into()),
                "inputSchema is not a valid JSON Schema: x",
            ),
        ];
        for (problem, text) in cases {
            assert_eq!(problem.to_string(), text);
        }
    }
}
