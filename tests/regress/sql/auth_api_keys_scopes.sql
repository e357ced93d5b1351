-- auth_mode api-key: a key stands for a role and scopes, never a user; only its hash is stored.
-- Scopes in @mcp metadata hide a capability without them and make chumbo.http answer 403
-- insufficient_scope with the scopes needed.
begin;
select regress.fixture_projects() as fixture;
create function pg_temp.http(headers jsonb, body text) returns jsonb language sql
  as $$ select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'headers', headers || '{"mcp-protocol-version":"2025-11-25"}', 'body', body,
                                             'resource_metadata', 'http://localhost/.well-known/oauth-protected-resource/mcp')) $$;
select chumbo.configure('{"auth_mode":"api-key"}') ->> 'auth_mode' as mode;

-- a scoped tool
create function mcp.org_stats() returns jsonb language sql stable
  as $$ select jsonb_build_object('caller', current_user, 'visible_projects', (select count(*) from public.projects)) $$;
grant select on public.projects to anon;  -- RLS still shows anon nothing
comment on function mcp.org_stats() is 'Project counts. @mcp {"scopes": ["stats:read"]}';
revoke execute on function mcp.org_stats() from public;
grant execute on function mcp.org_stats() to anon, authenticated;

select chumbo.create_api_key('anon', '{}', 'no scopes') as plain_key \gset
select chumbo.create_api_key('anon', '{stats:read}', 'stats') as stats_key \gset
select chumbo.create_api_key('service_role', '{}', 'bypasses RLS') as service_key \gset
-- keys look like chumbo_<32 hex>_<secret>; the table never holds the secret, in any column or
-- encoding (the secret is everything after the second "_": base64url may itself contain "_")
select :'plain_key' ~ '^chumbo_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$' as key_shape;
select count(*) as keys, count(*) filter (where length(secret) = 43) as secrets_of_43,
       sum((select count(*) from chumbo.api_keys k
             where strpos(k::text, secret) > 0
                or strpos(k::text, encode(convert_to(secret, 'UTF8'), 'hex')) > 0
                or strpos(k::text, encode(convert_to(secret, 'UTF8'), 'base64')) > 0)) as rows_holding_a_secret
  from (select substr(key, length('chumbo_') + 32 + 2) as secret
          from unnest(array[:'plain_key', :'stats_key', :'service_key']) key) s;

-- no key, a wrong key, a tampered secret: 401
select r -> 'status' as status, r -> 'headers' -> 'www-authenticate' as challenge, r -> 'body' -> 'id' as id
  from pg_temp.http('{}', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select r -> 'status' as status, r -> 'body' -> 'error' ->> 'message' as message
  from pg_temp.http('{"x-api-key":"chumbo_00000000000000000000000000000000_nope"}', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select r -> 'status' as status
  from pg_temp.http(jsonb_build_object('x-api-key', :'plain_key' || 'x'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;

-- a key without the scope does not see the scoped tool; calling it is 403 with the scopes needed
select jsonb_path_query_array(r -> 'body', '$.result.tools[*].name') ? 'org_stats' as sees_org_stats
  from pg_temp.http(jsonb_build_object('authorization', 'Bearer ' || :'plain_key'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select r -> 'status' as status, r -> 'headers' ->> 'www-authenticate' as challenge, r -> 'body' -> 'error' -> 'code' as code
  from pg_temp.http(jsonb_build_object('x-api-key', :'plain_key'), '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"org_stats"}}') r;
-- with the scope it is listed and callable (as anon: RLS shows anon no projects)
select jsonb_path_query_array(r -> 'body', '$.result.tools[*].name') ? 'org_stats' as sees_org_stats
  from pg_temp.http(jsonb_build_object('x-api-key', :'stats_key'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;
select r -> 'status' as status, r -> 'body' -> 'result' -> 'structuredContent' as result
  from pg_temp.http(jsonb_build_object('x-api-key', :'stats_key'), '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"org_stats"}}') r;
-- a key for a BYPASSRLS role is refused at use
select r -> 'status' as status, r -> 'body' -> 'error' ->> 'message' as message
  from pg_temp.http(jsonb_build_object('x-api-key', :'service_key'), '{"jsonrpc":"2.0","id":4,"method":"tools/list"}') r;
-- revoked keys stop working at once
select chumbo.revoke_api_key(id) from chumbo.api_keys where label = 'stats';
select r -> 'status' as status
  from pg_temp.http(jsonb_build_object('x-api-key', :'stats_key'), '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') r;

-- scopes from JWT claims through chumbo.handle: hidden without, visible with
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set alice_stats '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated","scope":"openid stats:read"}'
select chumbo.handle('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"org_stats"}}', :'alice') -> 'error' -> 'code' as without_scope,
       chumbo.handle('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"org_stats"}}', :'alice_stats') -> 'result' -> 'structuredContent' as with_scope;

-- the key table and key functions are out of reach for the API roles
set local role authenticated;
\set ON_ERROR_STOP 0
savepoint s;
select count(*) from chumbo.api_keys;
rollback to s;
select chumbo.create_api_key('authenticated');
rollback to s;
select chumbo.revoke_api_key(gen_random_uuid());
\set ON_ERROR_STOP 1
rollback;
