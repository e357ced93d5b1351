//! The capability registry: every function in schema `mcp`, reflected once per schema version
//! and cached per backend (thread_local + RefCell, never a Mutex: a panic must not poison later
//! requests). Visibility for a caller (EXECUTE privilege, scopes) is decided per request, so role
//! membership changes, which no event trigger sees, take effect at once.

use crate::alloc;
use crate::metadata::{self, Metadata, MetadataError};
use crate::predicates;
use crate::session;
use crate::settings::Settings;
use crate::types::{self, ReflectedType, ReturnShape, TypeError};
use crate::uri_template::UriTemplate;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Names chumbo gives the parts of a call's SQL (see execute); no parameter may take one
/// (reflection refuses them), so a parameter called `r` or `a` cannot be confused with them.
pub const RESERVED_PREFIX: &str = "_chumbo";

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Tool,
    Resource,
    ResourceTemplate,
    Prompt,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::ResourceTemplate => "resource template",
            Kind::Prompt => "prompt",
        }
    }
}

pub struct Param {
    pub name: String,
    /// Schema-qualified SQL type name, for the binding column list.
    pub sql_type: String,
    pub required: bool,
    pub description: Option<String>,
}

pub struct Capability {
    pub oid: pg_sys::Oid,
    pub name: String,
    pub kind: Kind,
    pub description: Option<String>,
    /// Its `params` and `inputSchema` are taken out at reflection: what they say is in `params`
    /// and `input_schema` (kept, they were the largest part of a cached tool).
    pub meta: Box<Metadata>,
    pub params: Vec<Param>,
    pub input_schema: SchemaText,
    /// Compiled on first use: a DDL change must not recompile every tool's schema. Boxed, like
    /// the output validator: most tools never fill the slot.
    validator: std::cell::OnceCell<Result<Box<jsonschema::Validator>, String>>,
    /// The declared outputSchema, compiled once.
    pub output_validator: Option<Box<jsonschema::Validator>>,
    pub returns: ReturnShape,
    pub returns_set: bool,
    pub read_only: bool,
    /// The function has its own `SET search_path` clause (see session::run_as_caller_calling).
    pub sets_search_path: bool,
    /// SECURITY DEFINER (declared privileged): the role it runs as, its owner.
    pub definer: Option<pg_sys::Oid>,
    pub template: Option<UriTemplate>,
    /// Visibility, execution predicate and approval, resolved (src/predicates.rs).
    pub policy: predicates::Policy,
}

/// One function in `mcp` and, when it is not a capability, why.
pub struct Entry {
    pub identity: String,
    pub name: String,
    pub kind: Kind,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
    pub oid: pg_sys::Oid,
}

pub struct Registry {
    pub version: i64,
    /// Set when the registry was built inside a transaction that had written something: it may
    /// reflect that transaction's uncommitted DDL or settings, which a rollback undoes while the
    /// (non-transactional) version stays, so it is only good within that transaction.
    built_in: Option<pg_sys::TransactionId>,
    /// Whether every schema version given out before the build was settled (committed or rolled
    /// back): a registry built while one was still open must be built again once it is, even if
    /// the newest committed version did not move (it may have been numbered below it).
    settled: bool,
    /// chumbo.keys: secrets by name.
    pub keys: HashMap<String, Vec<u8>>,
    pub settings: Settings,
    pub settings_error: Option<String>,
    /// Owners of tables whose row-level security does not apply to them.
    pub table_owners: Vec<pg_sys::Oid>,
    pub capabilities: Vec<Rc<Capability>>,
    pub entries: Vec<Rc<Entry>>,
    /// Installed skills, without contents (src/skills.rs).
    pub skills: Vec<crate::skills::Skill>,
    by_name: HashMap<(String, u8), usize>,
    /// Each function's reflection by oid: the next build reuses it while its stamp holds.
    reflected: HashMap<u32, Reflected>,
    /// Every function in `mcp` as last read (sql/reflect_stamps.sql), in reflection order: a
    /// build after changes that touched only some functions re-reads only those.
    stamps: Vec<Stamp>,
    /// The stamp of each type the functions name (sql/reflect_types.sql).
    type_stamps: HashMap<u32, String>,
    /// Bytes this registry holds, reused reflections included (counted by src/alloc.rs).
    pub bytes: usize,
    /// Functions reflected for this registry (the others were reused from the previous one).
    pub reflected_now: usize,
    /// Functions whose stamps were read for this registry: all of them, or the ones the changes
    /// since the previous registry named.
    pub stamped_now: usize,
}

/// One function's reflection and what it was made from (sql/reflect_stamps.sql).
#[derive(Clone)]
struct Reflected {
    stamp: Rc<str>,
    /// The types it names: it is reflected again when one of their stamps moves.
    types: Rc<[u32]>,
    overloaded: bool,
    /// False when its policies name other functions (src/predicates.rs), whose changes the
    /// stamp does not show: such a function is reflected again at every build.
    reusable: bool,
    entry: Rc<Entry>,
    capability: Option<Rc<Capability>>,
    bytes: usize,
}

fn kind_key(kind: Kind) -> u8 {
    match kind {
        Kind::Tool => 0,
        Kind::Resource | Kind::ResourceTemplate => 1,
        Kind::Prompt => 2,
    }
}

impl Capability {
    /// The argument validator (a JSON Schema 2020-12 validator, formats checked).
    pub fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| {
                jsonschema::options()
                    .should_validate_formats(true)
                    .build(&self.input_schema)
                    .map(Box::new)
                    .map_err(|e| e.to_string())
            })
            .as_deref()
            .map_err(String::as_str)
    }
}

/// A capability's input schema, kept as its JSON text: a parsed tree costs several KB per tool
/// (a BTreeMap node per object) and tools/list only copies it out. Parsed, and kept parsed, when a
/// call first needs it (argument validation, parameter headers); serializing it (tools/list)
/// parses a temporary copy, so listing every tool does not grow the cache.
pub struct SchemaText {
    text: Box<str>,
    parsed: std::cell::OnceCell<Value>,
}

impl SchemaText {
    fn new(schema: &Value) -> Self {
        SchemaText {
            text: schema.to_string().into_boxed_str(),
            parsed: std::cell::OnceCell::new(),
        }
    }

    fn parse(&self) -> Value {
        // Written by SchemaText::new from a Value: it parses.
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl std::ops::Deref for SchemaText {
    type Target = Value;
    fn deref(&self) -> &Value {
        self.parsed.get_or_init(|| self.parse())
    }
}

impl serde::Serialize for SchemaText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.parsed.get() {
            Some(v) => v.serialize(s),
            None => self.parse().serialize(s),
        }
    }
}

impl std::fmt::Debug for SchemaText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl Registry {
    pub fn find(&self, name: &str, kind: Kind) -> Option<&Capability> {
        self.by_name
            .get(&(name.to_string(), kind_key(kind)))
            .map(|&i| &*self.capabilities[i])
    }
}

thread_local! {
    static CACHE: RefCell<Option<Rc<Registry>>> = const { RefCell::new(None) };
}

/// chumbo.schema_version's last value, read through the syscache and the sequence itself rather
/// than SPI: this runs on every request. It moves at every change, committed or not.
fn sequence_value() -> i64 {
    // SAFETY: both take NUL-terminated 'static C strings; get_namespace_oid (missing_ok =
    // false) raises a PostgreSQL error, not UB, if the schema is missing.
    let seq = unsafe {
        let schema = pg_sys::get_namespace_oid(c"chumbo".as_ptr(), false);
        pg_sys::get_relname_relid(c"schema_version".as_ptr(), schema)
    };
    // SAFETY: pg_sequence_last_value takes the sequence's oid (looked up above) and returns int8 or null.
    session::as_owner(|| unsafe {
        pgrx::direct_function_call::<i64>(
            pg_sys::pg_sequence_last_value,
            &[Some(pg_sys::Datum::from(seq))],
        )
    })
    .unwrap_or(0)
}

/// The newest change this transaction can see committed (or made itself).
fn committed_version() -> i64 {
    session::as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "select max(version) from chumbo.schema_changes",
                Some(1),
                &[],
            )?
            .first()
            .get_one::<i64>()
        })
    })
    .ok()
    .flatten()
    .unwrap_or(0)
}

