-- Fixed bug (claim, README "Rate limits, audit, surface": "chumbo.audit_events gets one row per
-- request outcome"): chumbo.http audits its refusals with 401, 413, 415 and 429 (audit_refusals), but not
-- a request refused with 400 (a body that is not JSON, an unsupported MCP-Protocol-Version) or
-- 403 (a credential whose role may not run capabilities, e.g. an API key for service_role,
-- which bypasses RLS: exactly the refusal an operator wants to see). The expected output below
-- is the right behaviour, which chumbo now has: one row per refusal whose outcome names the status.
begin;
create function pg_temp.http(headers jsonb, body text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'client', '198.51.100.8',
    'headers', headers, 'body', body)) $$;
create function pg_temp.audited(status text) returns table (audit_rows bigint, outcome_names_status boolean)
  language sql as $$
  select count(*), coalesce(bool_and(outcome ~ status), false) from chumbo.audit_events where outcome ~ status $$;
delete from chumbo.audit_events;
select chumbo.configure('{"auth_mode":"api-key"}') ->> 'auth_mode' as mode;
select chumbo.create_api_key('service_role', '{}', 'bypasses RLS') as service_key \gset
select chumbo.create_api_key('authenticated', '{}', 'fine') as key \gset
-- 403: the key's role bypasses RLS and never runs capabilities
select r -> 'status' as status
  from pg_temp.http(jsonb_build_object('x-api-key', :'service_key'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select * from pg_temp.audited('403');
-- 400: a body that is not JSON, and an unsupported protocol version, with a valid key
select r -> 'status' as status
  from pg_temp.http(jsonb_build_object('x-api-key', :'key'), '{"jsonrpc": "2.0", "id": 2, "method": ') r;
select r -> 'status' as status
  from pg_temp.http(jsonb_build_object('x-api-key', :'key', 'mcp-protocol-version', '1999-01-01'), '{"jsonrpc":"2.0","id":3,"method":"tools/list"}') r;
select * from pg_temp.audited('400');
rollback;
