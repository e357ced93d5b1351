-- Issue 9 (6): on a pooled connection nothing of one caller's capability survives into the next
-- caller's request: held cursors, temporary objects, PREPARE/DEALLOCATE and LISTEN are refused;
-- session advisory locks and sequence state (lastval/currval) are dropped; settings are restored.
-- Alice's calls then Bob's, on this one connection, as the edge's session would see them.
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function mcp.run_sql(action text) returns jsonb language plpgsql volatile as $$
declare
  result jsonb;
begin
  if action ~* '^\s*(select|fetch|execute)' then
    execute action into result;
  else
    execute action;
  end if;
  return jsonb_build_object('result', result);
end $$;
grant execute on function mcp.run_sql(text) to authenticated;
create sequence public.regress_305_seq;
grant usage on sequence public.regress_305_seq to authenticated;
create function pg_temp.call(claims jsonb, action text) returns text language sql as $$
  select case when (r #> '{result,isError}')::boolean
    then regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', '')
    else 'RAN: ' || (r #>> '{result,structuredContent,result}') end
  from chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', 'run_sql', 'arguments', jsonb_build_object('action', action))), claims) r $$;
-- the "edge" has a prepared statement of its own on this connection
prepare edge_statement as select 'edge statement still here' as answer;

-- Alice's tool tries to leave things behind
select label, pg_temp.call(:'alice', action) as alice from (values
  ('held cursor',     'declare acme cursor with hold for select to_jsonb(name) from public.projects'),
  ('temp table',      'create temp table alice_notes as select name from public.projects'),
  ('temp function',   'create function pg_temp.f() returns int language sql as ''select 1'''),
  ('temp type',       'create type pg_temp.project_status as enum (''leaked'')'),
  ('temp domain',     'create domain pg_temp.uuid as text'),
  ('prepare',         'prepare alice_stmt as select to_jsonb(name) from public.projects'),
  ('deallocate all',  'deallocate all'),
  ('deallocate edge', 'deallocate edge_statement'),
  ('listen',          'listen alice_channel'),
  ('discard',         'discard all'),
  ('advisory lock',   'select to_jsonb(pg_advisory_lock(305))'),
  ('nextval',         'select to_jsonb(nextval(''public.regress_305_seq''))'),
  ('session setting', 'select to_jsonb(set_config(''work_mem'', ''77MB'', false))')
) as t(label, action);

-- Bob's call on the same connection finds none of it
select label, pg_temp.call(:'bob', action) as bob from (values
  ('fetch alice cursor', 'fetch all from acme'),
  ('read alice temp',    'select jsonb_agg(name) from alice_notes'),
  ('run alice stmt',     'execute alice_stmt'),
  ('lastval',            'select to_jsonb(lastval())'),
  ('currval',            'select to_jsonb(currval(''public.regress_305_seq''))')
) as t(label, action);

-- and neither does the session itself (chumbo's own change lock, taken by the DDL of this
-- transaction, lasts until it ends: sql/registry.sql)
select (select count(*) from pg_cursors) as cursors,
       (select count(*) from pg_locks where locktype = 'advisory' and pid = pg_backend_pid()
          and (classid, objid, objsubid) <> (1667788130::oid, 1::oid, 2)) as advisory_locks,
       (select count(*) from pg_prepared_statements where name <> 'edge_statement') as other_statements,
       (select count(*) from pg_listening_channels()) as listening,
       (select count(*) from pg_class where relnamespace = pg_my_temp_schema()) as temp_objects,
       current_setting('work_mem') = (select reset_val || coalesce(unit, '') from pg_settings where name = 'work_mem')
         or current_setting('work_mem') = '4MB' as work_mem_restored;
execute edge_statement;
savepoint s;
select lastval();
rollback to savepoint s;
deallocate edge_statement;
rollback;
