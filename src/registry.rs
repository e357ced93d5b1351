//! The capability registry: every function in schema `mcp`, reflected once per schema version
//! and cached per backend (thread_local + RefCell, never a Mutex: a panic must not poison later
//! requests). Visibility for a caller (EXECUTE privilege, scopes) is decided per request, so role
//! membership changes, which no event trigger sees, take effect at once.

use crate::metadata::{self, Metadata};
use crate::session;
use crate::settings::Settings;
use crate::types::{self, ReturnShape};
use crate::uri_template::UriTemplate;
use pgrx::prelude::*;
use pgrx::{pg_sys, JsonB};
use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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
    pub meta: Metadata,
    pub params: Vec<Param>,
    pub input_schema: Value,
    /// Compiled on first use: a DDL change must not recompile every tool's schema.
    validator: std::cell::OnceCell<Result<jsonschema::Validator, String>>,
    /// The declared outputSchema, compiled once.
    pub output_validator: Option<jsonschema::Validator>,
    pub returns: ReturnShape,
    pub returns_set: bool,
    pub read_only: bool,
    pub template: Option<UriTemplate>,
    /// policy hook: visibility, execution predicate, approval (src/policy.rs).
    pub policy: crate::policy::Policy,
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
    /// chumbo.keys: secrets by name.
    pub keys: HashMap<String, Vec<u8>>,
    pub settings: Settings,
    pub settings_error: Option<String>,
    /// Owners of tables whose row-level security does not apply to them.
    pub rls_owners: Vec<pg_sys::Oid>,
    pub capabilities: Vec<Capability>,
    pub entries: Vec<Entry>,
    by_name: HashMap<(String, u8), usize>,
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
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

impl Registry {
    pub fn find(&self, name: &str, kind: Kind) -> Option<&Capability> {
        self.by_name
            .get(&(name.to_string(), kind_key(kind)))
            .map(|&i| &self.capabilities[i])
    }
}

thread_local! {
    static CACHE: RefCell<Option<Rc<Registry>>> = const { RefCell::new(None) };
}

/// chumbo.schema_version's last value, read through the syscache and the sequence itself rather
/// than SPI: this runs on every request. It moves at every change, committed or not.
fn sequence_value() -> i64 {
    // SAFETY: catalog lookups by name; pg_sequence_last_value takes the sequence's oid.
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
    /// sequence stays there, nothing can have changed. -1 while a change is still uncommitted (or
    /// was rolled back): then every request checks chumbo.schema_changes.
    static CONFIRMED_AT: std::cell::Cell<i64> = const { std::cell::Cell::new(-1) };
}

/// The registry for the current schema version, rebuilt when DDL/COMMENT/GRANT/settings moved it.
pub fn current() -> Rc<Registry> {
    let seq = sequence_value();
    // SAFETY: reads the current transaction's id, if it has one.
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
    // Read before the catalog: the registry is then at least as new as its label.
    let committed = committed_version();
    let registry = match cached.filter(|r| r.version == committed) {
        Some(r) => r,
        None => {
            let r = Rc::new(build(committed));
            CACHE.with(|c| *c.borrow_mut() = Some(r.clone()));
            r
        }
    };
    CONFIRMED_AT.with(|c| c.set(if committed >= seq { seq } else { -1 }));
    registry
}

