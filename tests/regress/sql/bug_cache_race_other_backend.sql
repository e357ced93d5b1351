-- Fixed bug (claim: "DDL, COMMENT and GRANT changes show on the next request", README "Declaring
-- capabilities"): the schema version is a sequence bumped by the event trigger at the DDL, not
-- at COMMIT. Another backend that handles a request while the DDL's transaction is still open
-- sees the new version with the old catalog, rebuilds its registry from the old catalog and
-- caches it under the new version; after the COMMIT nothing bumps the version again, so that
-- backend keeps serving the old capability list until some unrelated change. The expected
-- output below is the right behaviour, which chumbo now has (the committed change is seen by the next request).
-- No begin ... rollback: backend A (a dblink connection) commits for real; what it creates is
-- dropped at the end.
select dblink_connect('a', format('host=127.0.0.1 port=%s dbname=%s user=postgres',
                                  current_setting('port'), current_database())) as connected;
create function pg_temp.rpc(method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params),
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.tool(name text) returns jsonb language sql
  as $$ select jsonb_path_query_first(pg_temp.rpc('tools/list'), '$.result.tools[*] ? (@.name == $n)',
                                      jsonb_build_object('n', name)) $$;
select dblink_exec('a', $q$create function mcp.xb_race() returns text language sql stable as $b$ select 'race' $b$$q$);
select dblink_exec('a', $q$comment on function mcp.xb_race() is 'Race v1'$q$);
select pg_temp.tool('xb_race') ->> 'description' as committed_v1;

-- 1. COMMENT in A's open transaction; B answers a request meanwhile (and must not see v2 yet)
select dblink_exec('a', 'begin');
select dblink_exec('a', $q$comment on function mcp.xb_race() is 'Race v2'$q$);
select pg_temp.tool('xb_race') ->> 'description' as while_a_is_open;
select dblink_exec('a', 'commit');
-- the next request after A's COMMIT must show v2
select pg_temp.tool('xb_race') ->> 'description' as after_a_commits;

-- 2. the same with a new tool created in A's open transaction
select dblink_exec('a', 'begin');
select dblink_exec('a', $q$create function mcp.xb_race_new() returns text language sql stable as $b$ select 'new' $b$$q$);
select pg_temp.tool('xb_race_new') is null as new_tool_not_yet_visible;
select dblink_exec('a', 'commit');
select pg_temp.tool('xb_race_new') ->> 'name' as new_tool_after_commit,
       pg_temp.rpc('tools/call', '{"name":"xb_race_new"}') #>> '{result,content,0,text}' as called_after_commit;

-- 3. the same with a settings change
select dblink_exec('a', 'begin');
select r ->> 'instructions' as configured_by_a from dblink('a', $q$select chumbo.configure('{"instructions": "Race instructions"}')$q$) as t(r jsonb);
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') -> 'result' ? 'instructions' as instructions_while_open;
select dblink_exec('a', 'commit');
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #>> '{result,instructions}' as instructions_after_commit;

select r ->> 'instructions' as configured_by_a from dblink('a', $q$select chumbo.configure('{"instructions": null}')$q$) as t(r jsonb);
select dblink_exec('a', 'drop function mcp.xb_race(), mcp.xb_race_new()');
select dblink_disconnect('a');
