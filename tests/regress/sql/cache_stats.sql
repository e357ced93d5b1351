-- chumbo.cache_stats(): the capability cache's own size, counted by chumbo's allocator. It grows
-- with the tools and shrinks when they go (the next request rebuilds, reusing unchanged
-- reflections), and only owners may call it: it counts capabilities a caller may not see.
begin;
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.stats() returns jsonb language sql
  as $$ select chumbo.cache_stats() $$;
create temp table s (step text, v jsonb);
insert into s select 'before', pg_temp.stats();
select array(select jsonb_object_keys(v) order by 1) as keys from s;
do $$ begin for i in 1..100 loop
  execute format('create function mcp.gen_%s(a text, b int default 1) returns text language sql as %L', i, 'select a');
  execute format('comment on function mcp.gen_%s(text, int) is %L', i, format('Generated %s. @mcp {"title": "Gen %s"}', i, i));
end loop; end $$;
insert into s select 'many', pg_temp.stats();
-- a COMMENT touched one function: the next build reads that one's stamp only; a GRANT names no
-- function to the event trigger, so it reads every one
comment on function mcp.gen_5(text, int) is 'Five. @mcp {"title": "Gen five"}';
insert into s select 'commented', pg_temp.stats();
grant execute on function mcp.gen_5(text, int) to authenticated;
insert into s select 'granted', pg_temp.stats();
select (c.v->>'stamped_last_build')::int as stamped_after_comment,
       (c.v->>'reflected_last_build')::int as reflected_after_comment,
       (c.v->>'functions')::int > 100 as many_functions,
       (g.v->>'stamped_last_build')::int = (g.v->>'functions')::int as grant_reads_all
  from s c, s g where c.step = 'commented' and g.step = 'granted';
do $$ begin for i in 1..100 loop execute format('drop function mcp.gen_%s(text, int)', i); end loop; end $$;
insert into s select 'after', pg_temp.stats();
select a.v->'capabilities' = b.v->'capabilities' as back_to_before,
       (m.v->>'capabilities')::int - (b.v->>'capabilities')::int as added,
       (m.v->>'registry_bytes')::bigint > (b.v->>'registry_bytes')::bigint + 100 * 300 as grew,
       (a.v->>'registry_bytes')::bigint < (m.v->>'registry_bytes')::bigint - 50 * 300 as shrank,
       (m.v->>'version')::bigint > (b.v->>'version')::bigint as new_version,
       (m.v->>'allocated_bytes')::bigint >= (m.v->>'registry_bytes')::bigint as allocated_covers_registry,
       (m.v->>'allocated_peak_bytes')::bigint >= (m.v->>'allocated_bytes')::bigint as peak_covers_now,
       (a.v->>'reflected_last_build')::int < (a.v->>'functions')::int as reused
  from s b, s m, s a where b.step = 'before' and m.step = 'many' and a.step = 'after';
-- the request roles cannot call it
\set ON_ERROR_STOP 0
set local role authenticated;
select chumbo.cache_stats();
rollback;
begin;
set local role anon;
select chumbo.cache_stats();
rollback;