thread_local! {
    /// The sequence value at which the cached registry was last known to be current: while the
    /// sequence stays there, nothing can have changed. -1 while a change is still open: then
    /// every request checks again.
    static CONFIRMED_AT: std::cell::Cell<i64> = const { std::cell::Cell::new(-1) };
}

/// The newest snapshot as the active one (what SPI reads with) while this lives.
struct LatestSnapshot;

impl LatestSnapshot {
    fn push() -> LatestSnapshot {
        // SAFETY: PushActiveSnapshot copies the static snapshot GetLatestSnapshot returns.
        unsafe { pg_sys::PushActiveSnapshot(pg_sys::GetLatestSnapshot()) };
        LatestSnapshot
    }
}

impl Drop for LatestSnapshot {
    fn drop(&mut self) {
        // SAFETY: pops the snapshot `push` pushed (also when a PostgreSQL error unwinds past it,
        // before the (sub)transaction's abort looks at the stack).
        unsafe { pg_sys::PopActiveSnapshot() };
    }
}

/// The advisory lock each capability change holds, shared, from before it takes its schema
/// version until its transaction ends (chumbo._schema_changed, sql/registry.sql).
const CHANGE_LOCK: [i32; 2] = [0x6368_6d62, 1]; // "chmb"

/// Whether no other transaction holds a schema version it has not yet committed or rolled back.
/// Versions are taken in one order and may commit in another: only once every version given out
/// is settled does the newest committed one say what the catalog holds. (A backend's own locks
/// never conflict with each other: its own open change is seen through `built_in`.)
fn changes_settled() -> bool {
    let key = CHANGE_LOCK.map(|k| Some(pg_sys::Datum::from(k)));
    // SAFETY: both functions take two int4 and return a bool; the exclusive session lock taken
    // when free is released at once, so no change ever waits on it for longer than this.
    unsafe {
        let free = pgrx::direct_function_call::<bool>(pg_sys::pg_try_advisory_lock_int4, &key)
            == Some(true);
        if free {
            pgrx::direct_function_call::<bool>(pg_sys::pg_advisory_unlock_int4, &key);
        }
        free
    }
}

/// Free heap bytes a rebuild must leave before they are given back to the kernel.
const TRIM_ABOVE: usize = 4 << 20;

/// The registry for the current schema version, rebuilt when DDL/COMMENT/GRANT/settings moved it.
pub fn current() -> Rc<Registry> {
    let seq = sequence_value();
    // SAFETY: GetTopTransactionIdIfAny only reads the current transaction state (no pointers).
    let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
    let cached = CACHE.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|r| r.built_in.is_none_or(|x| x == xid))
            .cloned()
    });
    if let Some(r) = &cached {
        if CONFIRMED_AT.with(|c| c.get()) == seq {
            return r.clone();
        }
    }
    // After `seq` was read: every version up to it is settled if no change holds the lock now.
    let settled_to_seq = changes_settled();
    // The catalog is read under a snapshot taken after that check, not the statement's (taken
    // before it): a change that commits in between is then in the registry, not only settled.
    let _snapshot = LatestSnapshot::push();
    // Read before the catalog: the registry is then at least as new as its label.
    let committed = committed_version();
    // A number above `seq` committed since it was read: others between may still be open.
    let settled = settled_to_seq && committed <= seq;
    let registry = match cached.filter(|r| r.version == committed && (r.settled || !settled)) {
        Some(r) => r,
        None => {
            let previous = CACHE.with(|c| c.borrow().clone());
            // Only from a registry that saw every change up to its label, in a transaction whose
            // own changes this one sees (another's may have rolled back).
            let touched = previous
                .as_deref()
                .filter(|p| p.settled && p.built_in.is_none_or(|x| x == xid))
                .and_then(|p| changes_since(p.version, committed));
            if touched.is_none() {
                // Keys and settings may have moved with it: tokens verified under them go too.
                crate::auth::forget_verified_tokens();
            }
            let (r, peak) = alloc::peak_of(|| {
                let r = Rc::new(build(
                    committed,
                    settled,
                    previous.as_deref(),
                    touched.as_deref(),
                ));
                drop(previous);
                CACHE.with(|c| *c.borrow_mut() = Some(r.clone()));
                r
            });
            // The previous registry's unshared parts and the build's temporaries are free now.
            // Given back only when that is a lot (a build that reflected many functions): the
            // next request would otherwise fault its own working set back in, page by page,
            // after every small change (~3–4 ms for a tools/list of 1,000 tools).
            if peak.saturating_sub(alloc::live()) > TRIM_ABOVE {
                alloc::trim();
            }
            r
        }
    };
    // Settled and read after that: a version below `seq` that is not committed was rolled back.
    CONFIRMED_AT.with(|c| c.set(if settled { seq } else { -1 }));
    registry
}

/// This backend's capability cache: what the registry holds (bytes counted by src/alloc.rs, its
/// validators compiled on first use not included) and the heap of chumbo's Rust code. For owners
/// only (finalize.sql revokes it from PUBLIC): it counts capabilities a caller may not see.
#[pg_extern]
fn cache_stats() -> JsonB {
    let r = current();
    JsonB(json!({
        "version": r.version,
        "capabilities": r.capabilities.len(),
        "functions": r.entries.len(),
        "registry_bytes": r.bytes,
        "reflected_last_build": r.reflected_now,
        "stamped_last_build": r.stamped_now,
        "allocated_bytes": alloc::live(),
        "allocated_peak_bytes": alloc::peak(),
    }))
}

/// One row of sql/reflect.sql: a function in schema `mcp`.
#[derive(Debug, Deserialize)]
struct ReflectedFunction {
    oid: u32,
    name: String,
    /// `oid::regprocedure`: name and argument types, what doctor shows.
    identity: String,
    comment: Option<String>,
    /// pg_proc.prokind: f(unction), p(rocedure), a(ggregate), w(indow).
    prokind: String,
    security_definer: bool,
    /// pg_proc.proowner.
    owner: u32,
    /// pg_proc.provolatile: i(mmutable), s(table), v(olatile).
    volatility: String,
    /// pg_proc.proconfig has a search_path (a `SET search_path` clause).
    sets_search_path: bool,
    returns_set: bool,
    return_type: ReflectedType,
    variadic: bool,
    /// How many trailing input parameters have defaults.
    n_defaults: usize,
    public_execute: bool,
    /// Every argument (IN, OUT, INOUT, VARIADIC, TABLE) in declaration order.
    args: Vec<ReflectedArg>,
}

#[derive(Debug, Deserialize)]
struct ReflectedArg {
    /// None (or empty) when the argument is unnamed.
    name: Option<String>,
    /// pg_proc.proargmodes: i(n), o(ut), b(oth), v(ariadic), t(able).
    mode: String,
    #[serde(rename = "type")]
    ty: ReflectedType,
}

impl ReflectedArg {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// Whether the caller passes it: IN, INOUT and VARIADIC arguments.
    fn is_input(&self) -> bool {
        matches!(self.mode.as_str(), "i" | "b" | "v")
    }
}

