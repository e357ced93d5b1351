-- Every function in schema mcp with a stamp of everything sql/reflect.sql reads about it: the
-- pg_proc row version (name, arguments, flags, owner, ACL), its COMMENT's pg_description row
-- version (xmin and ctid: one transaction may update a row twice) and each type it names, as
-- chumbo._type_info shows it. src/registry.rs reflects again only the functions whose stamp moved.
-- Run as the extension owner, in sql/reflect.sql's order.
with f as (
    select p.oid, p.proname, p.xmin, p.ctid, d.xmin as dxmin, d.ctid as dctid,
           p.prorettype || coalesce(p.proallargtypes, p.proargtypes::oid[]) as types
    from pg_proc p
    join pg_namespace n on n.oid = p.pronamespace
    left join pg_description d
        on d.objoid = p.oid and d.classoid = 'pg_catalog.pg_proc'::regclass and d.objsubid = 0
    where n.nspname = 'mcp'
), ty as (
    select t, md5(chumbo._type_info(t)::text) as h from (select distinct unnest(types) as t from f) u
)
select f.oid::int8, f.proname::text,
       concat_ws(' ', f.xmin, f.ctid, f.dxmin, f.dctid,
                 (select string_agg(ty.h, ' ' order by ty.t) from ty where ty.t = any(f.types)))
from f
order by f.proname, f.oid
