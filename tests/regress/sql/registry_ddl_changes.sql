-- DDL and COMMENT changes show on the next request, in the same session, without reconnecting:
-- new function, changed comment and metadata, changed signature, rename, drop.
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'status_report', 'summarize_project') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.tool_def(name text) returns jsonb language sql
  as $$ select jsonb_path_query_first(regress.rpc('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}',
          'tools/list'), '$.result.tools[*] ? (@.name == $n)', jsonb_build_object('n', name)) $$;
-- warm the cache
select jsonb_array_length(regress.rpc(:'alice', 'tools/list') #> '{result,tools}') as tools_before;
create function mcp.count_projects() returns bigint language sql stable
  as $$ select count(*) from public.projects $$;
grant execute on function mcp.count_projects() to authenticated;
select pg_temp.tool_def('count_projects') - 'inputSchema' - 'outputSchema' - 'execution' as new_tool,
       pg_temp.tool_def('count_projects') -> 'inputSchema' -> 'type' as input_type;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"count_projects","arguments":{}}'), '$.result.content[*].text') as result;
comment on function mcp.count_projects() is 'How many projects you can see.';
select pg_temp.tool_def('count_projects') -> 'description' as description;
comment on function mcp.count_projects() is 'How many projects you can see. @mcp {"title": "Count projects"}';
select pg_temp.tool_def('count_projects') -> 'description' as description, pg_temp.tool_def('count_projects') -> 'title' as title;
-- new signature: a parameter appears in the input schema
drop function mcp.count_projects();
create function mcp.count_projects(status text) returns bigint language sql stable
  as $$ select count(*) from public.projects p where p.status = count_projects.status $$;
grant execute on function mcp.count_projects(text) to authenticated;
select pg_temp.tool_def('count_projects') -> 'inputSchema' -> 'properties' as properties,
       pg_temp.tool_def('count_projects') -> 'inputSchema' -> 'required' as required,
       pg_temp.tool_def('count_projects') -> 'description' as description_after_recreate;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"count_projects","arguments":{"status":"archived"}}'), '$.result.content[*].text') as archived;
-- a changed body is used immediately
create or replace function mcp.count_projects(status text) returns bigint language sql stable
  as $$ select 1000 + count(*) from public.projects p where p.status = count_projects.status $$;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"count_projects","arguments":{"status":"archived"}}'), '$.result.content[*].text') as archived_plus_1000;
-- rename
alter function mcp.count_projects(text) rename to project_count;
select pg_temp.tool_def('count_projects') is null as old_name_gone, pg_temp.tool_def('project_count') ->> 'name' as new_name;
select regress.rpc(:'alice', 'tools/call', '{"name":"count_projects","arguments":{"status":"active"}}') -> 'error' -> 'code' as old_name_code;
-- moved out of mcp: gone
create schema regress_elsewhere;
alter function mcp.project_count(text) set schema regress_elsewhere;
select pg_temp.tool_def('project_count') is null as moved_away;
-- a metadata change turns a prompt into a tool
comment on function mcp.status_report(text) is 'Now a tool. @mcp {"title": "Status report tool"}';
select pg_temp.tool_def('status_report') ->> 'title' as status_report_tool,
       jsonb_path_query_array(regress.rpc(:'alice', 'prompts/list'), '$.result.prompts[*].name') as prompts;
-- drop
drop function mcp.search_documents(text, int);
select pg_temp.tool_def('search_documents') is null as dropped,
       regress.rpc(:'alice', 'tools/call', '{"name":"search_documents","arguments":{"query":"x"}}') -> 'error' -> 'code' as dropped_code;
-- a table change shows through setof public.projects
alter table public.projects add column priority int not null default 3;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}'), '$.result.structuredContent.rows[*].priority') as priorities;
select jsonb_array_length(regress.rpc(:'alice', 'tools/list') #> '{result,tools}') as tools_after;
rollback;
