-- chumbo.metrics (issue 30, item 3): calls, errors and p50/p95/p99 per method and capability over
-- the last hour of audit rows, for operators without a collector. Only its owner reads it (and
-- whoever it is granted to): anon and authenticated are refused, and a grant shows aggregates,
-- never a row, a principal or a trace id.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
delete from chumbo.audit_events;
create function mcp.works() returns text language sql as $$ select 'ok' $$;
create function mcp.breaks() returns text language plpgsql as $$ begin raise exception 'broken'; end $$;
revoke execute on function mcp.works(), mcp.breaks() from public;
grant execute on function mcp.works(), mcp.breaks() to authenticated;
select count(*) from (select regress.tool(:'alice', 'works') from generate_series(1, 3)) c;
select count(*) from (select regress.tool(:'alice', 'breaks') from generate_series(1, 2)) c;
select count(*) from (select regress.rpc(:'alice', 'tools/list') from generate_series(1, 4)) c;
-- tasks: the request that created one, and its runs, are errors only when the run failed
insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes)
select 't', era, 'tools/call', 'slow', 'p', outcome, 1, 1
  from (values ('modern', 'task'), ('task', 'task completed'), ('task', 'task input_required'),
               ('task', 'task cancelled'), ('task', 'task failed'), ('task', 'task tool_error')) v(era, outcome);
-- an hour-old row is outside the window
insert into chumbo.audit_events (at, trace_id, era, method, capability, principal, outcome, duration_ms, bytes)
values (now() - interval '2 hours', 'old', 'legacy', 'tools/call', 'works', 'p', 'ok', 1, 1);
select method, capability, calls, errors,
       p50_ms <= p95_ms and p95_ms <= p99_ms and p99_ms <= max_ms as ordered,
       first_at <= last_at as spans_time
  from chumbo.metrics
 where capability is distinct from null or method = 'tools/list'
 order by method, capability;
-- what a grant shows: the columns of the view, none of them a principal or a trace id
select string_agg(attname, ', ' order by attnum) as columns
  from pg_attribute where attrelid = 'chumbo.metrics'::regclass and attnum > 0;

-- refused to the app's roles
\set VERBOSITY terse
savepoint s;
set local role authenticated;
select * from chumbo.metrics;
rollback to s;
set local role anon;
select * from chumbo.metrics;
rollback to s;
rollback;
