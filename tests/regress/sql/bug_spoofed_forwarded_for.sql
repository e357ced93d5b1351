-- Fixed bug (security; claim, README "Rate limits": requests are limited per principal, for anonymous
-- callers "the anonymous caller's address"): when no trusted address comes with the request
-- (chumbo.http without "client", and always through chumbo.mcp, the PostgREST entry), the
-- anonymous bucket is taken from the FIRST entry of the X-Forwarded-For header, which the
-- client writes itself (proxies append to it). Sending a new X-Forwarded-For with every request
-- gets a new bucket each time, so public mode's limit is no limit. The expected output below is
-- the right behaviour (now fixed): a header the client controls does not choose the bucket (here all three
-- requests share one, limit 1: the 2nd and 3rd are refused). Only the first entry differs, so
-- either fix passes: ignoring the header, or taking the entry the last proxy appended. Time is
-- pinned (one window).
begin;
-- the PostgREST entry is an opt-in (sql/edge.sql)
select chumbo.grant_postgrest() as postgrest_for;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.configure('{"auth_mode":"public","rate_limit_per_minute":1}') ->> 'rate_limit_per_minute' as limit;
-- chumbo.http without a client address
select n, r -> 'status' as status
  from generate_series(1, 3) n,
       lateral chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', jsonb_build_object('x-forwarded-for', '203.0.113.' || n || ', 10.0.0.1', 'mcp-protocol-version', '2025-11-25'),
         'body', jsonb_build_object('jsonrpc', '2.0', 'id', n, 'method', 'ping')::text)) r
 order by n;
-- chumbo.mcp as PostgREST calls it (role anon, headers in request.headers)
create function pg_temp.postgrest_ping(n int) returns text language plpgsql as $$
begin
  perform set_config('request.headers', jsonb_build_object('x-forwarded-for', '198.51.100.' || n || ', 10.0.0.2')::text, true);
  perform chumbo.mcp(jsonb_build_object('jsonrpc', '2.0', 'id', n, 'method', 'ping'));
  return current_setting('response.status', true);
end $$;
grant execute on function pg_temp.postgrest_ping(int) to anon;
set local role anon;
select n, pg_temp.postgrest_ping(n) as status from generate_series(1, 3) n order by n;
reset role;
rollback;
