-- Tool policies (issue 13): a visibility predicate hides a tool from lists and refuses calls as
-- unknown; the scope resolver gives scopes from the application's tables; an execution
-- predicate sees the arguments and denies with the application's message; approvals in both
-- eras (MRTR input request on 2026-07-28, a one-time confirmation token on legacy revisions),
-- bound to principal, tool and arguments, single use, expiring, audited; doctor() explains for a
-- given caller why a tool is hidden. Every policy function runs as the caller.
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
\set rocket '{"project_id":"a1000000-0000-4000-8000-000000000001"}'
\set anvil '{"project_id":"a1000000-0000-4000-8000-000000000002"}'
\set catapult '{"project_id":"a1000000-0000-4000-8000-000000000003"}'
\set plan '{"project_id":"b1000000-0000-4000-8000-000000000001"}'

-- The application's policy functions (outside schema mcp), run as the caller.
create function private.is_acme_member() returns boolean language sql stable as $$
  select exists (select from public.memberships
                  where user_id = auth.uid() and org_id = 'a0000000-0000-4000-8000-000000000000') $$;
create function private.may_archive(args jsonb) returns boolean language plpgsql stable as $$
begin
  if current_user <> 'authenticated' then
    raise exception 'policy ran as %', current_user;
  end if;
  if exists (select from public.projects where id = (args->>'project_id')::uuid and status = 'archived') then
    raise exception 'Project % is already archived', args->>'project_id';
  end if;
  return exists (select from public.projects where id = (args->>'project_id')::uuid);
end $$;
create function private.big_change(args jsonb) returns boolean language sql immutable as $$
  select args->>'status' = 'archived' $$;
create function private.app_scopes() returns text[] language sql stable as $$
  select case when auth.uid() = 'aaaaaaaa-0000-4000-8000-000000000001' then array['projects:admin'] else array[]::text[] end $$;
create function private.broken() returns boolean language plpgsql as $$
begin raise exception 'visibility check exploded'; end $$;
grant execute on all functions in schema private to authenticated;

create function mcp.acme_report() returns text language sql stable as $$ select 'acme only' $$;
comment on function mcp.acme_report() is 'Acme''s report. @mcp {"visible": "private.is_acme_member"}';
create function mcp.archive_project(project_id uuid) returns text language sql as $$
  update public.projects set status = 'archived' where id = project_id returning 'archived ' || name $$;
comment on function mcp.archive_project(uuid) is 'Archive a project. @mcp {"can_execute": "private.may_archive", "approval": true}';
create function mcp.set_status(project_id uuid, status text) returns text language sql as $$
  update public.projects p set status = set_status.status where id = project_id returning p.name || ' is ' || p.status $$;
comment on function mcp.set_status(uuid, text) is 'Set a project''s status. @mcp {"approval": "private.big_change"}';
create function mcp.admin_tool() returns text language sql stable as $$ select 'admin' $$;
comment on function mcp.admin_tool() is '@mcp {"scopes": ["projects:admin"]}';
create function mcp.broken_visible() returns text language sql stable as $$ select 'never' $$;
comment on function mcp.broken_visible() is '@mcp {"visible": "private.broken"}';
create function mcp.bad_names() returns text language sql stable as $$ select 'never' $$;
comment on function mcp.bad_names() is '@mcp {"visible": "is_acme_member", "can_execute": "private.nope", "approval": "private.is_acme_member"}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;
select chumbo.configure('{"scope_resolver": "private.app_scopes"}') is not null as configured;