/// Why a function in `mcp` is not a capability; doctor shows these texts.
#[derive(Debug, thiserror::Error)]
enum Problem {
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

const PROBLEM_SUPERUSER_DEFINER: &str = "SECURITY DEFINER and owned by a superuser: every call would run as superuser, past every privilege and row-level security; give the function a non-superuser owner (ALTER FUNCTION ... OWNER TO ...), or set dangerously_allow_superuser_tools";
const WARN_SUPERUSER_DEFINER: &str = "DANGER: SECURITY DEFINER and owned by a superuser, exposed because dangerously_allow_superuser_tools is set: every call runs as superuser, past every privilege and row-level security";
const WARN_PRIVILEGED: &str =
    "SECURITY DEFINER: runs with its owner's privileges (declared privileged)";
const WARN_PUBLIC_EXECUTE: &str = "PUBLIC may execute it, so every allowed role (anon too) can use it; `revoke execute ... from public` and grant it to the roles that should";

/// What reflecting one function found, in the order doctor lists it.
#[derive(Default)]
struct Findings {
    problems: Vec<Problem>,
    warnings: Vec<String>,
}

/// Everything a registry is built from, read in one go as the extension owner.
struct Catalog {
    /// Every function in `mcp`, in reflection order.
    stamps: Vec<Stamp>,
    /// The functions that need reflecting (not reusable from the previous registry).
    functions: Vec<ReflectedFunction>,
    type_stamps: HashMap<u32, String>,
    settings: Settings,
    settings_error: Option<String>,
    keys: HashMap<String, Vec<u8>>,
    table_owners: Vec<pg_sys::Oid>,
    /// Installed skills, without contents (src/skills.rs).
    skills: Vec<crate::skills::Skill>,
    /// How many stamps were read (all functions', or those the changes named).
    stamped: usize,
}

/// One row of sql/reflect_stamps.sql.
#[derive(Clone)]
struct Stamp {
    oid: u32,
    name: Rc<str>,
    stamp: Rc<str>,
    types: Rc<[u32]>,
}

impl Catalog {
    fn overloaded(&self) -> HashMap<&str, bool> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for s in &self.stamps {
            *counts.entry(&*s.name).or_default() += 1;
        }
        counts.into_iter().map(|(n, c)| (n, c > 1)).collect()
    }
}

impl Registry {
    /// The previous reflection of a function, when nothing it was made from has changed.
    fn reusable(
        &self,
        s: &Stamp,
        overloaded: bool,
        type_stamps: &HashMap<u32, String>,
    ) -> Option<&Reflected> {
        self.reflected.get(&s.oid).filter(|r| {
            r.reusable
                && r.overloaded == overloaded
                && *r.stamp == *s.stamp
                && r.types
                    .iter()
                    .all(|t| self.type_stamps.get(t) == type_stamps.get(t))
        })
    }
}

/// A registry for `version`: functions whose stamp is unchanged since `previous` keep their
/// reflection (shared, not copied), the others are reflected now. `touched`: the functions the
/// changes since `previous` named, when they touched nothing else (`changes_since`).
fn build(
    version: i64,
    settled: bool,
    previous: Option<&Registry>,
    touched: Option<&[u32]>,
) -> Registry {
    let inputs = std::panic::AssertUnwindSafe((previous, touched));
    let mut catalog = session::as_owner(move || {
        let (previous, touched) = *inputs;
        read_catalog(previous, touched)
    });
    // SAFETY: GetTopTransactionIdIfAny only reads the current transaction state (no pointers).
    let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
    let mut registry = Registry {
        version,
        built_in: (xid != pg_sys::InvalidTransactionId).then_some(xid),
        settled,
        keys: std::mem::take(&mut catalog.keys),
        settings: std::mem::take(&mut catalog.settings),
        settings_error: catalog.settings_error.take(),
        table_owners: std::mem::take(&mut catalog.table_owners),
        capabilities: vec![],
        entries: vec![],
        skills: std::mem::take(&mut catalog.skills),
        by_name: HashMap::new(),
        reflected: HashMap::new(),
        stamps: vec![],
        type_stamps: std::mem::take(&mut catalog.type_stamps),
        bytes: 0,
        reflected_now: 0,
        stamped_now: catalog.stamped,
    };
    let overloaded = catalog.overloaded();
    let fetched: HashMap<u32, &ReflectedFunction> =
        catalog.functions.iter().map(|f| (f.oid, f)).collect();
    let mut reused_bytes = 0;
    let ((), indexed_bytes) = alloc::net(|| {
        for s in &catalog.stamps {
            let overloaded = overloaded[&*s.name];
            let r = match previous.and_then(|p| p.reusable(s, overloaded, &registry.type_stamps)) {
                Some(r) => {
                    reused_bytes += r.bytes;
                    r.clone()
                }
                // Not in the second read: dropped in between (the next build sees it gone).
                None => match fetched.get(&s.oid) {
                    Some(f) => {
                        registry.reflected_now += 1;
                        reflected(f, s, overloaded)
                    }
                    None => continue,
                },
            };
            registry.index(s.oid, r);
        }
    });
    drop(overloaded);
    registry.stamps = std::mem::take(&mut catalog.stamps);
    registry.bytes = indexed_bytes + reused_bytes;
    registry
}

/// A function's reflection with its stamp, and the bytes it holds.
fn reflected(f: &ReflectedFunction, s: &Stamp, overloaded: bool) -> Reflected {
    let (mut r, bytes) = alloc::net(|| {
        let (entry, capability, reusable) = reflect(f, overloaded);
        Reflected {
            stamp: s.stamp.clone(),
            types: s.types.clone(),
            overloaded,
            reusable,
            entry: Rc::new(entry),
            capability: capability.map(Rc::new),
            bytes: 0,
        }
    });
    r.bytes = bytes;
    r
}

/// Rows `chumbo._schema_changed` keeps above the newest committed number (sql/registry.sql).
const KEPT_CHANGES: i64 = 64;

/// The functions the changes numbered above `since` named, up to `committed`, when every one of
/// them touched functions only (sql/registry.sql, _bump_schema_version). None when one may have
/// touched anything else, or when rows of the range may have been deleted. Only meaningful for
/// a registry built once every change up to `since` had settled: a change numbered lower than
/// `since` is not in the range.
fn changes_since(since: i64, committed: i64) -> Option<Vec<u32>> {
    if committed < since || committed - since > KEPT_CHANGES {
        return None;
    }
    session::as_owner(|| {
        Spi::connect(|c| {
            let mut touched = vec![];
            // Through to_jsonb: a database not yet updated to this version has no column
            // `functions`, and reads as null (everything) instead of failing the request.
            for row in session::run_kept(
                c,
                "select to_jsonb(c) -> 'functions' from chumbo.schema_changes c where c.version > $1",
                &[pg_sys::INT8OID],
                &[since.into()],
            )? {
                // oids come as strings in jsonb; anything unreadable counts as "everything"
                let oids = match row.get::<JsonB>(1)? {
                    Some(JsonB(Value::Array(oids))) => oids,
                    _ => return Ok(None),
                };
                for oid in oids {
                    match oid.as_str().and_then(|o| o.parse::<u32>().ok()) {
                        Some(oid) => touched.push(oid),
                        None => return Ok(None),
                    }
                }
            }
            Ok::<_, pgrx::spi::Error>(Some(touched))
        })
    })
    .ok()
    .flatten()
}

/// sql/reflect_stamps.sql: every function in `mcp`, or those of `only` still there.
fn read_stamps(only: Option<&[u32]>) -> Vec<Stamp> {
    let only: Option<Vec<pg_sys::Oid>> = only.map(|o| o.iter().map(|&o| o.into()).collect());
    Spi::connect(|c| {
        let mut stamps = vec![];
        for row in c.select(
            include_str!("../sql/reflect_stamps.sql"),
            None,
            &[only.into()],
        )? {
            if let (Some(oid), Some(name), Some(stamp), Some(types)) = (
                row.get::<i64>(1)?,
                row.get::<String>(2)?,
                row.get::<String>(3)?,
                row.get::<Vec<pg_sys::Oid>>(4)?,
            ) {
                stamps.push(Stamp {
                    oid: u32::try_from(oid).unwrap_or_default(),
                    name: name.into(),
                    stamp: stamp.into(),
                    types: types.into_iter().map(u32::from).collect(),
                });
            }
        }
        Ok::<_, pgrx::spi::Error>(stamps)
    })
    .unwrap_or_default()
}

/// sql/reflect_types.sql: the stamps of `types`.
fn read_type_stamps(types: &[u32]) -> HashMap<u32, String> {
    let types: Vec<pg_sys::Oid> = types.iter().map(|&t| t.into()).collect();
    Spi::connect(|c| {
        let mut stamps = HashMap::new();
        for row in session::run_kept(
            c,
            include_str!("../sql/reflect_types.sql"),
            &[pg_sys::OIDARRAYOID],
            &[types.into()],
        )? {
            if let (Some(t), Some(stamp)) = (row.get::<i64>(1)?, row.get::<String>(2)?) {
                stamps.insert(u32::try_from(t).unwrap_or_default(), stamp);
            }
        }
        Ok::<_, pgrx::spi::Error>(stamps)
    })
    .unwrap_or_default()
}

