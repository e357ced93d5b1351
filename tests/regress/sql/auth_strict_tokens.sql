-- Issue 9 (4): strict tokens. exp, iss, aud and sub are required; iss must be a single string
-- equal to a configured issuer, sub a non-empty string, aud a string or a list of accepted
-- audiences only; with no configured issuer no token is accepted. Each refusal is a 401
-- invalid_token challenge. HS256 tokens signed in SQL (regress.hs256).
begin;
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.claims(extra jsonb default '{}') returns jsonb language sql as $$
  select jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
    'iss', 'https://issuer.test', 'aud', 'https://mcp.test', 'exp', extract(epoch from now())::int + 300) || extra $$;
create function pg_temp.outcome(token text) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(r #>> '{headers,www-authenticate}', r #>> '{body,result,structuredContent,rows,0,name}')
  from chumbo.http(jsonb_build_object('method', 'POST',
    'headers', jsonb_build_object('authorization', 'Bearer ' || token, 'mcp-protocol-version', '2025-11-25'),
    'body', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}')) r $$;

-- no issuer configured: even a well-signed token is refused
select chumbo.configure('{"auth_mode":"bearer","jwt_hs256_secret":"regress-secret","jwt_audience":["https://mcp.test"]}') ->> 'auth_mode' as mode;
select pg_temp.outcome(regress.hs256(pg_temp.claims())) as no_issuer_configured;

select chumbo.configure('{"jwt_issuers":["https://issuer.test"]}') ->> 'auth_mode' as mode;
select label, pg_temp.outcome(regress.hs256(claims)) as outcome from (values
  ('valid',                 pg_temp.claims()),
  ('aud as one-item list',  pg_temp.claims('{"aud":["https://mcp.test"]}')),
  ('no aud',                pg_temp.claims() - 'aud'),
  ('no iss',                pg_temp.claims() - 'iss'),
  ('no sub',                pg_temp.claims() - 'sub'),
  ('no exp',                pg_temp.claims() - 'exp'),
  ('iss list with trusted', pg_temp.claims('{"iss":["https://evil.example","https://issuer.test"]}')),
  ('iss list only trusted', pg_temp.claims('{"iss":["https://issuer.test"]}')),
  ('iss prefix',            pg_temp.claims('{"iss":"https://issuer.test/"}')),
  ('aud list with evil',    pg_temp.claims('{"aud":["https://evil.example","https://mcp.test"]}')),
  ('aud empty list',        pg_temp.claims('{"aud":[]}')),
  ('aud number',            pg_temp.claims('{"aud":1}')),
  ('sub number',            pg_temp.claims('{"sub":12345}')),
  ('sub empty',             pg_temp.claims('{"sub":""}')),
  ('sub object',            pg_temp.claims('{"sub":{"id":"aaaaaaaa-0000-4000-8000-000000000001"}}')),
  ('exp string',            pg_temp.claims(jsonb_build_object('exp', (extract(epoch from now())::int + 300)::text)))
) as t(label, claims);
rollback;
