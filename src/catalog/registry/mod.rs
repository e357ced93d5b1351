//! The capability registry: every function in schema `mcp`, reflected once per schema version
//! and cached per backend (thread_local + RefCell, never a Mutex: a panic must not poison later
//! requests). Visibility for a caller (EXECUTE privilege, scopes) is decided per request, so role
//! membership changes, which no event trigger sees, take effect at once.

use crate::catalog::alloc;
use crate::catalog::metadata::{self, Metadata, MetadataError};
use crate::catalog::predicates;
use crate::catalog::types::{self, ReflectedType, ReturnShape, TypeError};
use crate::catalog::uri_template::UriTemplate;
use crate::identity::session;
use crate::settings::Settings;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::{cell::RefCell, rc::Rc};
// FxHash: the keys are oids and names from the catalog (the app owner's), hashed ~10 times per
// function at every rebuild; SipHash was a third of a rebuild after one change with 10,000 tools.
use rustc_hash::FxHashMap as HashMap;

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
    /// Where its value holds integers (its schema says `integer`: an integer type, in an array or
    /// a composite's attribute too): a whole number written there with a fraction or an exponent
    /// (`2.0`, `1e2`, integers to JSON Schema) is passed as digits, the only form PostgreSQL's
    /// integer input reads (call::execute).
    pub integers: Integers,
}

/// Where a value holds integers, by its derived schema.
#[derive(Clone, Debug, PartialEq)]
pub enum Integers {
    None,
    Here,
    /// In each item of an array.
    Items(Box<Integers>),
    /// In these attributes of a composite.
    Fields(Vec<(String, Integers)>),
}

pub struct Capability {
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
    /// The SQL text of its calls, built on first use (see [Capability::call_sql]).
    call_sql: RefCell<Option<Box<CallSqls>>>,
    pub returns: ReturnShape,
    pub returns_set: bool,
    pub read_only: bool,
    /// The function has its own `SET search_path` clause (see session::run_as_caller_calling).
    pub sets_search_path: bool,
    /// SECURITY DEFINER (declared privileged): the role it runs as, its owner.
    pub definer: Option<pg_sys::Oid>,
    /// The roles granted EXECUTE on it (`InvalidOid`: PUBLIC), as its ACL said when reflected.
    pub executors: Box<[pg_sys::Oid]>,
    pub template: Option<UriTemplate>,
    /// Visibility, execution predicate and approval, resolved (src/catalog/predicates.rs).
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
    pub capabilities: Capabilities,
    pub entries: Vec<Rc<Entry>>,
    /// Installed skills, without contents (src/catalog/skills.rs).
    pub skills: Vec<crate::catalog::skills::Skill>,
    /// Stored MCP Apps, without their HTML (src/catalog/apps.rs).
    pub apps: Vec<crate::catalog::apps::App>,
    /// Each function's reflection by oid: the next build reuses it while its stamp holds.
    reflected: HashMap<u32, Reflected>,
    /// Every function in `mcp` as last read (sql/reflect_stamps.sql), in reflection order: a
    /// build after changes that touched only some functions re-reads only those.
    stamps: Vec<Stamp>,
    /// The stamp of each type the functions name (sql/reflect_types.sql).
    type_stamps: HashMap<u32, String>,
    /// Bytes this registry holds, reused reflections included (counted by src/catalog/alloc.rs).
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
    /// False when its policies name other functions (src/catalog/predicates.rs), whose changes the
    /// stamp does not show: such a function is reflected again at every build.
    reusable: bool,
    entry: Rc<Entry>,
    capability: Option<Rc<Capability>>,
    bytes: usize,
}

