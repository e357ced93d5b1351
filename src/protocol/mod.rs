//! MCP methods, answered from the registry, for both eras (see [versions::Era]): dispatch only.
//! Each method family lives in its own file with its `METHODS` and a `handle`; adding a family is
//! that file plus one line in [FAMILIES].

use crate::catalog::registry::{Caller, Registry};
use crate::error::Error;
use serde_json::{Map, Value};
use std::cell::RefCell;
use versions::Era;

mod apps;
mod call;
mod completion;
mod lifecycle;
mod listing;
mod prompts;
mod resources;
mod skills;
pub mod stateless;
pub mod subscriptions;
mod tasks;
mod tools;
pub mod versions;

pub use tools::tool_json;

/// What a request needs besides its params.
pub struct Context<'a> {
    pub registry: &'a Registry,
    pub caller: &'a Caller,
    /// The revision: negotiated (legacy, from the MCP-Protocol-Version header) or declared in
    /// `_meta` (stateless).
    pub era: &'a Era,
    /// The HTTP headers, when the request came over HTTP (for `Mcp-Param-*` checks).
    pub headers: Option<&'a Map<String, Value>>,
    /// What a resources/read resolved its URI to for this caller, once chosen: of the several a
    /// URI may name, the one the audit row, chumbo.metrics and the trace then name.
    pub resolved: RefCell<Option<Resolved>>,
}

/// What answered a resources/read.
pub enum Resolved {
    /// A resource or resource template, by name (not the capability itself: a reference would tie
    /// the context's lifetime to the registry's).
    Capability(String),
    /// A skill file or an app the caller is served: chumbo's own, named by its URI.
    Served,
}

pub type MethodResult = Result<Value, Error>;

/// A method family's handler: called only with one of its `METHODS`.
type Handler = fn(&Context, &str, &Map<String, Value>) -> MethodResult;

/// Every method family: its methods and its handler. (subscriptions/listen is answered by the
/// HTTP pipeline: it opens a stream rather than returning a result.)
const FAMILIES: [(&[&str], Handler); 7] = [
    (lifecycle::METHODS, lifecycle::handle),
    (tools::METHODS, tools::handle),
    (resources::METHODS, resources::handle),
    (prompts::METHODS, prompts::handle),
    (completion::METHODS, completion::handle),
    (skills::METHODS, skills::handle),
    (tasks::METHODS, tasks::handle),
];

pub fn dispatch(ctx: &Context, method: &str, params: &Map<String, Value>) -> MethodResult {
    let family = FAMILIES
        .iter()
        .find(|(methods, _)| methods.contains(&method));
    match family {
        Some((_, handle)) if ctx.era.knows(method) => handle(ctx, method, params),
        _ => Err(not_found(method)),
    }
}

/// `method` when it is one of MCP's that chumbo knows (in any revision), else `_OTHER` (as
/// OpenTelemetry's HTTP conventions record a method they do not know): what the audit row,
/// chumbo.metrics and the trace record. A method a client made up is its own text, which must not
/// reach them: it could carry anything, and would make a metric series per made-up name.
pub fn known_method(method: &str) -> &'static str {
    FAMILIES
        .iter()
        .flat_map(|(methods, _)| methods.iter())
        .chain([&subscriptions::METHOD])
        .find(|m| **m == method)
        .copied()
        .unwrap_or("_OTHER")
}

pub(super) fn not_found(method: &str) -> Error {
    Error::MethodNotFound(method.to_string())
}
