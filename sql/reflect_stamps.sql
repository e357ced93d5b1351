-- Every function in schema mcp, in sql/reflect.sql's order, with a stamp of the catalog rows
-- sql/reflect.sql reads about it: the pg_proc row version (name, arguments, flags, owner, ACL) and
-- its COMMENT's pg_description row version (xmin and ctid: one transaction may write a row
-- twice), and the types it names (src/catalog/registry/catalog.rs stamps those with sql/reflect_types.sql).
-- $1: only these functions (null: all). Run as the extension owner; src/catalog/registry/catalog.rs reflects again
-- only the functions whose stamp moved.
select p.oid::int8, p.proname::text,
       concat_ws(' ', p.xmin, p.ctid, d.xmin, d.ctid),
       p.prorettype || coalesce(p.proallargtypes, p.proargtypes::oid[])
from pg_proc p
join pg_namespace n on n.oid = p.pronamespace
left join pg_description d
    on d.objoid = p.oid and d.classoid = 'pg_catalog.pg_proc'::regclass and d.objsubid = 0
where n.nspname = 'mcp' and ($1::oid[] is null or p.oid = any ($1::oid[]))
order by p.proname, p.oid
