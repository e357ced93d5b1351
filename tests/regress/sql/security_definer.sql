-- A SECURITY DEFINER function in mcp would run with its owner's rights (here a superuser's,
-- bypassing RLS): it is not exposed unless its metadata says "privileged": true, and
-- chumbo.doctor() says why.
begin;
select regress.fixture_tools('list_projects', 'my_organizations', 'summarize_project', 'status_report') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.all_projects_definer() returns setof text
  language sql stable security definer set search_path = ''
  as $$ select name from public.projects order by name $$;
comment on function mcp.all_projects_definer() is 'Every project of every organization (runs as the owner).';
grant execute on function mcp.all_projects_definer() to authenticated;
-- as a resource and as a prompt too
create function mcp.definer_resource() returns text
  language sql stable security definer set search_path = ''
  as $$ select string_agg(name, ', ' order by name) from public.projects $$;
comment on function mcp.definer_resource() is 'x @mcp {"resource": "app://all-projects"}';
grant execute on function mcp.definer_resource() to authenticated;
create function mcp.definer_prompt() returns text
  language sql stable security definer set search_path = ''
  as $$ select string_agg(name, ', ' order by name) from public.projects $$;
comment on function mcp.definer_prompt() is 'x @mcp {"prompt": true}';
grant execute on function mcp.definer_prompt() to authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as tools,
       jsonb_path_query_array(regress.rpc(:'alice', 'resources/list'), '$.result.resources[*].uri') as resources,
       jsonb_path_query_array(regress.rpc(:'alice', 'prompts/list'), '$.result.prompts[*].name') as prompts;
select r -> 'error' -> 'code' as code, strpos(r::text, 'Globex') = 0 as no_leak
  from regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}') r;
select r -> 'error' -> 'code' as code, strpos(r::text, 'Globex') = 0 as no_leak
  from regress.rpc(:'alice', 'resources/read', '{"uri":"app://all-projects"}') r;
select r -> 'error' -> 'code' as code, strpos(r::text, 'Globex') = 0 as no_leak
  from regress.rpc(:'alice', 'prompts/get', '{"name":"definer_prompt"}') r;
-- doctor: not exposed, and the reason names SECURITY DEFINER
select "function", kind, state, exposed_to, reasons
  from chumbo.doctor() where "function" like '%definer%' order by 1;
-- the app's own capabilities are all exposed
select "function", kind, state, exposed_to, reasons from chumbo.doctor()
  where "function" not like '%definer%' order by 1;
-- explicit opt-in: a privileged capability is exposed (the owner takes responsibility), but not
-- while its owner is a superuser: every call would run as superuser
comment on function mcp.all_projects_definer() is 'Every project name. @mcp {"privileged": true}';
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}'), '$.result.structuredContent.rows') as privileged_rows_superuser_owner,
       regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}') #> '{error,code}' as code;
select "function", state, exposed_to, reasons from chumbo.doctor() where "function" like 'mcp.all_projects_definer%';
-- a non-superuser owner: exposed, and row-level security binds the owner
create role regress_definer_owner nologin;
grant usage on schema mcp, public to regress_definer_owner;
grant select on public.projects to regress_definer_owner;
alter function mcp.all_projects_definer() owner to regress_definer_owner;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}'), '$.result.structuredContent.rows') as privileged_rows_plain_owner;
select "function", state, exposed_to, reasons from chumbo.doctor() where "function" like 'mcp.all_projects_definer%';
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as claims_set;
select jsonb_path_query_array(chumbo.surface(), '$.tools[*].name') ? 'all_projects_definer' as surfaced;
reset role;
-- the owner made a superuser after the registry was built (no event trigger fires): refused at the call
alter role regress_definer_owner superuser;
select regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}') #> '{error,code}' as made_superuser_code,
       jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') ? 'all_projects_definer' as still_listed;
-- nor in chumbo.surface(), the caller's catalogue: it holds what tools/call would run
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as claims_set;
select jsonb_path_query_array(chumbo.surface(), '$.tools[*].name') ? 'all_projects_definer' as still_surfaced;
reset role;
-- the loudly named opt-in runs it as superuser
select chumbo.configure('{"dangerously_allow_superuser_tools": true}') ->> 'dangerously_allow_superuser_tools' as opted_in;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"all_projects_definer","arguments":{}}'), '$.result.structuredContent.rows') as privileged_rows_opted_in;
select "function", state, exposed_to, reasons from chumbo.doctor() where "function" like 'mcp.all_projects_definer%';
alter role regress_definer_owner nosuperuser;
alter function mcp.all_projects_definer() owner to current_user;
select chumbo.configure('{"dangerously_allow_superuser_tools": false}') ->> 'dangerously_allow_superuser_tools' as opted_out;
-- SECURITY DEFINER via ALTER FUNCTION is noticed too
alter function mcp.list_projects(text) security definer;
select regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}') -> 'error' -> 'code' as list_projects_definer_code;
select "function", state, exposed_to, reasons from chumbo.doctor() where "function" like 'mcp.list_projects%';
rollback;
