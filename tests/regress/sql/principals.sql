-- Issue 9 (5) and design weaknesses: chumbo's own partitions come only from the principal
-- verified in Rust. No claim (e.g. "chumbo_api_key") can make a JWT caller an API key; audit
-- rows, limit buckets and sandbox owners hold a keyed HMAC of the identity (not a SHA-256 anyone
-- can recompute from a known sub), which changes when the deployment key is rotated; redeemed
-- MRTR nonces are reclaimed once expired.
begin;
select chumbo.configure('{"state_namespaces":["prefs"]}') ->> 'auth_mode' as mode;
create function mcp.remember(v text) returns bigint language sql volatile as $$ select chumbo.state_put('prefs', 'k', to_jsonb(v)) $$;
create function mcp.recall() returns jsonb language sql volatile as $$ select chumbo.state_get('prefs', 'k') -> 'value' $$;
grant execute on function mcp.remember(text), mcp.recall() to authenticated, anon;
create function pg_temp.tool(claims jsonb, name text, args jsonb default '{}') returns text language sql as $$
  select coalesce(r #>> '{result,structuredContent,result}', regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', ''))
  from chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', name, 'arguments', args)), claims) r $$;

-- an API key stores state under its own partition
select chumbo.create_api_key('authenticated') as key \gset
select split_part(:'key', '_', 2) as key_id \gset
select chumbo.configure('{"auth_mode":"api-key"}') ->> 'auth_mode' as mode;
select r -> 'status' as status, r #>> '{body,result,content,0,text}' as stored_with_key
  from chumbo.http(jsonb_build_object('method', 'POST', 'headers', jsonb_build_object('x-api-key', :'key'),
    'body', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"v":"the key''s secret"}}}')) r;
-- JWT claims naming that key id reach neither the key's state nor its principal
select pg_temp.tool(jsonb_build_object('role', 'authenticated', 'sub', 'mallory', 'iss', 'https://issuer.test', 'chumbo_api_key', :'key_id'), 'recall') as jwt_with_key_claim,
       pg_temp.tool(jsonb_build_object('role', 'authenticated', 'chumbo_api_key', :'key_id'), 'recall') as key_claim_without_sub;
-- the key itself still reads it
select r #>> '{body,result,content,0,text}' as key_reads_back
  from chumbo.http(jsonb_build_object('method', 'POST', 'headers', jsonb_build_object('x-api-key', :'key'),
    'body', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{}}}')) r;

-- digests are keyed: not the plain SHA-256 of the identity, and new after a key rotation
select chumbo.configure('{"audit": true}') ->> 'audit' as audit;
select pg_temp.tool('{"role":"authenticated","sub":"aaaaaaaa-0000-4000-8000-000000000001","iss":"https://issuer.test"}', 'recall') is not null as called;
select principal as before_rotation from chumbo.audit_events order by id desc limit 1 \gset
select :'before_rotation' ~ '^[0-9a-f]{64}$' as hex_digest,
       :'before_rotation' <> all (array[
         encode(sha256(convert_to(E'jwt\x01https://issuer.test\x01aaaaaaaa-0000-4000-8000-000000000001', 'UTF8')), 'hex'),
         encode(sha256(convert_to('aaaaaaaa-0000-4000-8000-000000000001', 'UTF8')), 'hex')]) as not_plain_sha256;
select chumbo.rotate_key('state');
select pg_temp.tool('{"role":"authenticated","sub":"aaaaaaaa-0000-4000-8000-000000000001","iss":"https://issuer.test"}', 'recall') is not null as called;
select principal <> :'before_rotation' as digest_changed_with_key from chumbo.audit_events order by id desc limit 1;

-- MRTR nonces: redeemed once, and expired ones are reclaimed a few at a time
insert into chumbo.request_state_uses select 'old-' || i, chumbo.now() - interval '1 hour' from generate_series(1, 20) i;
select chumbo._redeem_request_state('fresh-nonce') as first_use, chumbo._redeem_request_state('fresh-nonce') as second_use;
select count(*) as expired_left from chumbo.request_state_uses where nonce like 'old-%';
rollback;
