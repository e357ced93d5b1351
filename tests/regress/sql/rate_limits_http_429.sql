-- Rate limits: a request-level limit per principal answers HTTP 429 with Retry-After; a
-- per-capability @mcp rateLimit answers an isError result with the retry time; principals are
-- counted apart; when the limiter cannot record, requests are refused (fail closed).
begin;
-- time is pinned (chumbo.now(); set local chumbo.pinned_now: superuser, this transaction only):
-- every request below falls in the fixed window 00:00:00-00:01:00, 30 s before it ends
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.configure('{"auth_mode":"api-key","rate_limit_per_minute":3}') ->> 'rate_limit_per_minute' as request_limit;
select chumbo.create_api_key('authenticated', '{}', 'a') as key_a \gset
select chumbo.create_api_key('authenticated', '{}', 'b') as key_b \gset
create function pg_temp.call(key text, id int, tool text default 'whoami') returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('x-api-key', key, 'mcp-protocol-version', '2025-11-25'),
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', id, 'method', 'tools/call', 'params', jsonb_build_object('name', tool))::text)) $$;
create function mcp.whoami() returns text language sql as $$ select current_user::text $$;
grant execute on function mcp.whoami() to authenticated;

select n, r -> 'status' as status, r -> 'headers' ->> 'retry-after' as retry_after, r #> '{body,id}' as id
  from generate_series(1, 5) n, lateral pg_temp.call(:'key_a', n) r;
-- the next window lets key a through again
set local chumbo.pinned_now = '2026-01-01 00:01:00+00';
select r -> 'status' as next_window from pg_temp.call(:'key_a', 7) r;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
-- another principal has its own budget
select r -> 'status' as other_principal from pg_temp.call(:'key_b', 6) r;

-- per-tool limit: 2 per minute, answered as a tool error
select chumbo.configure('{"rate_limit_per_minute":null}') ->> 'rate_limit_per_minute' is null as request_limit_off;
create function mcp.expensive() returns text language sql as $$ select 'ran' $$;
comment on function mcp.expensive() is 'Costly. @mcp {"rateLimit": {"perMinute": 2}}';
grant execute on function mcp.expensive() to authenticated;
select n, r -> 'status' as status, r #> '{body,result,isError}' as is_error, r #>> '{body,result,content,0,text}' as text
  from generate_series(1, 3) n, lateral pg_temp.call(:'key_b', 10 + n, 'expensive') r;

-- fail closed: the limiter's table is gone, so nothing gets through
select chumbo.configure('{"rate_limit_per_minute":100}') ->> 'rate_limit_per_minute' as request_limit;
alter table chumbo.rate_counters rename to rate_counters_moved;
select r -> 'status' as status, r #>> '{body,error,message}' as message from pg_temp.call(:'key_b', 20) r;
select chumbo.configure('{"rate_limit_per_minute":null}') ->> 'rate_limit_per_minute' is null as request_limit_off;
select r #> '{body,result,isError}' as tool_refused, r #>> '{body,result,content,0,text}' as text from pg_temp.call(:'key_b', 21, 'expensive') r;
rollback;
