-- chumbo.surface(): the calling role's effective tool catalogue and a stable SHA-256 digest.
-- Audit events: one row per request outcome with the principal's digest, never the raw subject,
-- arguments, results or tokens unless a capability opts in.
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
-- surface as a role with claims, the way a capability or PostgREST sees it
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as claims_set;
select chumbo.surface() ->> 'role' as role, jsonb_path_query_array(chumbo.surface(), '$.tools[*].name') as tools,
       chumbo.surface() ->> 'digest' ~ '^sha256:[0-9a-f]{64}$' as digest_shape,
       chumbo.surface() ->> 'digest' = chumbo.surface() ->> 'digest' as stable;
select chumbo.surface() ->> 'digest' as before \gset
reset role;
-- a description change changes the digest
comment on function mcp.list_projects(text) is 'Changed.';
set local role authenticated;
select chumbo.surface() ->> 'digest' <> :'before' as changed;
reset role;
rollback;
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project') as fixture;
set local role anon;
select jsonb_path_query_array(chumbo.surface(), '$.tools[*].name') as anon_tools;
reset role;

-- audit
delete from chumbo.audit_events;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_documents","arguments":{"query":"secret-search-term"}}}', :'alice') is not null;
select chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool"}}', :'alice') is not null;
select chumbo.handle('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"b2000000-0000-4000-8000-000000000001","name":"x"}}}', :'alice') is not null;
select era, method, capability, outcome, principal ~ '^[0-9a-f]{64}$' as digest, bytes > 0 as has_bytes, duration_ms >= 0 as timed, detail
  from chumbo.audit_events order by id;
-- nothing of the request's content or the subject is stored
select count(*) as leaks from chumbo.audit_events e
 where e::text like '%secret-search-term%' or e::text like '%aaaaaaaa-0000-4000-8000-000000000001%';
-- the same principal always gets the same digest, another principal another one
select chumbo.handle('{"jsonrpc":"2.0","id":4,"method":"tools/list"}', '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}') is not null;
select count(distinct principal) as principals from chumbo.audit_events;
-- opting in records the arguments
comment on function mcp.search_documents(text, int) is 'Search. @mcp {"audit": {"arguments": true}}';
select chumbo.handle('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_documents","arguments":{"query":"rocket"}}}', :'alice') is not null;
select detail from chumbo.audit_events order by id desc limit 1;
-- retention
update chumbo.audit_events set at = now() - interval '40 days' where id = (select min(id) from chumbo.audit_events);
select chumbo.prune_audit_events() as pruned, chumbo.prune_audit_events('1 hour') as pruned_recent_none;
-- and audit off writes nothing
select chumbo.configure('{"audit": false}') ->> 'audit' as audit;
delete from chumbo.audit_events;
select chumbo.handle('{"jsonrpc":"2.0","id":6,"method":"tools/list"}', :'alice') is not null;
select count(*) as rows_when_off from chumbo.audit_events;
-- the API roles cannot read it
set local role authenticated;
\set ON_ERROR_STOP 0
select count(*) from chumbo.audit_events;
\set ON_ERROR_STOP 1
rollback;
-- a call never leaves its own commit settings in the caller's transaction block: inside
-- begin ... rollback, synchronous_commit is exactly what it was before the call, whether the call
-- only read or also wrote, and whatever the caller had set
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project') as fixture;
select current_setting('synchronous_commit') as sc_before \gset
select chumbo.handle('{"jsonrpc":"2.0","id":7,"method":"tools/list"}', :'alice') is not null as listed;
select current_setting('synchronous_commit') = :'sc_before' as unchanged_after_read_only_call;
select chumbo.handle('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001","name":"Renamed"}}}', :'alice') #> '{result,isError}' as is_error;
select current_setting('synchronous_commit') = :'sc_before' as unchanged_after_write;
rollback;
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project') as fixture;
set local synchronous_commit = remote_write;
select chumbo.handle('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', :'alice') #> '{result,isError}' as is_error;
select current_setting('synchronous_commit') as after_read_only_call;
select chumbo.handle('{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001","name":"Renamed"}}}', :'alice') #> '{result,isError}' as is_error;
select current_setting('synchronous_commit') as after_write;
rollback;
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project') as fixture;
set local synchronous_commit = off;
select chumbo.handle('{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001","name":"Renamed"}}}', :'alice') #> '{result,isError}' as is_error;
select current_setting('synchronous_commit') as after_write_with_caller_off;
rollback;
