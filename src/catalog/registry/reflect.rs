//! Reflecting one function in `mcp` into an entry (what doctor shows) and, when it has no
//! problem, a capability: its kind, name, parameters and schemas, metadata and policies.

use super::*;
use crate::catalog::metadata::Completion;
use crate::postgres::app_function;
pub(super) use type_ref::TypeRef;

/// One row of sql/reflect.sql: a function in schema `mcp`.
#[derive(Debug, Deserialize)]
pub(super) struct ReflectedFunction {
    pub(super) oid: u32,
    pub(super) name: String,
    /// `oid::regprocedure`: name and argument types, what doctor shows.
    pub(super) identity: String,
    pub(super) comment: Option<String>,
    /// pg_proc.prokind: f(unction), p(rocedure), a(ggregate), w(indow).
    pub(super) prokind: String,
    pub(super) security_definer: bool,
    /// pg_proc.proowner.
    pub(super) owner: u32,
    /// pg_proc.provolatile: i(mmutable), s(table), v(olatile).
    pub(super) volatility: String,
    /// pg_proc.proconfig has a search_path (a `SET search_path` clause).
    pub(super) sets_search_path: bool,
    pub(super) returns_set: bool,
    pub(super) return_type: TypeRef,
    pub(super) variadic: bool,
    /// How many trailing input parameters have defaults.
    pub(super) n_defaults: usize,
    /// The roles granted EXECUTE on it (0: PUBLIC).
    pub(super) executors: Vec<u32>,
    /// Every argument (IN, OUT, INOUT, VARIADIC, TABLE) in declaration order.
    pub(super) args: Vec<ReflectedArg>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ReflectedArg {
    /// None (or empty) when the argument is unnamed.
    pub(super) name: Option<String>,
    /// pg_proc.proargmodes: i(n), o(ut), b(oth), v(ariadic), t(able).
    pub(super) mode: String,
    #[serde(rename = "type")]
    pub(super) ty: TypeRef,
}

impl ReflectedFunction {
    /// Gives every type it names its descriptor.
    pub(super) fn resolve(&mut self, descriptors: &HashMap<u32, Rc<ReflectedType>>) {
        let types =
            std::iter::once(&mut self.return_type).chain(self.args.iter_mut().map(|a| &mut a.ty));
        for t in types {
            t.descriptor = descriptors.get(&t.oid).cloned();
        }
    }
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

/// What reflecting one function found, in the order doctor lists it.
#[derive(Default)]
pub(super) struct Findings {
    pub(super) problems: Vec<Problem>,
    pub(super) warnings: Vec<String>,
}

/// SECURITY DEFINER, and its owner is a superuser now.
pub(super) fn superuser_definer(c: &Capability) -> bool {
    // SAFETY: a syscache lookup by oid; no pointers involved.
    c.definer
        .is_some_and(|owner| unsafe { pg_sys::superuser_arg(owner) })
}

pub(super) fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// A function's COMMENT, parsed: what it declares itself to be.
pub(super) struct Declared {
    pub(super) description: Option<String>,
    pub(super) meta: Metadata,
    pub(super) template: Option<UriTemplate>,
    pub(super) kind: Kind,
}

/// Steps 2 and 3 for one function: its entry, its capability when nothing is wrong, and whether
/// the result depends on its catalog rows only (see Reflected::reusable).
pub(super) fn reflect(
    f: &ReflectedFunction,
    overloaded: bool,
) -> (Entry, Option<Capability>, bool) {
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
        name: f.name.clone(),
        kind: declared.kind,
        description: declared.description,
        read_only: matches!(f.volatility.as_str(), "s" | "i"),
        sets_search_path: f.sets_search_path,
        definer: f.security_definer.then(|| pg_sys::Oid::from(f.owner)),
        executors: f.executors.iter().map(|&r| pg_sys::Oid::from(r)).collect(),
        meta: Box::new(declared.meta),
        params,
        input_schema: SchemaText::new(&input_schema),
        validator: std::cell::OnceCell::new(),
        output_validator,
        call_sql: Default::default(),
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
pub(super) fn check_rules(
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

pub(super) fn declare(f: &ReflectedFunction, found: &mut Findings) -> Declared {
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
pub(super) fn check_function(
    f: &ReflectedFunction,
    d: &Declared,
    overloaded: bool,
    found: &mut Findings,
) {
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
    if f.executors.contains(&0) {
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
    for (argument, completion) in &d.meta.completions {
        if let Completion::Function(name) = completion {
            if !app_function::valid_name(name) {
                found.problems.push(Problem::CompletionFunctionName(
                    argument.clone(),
                    name.clone(),
                ));
            }
        }
    }
}

/// Step 3: the parameters (IN/INOUT/VARIADIC args, all named; the trailing `n_defaults` are
/// optional) and the input schema, derived from them or declared.
pub(super) fn parameters(
    f: &ReflectedFunction,
    meta: &Metadata,
    found: &mut Findings,
) -> (Vec<Param>, Value) {
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
        let integers = integers_in(&schema);
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
            integers,
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

/// Where a value of a derived schema holds integers: `integer`, or an array or composite
/// (`properties`) that holds them, at any depth.
fn integers_in(schema: &Map<String, Value>) -> Integers {
    let sub = |key: &str| schema.get(key).and_then(Value::as_object);
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => Integers::Here,
        Some("array") => match sub("items").map(integers_in) {
            None | Some(Integers::None) => Integers::None,
            Some(inner) => Integers::Items(Box::new(inner)),
        },
        Some("object") => {
            let fields: Vec<(String, Integers)> = sub("properties")
                .into_iter()
                .flatten()
                .filter_map(|(name, s)| {
                    let inner = integers_in(s.as_object()?);
                    (inner != Integers::None).then(|| (name.clone(), inner))
                })
                .collect();
            if fields.is_empty() {
                Integers::None
            } else {
                Integers::Fields(fields)
            }
        }
        _ => Integers::None,
    }
}

/// A declared inputSchema must describe exactly the function's parameters.
pub(super) fn check_declared_input_schema(
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
pub(super) fn check_template(t: &UriTemplate, params: &[Param], found: &mut Findings) {
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
pub(super) fn output_validator(
    meta: &Metadata,
    found: &mut Findings,
) -> Option<Box<jsonschema::Validator>> {
    let schema = meta.output_schema.as_ref()?;
    match jsonschema::validator_for(&Value::Object(schema.clone())) {
        Ok(v) => Some(Box::new(v)),
        Err(_) => {
            found.problems.push(Problem::InvalidOutputSchema);
            None
        }
    }
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
}
