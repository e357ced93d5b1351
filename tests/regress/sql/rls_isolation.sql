-- Alice (Acme) sees only Acme and Bob (Globex) only Globex, for every tool, resource, resource
-- template, prompt and completion of the example app; Carol (no membership) sees nothing, anon
-- sees no capability at all. Calls go through chumbo.handle(body, claims) as the trusted caller.
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project', 'create_document', 'project', 'my_organizations', 'summarize_project', 'status_report') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
\set carol '{"sub":"cccccccc-0000-4000-8000-000000000003","role":"authenticated"}'
-- identity: a capability runs as the claims' role, with the claims (and the legacy per-claim
-- settings PostgREST also sets) visible to auth.uid()/auth.role()/auth.jwt()
create function mcp.whoami() returns jsonb language sql stable
  as $$ select jsonb_build_object('current_user', current_user, 'uid', auth.uid(), 'role', auth.role(),
        'jwt_sub', auth.jwt() ->> 'sub', 'legacy_sub', nullif(current_setting('request.jwt.claim.sub', true), '')) $$;
grant execute on function mcp.whoami() to anon, authenticated;
select p as who, regress.tool(c, 'whoami') -> 'result' -> 'structuredContent' as whoami
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('anon', null)) v(p, c);
drop function mcp.whoami();
-- capability lists: what each principal may use
select p as who, jsonb_path_query_array(regress.rpc(c, 'tools/list'), '$.result.tools[*].name') as tools
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol'), ('anon', null)) v(p, c);
select p as who, jsonb_path_query_array(regress.rpc(c, 'resources/list'), '$.result.resources[*].uri') as resources,
       jsonb_path_query_array(regress.rpc(c, 'resources/templates/list'), '$.result.resourceTemplates[*].uriTemplate') as templates,
       jsonb_path_query_array(regress.rpc(c, 'prompts/list'), '$.result.prompts[*].name') as prompts
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol'), ('anon', null)) v(p, c);
-- tools
select p as who, jsonb_path_query_array(regress.tool(c, 'list_projects'), '$.result.structuredContent.rows[*].name') as projects
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
select p as who, jsonb_path_query_array(regress.tool(c, 'list_projects', '{"status":"archived"}'), '$.result.structuredContent.rows[*].name') as archived
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
select p as who, jsonb_path_query_array(regress.tool(c, 'search_documents', '{"query":"launch"}'), '$.result.structuredContent.rows[*].title') as launch_docs
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
select p as who, jsonb_path_query_array(regress.tool(c, 'search_documents', '{"query":"confidential","limit":50}'), '$.result.structuredContent.rows[*].title') as all_docs
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
-- the other organization's name as a search term finds nothing
select jsonb_path_query_array(regress.tool(:'alice', 'search_documents', '{"query":"Globex"}'), '$.result.structuredContent.rows[*].title') as alice_globex,
       jsonb_path_query_array(regress.tool(:'bob', 'search_documents', '{"query":"Acme"}'), '$.result.structuredContent.rows[*].title') as bob_acme;
-- anon: the tools are not there at all
select regress.tool(null, 'list_projects') -> 'error' -> 'code' as anon_list_projects;
-- static resource
select p as who, (regress.rpc(c, 'resources/read', '{"uri":"app://orgs/mine"}') #>> '{result,contents,0,text}')::jsonb as my_orgs
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
-- resource template: own project readable, the other organization's project is "not found"
select p as who, u as uri,
       (r #>> '{result,contents,0,text}')::jsonb -> 'name' as name,
       jsonb_path_query_array(r, '$.result.contents[*].mimeType') as mime,
       r -> 'error' -> 'code' as error
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c),
       (values ('app://projects/a1000000-0000-4000-8000-000000000001'),
               ('app://projects/b1000000-0000-4000-8000-000000000001')) w(u),
       lateral (select regress.rpc(c, 'resources/read', jsonb_build_object('uri', u))) x(r)
  order by 1, 2;
-- prompts
select p as who, pid,
       r #>> '{result,description}' as description,
       jsonb_path_query_array(r, '$.result.messages[*].content.type') as content_types,
       r -> 'error' -> 'code' as error, regexp_replace(r -> 'error' ->> 'message', 'trace id [0-9a-f]+', 'trace id <masked>') as message
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob')) v(p, c),
       (values ('a1000000-0000-4000-8000-000000000001'), ('b1000000-0000-4000-8000-000000000001')) w(pid),
       lateral (select regress.rpc(c, 'prompts/get', jsonb_build_object('name', 'summarize_project', 'arguments', jsonb_build_object('project_id', pid)))) x(r)
  order by 1, 2;
select p as who, regress.rpc(c, 'prompts/get', '{"name":"status_report","arguments":{}}') #>> '{result,messages,0,content,text}' as report
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
-- completions: project ids complete only to your own projects; the static list is the same for all
select p as who, regress.rpc(c, 'completion/complete', '{"ref":{"type":"ref/prompt","name":"summarize_project"},"argument":{"name":"project_id","value":""}}') #> '{result,completion,values}' as project_ids
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('carol', :'carol')) v(p, c);
select regress.rpc(:'bob', 'completion/complete', '{"ref":{"type":"ref/prompt","name":"summarize_project"},"argument":{"name":"project_id","value":"a1"}}') #> '{result,completion,values}' as bob_guessing_acme_ids;
select regress.rpc(:'alice', 'completion/complete', '{"ref":{"type":"ref/prompt","name":"status_report"},"argument":{"name":"status","value":""}}') #> '{result,completion,values}' as statuses,
       regress.rpc(:'alice', 'completion/complete', '{"ref":{"type":"ref/prompt","name":"status_report"},"argument":{"name":"status","value":"ar"}}') #> '{result,completion,values}' as statuses_ar;
-- catch-all: no answer to Alice mentions Globex, no answer to Bob mentions Acme
select who, method, params, strpos(r::text, other) = 0 as no_leak
  from (values ('alice', :'alice'::jsonb, 'Globex'), ('bob', :'bob'::jsonb, 'Acme')) v(who, c, other),
       (values ('tools/list', '{}'::jsonb),
               ('tools/call', '{"name":"list_projects","arguments":{}}'),
               ('tools/call', '{"name":"search_documents","arguments":{"query":"e","limit":50}}'),
               ('resources/list', '{}'),
               ('resources/read', '{"uri":"app://orgs/mine"}'),
               ('resources/read', '{"uri":"app://projects/a1000000-0000-4000-8000-000000000001"}'),
               ('resources/read', '{"uri":"app://projects/b1000000-0000-4000-8000-000000000001"}'),
               ('prompts/get', '{"name":"summarize_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000002"}}'),
               ('prompts/get', '{"name":"summarize_project","arguments":{"project_id":"b1000000-0000-4000-8000-000000000002"}}'),
               ('prompts/get', '{"name":"status_report","arguments":{"status":"archived"}}'),
               ('completion/complete', '{"ref":{"type":"ref/prompt","name":"summarize_project"},"argument":{"name":"project_id","value":""}}')) m(method, params),
       lateral (select regress.rpc(c, method, params)) x(r)
  order by 1, 2, params::text;
rollback;
