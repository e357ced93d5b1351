-- Claim (src/identity/auth.rs): each backend caches the claims of tokens it verified, and the cache never
-- outlives what made them valid. After a cached hit, each of these must be refused at once: a
-- signing key removed from the JWKS (here and by another backend), a changed HS256 secret,
-- changed issuer and audience settings, and other tokens under the same kid (another payload with
-- the cached signature, the cached payload with another signature, a token signed by another key
-- of that kid). Expiry on a hit is checked by the unit test auth::tests::cached_token_expires.
\set dir `mktemp -d`
\set ok `openssl genpkey -algorithm ed25519 -out :'dir'/ed1.pem && openssl genpkey -algorithm ed25519 -out :'dir'/ed2.pem && echo ok`
\set ed1_x `openssl pkey -in :'dir'/ed1.pem -pubout -outform DER | tail -c 32 | base64 -w0`
\set ed2_x `openssl pkey -in :'dir'/ed2.pem -pubout -outform DER | tail -c 32 | base64 -w0`
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.b64_to_b64url(t text) returns text language sql
  as $$ select translate(rtrim(t, '='), '+/', '-_') $$;
create function pg_temp.signing_input(kid text, extra jsonb default '{}') returns text language sql as $$
  select regress.b64url(convert_to(jsonb_build_object('alg', 'EdDSA', 'typ', 'JWT', 'kid', kid)::text, 'UTF8')) || '.' ||
         regress.b64url(convert_to((jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
           'iss', 'https://issuer.test', 'aud', 'http://localhost:54321/functions/v1/mcp',
           'exp', extract(epoch from now())::int + 300) || extra)::text, 'UTF8')) $$;
create function pg_temp.jwks(variadic keys text[]) returns jsonb language sql as $$
  select jsonb_build_object('keys', jsonb_agg(jsonb_build_object('kty', 'OKP', 'crv', 'Ed25519',
    'kid', split_part(k, '=', 1), 'alg', 'EdDSA', 'use', 'sig', 'x', pg_temp.b64_to_b64url(split_part(k, '=', 2)))))
  from unnest(keys) k $$;
create function pg_temp.call(token text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('authorization', 'Bearer ' || token, 'mcp-protocol-version', '2025-11-25'),
    'body', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}',
    'resource', 'http://localhost:54321/functions/v1/mcp',
    'resource_metadata', 'http://localhost:54321/functions/v1/mcp/.well-known/oauth-protected-resource')) $$;
create function pg_temp.outcome(r jsonb) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(r -> 'body' -> 'error' ->> 'message',
    (select string_agg(j #>> '{}', ',') from jsonb_path_query(r, '$.body.result.structuredContent.rows[*].name') as t(j))) $$;

-- Settings and keys are committed: another backend (a dblink connection) changes them below.
-- Keys go in with chumbo.configure (the same settings row chumbo.set_jwks writes): set_jwks would
-- leave committed audit rows behind for other tests to see.
select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"],"jwt_hs256_secret":"s1"}') ->> 'auth_mode' as mode;
select chumbo.configure(jsonb_build_object('jwks', pg_temp.jwks('ed-1=' || :'ed1_x', 'ed-2=' || :'ed2_x'))) is not null as keys_set;

select pg_temp.signing_input('ed-1') as input \gset
\set sig `printf %s :'input' > :'dir'/in && openssl pkeyutl -sign -inkey :'dir'/ed1.pem -rawin -in :'dir'/in | base64 -w0`
select :'input' || '.' || pg_temp.b64_to_b64url(:'sig') as ed_valid \gset
\set sig `printf %s :'input' > :'dir'/in && openssl pkeyutl -sign -inkey :'dir'/ed2.pem -rawin -in :'dir'/in | base64 -w0`
select :'input' || '.' || pg_temp.b64_to_b64url(:'sig') as ed_other_key \gset
select regress.hs256(jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
  'iss', 'https://issuer.test', 'aud', 'http://localhost:54321/functions/v1/mcp',
  'exp', extract(epoch from now())::int + 300), 's1') as hs_valid \gset

-- verified, then answered again from the cache
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as first, pg_temp.outcome(pg_temp.call(:'ed_valid')) as cached;
-- other tokens under the same kid, after the hit
select label, pg_temp.outcome(pg_temp.call(token)) as outcome from (values
  ('payload changed, cached signature',
   pg_temp.signing_input('ed-1', '{"sub":"bbbbbbbb-0000-4000-8000-000000000002"}') || '.' || split_part(:'ed_valid', '.', 3)),
  ('cached payload, signature changed',
   split_part(:'ed_valid', '.', 1) || '.' || split_part(:'ed_valid', '.', 2) || '.' ||
   case when left(split_part(:'ed_valid', '.', 3), 1) = 'A' then 'B' else 'A' end || substr(split_part(:'ed_valid', '.', 3), 2)),
  ('signed by another key, same kid', :'ed_other_key'),
  ('the cached token with a suffix', :'ed_valid' || 'A')
) as t(label, token);
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as still_cached;

-- settings changed in this backend, inside a transaction, after a hit
begin;
select chumbo.configure('{"jwt_audience":["https://other.example/api"]}') ->> 'auth_mode' as audience_changed;
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as refused_other_audience;
rollback;
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as rolled_back_accepted_again;
begin;
select chumbo.configure('{"jwt_issuers":["https://other-issuer.test"]}') ->> 'auth_mode' as issuer_changed;
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as refused_other_issuer;
rollback;

-- changes committed by another backend, after a hit here
select dblink_connect('a', format('host=127.0.0.1 port=%s dbname=%s user=postgres',
                                  current_setting('port'), current_database())) as connected;
select pg_backend_pid() <> (select pid from dblink('a', 'select pg_backend_pid()') as t(pid int)) as two_backends;
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as ed_before, pg_temp.outcome(pg_temp.call(:'hs_valid')) as hs_before;
select ok as key_removed_by_a from dblink('a', format('select chumbo.configure(jsonb_build_object(''jwks'', %L::jsonb)) is not null',
  pg_temp.jwks('ed-2=' || :'ed2_x'))) as t(ok bool);
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as revoked_key_refused;
select ok as secret_changed_by_a from dblink('a',
  $q$select chumbo.configure('{"jwt_hs256_secret":"s2"}') is not null$q$) as t(ok bool);
select pg_temp.outcome(pg_temp.call(:'hs_valid')) as old_secret_refused;
select ok as key_restored_by_a from dblink('a', format('select chumbo.configure(jsonb_build_object(''jwks'', %L::jsonb)) is not null',
  pg_temp.jwks('ed-1=' || :'ed1_x'))) as t(ok bool);
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as restored_key_accepted;
select ok as audience_changed_by_a from dblink('a',
  $q$select chumbo.configure('{"jwt_audience":["https://other.example/api"]}') is not null$q$) as t(ok bool);
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as other_audience_refused;

select dblink_disconnect('a');
update chumbo.settings set value = '{}';
select regress.drop_fixture_projects() as fixture;
\set ok `rm -rf :'dir' && echo ok`
