//! One `tools/call` as a plan and the steps that run it (see docs/architecture.md):
//!
//! - [plan]: the call resolved once into a value ([plan::ToolCall]) that serialises to jsonb;
//! - [steps]: the steps, in their fixed order, each a function of the plan and what the steps
//!   before it produced;
//! - what the steps use: [policy] (the app's predicates), [approval], [idempotency], [pages]
//!   (windows and cursors), [execute] (the run as the caller, within its
//!   time bound), [projection] (the app's output and error projections).
//!
//! - the per-request state: [scope] (principal, events, MRTR round, trace id) and [mrtr] (multi
//!   round-trip requests: input asked of the client, and the requestState that carries it).
//!
//! Resources and prompts run through the same [steps::execute] (their own plan is only a URI or a
//! name and arguments).

pub mod approval;
pub mod execute;
pub mod idempotency;
pub mod mrtr;
pub mod pages;
pub mod plan;
pub mod policy;
pub mod projection;
pub mod scope;
pub mod steps;
pub mod task;
pub mod task_run;
