-- One call of the per-tool limited conc_limited tool as Bob. Time is pinned (chumbo.now(); set
-- local chumbo.pinned_now: superuser, this transaction only) to the middle of one fixed window,
-- so every call of the run counts against the same window, however long the run takes. First the
-- barrier lock :barrier (concurrency_state.sh holds it until every client waits on it).
begin;
select pg_advisory_xact_lock_shared(:barrier);
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
insert into state_conc.tool_calls (is_error)
select coalesce((r -> 'result' ->> 'isError')::boolean, r ? 'error')
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_limited","arguments":{}}}'::jsonb,
                             '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'::jsonb)) x(r);
commit;
