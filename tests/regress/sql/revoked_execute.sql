-- Visibility follows EXECUTE: revoking it hides a tool from tools/list and makes tools/call
-- answer -32602 (unknown tool), on the very next request; granting it back restores it.
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'project', 'summarize_project', 'status_report') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as before;
revoke execute on function mcp.list_projects(text) from authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as after_revoke;
select r -> 'id' as id, r -> 'error' -> 'code' as code, r ? 'result' as has_result
  from regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}') r;
-- the same for a resource template and a prompt
revoke execute on function mcp.project(uuid) from authenticated;
revoke execute on function mcp.summarize_project(text) from authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'resources/templates/list'), '$.result.resourceTemplates[*].uriTemplate') as templates,
       jsonb_path_query_array(regress.rpc(:'alice', 'prompts/list'), '$.result.prompts[*].name') as prompts;
select regress.rpc(:'alice', 'resources/read', '{"uri":"app://projects/a1000000-0000-4000-8000-000000000001"}') -> 'error' -> 'code' as read_code,
       regress.rpc(:'alice', 'prompts/get', '{"name":"summarize_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001"}}') -> 'error' -> 'code' as prompt_code;
-- doctor explains
select "function", kind, state, exposed_to, reasons from chumbo.doctor()
  where "function" in ('mcp.list_projects(text)', 'mcp.project(uuid)', 'mcp.summarize_project(text)') order by 1;
-- granting to PUBLIC is enough too (authenticated is a member of PUBLIC)
grant execute on function mcp.list_projects(text) to public;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}'), '$.result.structuredContent.rows[*].name') as via_public;
-- and anon now sees it too, but RLS still gives anon nothing
select jsonb_path_query_array(regress.rpc(null, 'tools/list'), '$.result.tools[*].name') as anon_tools,
       regress.rpc(null, 'tools/call', '{"name":"list_projects","arguments":{}}') -> 'result' -> 'isError' as anon_is_error;
revoke execute on function mcp.list_projects(text) from public;
grant execute on function mcp.list_projects(text) to authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as after_grant;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}'), '$.result.structuredContent.rows[*].name') as rows;
rollback;
