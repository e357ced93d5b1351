-- The descriptor (chumbo._type_info, as JSON text) of every type the functions whose oids are in
-- $1 name, as result or argument, once each: sql/reflect.sql names them by oid. chumbo._type_info
-- runs once per distinct type (a handful), not once per argument: with 10,000 functions that was
-- most of a cold registry build. Run as the extension owner by src/catalog/registry/catalog.rs.
select t.oid::int8, chumbo._type_info(t.oid)::text
from (select distinct unnest(array[p.prorettype] || coalesce(p.proallargtypes, p.proargtypes::oid[])) as oid
      from pg_proc p
      where p.oid = any($1)) t
