-- A stamp of each type in $1 made of the catalog row versions (xmin and ctid) that
-- chumbo._type_info reads for it: its pg_type and pg_namespace rows, its enum labels' pg_enum
-- rows, and the same for the element type of an array and the base type of a domain (one level
-- deeper than _type_info follows, which is safe). Plain SQL, no call of _type_info: planning its
-- body again after every DDL was most of a rebuild. A renamed type or schema, a new or renamed
-- enum label, a domain moved to another base reflects the functions naming the type again.
with recursive walk(root, t, depth) as (
    select t, t, 0 from unnest($1::oid[]) as t
    union all
    select w.root, n.t, w.depth + 1
    from walk w
    join pg_catalog.pg_type ty on ty.oid = w.t
    cross join lateral (values
        (case when ty.typelem <> 0 then ty.typelem end),
        (case when ty.typtype = 'd' then ty.typbasetype end)) as n(t)
    where n.t is not null and w.depth < 5
)
select w.root::int8,
       string_agg(concat_ws(' ', ty.oid, ty.xmin, ty.ctid, ns.xmin, ns.ctid, (
           select string_agg(e.xmin || ' ' || e.ctid, ' ' order by e.oid)
           from pg_catalog.pg_enum e where e.enumtypid = ty.oid)), ', ' order by w.depth, ty.oid)
from walk w
join pg_catalog.pg_type ty on ty.oid = w.t
join pg_catalog.pg_namespace ns on ns.oid = ty.typnamespace
group by w.root
