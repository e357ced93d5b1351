-- Helpers shared by the SQL regression tests (loaded by tests/regress/run.sh into the regression
-- database after the example app; not part of the extension).
create extension if not exists pgcrypto;
create extension if not exists dblink;       -- a second backend, for tests about other sessions
create schema if not exists regress;

-- base64url without padding (JWT segments)
create or replace function regress.b64url(b bytea) returns text language sql immutable
  as $$ select translate(rtrim(replace(encode(b, 'base64'), E'\n', ''), '='), '+/', '-_') $$;

-- an HS256 JWT of `payload`, signed with `secret` (chumbo accepts HS256 only when the setting
-- jwt_hs256_secret names the same secret)
create or replace function regress.hs256(payload jsonb, secret text default 'regress-secret',
                                         header jsonb default '{"alg":"HS256","typ":"JWT"}')
  returns text language sql immutable as $$
    with p as (select regress.b64url(convert_to(header::text, 'UTF8')) || '.' ||
                      regress.b64url(convert_to(payload::text, 'UTF8')) as signing_input)
    select signing_input || '.' || regress.b64url(hmac(signing_input, secret, 'sha256')) from p $$;