impl Capability {
    /// The time bound of a call of it: its own `timeoutMs`, else the setting `call_timeout_ms`.
    pub fn timeout_ms(&self, settings: &Settings) -> u64 {
        self.meta.timeout_ms.unwrap_or(settings.call_timeout_ms)
    }

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

/// What a call's SQL text depends on besides the capability: which of its parameters the
/// arguments hold (bit i: `params[i]`) and whether the page starts after a key (keyset cursor).
pub type CallShape = (u64, bool);
type CallSqls = Vec<(CallShape, Rc<str>)>;

/// Shapes of call SQL kept per capability: a tool with many optional parameters cannot make its
/// cache grow with every combination a caller sends.
const CALL_SHAPES_KEPT: usize = 8;

impl Capability {
    /// The SQL of a call of this shape: built by `build` once, then reused (~4,000 instructions
    /// of a do-nothing call, ~14,000 of a one-row one; callgrind, bench/analysis.md). The text
    /// depends only on the capability and the shape, and a catalog change builds new
    /// capabilities, so it is never stale. `None`: not kept (more parameters than bits).
    pub fn call_sql(&self, shape: Option<CallShape>, build: impl FnOnce() -> String) -> Rc<str> {
        let Some(shape) = shape else {
            return build().into();
        };
        let kept = self.call_sql.borrow().as_ref().and_then(|shapes| {
            shapes
                .iter()
                .find(|(s, _)| *s == shape)
                .map(|(_, sql)| sql.clone())
        });
        if let Some(sql) = kept {
            return sql;
        }
        let sql: Rc<str> = build().into();
        let mut slot = self.call_sql.borrow_mut();
        let shapes = slot.get_or_insert_with(Default::default);
        if shapes.len() >= CALL_SHAPES_KEPT {
            shapes.clear();
        }
        shapes.push((shape, sql.clone()));
        sql
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
    /// The secret every signed token's key is derived from (chumbo.keys 'request_state';
    /// src/tokens.rs derives one key per token kind from it).
    pub fn token_secret(&self) -> &[u8] {
        self.keys
            .get("request_state")
            .map(Vec::as_slice)
            .unwrap_or_default()
    }
}

mod catalog;
mod changes;
mod index;
mod problems;
mod reflect;
mod type_ref;
use catalog::*;
use changes::*;
pub use index::Capabilities;
use problems::*;
use reflect::*;

thread_local! {
    static CACHE: RefCell<Option<Rc<Registry>>> = const { RefCell::new(None) };
}

/// Free heap bytes a rebuild must leave before they are given back to the kernel.
const TRIM_ABOVE: usize = 4 << 20;

/// What tells, cheaply, that no change can have committed since the registry was confirmed: the
/// schema_version sequence on a primary. Not on a hot standby: there the sequence's replicated
/// value runs up to 32 numbers ahead of the changes (nextval logs values in advance), so it stays
/// put while changes arrive; the replay position moves with every one of them (docs/scaling.md).
fn change_stamp() -> i64 {
    if crate::postgres::standby::in_recovery() {
        // SAFETY: reads the startup process's shared replay position; a null TLI pointer is allowed.
        let lsn = unsafe { pg_sys::GetXLogReplayRecPtr(std::ptr::null_mut()) };
        // as i64: an LSN is far below 2^63; offset so it never equals a sequence value read later
        return i64::MIN / 2 + (lsn as i64);
    }
    sequence_value()
}

/// The registry for the current schema version, rebuilt when DDL/COMMENT/GRANT/settings moved it.
pub fn current() -> Rc<Registry> {
    let seq = change_stamp();
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
    // On a hot standby nothing is half-done: replay makes each change visible at its commit.
    let settled = crate::postgres::standby::in_recovery() || (settled_to_seq && committed <= seq);
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
            let full = touched.is_none();
            if full {
                // Keys and settings may have moved with it: tokens verified under them go too.
                crate::identity::auth::forget_verified_tokens();
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
            // Given back after a build of everything (a backend's first; after a change that may
            // touch every function, such as keys, settings or types; after a registry built
            // mid-change or inside a transaction), and after any build that freed a lot; not
            // after a small change, or the next request would fault its own working set back in,
            // page by page (~3–4 ms for a tools/list of 1,000 tools).
            if full || peak.saturating_sub(alloc::live()) > TRIM_ABOVE {
                alloc::trim();
            }
            r
        }
    };
    // Settled and read after that: a version below `seq` that is not committed was rolled back.
    CONFIRMED_AT.with(|c| c.set(if settled { seq } else { -1 }));
    registry
}

/// This backend's capability cache: what the registry holds (bytes counted by src/catalog/alloc.rs, its
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
    // JIT off: the catalog queries' estimated cost grows with the number of functions and passes
    // jit_above_cost at a few thousand; LLVM then took longer than the read (0.7 s of 1.4 s, 10,000).
    let mut catalog = session::with_settings(&[("jit", "off")], || {
        session::as_owner(move || {
            let (previous, touched) = *inputs;
            read_catalog(previous, touched)
        })
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
        capabilities: Capabilities::default(),
        entries: vec![],
        skills: std::mem::take(&mut catalog.skills),
        apps: std::mem::take(&mut catalog.apps),
        reflected: HashMap::default(),
        stamps: vec![],
        type_stamps: std::mem::take(&mut catalog.type_stamps),
        bytes: 0,
        reflected_now: 0,
        stamped_now: catalog.stamped,
    };
    let n = catalog.stamps.len();
    registry.reflected.reserve(n);
    registry.entries.reserve(n);
    registry.capabilities.reserve(n);
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
            if !self.capabilities.add(c) {
                return;
            }
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

/// The caller a request runs for: role, granted scopes (None = scopes not checked, for trusted
/// callers without claims... never used: claims without scopes mean no scopes).
pub struct Caller {
    pub principal: crate::identity::principal::Principal,
    pub role_oid: pg_sys::Oid,
    pub scopes: Vec<String>,
    pub claims: Value,
}

impl Caller {
    pub fn has_scopes(&self, c: &Capability) -> bool {
        c.meta.scopes.iter().all(|s| self.scopes.contains(s))
    }

    pub fn may_use(&self, c: &Capability) -> bool {
        self.has_scopes(c) && session::can_execute(&c.executors, self.role_oid)
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
        for c in r.capabilities.iter() {
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
}
