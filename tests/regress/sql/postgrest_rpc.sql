-- The PostgREST entry chumbo.mcp(jsonb), called exactly as PostgREST does for
-- POST /rest/v1/rpc/mcp: SET LOCAL ROLE from the JWT, request.jwt.claims and request.headers as
-- transaction-local settings, then the call; status and headers come back through
-- response.status / response.headers. RLS isolation holds on this path too.
begin;
-- The entry is an opt-in, off after create extension: PostgREST's roles cannot call it
select grantee, privilege_type from information_schema.routine_privileges
 where routine_schema = 'chumbo' and routine_name = 'mcp' and grantee in ('anon', 'authenticated', 'PUBLIC');
savepoint off;
set local role authenticated;
select chumbo.mcp('{"jsonrpc":"2.0","id":1,"method":"ping"}');
rollback to savepoint off;
-- the documented step turns it on for the allowed roles (and only the owner may take it)
savepoint owner_only;
set local role authenticated;
select chumbo.grant_postgrest();
rollback to savepoint owner_only;
select chumbo.grant_postgrest() as postgrest_for;
select regress.fixture_tools('list_projects', 'my_organizations') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
savepoint s;
-- Alice
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as claims_set,
       set_config('request.headers', '{"accept":"application/json, text/event-stream","content-type":"application/json","mcp-protocol-version":"2025-06-18"}', true) is not null as headers_set;
select jsonb_path_query_array(chumbo.mcp('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}'),
       '$.result.structuredContent.rows[*].name') as alice_projects;
select nullif(current_setting('response.status', true), '') as status;
select current_user as still_authenticated, auth.uid() as still_alice;
rollback to savepoint s;
-- Bob, same backend, right after
set local role authenticated;
select set_config('request.jwt.claims', :'bob', true) is not null as claims_set,
       set_config('request.headers', '{"accept":"application/json, text/event-stream","content-type":"application/json","mcp-protocol-version":"2025-06-18"}', true) is not null as headers_set;
select jsonb_path_query_array(chumbo.mcp('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}'),
       '$.result.structuredContent.rows[*].name') as bob_projects;
select (chumbo.mcp('{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"app://orgs/mine"}}') #>> '{result,contents,0,text}')::jsonb as bob_orgs;
-- a notification: no JSON-RPC body, 202
select chumbo.mcp('{"jsonrpc":"2.0","method":"notifications/initialized"}') as notification_body;
select current_setting('response.status', true) as notification_status;
-- an unknown method (legacy: 200 with -32601)
select chumbo.mcp('{"jsonrpc":"2.0","id":3,"method":"nope"}') -> 'error' -> 'code' as unknown_method;
rollback to savepoint s;
-- anon gets no capability through the PostgREST entry unless public access is configured:
-- an authorization error (HTTP 401), not a SQL error
\set ON_ERROR_STOP 0
set local role anon;
select chumbo.mcp('{"jsonrpc":"2.0","id":1,"method":"tools/list"}') as anon_answer;
select current_setting('response.status', true) as anon_status;
rollback to savepoint s;
\set ON_ERROR_STOP 1
rollback;
