-- Durable MCP tasks (io.modelcontextprotocol/tasks, SEP-2663), run by the fallback runner
-- `call chumbo.run_tasks()` (task_workers = 0: no background worker starts, so every step is
-- deterministic here; tests/tasks/run.sh covers the workers, crashes and cancels of running tasks).
-- The task row commits before the CreateTaskResult; the tool runs as the creator under RLS and its
-- writes commit with the task's result; input rounds, JSON-RPC errors, the extension gate, the
-- per-principal cap, TTL expiry, and another user's ids answering exactly like unknown ones.
-- Commits (run_tasks needs its own transactions): everything it makes is dropped at the end.
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
select chumbo.configure('{"task_workers": 0}') is not null as configured;
create table public.task_notes (
  id serial primary key,
  owner uuid not null default auth.uid(),
  note text not null
);
alter table public.task_notes enable row level security;
create policy own_notes on public.task_notes for all to authenticated
  using (owner = auth.uid()) with check (owner = auth.uid());
grant select, insert on public.task_notes to authenticated;
grant usage on sequence public.task_notes_id_seq to authenticated;
create function mcp.task_note(note text) returns text language sql volatile as $$
  insert into public.task_notes (note) values (note) returning format('noted %s (%s notes visible)', note,
    (select count(*) + 1 from public.task_notes)) $$;