/// Step 1: the catalog; of the functions, only those `previous` cannot reuse. A failed read
/// leaves that part empty (no capabilities, strict defaults).
fn read_catalog(previous: Option<&Registry>, touched: Option<&[u32]>) -> Catalog {
    let mut catalog = match previous.zip(touched) {
        Some((p, touched)) => carried_over(p, touched),
        None => None,
    }
    .unwrap_or_else(read_all_but_functions);
    let overloaded = catalog.overloaded();
    let wanted: Vec<pg_sys::Oid> = catalog
        .stamps
        .iter()
        .filter(|s| {
            previous
                .and_then(|p| p.reusable(s, overloaded[&*s.name], &catalog.type_stamps))
                .is_none()
        })
        .map(|s| pg_sys::Oid::from(s.oid))
        .collect();
    drop(overloaded);
    if !wanted.is_empty() {
        catalog.functions = Spi::connect(|c| {
            let mut functions = vec![];
            for row in session::run_kept(
                c,
                include_str!("../sql/reflect.sql"),
                &[pg_sys::OIDARRAYOID],
                &[wanted.into()],
            )? {
                if let Some(JsonB(f)) = row.get::<JsonB>(1)? {
                    functions.push(serde_json::from_value::<ReflectedFunction>(f));
                }
            }
            Ok::<_, pgrx::spi::Error>(functions)
        })
        .ok()
        .and_then(|rows| rows.into_iter().collect::<Result<Vec<_>, _>>().ok())
        .unwrap_or_default();
    }
    catalog
}

/// The catalog after changes that touched only the functions `touched` (and, re-read each time,
/// those whose policies name other functions): `previous`'s, with their stamps read again. None
/// when the set of functions in `mcp` or one of their names moved: their order and overloading
/// may have changed, so everything is read again.
fn carried_over(previous: &Registry, touched: &[u32]) -> Option<Catalog> {
    let mut only: Vec<u32> = touched.to_vec();
    only.extend(
        previous
            .reflected
            .iter()
            .filter(|(_, r)| !r.reusable)
            .map(|(&oid, _)| oid),
    );
    only.sort_unstable();
    only.dedup();
    let mut fresh: HashMap<u32, Stamp> = read_stamps(Some(&only))
        .into_iter()
        .map(|s| (s.oid, s))
        .collect();
    let before: HashMap<u32, &Stamp> = previous.stamps.iter().map(|s| (s.oid, s)).collect();
    let same_function = |oid| match (before.get(oid), fresh.get(oid)) {
        (Some(b), Some(f)) => b.name == f.name,
        // a function outside `mcp`
        (None, None) => true,
        _ => false,
    };
    if !only.iter().all(same_function) {
        return None;
    }
    let new_types: Vec<u32> = fresh
        .values()
        .flat_map(|s| s.types.iter().copied())
        .filter(|t| !previous.type_stamps.contains_key(t))
        .collect();
    let mut type_stamps = previous.type_stamps.clone();
    if !new_types.is_empty() {
        type_stamps.extend(read_type_stamps(&new_types));
    }
    Some(Catalog {
        stamped: fresh.len(),
        stamps: previous
            .stamps
            .iter()
            .map(|s| fresh.remove(&s.oid).unwrap_or_else(|| s.clone()))
            .collect(),
        functions: vec![],
        type_stamps,
        settings: previous.settings.clone(),
        settings_error: previous.settings_error.clone(),
        keys: previous.keys.clone(),
        table_owners: previous.table_owners.clone(),
        skills: previous.skills.clone(),
    })
}

/// Everything a full build reads but the functions' own rows.
fn read_all_but_functions() -> Catalog {
    let stamps = read_stamps(None);
    let mut types: Vec<u32> = stamps
        .iter()
        .flat_map(|s| s.types.iter().copied())
        .collect();
    types.sort_unstable();
    types.dedup();
    let type_stamps = read_type_stamps(&types);
    let settings = Spi::connect(|c| {
        c.select("select value from chumbo.settings", Some(1), &[])?
            .first()
            .get_one::<JsonB>()
    })
    .ok()
    .flatten()
    .map(|j| j.0)
    .unwrap_or(json!({}));
    let (settings, settings_error) = match Settings::from_json(settings) {
        Ok(s) => (s, None),
        // Broken settings must not silently loosen anything: defaults are the strict choice.
        Err(e) => (Settings::default(), Some(e)),
    };
    // Owners of tables, views, sequences and schemas, schema chumbo's among them (the extension
    // owner, who owns chumbo's own tables): a role with their privileges could read past
    // row-level security (RLS enabled but not forced), turn it off or change the policies (an
    // owner may ALTER its table, and a schema's owner drop or rename what is in it, even inside
    // the restricted operation capabilities run in), or read chumbo.keys and everyone's state
    // (see session::check_role). Temporary tables do not count (any login could otherwise lock a
    // role out by creating one).
    let table_owners: Vec<pg_sys::Oid> = Spi::connect(|c| {
        let mut owners = vec![];
        for row in c.select(
            "select relowner from pg_catalog.pg_class
              where relkind in ('r', 'p', 'v', 'm', 'f', 'S') and relpersistence <> 't'
             union
             select nspowner from pg_catalog.pg_namespace
              where nspname not in ('pg_catalog', 'information_schema')
                and nspname !~ '^pg_(toast|temp_|toast_temp_)'",
            None,
            &[],
        )? {
            if let Some(o) = row.get::<pg_sys::Oid>(1)? {
                owners.push(o);
            }
        }
        Ok::<_, pgrx::spi::Error>(owners)
    })
    .unwrap_or_default();
    let keys: HashMap<String, Vec<u8>> = Spi::connect(|c| {
        let mut keys = HashMap::new();
        for row in c.select("select name, secret from chumbo.keys", None, &[])? {
            if let (Some(n), Some(k)) = (row.get::<String>(1)?, row.get::<Vec<u8>>(2)?) {
                keys.insert(n, k);
            }
        }
        Ok::<_, pgrx::spi::Error>(keys)
    })
    .unwrap_or_default();
    Catalog {
        stamped: stamps.len(),
        stamps,
        functions: vec![],
        type_stamps,
        settings,
        settings_error,
        keys,
        table_owners,
        skills: crate::skills::load(),
    }
}

impl Registry {
    /// Step 4: index. Every function gets an entry; the first capability of a name and kind wins.
    fn index(&mut self, oid: u32, r: Reflected) {
        let mut entry = r.entry.clone();
        if let Some(c) = &r.capability {
            if superuser_definer(c) {
                // Said loudly either way; kept as reflected (a later build checks again).
                let mut e = Entry {
                    identity: entry.identity.clone(),
                    name: entry.name.clone(),
                    kind: entry.kind,
                    problems: entry.problems.clone(),
                    warnings: entry.warnings.clone(),
                    oid: entry.oid,
                };
                if self.settings.dangerously_allow_superuser_tools {
                    e.warnings.insert(0, WARN_SUPERUSER_DEFINER.to_string());
                    entry = Rc::new(e);
                } else {
                    e.problems.push(PROBLEM_SUPERUSER_DEFINER.to_string());
                    self.entries.push(Rc::new(e));
                    self.reflected.insert(oid, r);
                    return;
                }
            }
            let key = (c.name.clone(), kind_key(c.kind));
            if self.by_name.contains_key(&key) {
                return;
            }
            self.by_name.insert(key, self.capabilities.len());
            self.capabilities.push(c.clone());
        }
        self.entries.push(entry);
        self.reflected.insert(oid, r);
    }

    /// A privileged capability whose owner is a superuser would run every call as superuser:
    /// refused unless the owner set `dangerously_allow_superuser_tools`. Read live from the role
    /// cache (an ALTER ROLE ... SUPERUSER fires no event trigger), here and before each call.
    pub fn refuses_definer(&self, c: &Capability) -> bool {
        superuser_definer(c) && !self.settings.dangerously_allow_superuser_tools
    }
}

