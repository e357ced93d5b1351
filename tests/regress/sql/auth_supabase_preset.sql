-- Issue 11 (1): one call sets up a Supabase project. chumbo.configure('{"supabase_url": …}')
-- sets the issuer (<url>/auth/v1), the JWKS location, the audience "authenticated" that
-- Supabase Auth's OAuth access tokens carry, oauth mode, and require_client_id: a token without
-- a client_id claim (a session token of the app's own web client) is not an MCP client's and is
-- refused. Keys given in the same call win over what the preset implies. Tokens are shaped like
-- Supabase Auth's OAuth access tokens (sub, role, aud "authenticated", email, client_id, aal, amr,
-- session_id, iss, iat, exp; no user_id, see shared/docs/supabase-oauth-notes.md), HS256-signed in
-- SQL here (Supabase signs with ES256 from its JWKS: tests/oauth/supabase.test.mjs).
begin;
select regress.fixture_tools('list_projects') as fixture;
select chumbo.configure('{"supabase_url": "https://abcdefghijklmnop.supabase.co/"}')
  - '{allowed_roles,max_rows,page_size,max_body_bytes,max_result_bytes,audit,state_namespaces,call_timeout_ms,max_in_flight,max_listen_streams}'::text[] as effective;
-- a key given in the same call wins; a bad URL is refused
select chumbo.configure('{"supabase_url": "https://abcdefghijklmnop.supabase.co", "require_client_id": false}') -> 'require_client_id' as explicit_wins;
select chumbo.configure('{"require_client_id": true}') -> 'require_client_id' as back_on;
savepoint s;
select chumbo.configure('{"supabase_url": "https://abcdefghijklmnop.supabase.co/rest/v1"}');
rollback to savepoint s;
savepoint s;
select chumbo.configure('{"supabase_url": "not a url"}');
rollback to savepoint s;

select chumbo.configure('{"jwt_hs256_secret": "regress-secret"}') ->> 'auth_mode' as mode;
create function pg_temp.supabase_token(extra jsonb default '{}') returns jsonb language sql as $$
  select jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
    'aud', 'authenticated', 'email', 'alice@acme.test',
    'client_id', '9a8b7c6d-0000-4000-8000-00000000c11e', 'aal', 'aal1', 'amr', '[{"method":"oauth","timestamp":1}]'::jsonb,
    'session_id', '5e551010-0000-4000-8000-000000000000', 'iss', 'https://abcdefghijklmnop.supabase.co/auth/v1',
    'iat', extract(epoch from now())::int, 'exp', extract(epoch from now())::int + 3600) || extra $$;
create function pg_temp.outcome(claims jsonb) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(r #>> '{headers,www-authenticate}',
    (select string_agg(x #>> '{}', ', ') from jsonb_path_query(r, '$.body.result.structuredContent.rows[*].name') x))
  from chumbo.http(jsonb_build_object('method', 'POST',
    'headers', jsonb_build_object('authorization', 'Bearer ' || regress.hs256(claims), 'mcp-protocol-version', '2025-11-25'),
    'body', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}',
    'resource', 'https://abcdefghijklmnop.supabase.co/functions/v1/mcp')) r $$;
select label, pg_temp.outcome(claims) as outcome from (values
  ('OAuth access token (Alice)',    pg_temp.supabase_token()),
  ('app session token, no client',  pg_temp.supabase_token() - 'client_id'),
  ('empty client_id',               pg_temp.supabase_token('{"client_id": ""}')),
  ('aud = the MCP URL instead',     pg_temp.supabase_token('{"aud": "https://abcdefghijklmnop.supabase.co/functions/v1/mcp"}')),
  ('another project''s issuer',     pg_temp.supabase_token('{"iss": "https://zzzzzzzzzzzzzzzz.supabase.co/auth/v1"}'))
) as t(label, claims);
rollback;
