-- Writes go through RLS too: Bob cannot rename or add documents to Acme's projects; the tool
-- answers with an isError result (a normal tools/call result the model can read), not a
-- JSON-RPC error, and nothing changes. Alice's own writes succeed.
begin;
select regress.fixture_tools('rename_project', 'create_document', 'search_documents') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function pg_temp.tool(claims jsonb, name text, args jsonb default '{}')
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 7, 'method', 'tools/call',
          'params', jsonb_build_object('name', name, 'arguments', args)), claims) $$;
-- Bob renames Acme Rocket: refused
select r -> 'id' as id, r ? 'error' as is_jsonrpc_error, r -> 'result' -> 'isError' as is_error,
       regexp_replace(jsonb_path_query_array(r, '$.result.content[*].text')::text, 'trace id [0-9a-f]+', 'trace id <masked>', 'g') as text
  from pg_temp.tool(:'bob', 'rename_project', '{"project_id":"a1000000-0000-4000-8000-000000000001","name":"Globex owns this"}') r;
-- Bob adds a document to Acme Rocket: refused
select r ? 'error' as is_jsonrpc_error, r -> 'result' -> 'isError' as is_error,
       regexp_replace(jsonb_path_query_array(r, '$.result.content[*].text')::text, 'trace id [0-9a-f]+', 'trace id <masked>', 'g') as text
  from pg_temp.tool(:'bob', 'create_document', '{"project_id":"a1000000-0000-4000-8000-000000000001","title":"Globex was here","body":"x"}') r;
-- nothing changed (read as the owner)
select name from public.projects where id = 'a1000000-0000-4000-8000-000000000001';
select count(*) as globex_docs_in_acme from public.documents where title = 'Globex was here';
-- Alice renames her own project and adds a document: fine
select r -> 'result' -> 'isError' as is_error, r -> 'result' -> 'structuredContent' as structured
  from pg_temp.tool(:'alice', 'rename_project', '{"project_id":"a1000000-0000-4000-8000-000000000001","name":"Acme Rocket Mk II"}') r;
select r -> 'result' -> 'isError' as is_error, r -> 'result' -> 'structuredContent' -> 'title' as title,
       r -> 'result' -> 'structuredContent' -> 'project_id' as project_id
  from pg_temp.tool(:'alice', 'create_document', '{"project_id":"a1000000-0000-4000-8000-000000000001","title":"Acme Mk II notes","body":"Bigger rocket."}') r;
select name from public.projects where id = 'a1000000-0000-4000-8000-000000000001';
select title, created_by from public.documents where title = 'Acme Mk II notes';
-- Bob does not see Alice's new document either
select jsonb_path_query_array(pg_temp.tool(:'bob', 'search_documents', '{"query":"Mk II"}'), '$.result.structuredContent.rows[*].title') as bob_sees;
-- Bob on his own project: fine
select r -> 'result' -> 'isError' as is_error, r -> 'result' -> 'structuredContent' -> 'name' as name
  from pg_temp.tool(:'bob', 'rename_project', '{"project_id":"b1000000-0000-4000-8000-000000000001","name":"Globex Secret Plan B"}') r;
-- The policies themselves refuse, even without the tool's own check: as Bob, in plain SQL. The
-- table privilege for each statement is there (granted here where the app does not grant it), so
-- only a policy can refuse; what is left afterwards is read as the owner.
grant update (org_id) on public.projects to authenticated;
grant delete on public.documents to authenticated;
select (select bool_and(has_column_privilege('authenticated', 'public.documents', c, 'INSERT')) from unnest(array['project_id', 'title', 'body']) c) as insert_documents_granted,
       has_column_privilege('authenticated', 'public.projects', 'name', 'UPDATE') as update_name_granted,
       has_column_privilege('authenticated', 'public.projects', 'org_id', 'UPDATE') as update_org_id_granted,
       has_table_privilege('authenticated', 'public.documents', 'DELETE') as delete_documents_granted;
savepoint s;
set local role authenticated;
select set_config('request.jwt.claims', :'bob', true) is not null as claims_set;
\set ON_ERROR_STOP 0
-- "members create documents" WITH CHECK: not a project of Bob's organization
insert into public.documents (project_id, title, body) values ('a1000000-0000-4000-8000-000000000001', 'direct', 'x');
rollback to savepoint s;
\set ON_ERROR_STOP 1
set local role authenticated;
select set_config('request.jwt.claims', :'bob', true) is not null as claims_set;
-- "members update projects" USING: Acme's project is not there to update (0 rows) ...
with u as (update public.projects set name = 'direct' where id = 'a1000000-0000-4000-8000-000000000001' returning 1)
select count(*) as acme_rows_updated from u;
-- ... while the same statement on Bob's own project updates it (so the 0 above is the policy)
with u as (update public.projects set name = 'direct' where id = 'b1000000-0000-4000-8000-000000000002' returning 1)
select count(*) as own_rows_updated from u;
reset role;
-- read as the owner: only Bob's own project is called "direct" now
select id, name from public.projects where name = 'direct' or id = 'a1000000-0000-4000-8000-000000000001' order by id;
set local role authenticated;
\set ON_ERROR_STOP 0
-- "members update projects" WITH CHECK: Bob may not move his own project into Acme
update public.projects set org_id = 'a0000000-0000-4000-8000-000000000000' where id = 'b1000000-0000-4000-8000-000000000001';
\set ON_ERROR_STOP 1
rollback to savepoint s;
set local role authenticated;
select set_config('request.jwt.claims', :'bob', true) is not null as claims_set;
-- no DELETE policy at all: nothing is deleted, not even Bob's own documents
select count(*) as bob_sees_documents from public.documents;
with d as (delete from public.documents returning 1)
select count(*) as rows_deleted from d;
reset role;
-- read as the owner: every document is still there, and no "direct" one was added
select count(*) as documents, count(*) filter (where title = 'direct') as direct_documents from public.documents;
rollback to savepoint s;
revoke update (org_id) on public.projects from authenticated;
revoke delete on public.documents from authenticated;
-- a failed tool call leaves the caller's transaction usable and its role unchanged
select pg_temp.tool(:'bob', 'rename_project', '{"project_id":"a1000000-0000-4000-8000-000000000002","name":"x"}') -> 'result' -> 'isError' as is_error;
select current_user, current_setting('request.jwt.claims', true) is null or current_setting('request.jwt.claims', true) = '' as no_claims_left;
rollback;