/// SECURITY DEFINER, and its owner is a superuser now.
fn superuser_definer(c: &Capability) -> bool {
    // SAFETY: a syscache lookup by oid; no pointers involved.
    c.definer
        .is_some_and(|owner| unsafe { pg_sys::superuser_arg(owner) })
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// A function's COMMENT, parsed: what it declares itself to be.
struct Declared {
    description: Option<String>,
    meta: Metadata,
    template: Option<UriTemplate>,
    kind: Kind,
}

/// Steps 2 and 3 for one function: its entry, its capability when nothing is wrong, and whether
/// the result depends on its catalog rows only (see Reflected::reusable).
fn reflect(f: &ReflectedFunction, overloaded: bool) -> (Entry, Option<Capability>, bool) {
    let mut found = Findings::default();
    let mut declared = declare(f, &mut found);
    let reusable = declared.meta.visible.is_none()
        && declared.meta.can_execute.is_none()
        && !matches!(declared.meta.approval, Some(metadata::Approval::When(_)));
    check_function(f, &declared, overloaded, &mut found);
    let (params, mut input_schema) = parameters(f, &declared.meta, &mut found);
    if let Some(t) = &declared.template {
        check_template(t, &params, &mut found);
    }
    if declared.kind != Kind::Tool && f.returns_set {
        found.problems.push(Problem::ReturnsSet(declared.kind));
    }
    check_rules(f, &mut declared, &params, &mut input_schema, &mut found);
    let mut policy_problems = vec![];
    let policy = predicates::reflect(
        &declared.meta,
        declared.kind == Kind::Tool,
        &mut input_schema,
        &mut policy_problems,
    );
    found
        .problems
        .extend(policy_problems.into_iter().map(Problem::Rule));
    let output_validator = output_validator(&declared.meta, &mut found);
    // Derived schemas are valid by construction; a declared one is checked now, for doctor.
    if declared.meta.input_schema.is_some() {
        if let Err(e) = jsonschema::options()
            .should_validate_formats(true)
            .build(&input_schema)
        {
            found
                .problems
                .push(Problem::InvalidInputSchema(e.to_string()));
        }
    }

    // Derivable from params and input_schema now; a BTreeMap of ParamMeta is ~3 KB per tool.
    declared.meta.params = Default::default();
    declared.meta.input_schema = None;
    let oid = pg_sys::Oid::from(f.oid);
    let entry = Entry {
        identity: f.identity.clone(),
        name: f.name.clone(),
        kind: declared.kind,
        problems: found.problems.iter().map(Problem::to_string).collect(),
        warnings: found.warnings,
        oid,
    };
    if !entry.problems.is_empty() {
        return (entry, None, reusable);
    }
    let capability = Capability {
        oid,
        name: f.name.clone(),
        kind: declared.kind,
        description: declared.description,
        read_only: matches!(f.volatility.as_str(), "s" | "i"),
        sets_search_path: f.sets_search_path,
        definer: f.security_definer.then(|| pg_sys::Oid::from(f.owner)),
        meta: Box::new(declared.meta),
        params,
        input_schema: SchemaText::new(&input_schema),
        validator: std::cell::OnceCell::new(),
        output_validator,
        returns: types::return_shape(&f.return_type),
        returns_set: f.returns_set,
        template: declared.template,
        policy,
    };
    (entry, Some(capability), reusable)
}

/// Step 2: the @mcp metadata, the resource URI template and the kind they make.
/// The metadata rules of paging, model_output and idempotency_key (metadata.rs); set-returning
/// tools page (src/call/pages.rs), so a `cursor` argument (and `next_cursor`/`next_call` in a declared
/// output schema) is added to their schemas.
fn check_rules(
    f: &ReflectedFunction,
    declared: &mut Declared,
    params: &[Param],
    input_schema: &mut Value,
    found: &mut Findings,
) {
    let names: Vec<String> = params.iter().map(|p| p.name.clone()).collect();
    let returns = types::return_shape(&f.return_type);
    for p in metadata::paging_problems(&declared.meta, f.returns_set, returns, &names) {
        found.problems.push(Problem::Rule(p));
    }
    let mut problems = vec![];
    metadata::once_only_problems(
        &declared.meta,
        declared.kind == Kind::Tool,
        matches!(f.volatility.as_str(), "s" | "i"),
        &names,
        &mut problems,
        &mut found.warnings,
    );
    found
        .problems
        .extend(problems.into_iter().map(Problem::Rule));
    if declared.kind == Kind::Tool && f.returns_set {
        metadata::add_paging_to_schemas(input_schema, declared.meta.output_schema.as_mut());
    }
}

fn declare(f: &ReflectedFunction, found: &mut Findings) -> Declared {
    let (description, meta) = metadata::parse_comment(f.comment.as_deref());
    let meta = meta.unwrap_or_else(|e| {
        found.problems.push(e.into());
        Metadata::default()
    });
    let template = meta
        .resource
        .as_deref()
        .map(UriTemplate::parse)
        .transpose()
        .unwrap_or_else(|e| {
            found.problems.push(Problem::Template(e));
            None
        });
    let kind = match (&template, meta.prompt) {
        (Some(_), true) => {
            found.problems.push(Problem::ResourceAndPrompt);
            Kind::Tool
        }
        (Some(t), false) if t.is_static() => Kind::Resource,
        (Some(_), false) => Kind::ResourceTemplate,
        (None, true) => Kind::Prompt,
        (None, false) => Kind::Tool,
    };
    Declared {
        description,
        meta,
        template,
        kind,
    }
}

/// What makes a function unfit (or risky) as a capability, whatever its parameters.
fn check_function(f: &ReflectedFunction, d: &Declared, overloaded: bool, found: &mut Findings) {
    if f.prokind != "f" {
        found.problems.push(Problem::NotAFunction);
    }
    if overloaded {
        found.problems.push(Problem::Overloaded(f.name.clone()));
    }
    if !valid_tool_name(&f.name) {
        found.problems.push(Problem::InvalidName);
    }
    if f.variadic {
        found.problems.push(Problem::Variadic);
    }
    if f.security_definer {
        if d.meta.privileged {
            found.warnings.push(WARN_PRIVILEGED.into());
        } else {
            found.problems.push(Problem::SecurityDefiner);
        }
    }
    if f.public_execute {
        found.warnings.push(WARN_PUBLIC_EXECUTE.into());
    }
    for key in d.meta.params.keys() {
        if !f.args.iter().any(|a| a.name.as_ref() == Some(key)) {
            found.problems.push(Problem::UnknownParamMeta(key.clone()));
        }
    }
    if !d.meta.completions.is_empty() && d.kind == Kind::Tool {
        found.problems.push(Problem::CompletionsOnTool);
    }
}

/// Step 3: the parameters (IN/INOUT/VARIADIC args, all named; the trailing `n_defaults` are
/// optional) and the input schema, derived from them or declared.
fn parameters(f: &ReflectedFunction, meta: &Metadata, found: &mut Findings) -> (Vec<Param>, Value) {
    let in_args: Vec<&ReflectedArg> = f.args.iter().filter(|a| a.is_input()).collect();
    let n_required = in_args.len() - f.n_defaults.min(in_args.len());
    let mut params = vec![];
    let mut properties = Map::new();
    let mut required = vec![];
    for (i, a) in in_args.iter().enumerate() {
        let pname = a.name();
        if pname.is_empty() {
            found.problems.push(Problem::UnnamedParam(i + 1));
            continue;
        }
        if pname.starts_with(RESERVED_PREFIX) {
            found.problems.push(Problem::ReservedParam);
            continue;
        }
        let mut schema = match types::schema_for(&a.ty) {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => {
                found.problems.push(Problem::ParamType(pname.into(), e));
                continue;
            }
        };
        let pmeta = meta.params.get(pname);
        if let Some(pm) = pmeta {
            pm.apply(&mut schema);
        }
        let is_required = i < n_required;
        if is_required {
            required.push(json!(pname));
        }
        properties.insert(pname.to_string(), Value::Object(schema));
        params.push(Param {
            name: pname.to_string(),
            sql_type: a.ty.sql.clone(),
            required: is_required,
            description: pmeta.and_then(|p| p.description.clone()),
        });
    }
    let mut input_schema =
        json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        input_schema["required"] = Value::Array(required);
    }
    if let Some(declared) = &meta.input_schema {
        check_declared_input_schema(declared, &params, found);
        input_schema = Value::Object(declared.clone());
    }
    (params, input_schema)
}

