-- Claim (README, "Declaring capabilities"): DDL, COMMENT and GRANT changes show on the next
-- request, in EVERY backend: event triggers bump a schema version that every backend's cache
-- checks. registry_ddl_changes proves it inside one backend; here backend A (a dblink
-- connection) changes things and commits while this session (backend B) keeps its warm cache,
-- and B's next request must show each change. A commits for real and must see the fixture, so
-- the fixture is committed too (no begin ... rollback) and everything is dropped at the end.
select regress.fixture_tools('list_projects') as fixture;
select dblink_connect('a', format('host=127.0.0.1 port=%s dbname=%s user=postgres',
                                  current_setting('port'), current_database())) as connected;
select pg_backend_pid() <> (select pid from dblink('a', 'select pg_backend_pid()') as t(pid int)) as two_backends;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.rpc(method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params),
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.tool(name text) returns jsonb language sql
  as $$ select jsonb_path_query_first(pg_temp.rpc('tools/list'), '$.result.tools[*] ? (@.name == $n)',
                                      jsonb_build_object('n', name)) $$;
-- B: warm cache, the probe does not exist yet
select pg_temp.tool('xb_probe') is null as absent_before, pg_temp.tool('list_projects') ->> 'name' as warm;

-- A: CREATE FUNCTION (PUBLIC may execute a new function) -> B sees and can call it
select dblink_exec('a', $q$create function mcp.xb_probe() returns text language sql stable as $b$ select 'probe v1' $b$$q$);
select pg_temp.tool('xb_probe') ->> 'name' as created,
       pg_temp.rpc('tools/call', '{"name":"xb_probe"}') #>> '{result,content,0,text}' as called;
-- A: REVOKE from public -> B no longer sees it (and cannot call it)
select dblink_exec('a', 'revoke execute on function mcp.xb_probe() from public');
select pg_temp.tool('xb_probe') is null as hidden_after_revoke,
       pg_temp.rpc('tools/call', '{"name":"xb_probe"}') #> '{error,code}' as call_after_revoke;
-- A: GRANT to authenticated -> visible again
select dblink_exec('a', 'grant execute on function mcp.xb_probe() to authenticated');
select pg_temp.tool('xb_probe') ->> 'name' as visible_after_grant;
-- A: COMMENT with description and metadata -> B shows both
select dblink_exec('a', $q$comment on function mcp.xb_probe() is 'Probe, described by A. @mcp {"title": "Probe title"}'$q$);
select pg_temp.tool('xb_probe') ->> 'description' as description, pg_temp.tool('xb_probe') ->> 'title' as title;
-- A: a changed body is used by B
select dblink_exec('a', $q$create or replace function mcp.xb_probe() returns text language sql stable as $b$ select 'probe v2' $b$$q$);
select pg_temp.rpc('tools/call', '{"name":"xb_probe"}') #>> '{result,content,0,text}' as called_v2;
-- A: a new signature (drop + create) -> B's inputSchema has the parameter
select dblink_exec('a', 'drop function mcp.xb_probe()');
select dblink_exec('a', $q$create function mcp.xb_probe(word text) returns text language sql stable as $b$ select 'probe ' || word $b$$q$);
select pg_temp.tool('xb_probe') -> 'inputSchema' -> 'required' as required_after_new_signature,
       pg_temp.rpc('tools/call', '{"name":"xb_probe","arguments":{"word":"v3"}}') #>> '{result,content,0,text}' as called_v3;
-- A: RENAME -> old name gone, new name there
select dblink_exec('a', 'alter function mcp.xb_probe(text) rename to xb_probe_renamed');
select pg_temp.tool('xb_probe') is null as old_name_gone, pg_temp.tool('xb_probe_renamed') ->> 'name' as new_name;
-- A: a metadata change turns it into a prompt
select dblink_exec('a', $q$comment on function mcp.xb_probe_renamed(text) is 'Now a prompt. @mcp {"prompt": true}'$q$);
select pg_temp.tool('xb_probe_renamed') is null as no_longer_a_tool,
       jsonb_path_query_array(pg_temp.rpc('prompts/list'), '$.result.prompts[*] ? (@.name == "xb_probe_renamed").description') as prompt;
-- A: DROP -> gone for B
select dblink_exec('a', 'drop function mcp.xb_probe_renamed(text)');
select jsonb_path_query_array(pg_temp.rpc('prompts/list'), '$.result.prompts[*].name') ? 'xb_probe_renamed' as still_listed;
-- A: a settings change (chumbo.configure) -> B's initialize carries the new instructions
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') -> 'result' ? 'instructions' as instructions_before;
select r ->> 'instructions' as configured_by_a from dblink('a', $q$select chumbo.configure('{"instructions": "Set by backend A."}')$q$) as t(r jsonb);
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #>> '{result,instructions}' as instructions_after;
select r ->> 'instructions' as configured_by_a from dblink('a', $q$select chumbo.configure('{"instructions": null}')$q$) as t(r jsonb);
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') -> 'result' ? 'instructions' as instructions_removed;
-- A: a column added to the table a tool returns shows in B's next result
select dblink_exec('a', 'alter table public.projects add column xb_flag int not null default 7');
select jsonb_path_query_array(pg_temp.rpc('tools/call', '{"name":"list_projects"}'), '$.result.structuredContent.rows[*].xb_flag') as new_column;
select dblink_exec('a', 'alter table public.projects drop column xb_flag');
select jsonb_path_query_array(pg_temp.rpc('tools/call', '{"name":"list_projects"}'), '$.result.structuredContent.rows[*].xb_flag') as column_dropped;

select dblink_disconnect('a');
select regress.drop_fixture_projects() as fixture;
