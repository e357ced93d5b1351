-- Issue 9 (7, 9): every call has a time bound (setting call_timeout_ms, default 30 s; per tool
-- @mcp {"timeoutMs": N}), after which it is cancelled and answered as an isError result; the
-- session's own earlier statement_timeout still ends the whole statement. The notifications a
-- call raises count against max_result_bytes with its result: past it they are dropped, and the
-- client is told how many.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.nap(seconds float8) returns text language sql volatile
  as $$ select pg_sleep(seconds)::text || 'woke up' $$;
comment on function mcp.nap(float8) is 'Sleeps. @mcp {"timeoutMs": 300}';
create function mcp.nap_default(seconds float8) returns text language sql volatile
  as $$ select pg_sleep(seconds)::text || 'woke up' $$;
create function mcp.chatty(n int, size int) returns text language plpgsql volatile as $$
begin
  for i in 1..n loop
    perform chumbo.log('info', to_jsonb(repeat('x', size)));
  end loop;
  return 'done';
end $$;
grant execute on function mcp.nap(float8), mcp.nap_default(float8), mcp.chatty(int, int) to authenticated;
create function pg_temp.call(name text, args jsonb) returns text language sql as $$
  select regexp_replace(coalesce(r #>> '{result,content,0,text}', r::text), ' \(trace id [0-9a-f]+\)$', '')
  from chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', name, 'arguments', args)),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') r $$;
-- the tool's own bound (300 ms) cuts a 30 s sleep; a short sleep is fine
select pg_temp.call('nap', '{"seconds": 30}') as long_nap, pg_temp.call('nap', '{"seconds": 0}') as short_nap;
-- the setting bounds tools without their own
select chumbo.configure('{"call_timeout_ms": 200}') ->> 'call_timeout_ms' as call_timeout_ms;
select pg_temp.call('nap_default', '{"seconds": 30}') as default_bound;
-- every call has a bound: 0 is refused
savepoint s;
select chumbo.configure('{"call_timeout_ms": 0}');
rollback to savepoint s;
-- the request goes on after a timed-out call: this statement and the session are fine
select pg_temp.call('nap_default', '{"seconds": 0}') as next_call, current_setting('statement_timeout') as statement_timeout;

-- events: 40 log messages of 100 kB against the 1 MiB bound (public mode: chumbo.http as anon)
create function mcp.chatty_rows(n int, size int) returns setof text language plpgsql volatile as $$
begin
  for i in 1..n loop
    perform chumbo.log('info', to_jsonb(repeat('x', size)));
  end loop;
  return query select repeat('r', 200) from generate_series(1, 20);
end $$;
grant execute on function mcp.chatty(int, int), mcp.chatty_rows(int, int) to anon;
select chumbo.configure('{"call_timeout_ms": 30000, "auth_mode": "public"}') ->> 'auth_mode' as mode;
create function pg_temp.http(name text, args jsonb) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'headers', '{"mcp-protocol-version":"2025-11-25"}'::jsonb,
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
      'params', jsonb_build_object('name', name, 'arguments', args))::text)) $$;
select r -> 'status' as status, r #>> '{body,result,content,0,text}' as result,
       jsonb_array_length(r -> 'events') as events,
       octet_length((r -> 'events')::text) <= (1 << 20) + 1000 as events_within_bound,
       r #>> array['events', (jsonb_array_length(r -> 'events') - 1)::text, 'params', 'data'] as last_event
  from pg_temp.http('chatty', '{"n":40,"size":100000}') r;
-- rows and events share the bound: with 5000 bytes, one 3000-byte event leaves room for fewer rows
select chumbo.configure('{"max_result_bytes": 5000}') ->> 'max_result_bytes' as max_result_bytes;
select jsonb_array_length(r -> 'events') as events,
       jsonb_array_length(r #> '{body,result,structuredContent,rows}') as rows,
       r #> '{body,result,structuredContent}' ? 'next_cursor' as more
  from pg_temp.http('chatty_rows', '{"n":3,"size":3000}') r;
select jsonb_array_length(r #> '{body,result,structuredContent,rows}') as rows_without_events,
       r #> '{body,result,structuredContent}' ? 'next_cursor' as more
  from pg_temp.http('chatty_rows', '{"n":0,"size":0}') r;
rollback;

-- the session's own statement_timeout, when earlier, is not swallowed: the statement ends
begin;
create function mcp.nap(seconds float8) returns text language sql volatile
  as $$ select pg_sleep(seconds)::text || 'woke up' $$;
grant execute on function mcp.nap(float8) to authenticated;
set local statement_timeout = '200ms';
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nap","arguments":{"seconds":30}}}',
  '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
rollback;
