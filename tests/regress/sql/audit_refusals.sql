-- Claim (README "Rate limits, audit, surface": "chumbo.audit_events gets one row per request
-- outcome"): requests chumbo.http refuses before any method runs (401 no or bad credentials,
-- 413 body too large, 415 not JSON, 429 rate limited) each leave one audit row whose outcome
-- names the HTTP status, with a trace id and nothing of the credential or the body.
-- (Refusals with 400 and 403: bug_audit_400_403.)
begin;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
create function pg_temp.http(headers jsonb, body text, client text default null) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', client,
    'headers', headers || '{"mcp-protocol-version":"2025-11-25"}', 'body', body)) $$;
create function pg_temp.audited(status text) returns table (audit_rows bigint, outcome_names_status boolean,
                                                               has_trace_id boolean, nothing_leaked boolean)
  language sql as $$
  select count(*), coalesce(bool_and(outcome ~ status), false), coalesce(bool_and(trace_id ~ '^[0-9a-f]+$'), false),
         coalesce(bool_and(e::text !~ 'au-secret'), true)
    from chumbo.audit_events e where outcome ~ status $$;
delete from chumbo.audit_events;

-- 401: bearer mode, no token; then a garbage token
select chumbo.configure('{"auth_mode":"bearer"}') ->> 'auth_mode' as mode;
select r -> 'status' as status from pg_temp.http('{}', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select r -> 'status' as status from pg_temp.http('{"authorization":"Bearer au-secret-token"}', '{"jsonrpc":"2.0","id":2,"method":"tools/list"}') r;
select * from pg_temp.audited('401');

-- 413: body over max_body_bytes
select chumbo.configure('{"auth_mode":"public","max_body_bytes":200}') ->> 'max_body_bytes' as max_body_bytes;
select r -> 'status' as status
  from pg_temp.http('{}', jsonb_build_object('jsonrpc', '2.0', 'id', 3, 'method', 'ping', 'params', jsonb_build_object('pad', 'au-secret' || repeat('x', 300)))::text) r;
select * from pg_temp.audited('413');

-- 415: a Content-Type that is not JSON
select r -> 'status' as status
  from chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', '{"content-type":"text/plain","mcp-protocol-version":"2025-11-25"}'::jsonb,
         'body', '{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"au-secret"}}')) r;
select * from pg_temp.audited('415');

-- 429: over the request limit
select chumbo.configure('{"max_body_bytes":null,"rate_limit_per_minute":1}') ->> 'rate_limit_per_minute' as limit;
select n, r -> 'status' as status
  from generate_series(1, 2) n, lateral pg_temp.http('{}', jsonb_build_object('jsonrpc', '2.0', 'id', n, 'method', 'ping')::text, '198.51.100.7') r;
select * from pg_temp.audited('429');
rollback;
