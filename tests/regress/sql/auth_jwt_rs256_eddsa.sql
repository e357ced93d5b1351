-- Claim (README "Security model", DESIGN §4): bearer tokens are verified in the database with
-- keys from the configured JWKS: RS256 and EdDSA verify, and a token signed by a different key
-- of the same kind (same kid) is refused, as are a changed payload and an algorithm that does
-- not match the key. Keys are generated now with openssl (psql backticks run it on the client
-- side); the JWKS is handed over with chumbo.set_jwks, as the edge's JWKS courier does; the
-- entry is chumbo.http with an Authorization: Bearer header. Tokens carry exp, iss, aud and sub.
\set dir `mktemp -d`
\set ok `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out :'dir'/rsa1.pem 2>/dev/null && echo ok`
\set ok `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out :'dir'/rsa2.pem 2>/dev/null && echo ok`
\set ok `openssl genpkey -algorithm ed25519 -out :'dir'/ed1.pem && openssl genpkey -algorithm ed25519 -out :'dir'/ed2.pem && echo ok`
\set rsa1_n `openssl rsa -in :'dir'/rsa1.pem -noout -modulus | cut -d= -f2`
\set ed1_x `openssl pkey -in :'dir'/ed1.pem -pubout -outform DER | tail -c 32 | base64 -w0`
select length(:'rsa1_n') as rsa_modulus_hex_digits, length(decode(:'ed1_x', 'base64')) as ed25519_key_bytes;
begin;
select regress.fixture_tools('list_projects') as fixture;
create function pg_temp.b64_to_b64url(t text) returns text language sql
  as $$ select translate(rtrim(t, '='), '+/', '-_') $$;
-- header.payload, to be signed by openssl
create function pg_temp.signing_input(alg text, kid text, extra jsonb default '{}') returns text language sql as $$
  select regress.b64url(convert_to(jsonb_build_object('alg', alg, 'typ', 'JWT', 'kid', kid)::text, 'UTF8')) || '.' ||
         regress.b64url(convert_to((jsonb_build_object('sub', 'aaaaaaaa-0000-4000-8000-000000000001', 'role', 'authenticated',
           'iss', 'https://issuer.test', 'aud', 'http://localhost:54321/functions/v1/mcp',
           'exp', extract(epoch from now())::int + 300) || extra)::text, 'UTF8')) $$;
create function pg_temp.call(token text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('authorization', 'Bearer ' || token, 'mcp-protocol-version', '2025-11-25'),
    'body', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}',
    'resource', 'http://localhost:54321/functions/v1/mcp',
    'resource_metadata', 'http://localhost:54321/functions/v1/mcp/.well-known/oauth-protected-resource')) $$;
create function pg_temp.outcome(r jsonb) returns text language sql as $$
  select r ->> 'status' || ' ' || coalesce(substring(r -> 'headers' ->> 'www-authenticate' from 'error="[a-z_]+"'),
    (select string_agg(j #>> '{}', ',') from jsonb_path_query(r, '$.body.result.structuredContent.rows[*].name') as t(j))) $$;

select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"]}') ->> 'auth_mode' as mode;
select chumbo.set_jwks(jsonb_build_object('keys', jsonb_build_array(
  jsonb_build_object('kty', 'RSA', 'kid', 'rsa-1', 'alg', 'RS256', 'use', 'sig',
                     'n', regress.b64url(decode(:'rsa1_n', 'hex')), 'e', 'AQAB'),
  jsonb_build_object('kty', 'OKP', 'crv', 'Ed25519', 'kid', 'ed-1', 'alg', 'EdDSA', 'use', 'sig',
                     'x', pg_temp.b64_to_b64url(:'ed1_x')))));

-- RS256 signed by rsa1 (kid rsa-1): accepted, Alice's projects
select pg_temp.signing_input('RS256', 'rsa-1') as input \gset
\set sig `printf %s :'input' | openssl dgst -sha256 -sign :'dir'/rsa1.pem | base64 -w0`
select :'input' || '.' || pg_temp.b64_to_b64url(:'sig') as rs_valid \gset
select pg_temp.outcome(pg_temp.call(:'rs_valid')) as rs256_valid;
-- the same signature over another payload (Bob's subject): refused
select pg_temp.outcome(pg_temp.call(pg_temp.signing_input('RS256', 'rsa-1', '{"sub":"bbbbbbbb-0000-4000-8000-000000000002"}')
         || '.' || split_part(:'rs_valid', '.', 3))) as rs256_payload_changed;
-- RS256 signed by rsa2 under kid rsa-1: refused
\set sig `printf %s :'input' | openssl dgst -sha256 -sign :'dir'/rsa2.pem | base64 -w0`
select pg_temp.outcome(pg_temp.call(:'input' || '.' || pg_temp.b64_to_b64url(:'sig'))) as rs256_other_key;
-- RS256 signed by rsa2 under its own kid, which the JWKS does not have: refused
select pg_temp.signing_input('RS256', 'rsa-2') as input \gset
\set sig `printf %s :'input' | openssl dgst -sha256 -sign :'dir'/rsa2.pem | base64 -w0`
select pg_temp.outcome(pg_temp.call(:'input' || '.' || pg_temp.b64_to_b64url(:'sig'))) as rs256_unknown_kid;

-- EdDSA signed by ed1 (kid ed-1): accepted
select pg_temp.signing_input('EdDSA', 'ed-1') as input \gset
\set sig `printf %s :'input' > :'dir'/in && openssl pkeyutl -sign -inkey :'dir'/ed1.pem -rawin -in :'dir'/in | base64 -w0`
select :'input' || '.' || pg_temp.b64_to_b64url(:'sig') as ed_valid \gset
select pg_temp.outcome(pg_temp.call(:'ed_valid')) as eddsa_valid;
-- EdDSA signed by ed2 under kid ed-1: refused
\set sig `printf %s :'input' > :'dir'/in && openssl pkeyutl -sign -inkey :'dir'/ed2.pem -rawin -in :'dir'/in | base64 -w0`
select pg_temp.outcome(pg_temp.call(:'input' || '.' || pg_temp.b64_to_b64url(:'sig'))) as eddsa_other_key;
-- an RSA signature presented as EdDSA for the RSA key, and the other way round: refused
select pg_temp.signing_input('EdDSA', 'rsa-1') as input \gset
\set sig `printf %s :'input' | openssl dgst -sha256 -sign :'dir'/rsa1.pem | base64 -w0`
select pg_temp.outcome(pg_temp.call(:'input' || '.' || pg_temp.b64_to_b64url(:'sig'))) as eddsa_header_rsa_key;
select pg_temp.signing_input('RS256', 'ed-1') as input \gset
\set sig `printf %s :'input' > :'dir'/in && openssl pkeyutl -sign -inkey :'dir'/ed1.pem -rawin -in :'dir'/in | base64 -w0`
select pg_temp.outcome(pg_temp.call(:'input' || '.' || pg_temp.b64_to_b64url(:'sig'))) as rs256_header_ed_key;

-- a JWKS without the key: the valid tokens stop verifying
select chumbo.set_jwks('{"keys": []}');
select pg_temp.outcome(pg_temp.call(:'rs_valid')) as rs256_key_removed, pg_temp.outcome(pg_temp.call(:'ed_valid')) as eddsa_key_removed;
rollback;
\set ok `rm -rf :'dir' && echo ok`
