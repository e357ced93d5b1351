-- EXECUTE granted through a role: a caller sees and calls a tool when its role has the privileges
-- of a grantee (role membership read live, as PostgreSQL's own check does), and loses it the
-- moment the membership goes, though the function's ACL never changed (no DDL on it, so the
-- registry is not rebuilt). A tool granted to nobody the caller belongs to stays hidden.
begin;
select regress.fixture_tools('list_projects') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
-- (Supabase creates authenticated NOINHERIT: it has no privileges of roles it is a member of;
-- an application may change that, and this test does, inside its transaction)
alter role authenticated inherit;
create role chumbo_regress_group nologin;
revoke execute on function mcp.list_projects(text) from authenticated;
grant execute on function mcp.list_projects(text) to chumbo_regress_group;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as not_a_member,
       regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}') -> 'error' -> 'code' as call_refused;
grant chumbo_regress_group to authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as member,
       jsonb_path_query_array(regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}'), '$.result.structuredContent.rows[*].name') as rows;
revoke chumbo_regress_group from authenticated;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as membership_revoked,
       regress.rpc(:'alice', 'tools/call', '{"name":"list_projects","arguments":{}}') -> 'error' -> 'code' as call_refused_again;
-- a grant that does not reach the caller: to another role only
grant execute on function mcp.list_projects(text) to anon;
select jsonb_path_query_array(regress.rpc(:'alice', 'tools/list'), '$.result.tools[*].name') as granted_elsewhere;
rollback;
