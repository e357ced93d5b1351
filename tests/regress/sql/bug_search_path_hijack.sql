-- Bug: chumbo's own statements, some of them run as the extension owner, resolved names through the
-- calling session's search_path and temporary schema. A login allowed to call chumbo.http (an
-- edge's role) that could create a domain named text (in a schema it listed before pg_catalog, or
-- in its temporary schema, which PostgreSQL searches first for types) ran its code as the owner in
-- every call. And capabilities searched the session's temporary schema first: a temporary table or
-- domain made on a pooled connection stood in for the application's table and for text in the
-- next caller's capability, run as that caller. Now chumbo's statements run with search_path =
-- pg_catalog, pg_temp; capabilities with the caller's search_path, pg_catalog first and the
-- temporary schema last (unless their own SET clause says otherwise); and chumbo.http and
-- chumbo.mcp serve no request on a session whose temporary schema holds tables or types.
begin;
select regress.fixture_projects() as fixture;
create function mcp.project_names() returns table (name text) language sql stable
  -- unqualified on purpose: application code often is
  as $$ select p.name::text from projects p order by 1 $$;
grant execute on function mcp.project_names() to authenticated;
create function mcp.search_path() returns text language sql stable as $$ select current_setting('search_path') $$;
create function mcp.search_path_own() returns text language sql stable set search_path = public
  as $$ select current_setting('search_path') $$;
-- as Supabase advises for functions: an empty search_path, everything of the app qualified
create function mcp.project_names_own() returns table (name text) language sql stable set search_path = ''
  as $$ select p.name::text from public.projects p order by 1 $$;
grant execute on function mcp.search_path(), mcp.search_path_own(), mcp.project_names_own() to authenticated;
select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"],"jwt_hs256_secret":"regress-secret"}') ->> 'auth_mode' as mode;
select regress.hs256(jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
  'iss', 'https://issuer.test', 'aud', 'http://localhost:54321/functions/v1/mcp',
  'exp', extract(epoch from now())::int + 300)) as alice \gset
create role regress_edge_350 login;
select chumbo.grant_edge('regress_edge_350');
-- the edge's login may create in one schema of its own (it should not; chumbo must not care)
create schema regress_hijack authorization regress_edge_350;
grant usage on schema regress_hijack to public;
create function pg_temp.call(token text, tool text default 'project_names') returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('authorization', 'Bearer ' || token, 'mcp-protocol-version', '2025-11-25'),
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', 7, 'method', 'tools/call',
      'params', jsonb_build_object('name', tool, 'arguments', '{}'::jsonb))::text,
    'resource', 'http://localhost:54321/functions/v1/mcp',
    'resource_metadata', 'http://localhost:54321/functions/v1/mcp/.well-known/oauth-protected-resource')) $$;
create function pg_temp.names(r jsonb) returns jsonb language sql as $$
  select jsonb_build_array(r -> 'status', coalesce(r #> '{body,result,structuredContent,rows}',
    r #> '{body,result,content,0,text}', r #> '{body,error,message}')) $$;

set local role regress_edge_350;
create table regress_hijack.ran (who name, what text);
grant insert on regress_hijack.ran to public;
-- every time the attacker's code ran, and as whom (the attacker's own statements are left out below)
create function pg_temp.ran() returns table (who name, what text, times bigint) language sql as $$
  select who, what, count(*) from regress_hijack.ran where who <> 'regress_edge_350' group by 1, 2 order by 1, 2 $$;
-- 1. a domain named text in a schema the session lists before pg_catalog
-- the attacker's code: notes who ran it, for which domain
create function regress_hijack.spy(v pg_catalog.text, domain pg_catalog.text) returns boolean
  language plpgsql set search_path = pg_catalog as $$
begin
  insert into regress_hijack.ran values (current_user, domain);
  return true;
end $$;
create domain regress_hijack.text as pg_catalog.text check (regress_hijack.spy(value, 'regress_hijack.text'));
set local search_path = regress_hijack, pg_catalog, public;
select pg_temp.names(pg_temp.call(:'alice')) as schema_text_listed_first;
select * from pg_temp.ran();
-- what a capability runs with; one with its own SET search_path clause keeps it
select pg_temp.call(:'alice', 'search_path') #>> '{body,result,content,0,text}' as capability_search_path;
select pg_temp.call(:'alice', 'search_path_own') #>> '{body,result,content,0,text}' as own_search_path;
select pg_temp.names(pg_temp.call(:'alice', 'project_names_own')) as own_search_path_names;
select * from pg_temp.ran();
reset search_path;

-- 2. a temporary domain named text and a temporary table named projects, left on the connection:
-- PostgreSQL searches the temporary schema first for both unless a search_path lists it, which
-- the capability's own SET clause (or a SECURITY DEFINER helper's) does not. chumbo.http refuses
-- to serve on such a session; temporary functions (never searched unqualified) are fine.
create domain pg_temp.text as pg_catalog.text check (regress_hijack.spy(value, 'pg_temp.text'));
create temp table projects (name pg_catalog.text);
insert into pg_temp.projects values ('SHADOW: written by the edge');
savepoint temp_objects;
select pg_temp.names(pg_temp.call(:'alice', 'project_names_own')) as temp_objects;
rollback to savepoint temp_objects;
drop domain pg_temp.text;
savepoint temp_table;
select pg_temp.names(pg_temp.call(:'alice')) as temp_table;
rollback to savepoint temp_table;
drop table pg_temp.projects;
-- only temporary functions left: served
select pg_temp.names(pg_temp.call(:'alice', 'project_names_own')) as temp_functions_only;
select * from pg_temp.ran();
-- with the temporary schema named first in the session's search_path, a capability has it last
set local search_path = pg_temp, public;
select pg_temp.call(:'alice', 'search_path') #>> '{body,result,content,0,text}' as capability_search_path;
-- the session's search_path is its own again after the calls
show search_path;
reset role;
rollback;
