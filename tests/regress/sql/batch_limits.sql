-- A 2025-03-26 JSON-RPC batch is as many requests as it has messages: each counts against the
-- per-minute limit (all or none: a batch that does not fit counts nothing) and holds an in-flight
-- slot of its own, and a batch larger than max_batch_messages (or than max_in_flight) is refused
-- before anything in it runs. Before 0.5.0 a batch of N counted as one request while it ran up
-- to N x call_timeout_ms. Time is pinned (one window).
begin;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.configure('{"auth_mode":"public","rate_limit_per_minute":5}') ->> 'rate_limit_per_minute' as limit;
create function pg_temp.batch(n int) returns text language sql as $$
  select (r ->> 'status') || ' ' || coalesce(
           case when jsonb_typeof(r -> 'body') = 'array'
                then jsonb_array_length(r -> 'body')::text || ' answers'
                else (r #>> '{body,error,message}') end, '')
    from chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', '192.0.2.7',
           'headers', '{"content-type":"application/json","mcp-protocol-version":"2025-03-26"}'::jsonb,
           'body', (select '[' || string_agg(format('{"jsonrpc":"2.0","id":%s,"method":"ping"}', i), ',') || ']'
                      from generate_series(1, n) i))) r $$;
-- 3 of 5 hits; the next batch of 3 does not fit and counts nothing, so 2 single requests still do
select pg_temp.batch(3) as first_batch_of_3;
select pg_temp.batch(3) as second_batch_of_3;
select pg_temp.batch(1) as fourth_request, pg_temp.batch(1) as fifth_request;
select pg_temp.batch(1) as sixth_request;
-- the counter holds exactly the 5 hits served
select hits from chumbo.rate_counters where window_seconds = 60;
-- larger than max_batch_messages (default 4): refused, nothing counted or run
select chumbo.configure('{"rate_limit_per_minute": null}') ->> 'max_batch_messages' as max_batch_messages;
select pg_temp.batch(4) as batch_of_4, pg_temp.batch(5) as batch_of_5;
-- never larger than may run at once
select chumbo.configure('{"max_batch_messages": 10, "max_in_flight": 2}') ->> 'max_in_flight' as max_in_flight;
select pg_temp.batch(2) as batch_of_2, pg_temp.batch(3) as batch_of_3;
-- settings refuse a batch size of 0
select chumbo.configure('{"max_batch_messages": 0}');
rollback;
