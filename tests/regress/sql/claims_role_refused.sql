-- Capabilities run as claims->>'role', which must be in the allow-list (default anon,
-- authenticated) and never a superuser or BYPASSRLS role, whatever the allow-list says.
-- A refused role gets a JSON-RPC error, never data.
begin;
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.call(claims jsonb) returns jsonb language sql
  as $$ select chumbo.handle('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', claims) $$;
create function pg_temp.summary(r jsonb) returns jsonb language sql
  as $$ select jsonb_build_object('id', r -> 'id', 'error_code', r -> 'error' -> 'code',
         'has_result', r ? 'result', 'leak', strpos(r::text, 'Acme') > 0 or strpos(r::text, 'Globex') > 0) $$;
select role_claim, pg_temp.summary(pg_temp.call(jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', role_claim))) as answer
  from (values ('postgres'), ('service_role'), ('authenticator'), ('pg_read_all_data'), ('pg_signal_backend'),
               ('no_such_role'), (''), ('AUTHENTICATED'), ('authenticated; drop table public.projects'),
               ('"authenticated"'), ('public')) v(role_claim);
-- role claim of the wrong JSON type
select pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":["authenticated"]}')) as role_array,
       pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":1}')) as role_number,
       pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":null}')) as role_null;
-- even when an owner puts them into the allow-list, superusers and BYPASSRLS roles stay refused
select chumbo.configure('{"allowed_roles":["anon","authenticated","service_role","postgres"]}') is not null as configured;
select pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"postgres"}')) as postgres,
       pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"service_role"}')) as service_role;
-- a new role that gains BYPASSRLS later is refused from then on
create role regress_bypass nologin;
grant regress_bypass to postgres;
grant usage on schema mcp to regress_bypass;
grant execute on function mcp.list_projects(text) to regress_bypass;
grant select on public.projects to regress_bypass;
select chumbo.configure('{"allowed_roles":["anon","authenticated","regress_bypass"]}') is not null as configured;
select pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"regress_bypass"}')) as before_bypassrls;
alter role regress_bypass bypassrls;
select pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"regress_bypass"}')) as after_bypassrls;
-- a role that is not in the allow-list is refused even though it exists and could execute
select chumbo.configure('{"allowed_roles":["anon","authenticated"]}') is not null as configured;
alter role regress_bypass nobypassrls;
select pg_temp.summary(pg_temp.call('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"regress_bypass"}')) as not_allowed;
-- the caller is unchanged afterwards
select current_user;
rollback;
