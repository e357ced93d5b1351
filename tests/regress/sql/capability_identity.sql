-- Issue 9 (1, 2): tool code cannot leave the caller's identity. A capability runs as the
-- caller's role switched like security-definer code (a local user-id change inside a
-- security-restricted operation), so every way of changing role, session authorization or the
-- JWT claims fails the call with a clear isError, and nothing read under a changed identity comes
-- back. Checked from chumbo.handle in this superuser session and from chumbo.http as a
-- non-superuser edge role. The tool runs `execute action`: one injectable statement in any tool.
begin;
-- the PostgREST entry is an opt-in (sql/edge.sql)
select chumbo.grant_postgrest() as postgrest_for;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob_claims '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function mcp.run_sql(action text) returns jsonb language plpgsql volatile as $$
begin
  execute action;
  return jsonb_build_object('user', current_user, 'uid', auth.uid(),
    'projects', (select jsonb_agg(name order by name) from public.projects));
end $$;
comment on function mcp.run_sql(text) is 'A buggy tool: runs whatever it is given.';
grant execute on function mcp.run_sql(text) to authenticated;
-- a function-level SET role clause
create function mcp.set_clause() returns text language sql volatile set role = postgres
  as $$ select current_user::text $$;
grant execute on function mcp.set_clause() to authenticated;
create function pg_temp.call(claims jsonb, name text, args jsonb default '{}') returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', name, 'arguments', args)), claims) $$;
create function pg_temp.outcome(r jsonb) returns text language sql as $$
  select case when (r #> '{result,isError}')::boolean
    then regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', '')
    else 'RAN: ' || coalesce(r #>> '{result,structuredContent}', r::text) end $$;

-- honest call: Alice, as authenticated, sees Acme only
select pg_temp.outcome(pg_temp.call(:'alice', 'run_sql', '{"action":"select 1"}')) as honest;

select label, pg_temp.outcome(pg_temp.call(:'alice', 'run_sql', jsonb_build_object('action', action))) as outcome,
       strpos(pg_temp.call(:'alice', 'run_sql', jsonb_build_object('action', action))::text, 'Globex') = 0 as no_bob_data
from (values
  ('reset role',               'reset role'),
  ('set role superuser',       'set role postgres'),
  ('set local role',           'set local role service_role'),
  ('set role none',            'set role none'),
  ('set_config role',          'select set_config(''role'', ''postgres'', true)'),
  ('set session authorization','set session authorization postgres'),
  ('reset session auth',       'reset session authorization'),
  ('claims rewritten',         'select set_config(''request.jwt.claims'', ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'', true)'),
  ('claims set',               'set request.jwt.claims = ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002"}'''),
  ('claims reset',             'reset request.jwt.claims'),
  ('legacy claim sub',         'select set_config(''request.jwt.claim.sub'', ''bbbbbbbb-0000-4000-8000-000000000002'', true)'),
  ('legacy claim email',       'set local request.jwt.claim.email = ''bob@globex.test'''),
  ('legacy claim role',        'set request.jwt.claim.role = ''service_role''')
) as t(label, action);

-- RESET ALL is allowed but touches neither role nor claims: still Alice, still Acme only
select pg_temp.outcome(pg_temp.call(:'alice', 'run_sql', '{"action":"reset all"}')) as reset_all;
-- a SET role clause on a function the tool calls
select pg_temp.outcome(pg_temp.call(:'alice', 'set_clause')) as set_clause;

-- chumbo's entry points cannot be called from inside a capability (not even chumbo.mcp, which
-- authenticated may execute, nor chumbo.handle through a superuser's SECURITY DEFINER wrapper):
-- a tool cannot start a request for itself or for someone else
create function public.definer_handle() returns jsonb language sql security definer set search_path = ''
  as $$ select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}',
                             '{"role":"authenticated","sub":"bbbbbbbb-0000-4000-8000-000000000002"}') $$;
grant execute on function public.definer_handle() to authenticated;
select label, pg_temp.outcome(pg_temp.call(:'alice', 'run_sql', jsonb_build_object('action', action))) as outcome
from (values
  ('nested chumbo.mcp',    'select chumbo.mcp(''{"jsonrpc":"2.0","id":1,"method":"ping"}'')'),
  ('nested chumbo.handle', 'select chumbo.handle(''{"jsonrpc":"2.0","id":1,"method":"ping"}'', ''{"role":"authenticated","sub":"bbbbbbbb-0000-4000-8000-000000000002"}'')'),
  ('nested chumbo.http',   'select chumbo.http(''{"method":"POST","headers":{},"body":"{}"}'')'),
  ('handle via definer',   'select public.definer_handle()')
) as t(label, action);

-- after all of that this session is exactly what it was
select current_user, session_user, current_setting('role') as role_setting,
       coalesce(current_setting('request.jwt.claims', true), '') as claims_setting;

-- the same from chumbo.http as a non-superuser edge role with a real (HS256) token
select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"],"jwt_hs256_secret":"regress-secret","jwt_audience":["https://mcp.test"]}') ->> 'auth_mode' as mode;
create role regress_edge_300 login;
select chumbo.grant_edge('regress_edge_300');
select regress.hs256(jsonb_build_object('iss', 'https://issuer.test', 'aud', 'https://mcp.test', 'sub', 'aaaaaaaa-0000-4000-8000-000000000001',
  'role', 'authenticated', 'exp', extract(epoch from now())::int + 300)) as alice_token \gset
create function pg_temp.http(token text, action text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'headers', jsonb_build_object('authorization', 'Bearer ' || token,
    'content-type', 'application/json', 'mcp-protocol-version', '2025-11-25'),
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
       'params', jsonb_build_object('name', 'run_sql', 'arguments', jsonb_build_object('action', action)))::text)) $$;
grant execute on function pg_temp.http(text, text), pg_temp.outcome(jsonb) to regress_edge_300;
set local role regress_edge_300;
select label, (r -> 'status')::int as status, pg_temp.outcome(jsonb_build_object('result', r -> 'body' -> 'result')) as outcome
from (values
  ('honest',          'select 1'),
  ('reset role',      'reset role'),
  ('set role edge',   'set role regress_edge_300'),
  ('claims rewritten','select set_config(''request.jwt.claims'', ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'', true)')
) as t(label, action), lateral pg_temp.http(:'alice_token', action) r;
select current_user as still_edge_role;
reset role;

-- and through chumbo.mcp as PostgREST calls it (SET LOCAL ROLE + request.jwt.claims)
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as claims_set;
select label, pg_temp.outcome(jsonb_build_object('result', chumbo.mcp(jsonb_build_object('jsonrpc', '2.0', 'id', 1,
         'method', 'tools/call', 'params', jsonb_build_object('name', 'run_sql', 'arguments', jsonb_build_object('action', action)))) -> 'result')) as outcome
from (values
  ('honest',          'select 1'),
  ('reset role',      'reset role'),
  ('claims rewritten','select set_config(''request.jwt.claims'', ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'', true)')
) as t(label, action);
select current_user as still_authenticated, current_setting('request.jwt.claims') = :'alice' as claims_unchanged;
reset role;
rollback;
