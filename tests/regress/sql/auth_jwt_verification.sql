-- Bearer tokens are verified inside the database: signature, algorithm allow-list (HS256 only
-- with a configured secret, never "none"), iss, aud (default: the resource the edge passes),
-- exp, nbf. Tokens here are HS256, signed in SQL (regress.hs256); the edge tests cover ES256.
begin;
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.call(token text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('authorization', 'Bearer ' || token, 'mcp-protocol-version', '2025-11-25'),
    'body', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}',
    'resource', 'http://localhost:54321/functions/v1/mcp',
    'resource_metadata', 'http://localhost:54321/functions/v1/mcp/.well-known/oauth-protected-resource')) $$;
create function pg_temp.claims(extra jsonb default '{}') returns jsonb language sql as $$
  select jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
    'iss', 'https://issuer.test', 'aud', 'http://localhost:54321/functions/v1/mcp',
    'exp', extract(epoch from now())::int + 300) || extra $$;
create function pg_temp.outcome(r jsonb) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(r -> 'headers' ->> 'www-authenticate', r -> 'body' -> 'error' ->> 'message',
    (select string_agg(x, ',') from jsonb_path_query(r, '$.body.result.structuredContent.rows[*].name') as t(j), lateral (select j #>> '{}') as y(x))) $$;

-- HS256 is refused while no secret is configured
select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"]}') ->> 'auth_mode';
select pg_temp.outcome(pg_temp.call(regress.hs256(pg_temp.claims(), 'test-secret'))) as hs256_not_configured;

select chumbo.configure('{"jwt_hs256_secret":"test-secret"}') ->> 'jwt_hs256_secret' as shown_as;
select label, pg_temp.outcome(pg_temp.call(token)) as outcome from (values
  ('valid',              regress.hs256(pg_temp.claims(), 'test-secret')),
  ('wrong secret',       regress.hs256(pg_temp.claims(), 'other-secret')),
  ('expired',            regress.hs256(pg_temp.claims(jsonb_build_object('exp', extract(epoch from now())::int - 120)), 'test-secret')),
  ('no exp',             regress.hs256(pg_temp.claims() - 'exp', 'test-secret')),
  ('not yet valid',      regress.hs256(pg_temp.claims(jsonb_build_object('nbf', extract(epoch from now())::int + 600)), 'test-secret')),
  ('other issuer',       regress.hs256(pg_temp.claims('{"iss":"https://evil.test"}'), 'test-secret')),
  ('other audience',     regress.hs256(pg_temp.claims('{"aud":"https://other.example/api"}'), 'test-secret')),
  ('alg none',           regress.b64url(convert_to('{"alg":"none","typ":"JWT"}', 'UTF8')) || '.' || regress.b64url(convert_to(pg_temp.claims()::text, 'UTF8')) || '.'),
  ('role service_role',  regress.hs256(pg_temp.claims('{"role":"service_role"}'), 'test-secret')),
  ('garbage',            'not-a-jwt')
) as t(label, token);

-- Bob's valid token sees Bob's org only
select pg_temp.outcome(pg_temp.call(regress.hs256(pg_temp.claims('{"sub":"bbbbbbbb-0000-4000-8000-000000000002"}'), 'test-secret'))) as bob;
-- an explicit audience setting replaces the resource default
select chumbo.configure('{"jwt_audience":["https://other.example/api"]}') ->> 'auth_mode';
select pg_temp.outcome(pg_temp.call(regress.hs256(pg_temp.claims('{"aud":"https://other.example/api"}'), 'test-secret'))) as configured_audience,
       pg_temp.outcome(pg_temp.call(regress.hs256(pg_temp.claims(), 'test-secret'))) as resource_audience_now_refused;
rollback;
