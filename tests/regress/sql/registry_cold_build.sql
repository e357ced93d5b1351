-- Claim (issue 32): the registry's catalog read leaves the session as it found it (it runs with
-- JIT off, restored afterwards whatever the session had), and the identity chumbo.doctor() shows
-- for a function is exactly its `oid::regprocedure` text under chumbo's search_path (built
-- without the syscache entry of every function): quoted names, types of another schema, arrays,
-- OUT and VARIADIC arguments, no arguments.
begin;
create schema "Odd Schema";
create type "Odd Schema"."Mood" as enum ('ok', 'meh');
grant usage on schema "Odd Schema" to authenticated;
create function mcp."Mixed Case"(a "Odd Schema"."Mood", b int[], out c text) language sql stable as $$ select a::text $$;
create function mcp.no_args() returns int language sql stable as $$ select 1 $$;
create function mcp.many(variadic xs numeric[]) returns numeric language sql stable as $$ select 1::numeric $$;
create function mcp.timed(t timestamp with time zone, d character varying) returns text language sql stable as $$ select d $$;
grant execute on all functions in schema mcp to authenticated;
-- the session's jit, whatever it is, is the same after a registry build as before
set local jit = on;
select jsonb_typeof(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}')) as answered, current_setting('jit') as jit;
comment on function mcp.no_args() is 'changed';
set local jit = off;
select jsonb_typeof(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}')) as answered, current_setting('jit') as jit;
-- identities: doctor's against regprocedure's text under chumbo's own search_path
set local search_path = pg_catalog, pg_temp;
-- (matched by name, so a different text shows as false or a missing row)
select p.proname, d.function, d.function = p.oid::regprocedure::text as same_as_regprocedure
  from pg_proc p
  left join chumbo.doctor() d on d.function like 'mcp.' || quote_ident(p.proname) || '(%'
 where p.pronamespace = 'mcp'::regnamespace and p.proname in ('Mixed Case', 'no_args', 'many', 'timed')
 order by 1;
rollback;