create function pg_temp.names(r jsonb) returns text language sql as $$
  select string_agg(t->>'name', ' ' order by t->>'name') from jsonb_array_elements(r #> '{result,tools}') t $$;
create function pg_temp.summary(r jsonb) returns text language sql as $$
  select coalesce(r #>> '{result,resultType}' || ' ' || (select string_agg(k, ',') from jsonb_object_keys(r #> '{result,inputRequests}') k),
                  case when r #> '{result}' ? 'isError' then 'isError: ' else '' end
                    || regexp_replace(split_part(r #>> '{result,content,0,text}', E'\n', 1), 'trace id [0-9a-f]+', 'trace id <masked>'),
                  'error ' || (r #>> '{error,code}') || ': ' || (r #>> '{error,message}')) $$;
-- 2026-07-28: a tools/call with the client's capabilities and extra params
create function pg_temp.modern(claims jsonb, tool text, args jsonb, extra jsonb default '{}', caps jsonb default '{"elicitation":{}}') returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 9, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args,
      '_meta', jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                                  'io.modelcontextprotocol/clientCapabilities', caps)) || extra), claims) $$;
create function pg_temp.status(id text) returns text language sql as $$
  select p.status from public.projects p where p.id = $1::uuid $$;

-- 1. visibility and the scope resolver: hidden from lists, unknown to calls
select 'alice' as who, pg_temp.names(regress.rpc(:'alice', 'tools/list')) as tools
union all select 'bob', pg_temp.names(regress.rpc(:'bob', 'tools/list'));
select pg_temp.summary(regress.tool(:'bob', 'acme_report')) as bob_calls_hidden,
       pg_temp.summary(regress.tool(:'bob', 'admin_tool')) as bob_calls_unscoped,
       pg_temp.summary(regress.tool(:'alice', 'acme_report')) as alice_calls,
       pg_temp.summary(regress.tool(:'alice', 'admin_tool')) as alice_scoped,
       pg_temp.summary(regress.tool(:'alice', 'broken_visible')) as failing_predicate_hides;

-- 2. the execution predicate sees the arguments and runs as the caller; false or an error denies
select pg_temp.summary(regress.tool(:'bob', 'archive_project', :'rocket')) as bob_on_acme,
       pg_temp.summary(regress.tool(:'alice', 'archive_project', :'catapult')) as app_message,
       pg_temp.summary(regress.tool(:'alice', 'archive_project', '{"project_id":"not-a-uuid"}')) as bad_argument;

-- 3. approval, legacy revision: a result saying what would run, with a one-time token
create temp table calls (n text primary key, r jsonb);
insert into calls select 'first', regress.tool(:'alice', 'archive_project', :'rocket');
select pg_temp.summary(r) as first_call, r #>> '{result,content,0,text}' like '%"project_id": "a1000000-0000-4000-8000-000000000001"%' as says_what_runs,
       r #>> '{result,_meta,io.chumbo/confirmation,argument}' as token_argument, pg_temp.status('a1000000-0000-4000-8000-000000000001') as still
  from calls where n = 'first';
create function pg_temp.token(n text) returns text language sql as $$
  select r #>> '{result,_meta,io.chumbo/confirmation,token}' from calls where calls.n = $1 $$;
select label, pg_temp.summary(r) from (values
  ('tampered',        regress.tool(:'alice', 'archive_project', (:'rocket')::jsonb || jsonb_build_object('_chumbo_confirm', 'x' || substr(pg_temp.token('first'), 2)))),
  ('changed args',    regress.tool(:'alice', 'archive_project', (:'anvil')::jsonb || jsonb_build_object('_chumbo_confirm', pg_temp.token('first')))),
  ('approved',        regress.tool(:'alice', 'archive_project', (:'rocket')::jsonb || jsonb_build_object('_chumbo_confirm', pg_temp.token('first')))),
  ('replayed after use', regress.tool(:'alice', 'archive_project', (:'rocket')::jsonb || jsonb_build_object('_chumbo_confirm', pg_temp.token('first'))))
) v(label, r);
select pg_temp.status('a1000000-0000-4000-8000-000000000001') as rocket_now;
-- replayed by Bob: set_status has no execution predicate, so only the binding can refuse him
insert into calls select 'alice-status', regress.tool(:'alice', 'set_status', '{"project_id":"b1000000-0000-4000-8000-000000000001","status":"archived"}');
select pg_temp.summary(regress.tool(:'bob', 'set_status', jsonb_build_object('project_id', 'b1000000-0000-4000-8000-000000000001',
         'status', 'archived', '_chumbo_confirm', pg_temp.token('alice-status')))) as replayed_by_bob,
       pg_temp.status('b1000000-0000-4000-8000-000000000001') as plan_still;
-- the approval predicate decides per call: a harmless change runs at once
select pg_temp.summary(regress.tool(:'bob', 'set_status', '{"project_id":"b1000000-0000-4000-8000-000000000001","status":"active"}')) as harmless;
-- expired: ten minutes later (chumbo.now() pinned)
insert into calls select 'to-expire', regress.tool(:'bob', 'set_status', '{"project_id":"b1000000-0000-4000-8000-000000000001","status":"archived"}');
savepoint later;
select set_config('chumbo.pinned_now', (now() + interval '10 minutes')::text, true) is not null as clock_moved;
select pg_temp.summary(regress.tool(:'bob', 'set_status', jsonb_build_object('project_id', 'b1000000-0000-4000-8000-000000000001',
         'status', 'archived', '_chumbo_confirm', pg_temp.token('to-expire')))) as expired;
rollback to savepoint later;

-- 4. approval, 2026-07-28: an input request describing the call; the answer is bound to it
insert into calls select 'm1', pg_temp.modern(:'alice', 'archive_project', :'anvil');
select pg_temp.summary(r) as asked, r #>> '{result,inputRequests,io.chumbo/approval,method}' as method,
       r #>> '{result,inputRequests,io.chumbo/approval,params,message}' like 'archive_project will run with these arguments:%a1000000-0000-4000-8000-000000000002%' as describes_call
  from calls where n = 'm1';
create function pg_temp.state(n text) returns jsonb language sql as $$ select r #> '{result,requestState}' from calls where calls.n = $1 $$;
\set accept '{"io.chumbo/approval":{"action":"accept","content":{"approve":true}}}'
\set decline '{"io.chumbo/approval":{"action":"decline"}}'
-- attacks on a state for set_status (no execution predicate: only the binding can refuse)
\set archive_anvil '{"project_id":"a1000000-0000-4000-8000-000000000002","status":"archived"}'
insert into calls select 's1', pg_temp.modern(:'alice', 'set_status', :'archive_anvil');
select label, pg_temp.summary(r) from (values
  ('answer without the state', pg_temp.modern(:'alice', 'set_status', :'archive_anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb))),
  ('replayed by bob',          pg_temp.modern(:'bob', 'set_status', :'archive_anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', pg_temp.state('s1')))),
  ('changed args',             pg_temp.modern(:'alice', 'set_status', '{"project_id":"a1000000-0000-4000-8000-000000000001","status":"archived"}', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', pg_temp.state('s1')))),
  ('other tool',               pg_temp.modern(:'alice', 'archive_project', :'anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', pg_temp.state('s1')))),
  ('tampered',                 pg_temp.modern(:'alice', 'set_status', :'archive_anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', 'x' || substr(pg_temp.state('s1') #>> '{}', 2))))
) v(label, r);
select pg_temp.status('a1000000-0000-4000-8000-000000000002') as anvil_still;
-- refused, then approved, then the used state replayed
select pg_temp.summary(pg_temp.modern(:'alice', 'archive_project', :'anvil', jsonb_build_object('inputResponses', (:'decline')::jsonb, 'requestState', pg_temp.state('m1')))) as refused;
select pg_temp.status('a1000000-0000-4000-8000-000000000002') as anvil_after_refusal;
insert into calls select 'm2', pg_temp.modern(:'alice', 'archive_project', :'anvil');
select pg_temp.summary(pg_temp.modern(:'alice', 'archive_project', :'anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', pg_temp.state('m2')))) as approved;
select pg_temp.status('a1000000-0000-4000-8000-000000000002') as anvil_now;
update public.projects set status = 'active' where id = 'a1000000-0000-4000-8000-000000000002';
select pg_temp.summary(pg_temp.modern(:'alice', 'archive_project', :'anvil', jsonb_build_object('inputResponses', (:'accept')::jsonb, 'requestState', pg_temp.state('m2')))) as replayed_after_use,
       pg_temp.status('a1000000-0000-4000-8000-000000000002') as anvil_stays;
-- a 2026-07-28 client without elicitation gets the token instead
select pg_temp.summary(pg_temp.modern(:'bob', 'set_status', '{"project_id":"b1000000-0000-4000-8000-000000000002","status":"archived"}', '{}', '{}')) as no_elicitation;

-- 5. every approval decision is audited, with the argument digest and never the arguments
select capability, outcome, detail->>'via' as via, detail->>'reason' as reason, length(detail->>'arguments_sha256') as digest_length
  from chumbo.audit_events where method = 'approval' order by id;

-- 6. doctor() explains for the caller in request.jwt.claims; unusable policy names are problems
select function, state, reasons from chumbo.doctor() where function ~ '^mcp\.(bad_names|acme_report|archive_project)' order by 1;
select set_config('request.jwt.claims', :'bob', true) is not null as explaining_bob;
select function, state, regexp_replace(reasons::text, 'trace id [0-9a-f]+', 'trace id <masked>', 'g') as reasons from chumbo.doctor()
 where function = 'request.jwt.claims' or function ~ '^mcp\.(acme_report|admin_tool|broken_visible|set_status)' order by 1;
-- 7. the registry resolves policy functions the same whoever builds it: here anon (no USAGE on
-- the predicate's schema) is the first to see the change, then Alice calls
reset role;
select set_config('request.jwt.claims', '', true) is not null as claims_cleared;
create schema policy_fns;
grant usage on schema policy_fns to authenticated;
create function policy_fns.yes() returns boolean language sql as $$ select true $$;
grant execute on function policy_fns.yes() to authenticated;
create function mcp.gated() returns text language sql stable as $$ select 'gated ok' $$;
comment on function mcp.gated() is '@mcp {"visible": "policy_fns.yes"}';
grant execute on function mcp.gated() to authenticated;
set local role anon;
select jsonb_array_length(chumbo.surface() -> 'tools') as anon_sees;
reset role;
select pg_temp.summary(regress.tool(:'alice', 'gated')) as alice_after_anon_built_the_registry;
rollback;
