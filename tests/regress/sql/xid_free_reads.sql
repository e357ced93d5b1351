-- Claim (src/postgres/spi_read.rs, issue 10): chumbo's own reads never take a transaction id. A request
-- that only reads and has no bookkeeping to write (audit off, no rate limit) is a read-only
-- transaction: no transaction id, no commit record, no WAL flush; that holds for an API key
-- (looked up on every request), a JWT, chumbo.handle, and a tool call. No begin here: each
-- statement is its own transaction, and txid_current_if_assigned() is read in the same statement
-- after the call (a materialized CTE runs first). Settings and the key are put back at the end.
-- The fixture is committed (no begin ... rollback) and dropped at the end.
select regress.fixture_tools('list_projects', 'rename_project') as fixture;
select value as saved_settings from chumbo.settings \gset
select chumbo.configure('{"auth_mode":["api-key","bearer"],"audit":false,"rate_limit_per_minute":null,"jwt_hs256_secret":"xid-free-secret","jwt_issuers":["https://issuer.test"]}') ->> 'audit' as audit;
select chumbo.create_api_key('authenticated', '{}', 'xid_free_reads') as key \gset
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
select regress.hs256(jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
                                        'iss', 'https://issuer.test', 'aud', 'http://localhost/mcp', 'exp', extract(epoch from now())::int + 3600), 'xid-free-secret') as jwt \gset
create function pg_temp.http(credential jsonb, body text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'resource', 'http://localhost/mcp',
    'headers', credential || '{"mcp-protocol-version":"2025-11-25"}', 'body', body)) $$;
-- the first request after a settings change rebuilds the cached registry (reads only, too)
with r as materialized (select pg_temp.http(jsonb_build_object('x-api-key', :'key'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') a)
select a -> 'status' as status, txid_current_if_assigned() is null as no_xid from r;
with r as materialized (select pg_temp.http(jsonb_build_object('x-api-key', :'key'), '{"jsonrpc":"2.0","id":2,"method":"ping"}') a)
select a -> 'status' as api_key_ping, txid_current_if_assigned() is null as no_xid from r;
with r as materialized (select pg_temp.http(jsonb_build_object('authorization', 'Bearer ' || :'key'),
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}') a)
select a -> 'status' as api_key_tool_call, a #> '{body,result,isError}' as is_error,
       txid_current_if_assigned() is null as no_xid from r;
with r as materialized (select pg_temp.http(jsonb_build_object('authorization', 'Bearer ' || :'jwt'),
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}') a)
select a -> 'status' as jwt_tool_call, txid_current_if_assigned() is null as no_xid from r;
with r as materialized (select chumbo.handle('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', :'alice') a)
select a #> '{result,isError}' as is_error, txid_current_if_assigned() is null as no_xid from r;
-- a refused key is a read too
with r as materialized (select pg_temp.http(jsonb_build_object('x-api-key', 'chumbo_00000000000000000000000000000000_nope'), '{"jsonrpc":"2.0","id":6,"method":"ping"}') a)
select a -> 'status' as unknown_key, txid_current_if_assigned() is null as no_xid from r;
-- the same shape sees a transaction id when the call writes (so the ones above are not vacuous):
-- alice renames her project to the name it already has
select name as project_name from public.projects where id = 'a1000000-0000-4000-8000-000000000001' \gset
with r as materialized (select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 7, 'method', 'tools/call', 'params',
  jsonb_build_object('name', 'rename_project', 'arguments', jsonb_build_object('project_id', 'a1000000-0000-4000-8000-000000000001', 'name', :'project_name'))), :'alice') a)
select a #> '{result,isError}' as is_error, txid_current_if_assigned() is null as no_xid from r;

delete from chumbo.api_keys where label = 'xid_free_reads';
update chumbo.settings set value = :'saved_settings'::jsonb;
select regress.drop_fixture_projects() as fixture;