comment on function mcp.task_note(text) is 'Writes a note @mcp {"task": "optional"}';
create function mcp.task_only() returns text language sql volatile as $$ select 'ran as a task' $$;
comment on function mcp.task_only() is 'Only as a task @mcp {"task": "required"}';
create function mcp.task_questions() returns text language plpgsql volatile as $$
declare a jsonb := chumbo.inputs('{"name": {"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}},
                                   "color": {"method":"elicitation/create","params":{"message":"Color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}}}}}}');
begin
  insert into public.task_notes (note) values ('questions answered');
  return format('%s likes %s', a #>> '{name,content,name}', a #>> '{color,content,color}');
end $$;
comment on function mcp.task_questions() is 'Asks two questions @mcp {"task": "optional"}';
create function mcp.task_protocol_error() returns text language plpgsql volatile as $$
begin
  insert into public.task_notes (note) values ('never kept');
  perform chumbo.jsonrpc_error(-32050, 'the job could not start');
  return 'unreachable';
end $$;
comment on function mcp.task_protocol_error() is 'Ends with a JSON-RPC error @mcp {"task": "optional"}';
create function mcp.reserved_code() returns text language plpgsql volatile as $$
begin perform chumbo.jsonrpc_error(-32601, 'pretend the method is missing'); return 'unreachable'; end $$;
comment on function mcp.reserved_code() is 'Tries a code with a protocol meaning';
grant execute on all functions in schema mcp to authenticated;

-- A stateless request (MCP 2026-07-28) from `claims`, declaring the tasks extension unless `caps` says otherwise.
create function public.task_rpc(claims jsonb, method text, params jsonb,
    caps jsonb default '{"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}') returns jsonb
language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
    'params', params || jsonb_build_object('_meta', jsonb_build_object(
      'io.modelcontextprotocol/protocolVersion', '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities', caps))), claims) $$;
create function public.task_call(claims jsonb, tool text, args jsonb default '{}',
    caps jsonb default '{"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}') returns jsonb
language sql as $$ select public.task_rpc(claims, 'tools/call', jsonb_build_object('name', tool, 'arguments', args), caps) $$;
-- What an answer says, without its ids and clocks.
create function public.task_shape(r jsonb) returns text language sql as $$
  select case
    when r ? 'error' then format('error %s: %s', r #>> '{error,code}', r #>> '{error,message}')
    else regexp_replace(concat_ws(' ', r #>> '{result,resultType}', r #>> '{result,status}',
      (select string_agg(k, ',' order by k) from jsonb_object_keys(r -> 'result') k
        where k not in ('_meta')),
      r #>> '{result,result,content,0,text}', r #>> '{result,content,0,text}',
      r #>> '{result,error,message}',
      (select string_agg(k, ',' order by k) from jsonb_object_keys(r #> '{result,inputRequests}') k)),
      'trace id [0-9a-f]{32}', 'trace id …')
  end $$;

-- the server declares the extension (2026-07-28 only)
select public.task_rpc(:'alice', 'server/discover', '{}') #> '{result,capabilities,extensions}' ? 'io.modelcontextprotocol/tasks' as declared;

-- 1. a task: committed before the answer; 128 random bits; working until a runner takes it
select public.task_call(:'alice', 'task_note', '{"note": "first"}') as r \gset t1_
select public.task_shape(:'t1_r'::jsonb) as created,
       length(:'t1_r'::jsonb #>> '{result,taskId}') = 32 as id_is_128_bits,
       (:'t1_r'::jsonb #>> '{result,ttlMs}')::bigint = 3600000 as default_ttl;
select (:'t1_r'::jsonb #>> '{result,taskId}') as t1 \gset
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'))) as before_run;
select count(*) as notes_before_run from public.task_notes;
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'))) as after_run;
-- the tool ran as alice (RLS: her row), and its write is kept with the task's result
select note, owner = 'aaaaaaaa-0000-4000-8000-000000000001' as alices from public.task_notes;
select status, attempts, runs_ended, runner_pid is null as runner_cleared from chumbo.tasks where id = :'t1';
-- one audit row for the request that created it and one for the task's run, on one trace id
select e.era, e.outcome from chumbo.audit_events e, chumbo.tasks t
 where t.id = :'t1' and e.trace_id = t.trace_id order by e.era;

-- 2. isolation: bob gets exactly the unknown-id answer for alice's task, for every method
select m as method,
       public.task_shape(public.task_rpc(:'bob', m, jsonb_build_object('taskId', :'t1', 'inputResponses', '{}'::jsonb)))
         = public.task_shape(public.task_rpc(:'bob', m, jsonb_build_object('taskId', '00000000000000000000000000000000', 'inputResponses', '{}'::jsonb))) as same_as_unknown,
       public.task_shape(public.task_rpc(:'bob', m, jsonb_build_object('taskId', :'t1', 'inputResponses', '{}'::jsonb))) as bob_sees
  from unnest(array['tasks/get', 'tasks/update', 'tasks/cancel']) m;
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'))) as still_completed_for_alice;
-- the task rows are chumbo's: anon and authenticated cannot read or change them
set role authenticated;
select count(*) from chumbo.tasks;
reset role;
set role anon;
update chumbo.tasks set status = 'cancelled';
reset role;
-- nor run a task of someone else's
set role authenticated;
call chumbo.run_tasks();
select chumbo._task_run(:'t1');
reset role;

-- 3. the extension gate: tasks/* without it are -32021 (before anything about the id); a tool
-- that is only a task is -32021; an optional one runs in the request; tasks/result and tasks/list
-- do not exist; the legacy era has no tasks/*
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'), '{}')) as get_without_extension,
       public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'), '{}') #> '{error,data}' as data;
select public.task_shape(public.task_call(:'alice', 'task_only', '{}', '{}')) as required_without_extension;
select public.task_shape(public.task_call(:'alice', 'task_note', '{"note": "in the request"}', '{}')) as optional_without_extension;
select public.task_shape(public.task_rpc(:'alice', m, jsonb_build_object('taskId', :'t1'))) as removed
  from unnest(array['tasks/result', 'tasks/list']) m;
select public.task_shape(chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tasks/get',
  'params', jsonb_build_object('taskId', :'t1')), :'alice')) as legacy_era;
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', '{"taskId": 7}')) as bad_id;

-- 4. input rounds inside a task: input_required with both requests; a partial answer keeps the
-- other pending; answers to keys it did not ask are ignored; once all are given it runs again
select public.task_call(:'alice', 'task_questions') #>> '{result,taskId}' as t2 \gset
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t2'))) as asked;
select public.task_shape(public.task_rpc(:'alice', 'tasks/update', jsonb_build_object('taskId', :'t2',
  'inputResponses', '{"name": {"action": "accept", "content": {"name": "Ann"}}, "shoe": {"action": "accept"}}'::jsonb))) as partial_ack;
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t2'))) as still_asked;
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/update', jsonb_build_object('taskId', :'t2',
  'inputResponses', '{"color": {"action": "accept", "content": {"color": "teal"}}}'::jsonb))) as last_ack;
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t2'))) as answered;
select count(*) as written_once from public.task_notes where note = 'questions answered';
select public.task_shape(public.task_rpc(:'alice', 'tasks/update', jsonb_build_object('taskId', :'t2', 'inputResponses', '[]'::jsonb))) as bad_responses;

-- 5. a JSON-RPC error ends the task failed (its writes undone); a code with a protocol meaning is refused
select public.task_call(:'alice', 'task_protocol_error') #>> '{result,taskId}' as t3 \gset
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t3'))) as failed,
       public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t3')) #> '{result,error,code}' as code;
select count(*) as undone from public.task_notes where note = 'never kept';
select public.task_shape(public.task_call(:'alice', 'task_protocol_error', '{}', '{}')) as same_error_in_the_request;
select public.task_shape(public.task_call(:'alice', 'reserved_code', '{}', '{}')) as reserved_code;

-- 6. cancel: a waiting task is cancelled and never runs; cancelling again, or a finished task, acks the same
select public.task_call(:'alice', 'task_note', '{"note": "cancelled before it ran"}') #>> '{result,taskId}' as t4 \gset
select public.task_shape(public.task_rpc(:'alice', 'tasks/cancel', jsonb_build_object('taskId', :'t4'))) as cancel_ack;
call chumbo.run_tasks();
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t4'))) as after_cancel;
select count(*) as never_ran from public.task_notes where note = 'cancelled before it ran';
select public.task_shape(public.task_rpc(:'alice', 'tasks/cancel', jsonb_build_object('taskId', :'t4'))) as cancel_again,
       public.task_shape(public.task_rpc(:'alice', 'tasks/cancel', jsonb_build_object('taskId', :'t1'))) as cancel_finished,
       public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t1'))) as finished_stays;

-- 7. a principal's unfinished tasks are capped (max_tasks_per_principal); others are not affected
select chumbo.configure('{"max_tasks_per_principal": 2}') is not null as configured;
select public.task_shape(public.task_call(:'alice', 'task_note', jsonb_build_object('note', 'queued ' || n))) as burst
  from generate_series(1, 3) n;
select public.task_shape(public.task_call(:'bob', 'task_note', '{"note": "bob"}')) as bob_still_served;
call chumbo.run_tasks();
select owner = 'bbbbbbbb-0000-4000-8000-000000000002' as bobs, note from public.task_notes where note in ('bob', 'queued 1', 'queued 2', 'queued 3') order by note;

-- 8. TTL: a finished task is kept task_ttl_ms after it finished, then it is unknown and its row
-- (with its result) is deleted; the audit rows stay
select chumbo.configure('{"task_ttl_ms": 1, "max_tasks_per_principal": null}') is not null as configured;
select public.task_call(:'alice', 'task_note', '{"note": "short-lived"}') #>> '{result,taskId}' as t5 \gset
select trace_id as t5_trace from chumbo.tasks where id = :'t5' \gset
call chumbo.run_tasks();
select pg_sleep(0.01);
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t5'))) as expired;
select public.task_call(:'alice', 'task_note', '{"note": "prunes"}') is not null as another_task;
select count(*) as expired_rows_left from chumbo.tasks where id = :'t5';
select string_agg(e.outcome, ', ' order by e.era) as audit_stays from chumbo.audit_events e where e.trace_id = :'t5_trace';

-- 9. an unfinished task never expires (task_ttl_ms is still 1 here); a task's time bound is its
-- tool's timeoutMs cut to task_timeout_ceiling_ms
create function mcp.task_slow() returns text language plpgsql volatile as $$ begin perform pg_sleep(3); return 'slept'; end $$;
comment on function mcp.task_slow() is 'Sleeps @mcp {"task": "optional", "timeoutMs": 60000}';
grant execute on function mcp.task_slow() to authenticated;
select chumbo.configure('{"task_timeout_ceiling_ms": 200}') is not null as configured;
select public.task_call(:'alice', 'task_slow') #>> '{result,taskId}' as t6 \gset
select pg_sleep(0.05);
select public.task_shape(public.task_rpc(:'alice', 'tasks/get', jsonb_build_object('taskId', :'t6'))) as unfinished_kept;
select clock_timestamp() as before_run \gset
call chumbo.run_tasks();
select clock_timestamp() - :'before_run'::timestamptz < interval '2 s' as cut_short,
       status, result ->> 'isError' as is_error,
       regexp_replace(result #>> '{content,0,text}', 'trace id [0-9a-f]{32}', 'trace id …') as told
  from chumbo.tasks where id = :'t6';

-- cleanup
select chumbo.configure('{"task_workers": null, "task_ttl_ms": null, "task_timeout_ceiling_ms": null}') is not null as configured;
delete from chumbo.tasks;
drop function public.task_shape(jsonb), public.task_call(jsonb, text, jsonb, jsonb), public.task_rpc(jsonb, text, jsonb, jsonb);
drop function mcp.task_note(text), mcp.task_only(), mcp.task_questions(), mcp.task_protocol_error(), mcp.reserved_code(), mcp.task_slow();
drop table public.task_notes;
