-- The functions in schema mcp whose oids are in $1 with what the registry needs, one JSON text
-- each: the fields of registry::ReflectedFunction, each type by its oid (its descriptor, once per
-- type: sql/reflect_type_descriptors.sql). Run as the extension owner by
-- src/catalog/registry/catalog.rs for the functions whose stamp (sql/reflect_stamps.sql) moved
-- since the registry it had. JSON built as text (json, not jsonb: no binary form, key sort and
-- output pass for a value serde reads once), in no order: the registry takes each row by its oid.
with fns as (
    -- the COMMENT joined as sql/reflect_stamps.sql stamps it (obj_description is a SQL function:
    -- an executor of its own for every function)
    select p.*, n.nspname, d.description
    from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    left join pg_description d
        on d.objoid = p.oid and d.classoid = 'pg_catalog.pg_proc'::regclass and d.objsubid = 0
    where n.nspname = 'mcp' and p.oid = any($1)
)
select json_build_object(
    'oid', p.oid::int8,
    'name', p.proname,
    -- what p.oid::regprocedure::text says (chumbo's search_path: the schema always named), built
    -- without the syscache entry of every function it would leave behind (16 MB with 10,000)
    'identity', quote_ident(p.nspname) || '.' || quote_ident(p.proname) || '(' || coalesce((
        select string_agg(format_type(a.t, null), ',' order by a.o)
        from unnest(p.proargtypes::oid[]) with ordinality a(t, o)), '') || ')',
    'comment', p.description,
    'prokind', p.prokind,
    'security_definer', p.prosecdef,
    'owner', p.proowner::int8,
    'volatility', p.provolatile,
    'sets_search_path', exists (select 1 from unnest(p.proconfig) c where c like 'search\_path=%'),
    'returns_set', p.proretset,
    'return_type', p.prorettype::int8,
    'variadic', p.provariadic <> 0,
    'n_defaults', p.pronargdefaults,
    -- the roles granted EXECUTE (0: PUBLIC), from which a caller's may be decided without the
    -- syscache (src/identity/session/mod.rs, can_execute); a GRANT or REVOKE writes a new pg_proc
    -- row version, so the function's stamp moves and this is read again
    'executors', coalesce((
        select json_agg(distinct a.grantee::int8)
        from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
        where a.privilege_type = 'EXECUTE'), '[]'::json),
    'args', coalesce((
        select json_agg(json_build_object(
            'name', a.name,
            'mode', coalesce(a.mode, 'i'),
            'type', a.type::int8
        ) order by a.ord)
        from unnest(
            coalesce(p.proallargtypes, p.proargtypes::oid[]),
            p.proargmodes,
            p.proargnames
        ) with ordinality as a(type, mode, name, ord)
    ), '[]'::json)
)::text
from fns p
