-- A stamp of each type in $1 made of the catalog row versions (xmin and ctid) that
-- chumbo._type_info reads for it: its pg_type and pg_namespace rows, its enum labels' pg_enum
-- rows, a composite's pg_class and pg_attribute rows, and the same for the element type of an
-- array, the base type of a domain and the attribute types of a composite (one level deeper than
-- _type_info follows, which is safe). Plain SQL, no call of _type_info: planning its body again
-- after every DDL was most of a rebuild. A renamed type or schema, a new or renamed enum label, a
-- domain moved to another base, an attribute added, dropped or retyped reflects the functions
-- naming the type again.
with recursive walk(root, t, depth) as (
    select t, t, 0 from unnest($1::oid[]) as t
    union all
    select w.root, n.t, w.depth + 1
    from walk w
    join pg_catalog.pg_type ty on ty.oid = w.t
    cross join lateral (
        select ty.typelem where ty.typelem <> 0
        union all
        select ty.typbasetype where ty.typtype = 'd'
        union all
        select a.atttypid from pg_catalog.pg_attribute a
         where ty.typtype = 'c' and a.attrelid = ty.typrelid and a.attnum > 0 and not a.attisdropped) as n(t)
    where w.depth < 5
)
select w.root::int8,
       string_agg(concat_ws(' ', ty.oid, ty.xmin, ty.ctid, ns.xmin, ns.ctid, (
           select string_agg(e.xmin || ' ' || e.ctid, ' ' order by e.oid)
           from pg_catalog.pg_enum e where e.enumtypid = ty.oid), (
           select c.xmin || ' ' || c.ctid || ' ' || (
               select string_agg(a.xmin || ' ' || a.ctid, ' ' order by a.attnum)
               from pg_catalog.pg_attribute a where a.attrelid = c.oid and a.attnum > 0)
           from pg_catalog.pg_class c where ty.typtype = 'c' and c.oid = ty.typrelid)), ', ' order by w.depth, ty.oid)
from walk w
join pg_catalog.pg_type ty on ty.oid = w.t
join pg_catalog.pg_namespace ns on ns.oid = ty.typnamespace
group by w.root
