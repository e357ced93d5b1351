-- Claim (README "Settings", "Rate limits"): in public mode requests are limited to 600 per
-- minute per principal by default, and the anonymous principal is the client's address (the
-- edge passes it as "client"): each address has its own bucket. Over the limit chumbo.http
-- answers 429 with Retry-After. Time is pinned (chumbo.now(), superuser, transaction-local) so
-- the fixed one-minute window cannot roll over during the test and Retry-After is exact.
begin;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.now() = '2026-01-01 00:00:30+00' as pinned;
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode,
       chumbo.configure('{}') -> 'rate_limit_per_minute' as configured_limit;
create function pg_temp.ping(client text, id int, headers jsonb default '{}') returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', client,
    'headers', headers || '{"mcp-protocol-version":"2025-11-25"}',
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', id, 'method', 'ping')::text)) $$;

-- 600 requests from one address get through, the 601st is refused until the window ends
select count(*) filter (where r ->> 'status' = '200') as ok, count(*) filter (where r ->> 'status' <> '200') as refused
  from generate_series(1, 600) n, lateral pg_temp.ping('198.51.100.1', n) r;
select r -> 'status' as status, r -> 'headers' ->> 'retry-after' as retry_after, r #> '{body,id}' as id, r #> '{body,error,code}' as code
  from pg_temp.ping('198.51.100.1', 601) r;
-- another address has its own bucket; a forwarded-for header sent by the client does not move
-- a request into another bucket when the edge passed the address
select r -> 'status' as other_address from pg_temp.ping('198.51.100.2', 602) r;
select r -> 'status' as spoofed_forwarded_for
  from pg_temp.ping('198.51.100.1', 603, '{"x-forwarded-for":"203.0.113.99"}') r;
-- the next window lets the first address in again
set local chumbo.pinned_now = '2026-01-01 00:01:00+00';
select r -> 'status' as next_minute from pg_temp.ping('198.51.100.1', 604) r;
-- an explicit rate_limit_per_minute replaces the default
select chumbo.configure('{"rate_limit_per_minute": 2}') -> 'rate_limit_per_minute' as configured_limit;
select n, r -> 'status' as status from generate_series(1, 3) n, lateral pg_temp.ping('198.51.100.3', 700 + n) r;
-- outside public mode there is no request limit unless configured
select chumbo.configure('{"auth_mode":"api-key","rate_limit_per_minute":null}') ->> 'auth_mode' as mode;
select chumbo.create_api_key('anon', '{}', 'unlimited') as key \gset
select count(*) filter (where r ->> 'status' = '200') as ok_without_limit
  from generate_series(1, 601) n,
       lateral chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', '198.51.100.4',
         'headers', jsonb_build_object('x-api-key', :'key', 'mcp-protocol-version', '2025-11-25'),
         'body', jsonb_build_object('jsonrpc', '2.0', 'id', n, 'method', 'ping')::text)) r;
rollback;
