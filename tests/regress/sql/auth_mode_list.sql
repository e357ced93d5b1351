-- Issue 11 (5): users and API keys on one endpoint. auth_mode may be a list; each credential is
-- routed to exactly one verifier by its shape (x-api-key or a bearer value with chumbo's key
-- prefix: API key; any other bearer value: JWT), and a failed one never falls through to the
-- other verifier.
begin;
select regress.fixture_tools('list_projects') as fixture;
select chumbo.configure('{"auth_mode": ["oauth", "api-key"], "jwt_issuers": ["https://issuer.test"], "jwt_audience": ["https://mcp.test"], "jwt_hs256_secret": "regress-secret"}') -> 'auth_mode' as modes;
select chumbo.create_api_key('authenticated') as key \gset
select regress.hs256(jsonb_build_object('iss', 'https://issuer.test', 'aud', 'https://mcp.test', 'sub', 'aaaaaaaa-0000-4000-8000-000000000001',
  'role', 'authenticated', 'exp', extract(epoch from now())::int + 300)) as token \gset
create function pg_temp.outcome(headers jsonb) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(r #>> '{headers,www-authenticate}', '') || ' ' ||
         coalesce(r #>> '{body,error,message}', case when r #> '{body,result}' ? 'content' then 'tools/call answered' end, '')
  from chumbo.http(jsonb_build_object('method', 'POST', 'headers', headers,
    'body', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}')) r $$;
select label, left(pg_temp.outcome(headers), 120) as outcome from (values
  ('JWT',                          jsonb_build_object('authorization', 'Bearer ' || :'token')),
  ('API key in x-api-key',         jsonb_build_object('x-api-key', :'key')),
  ('API key as bearer',            jsonb_build_object('authorization', 'Bearer ' || :'key')),
  ('bad API key (bearer)',         jsonb_build_object('authorization', 'Bearer ' || :'key' || 'x')),
  ('bad API key (x-api-key)',      jsonb_build_object('x-api-key', 'chumbo_00000000000000000000000000000000_nope')),
  ('JWT in x-api-key',             jsonb_build_object('x-api-key', :'token')),
  ('bad JWT',                      jsonb_build_object('authorization', 'Bearer ' || :'token' || 'x')),
  ('nothing',                      '{}'::jsonb)
) as t(label, headers);
-- one mode only: the other kind of credential is refused, not tried
select chumbo.configure('{"auth_mode": "oauth"}') -> 'auth_mode' as modes;
select left(pg_temp.outcome(jsonb_build_object('authorization', 'Bearer ' || :'key')), 120) as key_when_oauth_only;
select chumbo.configure('{"auth_mode": "api-key"}') -> 'auth_mode' as modes;
select left(pg_temp.outcome(jsonb_build_object('authorization', 'Bearer ' || :'token')), 120) as jwt_when_keys_only;
-- an empty list is refused
savepoint s;
select chumbo.configure('{"auth_mode": []}');
rollback to savepoint s;
rollback;