/// A declared inputSchema must describe exactly the function's parameters.
fn check_declared_input_schema(
    declared: &Map<String, Value>,
    params: &[Param],
    found: &mut Findings,
) {
    if declared.get("type") != Some(&json!("object")) {
        found.problems.push(Problem::InputSchemaNotObject);
    }
    let declared_props = declared.get("properties").and_then(Value::as_object);
    for key in declared_props.into_iter().flat_map(|p| p.keys()) {
        if !params.iter().any(|p| &p.name == key) {
            found
                .problems
                .push(Problem::InputSchemaExtraProperty(key.clone()));
        }
    }
    for p in params.iter().filter(|p| p.required) {
        if !declared_props.is_some_and(|d| d.contains_key(&p.name)) {
            found
                .problems
                .push(Problem::InputSchemaLacksRequired(p.name.clone()));
        }
    }
}

/// A resource template's variables are exactly its required parameters (optional ones may be
/// left out of the URI).
fn check_template(t: &UriTemplate, params: &[Param], found: &mut Findings) {
    for v in t.variables() {
        if !params.iter().any(|p| p.name == v) {
            found
                .problems
                .push(Problem::TemplateVariableNotParam(v.to_string()));
        }
    }
    for p in params {
        if p.required && !t.variables().contains(&p.name.as_str()) {
            found
                .problems
                .push(Problem::RequiredNotTemplateVariable(p.name.clone()));
        }
    }
}

/// The declared outputSchema, compiled.
fn output_validator(meta: &Metadata, found: &mut Findings) -> Option<Box<jsonschema::Validator>> {
    let schema = meta.output_schema.as_ref()?;
    match jsonschema::validator_for(&Value::Object(schema.clone())) {
        Ok(v) => Some(Box::new(v)),
        Err(_) => {
            found.problems.push(Problem::InvalidOutputSchema);
            None
        }
    }
}

/// The caller a request runs for: role, granted scopes (None = scopes not checked, for trusted
/// callers without claims... never used: claims without scopes mean no scopes).
pub struct Caller {
    pub principal: crate::principal::Principal,
    pub role_oid: pg_sys::Oid,
    pub scopes: Vec<String>,
    pub claims: Value,
}

impl Caller {
    pub fn has_scopes(&self, c: &Capability) -> bool {
        c.meta.scopes.iter().all(|s| self.scopes.contains(s))
    }

    pub fn may_use(&self, c: &Capability) -> bool {
        self.has_scopes(c) && session::can_execute(c.oid, self.role_oid)
    }
}