fn build(version: i64) -> Registry {
    let (functions, settings_json, keys, rls_owners) = session::as_owner(|| {
        // `select`, not Spi::get_one (which runs as a write and takes a transaction id).
        let read =
            |sql: &str| Spi::connect(|c| c.select(sql, Some(1), &[])?.first().get_one::<JsonB>());
        let functions = read(include_str!("../sql/reflect.sql"))
            .ok()
            .flatten()
            .map(|j| j.0)
            .unwrap_or(Value::Array(vec![]));
        let settings = read("select value from chumbo.settings")
            .ok()
            .flatten()
            .map(|j| j.0)
            .unwrap_or(json!({}));
        // Owners of tables whose RLS does not bind them (enabled, not forced): roles with their
        // privileges would read past the policies (see session::check_role).
        let rls_owners: Vec<pg_sys::Oid> = Spi::connect(|c| {
            let mut owners = vec![];
            for row in c.select(
                "select distinct relowner from pg_catalog.pg_class
                  where relrowsecurity and not relforcerowsecurity and relkind in ('r', 'p')",
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
        (functions, settings, keys, rls_owners)
    });
    let (settings, settings_error) = match Settings::from_json(settings_json) {
        Ok(s) => (s, None),
        // Broken settings must not silently loosen anything: defaults are the strict choice.
        Err(e) => (Settings::default(), Some(e)),
    };

    let functions = functions.as_array().cloned().unwrap_or_default();
    let mut name_counts: HashMap<String, usize> = HashMap::new();
    for f in &functions {
        *name_counts
            .entry(f["name"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }

    // SAFETY: reads the current transaction's id, if any.
    let xid = unsafe { pg_sys::GetTopTransactionIdIfAny() };
    let mut registry = Registry {
        version,
        built_in: (xid != pg_sys::InvalidTransactionId).then_some(xid),
        keys,
        settings,
        settings_error,
        rls_owners,
        capabilities: vec![],
        entries: vec![],
        by_name: HashMap::new(),
    };
    for f in &functions {
        let (entry, capability) = reflect(f, name_counts[f["name"].as_str().unwrap_or("")] > 1);
        if let Some(c) = capability {
            let key = (c.name.clone(), kind_key(c.kind));
            if registry.by_name.contains_key(&key) {
                continue;
            }
            registry.by_name.insert(key, registry.capabilities.len());
            registry.capabilities.push(c);
        }
        registry.entries.push(entry);
    }
    registry
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

fn reflect(f: &Value, overloaded: bool) -> (Entry, Option<Capability>) {
    let name = f["name"].as_str().unwrap_or("").to_string();
    let oid = pg_sys::Oid::from(f["oid"].as_i64().unwrap_or(0) as u32);
    let (description, meta) = metadata::parse_comment(f["comment"].as_str());
    let mut problems = vec![];
    let mut warnings = vec![];
    let meta = meta.unwrap_or_else(|e| {
        problems.push(e);
        Metadata::default()
    });
    let template = meta
        .resource
        .as_deref()
        .map(UriTemplate::parse)
        .transpose()
        .unwrap_or_else(|e| {
            problems.push(format!("resource URI template: {e}"));
            None
        });
    let kind = match (&template, meta.prompt) {
        (Some(_), true) => {
            problems.push("metadata declares both \"resource\" and \"prompt\"".into());
            Kind::Tool
        }
        (Some(t), false) if t.is_static() => Kind::Resource,
        (Some(_), false) => Kind::ResourceTemplate,
        (None, true) => Kind::Prompt,
        (None, false) => Kind::Tool,
    };
    let mut entry = Entry {
        identity: f["identity"].as_str().unwrap_or("").to_string(),
        name: name.clone(),
        kind,
        problems: vec![],
        warnings: vec![],
        oid,
    };

    if f["prokind"] != "f" {
        problems.push("only functions can be capabilities (this is a procedure, aggregate or window function)".into());
    }
    if overloaded {
        problems.push(format!(
            "\"{name}\" is overloaded; capability names must be unique"
        ));
    }
    if !valid_tool_name(&name) {
        problems.push("name must be 1-128 characters from A-Z, a-z, 0-9, '_', '.', '-'".into());
    }
    if f["variadic"] == true {
        problems.push("variadic functions are not supported".into());
    }
    if f["security_definer"] == true {
        if meta.privileged {
            warnings.push(
                "SECURITY DEFINER: runs with its owner's privileges (declared privileged)".into(),
            );
        } else {
            problems.push("SECURITY DEFINER functions run with their owner's privileges, bypassing the caller's RLS; declare \"privileged\": true in @mcp metadata to expose it".into());
        }
    }
    if f["public_execute"] == true {
        warnings.push("PUBLIC may execute it, so every allowed role (anon too) can use it; `revoke execute ... from public` and grant it to the roles that should".into());
    }
    for key in meta.params.keys() {
        if !f["args"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["name"] == key.as_str())
        {
            problems.push(format!(
                "@mcp params names \"{key}\", which is not a parameter"
            ));
        }
    }
    if !meta.completions.is_empty() && kind == Kind::Tool {
        problems.push("completions apply to prompts and resource templates only".into());
    }

    // Parameters: IN/INOUT/VARIADIC args, all named; trailing n_defaults are optional.
    let in_args: Vec<&Value> = f["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| matches!(a["mode"].as_str(), Some("i" | "b" | "v")))
        .collect();
    let n_defaults = f["n_defaults"].as_u64().unwrap_or(0) as usize;
    let mut params = vec![];
    let mut properties = Map::new();
    let mut required = vec![];
    for (i, a) in in_args.iter().enumerate() {
        let pname = a["name"].as_str().unwrap_or("");
        if pname.is_empty() {
            problems.push(format!("parameter {} has no name", i + 1));
            continue;
        }
        if pname.starts_with(crate::execute::RESERVED_PREFIX) {
            problems.push(format!(
                "parameter names starting with {} are reserved for chumbo",
                crate::execute::RESERVED_PREFIX
            ));
            continue;
        }
        let mut schema = match types::schema_for(&a["type"]) {
            Ok(Value::Object(m)) => m,
            Ok(_) => Map::new(),
            Err(e) => {
                problems.push(format!("{pname}: {e}"));
                continue;
            }
        };
        let pmeta = meta.params.get(pname);
        if let Some(pm) = pmeta {
            pm.apply(&mut schema);
        }
        let is_required = i < in_args.len() - n_defaults.min(in_args.len());
        if is_required {
            required.push(json!(pname));
        }
        properties.insert(pname.to_string(), Value::Object(schema));
        params.push(Param {
            name: pname.to_string(),
            sql_type: a["type"]["sql"].as_str().unwrap_or("").to_string(),
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
        if declared.get("type") != Some(&json!("object")) {
            problems.push("inputSchema must have \"type\": \"object\"".into());
        }
        let declared_props = declared.get("properties").and_then(Value::as_object);
        for key in declared_props.into_iter().flat_map(|p| p.keys()) {
            if !params.iter().any(|p| &p.name == key) {
                problems.push(format!("inputSchema property \"{key}\" is not a parameter"));
            }
        }
        for p in params.iter().filter(|p| p.required) {
            if !declared_props.is_some_and(|d| d.contains_key(&p.name)) {
                problems.push(format!(
                    "inputSchema lacks the required parameter \"{}\"",
                    p.name
                ));
            }
        }
        input_schema = Value::Object(declared.clone());
    }

    if let Some(t) = &template {
        for v in t.variables() {
            if !params.iter().any(|p| p.name == v) {
                problems.push(format!("URI template variable {{{v}}} is not a parameter"));
            }
        }
        for p in &params {
            if p.required && !t.variables().contains(&p.name.as_str()) {
                problems.push(format!(
                    "required parameter \"{}\" is not a URI template variable",
                    p.name
                ));
            }
        }
    }
    let returns = types::return_shape(&f["return_type"]);
    let returns_set = f["returns_set"] == true;
    if kind != Kind::Tool && returns_set {
        problems.push(format!("a {} must not return a set", kind.as_str()));
    }
    let output_validator = match &meta.output_schema {
        None => None,
        Some(schema) => match jsonschema::validator_for(&Value::Object(schema.clone())) {
            Ok(v) => Some(v),
            Err(_) => {
                problems.push("outputSchema is not a valid JSON Schema".into());
                None
            }
        },
    };
    // Derived schemas are valid by construction; a declared one is checked now, for doctor.
    if meta.input_schema.is_some() {
        if let Err(e) = jsonschema::options()
            .should_validate_formats(true)
            .build(&input_schema)
        {
            problems.push(format!("inputSchema is not a valid JSON Schema: {e}"));
        }
    }

    // policy hook: resolve visible/can_execute/approval functions (problems for doctor).
    let policy = crate::policy::reflect(&meta, kind, &mut input_schema, &mut problems);
    entry.problems = problems;
    entry.warnings = warnings;
    if !entry.problems.is_empty() {
        return (entry, None);
    }
    let capability = Capability {
        oid,
        name,
        kind,
        description,
        read_only: matches!(f["volatility"].as_str(), Some("s" | "i")),
        meta,
        params,
        input_schema,
        validator: std::cell::OnceCell::new(),
        output_validator,
        returns,
        returns_set,
        template,
        policy,
    };
    (entry, Some(capability))
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
        self.has_scopes(c)
            && session::can_execute(c.oid, self.role_oid)
            // policy hook: the visibility predicate, last (it runs application code).
            && crate::policy::visible(c, self)
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