/// Scopes from the `scope` (space-separated) or `scp` (array) claim.
pub fn scopes_of(claims: &Value) -> Vec<String> {
    let mut scopes: Vec<String> = claims["scope"]
        .as_str()
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect();
    if let Some(a) = claims["scp"].as_array() {
        scopes.extend(a.iter().filter_map(|s| s.as_str().map(String::from)));
    }
    scopes
}

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::*;

    /// Creates functions in `mcp` (PUBLIC's EXECUTE revoked, as doctor advises) and reflects
    /// them through sql/reflect.sql, as the registry does.
    fn reflect_all(ddl: &str) -> Vec<(Entry, Option<Capability>)> {
        Spi::run(ddl).unwrap();
        Spi::run("revoke execute on all routines in schema mcp from public").unwrap();
        let catalog = read_catalog(None, None);
        let overloaded = catalog.overloaded();
        catalog
            .functions
            .iter()
            .map(|f| {
                let (e, c, _) = reflect(f, overloaded[f.name.as_str()]);
                (e, c)
            })
            .collect()
    }

    fn reflect_one(ddl: &str, name: &str) -> (Entry, Option<Capability>) {
        reflect_all(ddl)
            .into_iter()
            .find(|(e, _)| e.name == name)
            .unwrap_or_else(|| panic!("{name} was not reflected"))
    }

    /// Each case: DDL, the function's name, its kind, and exactly the problems doctor shows (a
    /// trailing '…' matches any rest of the text).
    #[pgrx::pg_test]
    fn functions_reflect_to_kinds_and_problems() {
        let cases: &[(&str, &str, Kind, &[&str])] = &[
            (
                "create function mcp.add(a int, b int default 1) returns int language sql as 'select a + b'",
                "add",
                Kind::Tool,
                &[],
            ),
            (
                "create function mcp.readme() returns text language sql as 'select 1';
                 comment on function mcp.readme is 'Readme. @mcp {\"resource\": \"app://readme\"}'",
                "readme",
                Kind::Resource,
                &[],
            ),
            (
                "create function mcp.project(id uuid) returns jsonb language sql as 'select null::jsonb';
                 comment on function mcp.project is '@mcp {\"resource\": \"app://projects/{id}\"}'",
                "project",
                Kind::ResourceTemplate,
                &[],
            ),
            (
                "create function mcp.greet(who text) returns text language sql as 'select who';
                 comment on function mcp.greet is '@mcp {\"prompt\": true, \"completions\": {\"who\": [\"a\"]}}'",
                "greet",
                Kind::Prompt,
                &[],
            ),
            (
                "create function mcp.p(id uuid) returns text language sql as 'select 1';
                 comment on function mcp.p is '@mcp {\"resource\": \"app://p/{pid}\"}'",
                "p",
                Kind::ResourceTemplate,
                &[
                    "URI template variable {pid} is not a parameter",
                    "required parameter \"id\" is not a URI template variable",
                ],
            ),
            (
                "create function mcp.both() returns text language sql as 'select 1';
                 comment on function mcp.both is '@mcp {\"resource\": \"app://x\", \"prompt\": true}'",
                "both",
                Kind::Tool,
                &["metadata declares both \"resource\" and \"prompt\""],
            ),
            (
                "create function mcp.unclosed() returns text language sql as 'select 1';
                 comment on function mcp.unclosed is '@mcp {\"resource\": \"app://{\"}'",
                "unclosed",
                Kind::Tool,
                &["resource URI template: unclosed '{' in resource URI template"],
            ),
            (
                "create function mcp.many() returns setof text language sql as 'select 1';
                 comment on function mcp.many is '@mcp {\"resource\": \"app://many\"}'",
                "many",
                Kind::Resource,
                &["a resource must not return a set"],
            ),
            (
                "create procedure mcp.proc() language sql as ''",
                "proc",
                Kind::Tool,
                &["only functions can be capabilities (this is a procedure, aggregate or window function)"],
            ),
            (
                "create aggregate mcp.total(int) (sfunc = int4pl, stype = int)",
                "total",
                Kind::Tool,
                &[
                    "only functions can be capabilities (this is a procedure, aggregate or window function)",
                    "parameter 1 has no name",
                ],
            ),
            (
                "create function mcp.dup(a int) returns int language sql as 'select a';
                 create function mcp.dup(a text) returns text language sql as 'select a'",
                "dup",
                Kind::Tool,
                &["\"dup\" is overloaded; capability names must be unique"],
            ),
            (
                "create function mcp.\"has space\"() returns int language sql as 'select 1'",
                "has space",
                Kind::Tool,
                &["name must be 1-128 characters from A-Z, a-z, 0-9, '_', '.', '-'"],
            ),
            (
                "create function mcp.v(variadic xs int[]) returns int language sql as 'select 1'",
                "v",
                Kind::Tool,
                &["variadic functions are not supported"],
            ),
            (
                "create function mcp.definer() returns int language sql security definer as 'select 1'",
                "definer",
                Kind::Tool,
                &["SECURITY DEFINER functions run with their owner's privileges, bypassing the caller's RLS; declare \"privileged\": true in @mcp metadata to expose it"],
            ),
            (
                "create function mcp.definer_ok() returns int language sql security definer as 'select 1';
                 comment on function mcp.definer_ok is '@mcp {\"privileged\": true}'",
                "definer_ok",
                Kind::Tool,
                &[],
            ),
            (
                "create function mcp.pm(a int) returns int language sql as 'select a';
                 comment on function mcp.pm is '@mcp {\"params\": {\"nope\": {}}}'",
                "pm",
                Kind::Tool,
                &["@mcp params names \"nope\", which is not a parameter"],
            ),
            (
                "create function mcp.cm(a int) returns int language sql as 'select a';
                 comment on function mcp.cm is '@mcp {\"completions\": {\"a\": [\"1\"]}}'",
                "cm",
                Kind::Tool,
                &["completions apply to prompts and resource templates only"],
            ),
            (
                "create function mcp.unnamed(int, b int) returns int language sql as 'select 1'",
                "unnamed",
                Kind::Tool,
                &["parameter 1 has no name"],
            ),
            (
                "create function mcp.reserved(_chumbo_x int) returns int language sql as 'select 1'",
                "reserved",
                Kind::Tool,
                &["parameter names starting with _chumbo are reserved for chumbo"],
            ),
            (
                "create function mcp.iv(d interval) returns int language sql as 'select 1'",
                "iv",
                Kind::Tool,
                &["d: parameter type interval is not supported"],
            ),
            (
                "create function mcp.declared(a int, b int default 0) returns int language sql as 'select a';
                 comment on function mcp.declared is '@mcp {\"inputSchema\": {\"type\": \"array\", \"properties\": {\"c\": {}}}}'",
                "declared",
                Kind::Tool,
                &[
                    "inputSchema must have \"type\": \"object\"",
                    "inputSchema property \"c\" is not a parameter",
                    "inputSchema lacks the required parameter \"a\"",
                ],
            ),
            (
                "create function mcp.bad_in(a int) returns int language sql as 'select a';
                 comment on function mcp.bad_in is '@mcp {\"inputSchema\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": 12}}}}'",
                "bad_in",
                Kind::Tool,
                &["inputSchema is not a valid JSON Schema: …"],
            ),
            (
                "create function mcp.bad_out() returns jsonb language sql as 'select null::jsonb';
                 comment on function mcp.bad_out is '@mcp {\"outputSchema\": {\"type\": 12}}'",
                "bad_out",
                Kind::Tool,
                &["outputSchema is not a valid JSON Schema"],
            ),
            (
                "create function mcp.typo() returns int language sql as 'select 1';
                 comment on function mcp.typo is 'x @mcp {\"titel\": 1}'",
                "typo",
                Kind::Tool,
                &["@mcp metadata is invalid: unknown field `titel`…"],
            ),
            // Problems come in doctor's order: metadata, function, parameters, template, result.
            (
                "create function mcp.all_wrong(variadic _chumbo_x int[]) returns setof int language sql security definer as 'select 1';
                 comment on function mcp.all_wrong is '@mcp {\"resource\": \"app://w/{v}\", \"params\": {\"q\": {}}}'",
                "all_wrong",
                Kind::ResourceTemplate,
                &[
                    "variadic functions are not supported",
                    "SECURITY DEFINER functions run with their owner's privileges, bypassing the caller's RLS; declare \"privileged\": true in @mcp metadata to expose it",
                    "@mcp params names \"q\", which is not a parameter",
                    "parameter names starting with _chumbo are reserved for chumbo",
                    "URI template variable {v} is not a parameter",
                    "a resource template must not return a set",
                ],
            ),
        ];
        for (ddl, name, kind, problems) in cases {
            let (entry, capability) = reflect_one(ddl, name);
            assert_eq!(entry.kind, *kind, "{name}");
            assert_eq!(
                entry.problems.len(),
                problems.len(),
                "{name}: {:?}",
                entry.problems
            );
            for (got, want) in entry.problems.iter().zip(problems.iter()) {
                match want.strip_suffix('…') {
                    Some(prefix) => assert!(got.starts_with(prefix), "{name}: {got}"),
                    None => assert_eq!(got, want, "{name}"),
                }
            }
            assert_eq!(capability.is_some(), problems.is_empty(), "{name}");
        }
    }

    #[pgrx::pg_test]
    fn warnings_do_not_hide_a_capability() {
        let (entry, capability) = reflect_one(
            "create function mcp.w() returns int language sql security definer as 'select 1';
             comment on function mcp.w is '@mcp {\"privileged\": true}';
             revoke execute on function mcp.w() from public",
            "w",
        );
        assert_eq!(
            entry.warnings,
            ["SECURITY DEFINER: runs with its owner's privileges (declared privileged)"]
        );
        assert!(capability.is_some());
        Spi::run("create function mcp.open() returns int language sql as 'select 1'").unwrap();
        let catalog = read_catalog(None, None);
        let f = catalog.functions.iter().find(|f| f.name == "open").unwrap();
        let (entry, capability, _) = reflect(f, false);
        assert_eq!(entry.warnings, [WARN_PUBLIC_EXECUTE]);
        assert!(WARN_PUBLIC_EXECUTE.starts_with("PUBLIC may execute it"));
        assert!(capability.is_some());
    }

    /// Parameters, the derived input schema and the return shape of capabilities.
    #[pgrx::pg_test]
    fn capabilities_carry_parameters_schemas_and_shapes() {
        let all = reflect_all(
            "create function mcp.add(a int, b text default 'x') returns int language sql stable as 'select a';
             comment on function mcp.add is 'Adds. @mcp {\"params\": {\"a\": {\"description\": \"first\", \"minimum\": 0}}}';
             create function mcp.pair(a int, out b int, out c text) returns record language sql as 'select 1, ''x''';
             create function mcp.rows(a int) returns table(x int, y text) language sql as 'select 1, ''x''';
             create function mcp.result() returns chumbo.tool_result language sql as 'select null::chumbo.tool_result';
             create function mcp.blob(inout a bytea) language sql volatile as 'select a'",
        );
        let cap = |name: &str| {
            all.iter()
                .find(|(e, _)| e.name == name)
                .and_then(|(_, c)| c.as_ref())
                .unwrap_or_else(|| panic!("{name} is no capability"))
        };

        let add = cap("add");
        assert_eq!(add.description.as_deref(), Some("Adds."));
        assert!(add.read_only);
        assert_eq!(add.returns, ReturnShape::Text);
        assert!(!add.returns_set);
        let params: Vec<_> = add
            .params
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.sql_type.as_str(),
                    p.required,
                    p.description.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            params,
            [
                ("a", "pg_catalog.int4", true, Some("first")),
                ("b", "pg_catalog.text", false, None)
            ]
        );
        assert_eq!(
            *add.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "minimum": 0.0, "maximum": i32::MAX, "description": "first"},
                    "b": {"type": "string"},
                },
                "required": ["a"],
                "additionalProperties": false,
            })
        );
        assert!(add.validator().is_ok());

        let shapes = [
            ("pair", ReturnShape::Row, false, vec!["a"]),
            ("rows", ReturnShape::Row, true, vec!["a"]),
            ("result", ReturnShape::ToolResult, false, vec![]),
            ("blob", ReturnShape::Bytes, false, vec!["a"]),
        ];
        for (name, shape, set, params) in shapes {
            let c = cap(name);
            assert_eq!(c.returns, shape, "{name}");
            assert_eq!(c.returns_set, set, "{name}");
            assert_eq!(
                c.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
                params,
                "{name}"
            );
            assert!(!c.read_only, "{name}");
        }
        assert_eq!(
            *cap("result").input_schema,
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    /// Everything a registry says about its functions, for comparing two builds.
    fn describe(r: &Registry) -> Vec<String> {
        let mut out: Vec<String> = r
            .entries
            .iter()
            .map(|e| {
                format!(
                    "entry {} {} {:?} {} {:?} {:?}",
                    e.identity, e.name, e.kind, e.oid, e.problems, e.warnings
                )
            })
            .collect();
        for c in &r.capabilities {
            let params: Vec<_> = c
                .params
                .iter()
                .map(|p| (&p.name, &p.sql_type, p.required, &p.description))
                .collect();
            let approval = match &c.policy.approval {
                predicates::ApprovalRule::Never => "never".to_string(),
                predicates::ApprovalRule::Always => "always".to_string(),
                predicates::ApprovalRule::When(p) => format!("when {p:?}"),
            };
            out.push(format!(
                "capability {} {:?} {:?} {} {} {:?} {} {} {:?} {:?} {:?} {:?} {}",
                c.name,
                c.kind,
                c.description,
                serde_json::to_string(&c.meta).unwrap(),
                *c.input_schema,
                params,
                c.read_only,
                c.returns_set,
                c.returns,
                c.template,
                c.policy.visible,
                c.policy.can_execute,
                approval
            ));
        }
        out
    }

    /// A registry built from the previous one after each change (reusing what did not change)
    /// says exactly what one built from scratch says: functions created, re-commented, renamed,
    /// re-granted, overloaded and dropped, types renamed and extended, a policy function that
    /// appears later, several changes of one row in one transaction (this test is one); enum
    /// labels, type and schema names reached through arrays and domains.
    #[pgrx::pg_test]
    fn incremental_builds_equal_full_builds() {
        Spi::run(
            "create type public.color as enum ('red');
             create function mcp.keep(x int) returns int language sql as 'select x';
             comment on function mcp.keep is 'Never changes.'",
        )
        .unwrap();
        let steps = [
            "create function mcp.a(x int) returns int language sql as 'select x';
             create function mcp.b(c public.color) returns text language sql as 'select 1';
             comment on function mcp.a is 'A.'",
            "comment on function mcp.a is 'A2. @mcp {\"title\": \"A\"}'",
            "comment on function mcp.a is 'A3. @mcp {\"title\": \"A3\"}'",
            "alter function mcp.a rename to a2",
            "revoke execute on function mcp.a2(int) from public",
            "grant execute on function mcp.a2(int) to public",
            "alter type public.color add value 'blue'",
            "alter type public.color rename to colour",
            "create function mcp.a2(x text) returns text language sql as 'select x'",
            "drop function mcp.a2(text)",
            "comment on function mcp.b is '@mcp {\"visible\": \"public.later\"}'",
            "create function public.later() returns boolean language sql as 'select true'",
            "create or replace function mcp.b(c public.colour) returns text language sql stable as 'select 2'",
            "alter function mcp.a2(int) security definer",
            "comment on function mcp.a2 is null",
            "drop function mcp.b",
            "create function mcp.b(c public.colour, d int default 1) returns text language sql as 'select 3'",
            // Types are stamped by their catalog rows (sql/reflect_types.sql): each change below
            // moves a row only a type named through an array, a domain or a schema shows.
            "create schema s1;
             create type s1.mood as enum ('calm');
             create domain public.shade as public.colour;
             create function mcp.c(cs public.colour[], s public.shade, m s1.mood[]) returns text language sql as 'select 4'",
            "alter type public.colour add value 'green'",
            "alter type public.colour rename value 'red' to 'rouge'",
            "alter type s1.mood add value 'glad'",
            "alter schema s1 rename to s2",
            "alter type s2.mood rename to feeling",
            "alter domain public.shade rename to tint",
        ];
        let mut registry = build(0, true, None, None);
        for step in steps {
            Spi::run(step).unwrap();
            let incremental = build(0, true, Some(&registry), None);
            let full = build(0, true, None, None);
            assert_eq!(describe(&incremental), describe(&full), "after: {step}");
            // mcp.keep is never reflected again
            assert!(
                incremental.reflected_now < full.reflected_now,
                "after: {step}: {} of {} reflected",
                incremental.reflected_now,
                full.reflected_now
            );
            registry = incremental;
        }
        assert_eq!(build(0, true, Some(&registry), None).reflected_now, 0);
    }

    /// After changes that touched functions only, a build reads the stamps of those functions
    /// (and of those whose policies name other functions) and says what a full build says; a
    /// new, renamed, moved or dropped function, a GRANT or any other change reads everything.
    #[pgrx::pg_test]
    fn builds_after_function_changes_read_only_those() {
        Spi::run(
            "create function mcp.keep(x int) returns int language sql as 'select x';
             create function mcp.other(x int) returns int language sql as 'select x';
             create function mcp.third(x int) returns int language sql as 'select x';
             create function public.later() returns boolean language sql as 'select true'",
        )
        .unwrap();
        // (change, stamps the next build reads: Some(n) when only the functions it named)
        let steps: [(&str, Option<usize>); 14] = [
            ("comment on function mcp.keep is 'K2. @mcp {\"title\": \"Keep\"}'", Some(1)),
            ("create or replace function mcp.keep(x int) returns int language sql stable as 'select x + 1'", Some(1)),
            ("alter function mcp.keep(int) security definer", Some(1)),
            ("alter function mcp.keep(int) security invoker", Some(1)),
            ("comment on function public.later is 'outside mcp'", Some(0)),
            ("comment on function mcp.keep is 'K3.'; comment on function mcp.other is 'O.'", Some(2)),
            ("comment on function mcp.third is '@mcp {\"visible\": \"public.later\"}'", Some(1)),
            // mcp.third's policy names another function: it is read at every build
            ("comment on function mcp.keep is 'K4.'", Some(2)),
            ("create function mcp.fresh() returns int language sql as 'select 1'", None),
            ("alter function mcp.fresh rename to fresher", None),
            ("grant execute on function mcp.keep(int) to public", None),
            ("alter function mcp.fresher set schema public", None),
            ("drop function public.fresher", None),
            ("create table public.unrelated (x int)", None),
        ];
        let mut registry = build(committed_version(), true, None, None);
        for (step, stamped) in steps {
            Spi::run(step).unwrap();
            let committed = committed_version();
            let touched = changes_since(registry.version, committed);
            let incremental = build(committed, true, Some(&registry), touched.as_deref());
            let full = build(committed, true, None, None);
            assert_eq!(describe(&incremental), describe(&full), "after: {step}");
            assert!(full.stamped_now >= 3, "after: {step}");
            let expected = stamped.unwrap_or(full.stamped_now);
            assert_eq!(incremental.stamped_now, expected, "after: {step}");
            registry = incremental;
        }
        // too far behind: the rows in between may be gone
        let since = committed_version() - KEPT_CHANGES - 1;
        assert_eq!(changes_since(since, committed_version()), None);
    }

    /// The registry's own bytes (counting allocator) grow with its tools and shrink when they go.
    #[pgrx::pg_test]
    fn registry_bytes_follow_the_tools() {
        let empty = build(0, true, None, None);
        Spi::run(
            "do $$ begin for i in 1..200 loop
               execute format('create function mcp.t%s(a text, b int default 1) returns text language sql as %L', i, 'select a');
               execute format('comment on function mcp.t%s(text, int) is %L', i, format('Tool %s. @mcp {\"title\": \"T%s\"}', i, i));
             end loop; end $$",
        )
        .unwrap();
        let many = build(0, true, Some(&empty), None);
        assert_eq!(many.capabilities.len(), empty.capabilities.len() + 200);
        let per_tool = (many.bytes - empty.bytes) / 200;
        // About 2 KB (bench: 2.1 KB a tool); schemas and metadata kept as Value trees made it 8.6 KB.
        assert!(
            (300..4_000).contains(&per_tool),
            "{per_tool} bytes per tool"
        );
        // reused reflections are counted as well
        let again = build(0, true, Some(&many), None);
        assert_eq!(again.reflected_now, 0);
        assert!(
            again.bytes.abs_diff(many.bytes) < many.bytes / 10,
            "{} vs {}",
            again.bytes,
            many.bytes
        );
        Spi::run(
            "do $$ begin for i in 1..150 loop
               execute format('drop function mcp.t%s(text, int)', i);
             end loop; end $$",
        )
        .unwrap();
        let fewer = build(0, true, Some(&again), None);
        assert_eq!(fewer.capabilities.len(), empty.capabilities.len() + 50);
        assert!(
            fewer.bytes < many.bytes - 100 * per_tool,
            "{} vs {}",
            fewer.bytes,
            many.bytes
        );
        assert!(fewer.bytes > empty.bytes);
    }

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
