-- Durable state (chumbo.state_get/put/delete), called by capability functions through
-- chumbo.handle as Alice and Bob: revisions and compare-and-set, TTL, bounds, every error by its
-- stable name and SQLSTATE, and partitions: Alice's state is invisible to Bob, to another issuer's
-- token with Alice's subject, and to anonymous callers.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
\set alice_other_iss '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","iss":"https://other.example.com","role":"authenticated"}'
create function pg_temp.tool(claims jsonb, name text, args jsonb default '{}')
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
          'params', jsonb_build_object('name', name, 'arguments', args)), claims) $$;
-- One test tool that runs a state operation and reports the result or the error it raised
-- (SQLSTATE + message), the way capability code would catch it.
create function mcp.st(op text, a jsonb default '{}') returns jsonb language plpgsql as $$
declare
  r jsonb;
begin
  case op
    when 'get' then r := chumbo.state_get(a ->> 'ns', a ->> 'key');
    when 'put' then r := to_jsonb(chumbo.state_put(a ->> 'ns', a ->> 'key', a -> 'value', (a ->> 'rev')::bigint, (a ->> 'ttl')::interval));
    when 'delete' then r := to_jsonb(chumbo.state_delete(a ->> 'ns', a ->> 'key', (a ->> 'rev')::bigint));
  end case;
  return jsonb_build_object('ok', r);
exception when others then
  return jsonb_build_object('sqlstate', sqlstate, 'error', sqlerrm);
end $$;
revoke execute on function mcp.st(text, jsonb) from public;
grant execute on function mcp.st(text, jsonb) to anon, authenticated;
-- The same, uncaught: what the model sees when the capability lets the error through.
create function mcp.st_raw(ns text, key text, value jsonb, rev bigint default null) returns bigint
  language sql as $$ select chumbo.state_put(ns, key, value, rev) $$;
revoke execute on function mcp.st_raw(text, text, jsonb, bigint) from public;
grant execute on function mcp.st_raw(text, text, jsonb, bigint) to authenticated;
create function pg_temp.st(claims jsonb, op text, a jsonb default '{}') returns jsonb language sql
  as $$ select pg_temp.tool(claims, 'st', jsonb_build_object('op', op, 'a', a)) -> 'result' -> 'structuredContent' $$;

-- 1. State is off until an owner lists namespaces.
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"theme"}') as state_off;
select chumbo.configure('{"state_namespaces": ["prefs", "drafts"]}') -> 'state_namespaces' as state_namespaces;

-- 2. put/get/delete and revisions
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"theme"}') as missing;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":{"mode":"dark"}}') as first_put;
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"theme"}') - '{}'::text[] as got;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":{"mode":"light"}}') as unconditional_put;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":{"mode":"sepia"},"rev":2}') as cas_at_2;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":{"mode":"stale"},"rev":2}') as cas_stale;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":{"mode":"again"},"rev":0}') as create_existing;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"lang","value":"pt","rev":0}') as create_new;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"nothing","value":null}') as json_null_value;
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"nothing"}') -> 'ok' as json_null_read;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"ghost","value":1,"rev":4}') as cas_missing;
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"theme"}') -> 'ok' -> 'value' as theme_after;
select pg_temp.st(:'alice', 'delete', '{"ns":"prefs","key":"theme","rev":2}') as delete_stale;
select pg_temp.st(:'alice', 'delete', '{"ns":"prefs","key":"theme","rev":3}') as delete_at_3;
select pg_temp.st(:'alice', 'delete', '{"ns":"prefs","key":"theme"}') as delete_again;
select pg_temp.st(:'alice', 'delete', '{"ns":"prefs","key":"lang"}') as delete_unconditional;
select pg_temp.st(:'alice', 'get', '{"ns":"prefs","key":"theme"}') as gone;
-- a deleted key starts again at revision 1
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"theme","value":"x"}') as recreated;

-- 3. Partitions: Bob, and a token of another issuer with Alice's subject, see none of it, and
-- writing the same namespace/key makes their own entries.
select pg_temp.st(:'bob', 'get', '{"ns":"prefs","key":"theme"}') as bob_reads_alice_key;
select pg_temp.st(:'alice_other_iss', 'get', '{"ns":"prefs","key":"theme"}') as other_issuer_reads;
select pg_temp.st(:'bob', 'put', '{"ns":"prefs","key":"theme","value":"bob","rev":1}') as bob_cas_with_alice_rev;
select pg_temp.st(:'bob', 'delete', '{"ns":"prefs","key":"theme"}') as bob_deletes_alice_key;
select pg_temp.st(:'bob', 'put', '{"ns":"prefs","key":"theme","value":"bob"}') as bob_put;
select who, pg_temp.st(c, 'get', '{"ns":"prefs","key":"theme"}') -> 'ok' -> 'value' as own_value
  from (values ('alice', :'alice'::jsonb), ('bob', :'bob'), ('alice_other_iss', :'alice_other_iss')) v(who, c);
select count(distinct partition) as partitions, count(*) as entries,
       bool_and(octet_length(partition) = 32) as hmac_sha256_sized
  from chumbo.state_entries where namespace = 'prefs' and key = 'theme';
-- the stored partition is not the subject in any form
select count(*) as subject_in_partition from chumbo.state_entries
 where position(convert_to('aaaaaaaa-0000-4000-8000-000000000001', 'UTF8') in partition) > 0
    or encode(partition, 'hex') like '%aaaaaaaa%';
-- anonymous callers get no state; the functions are useless outside a request
select pg_temp.st(null, 'get', '{"ns":"prefs","key":"theme"}') as anonymous_get;
select pg_temp.st(null, 'put', '{"ns":"prefs","key":"theme","value":1}') as anonymous_put;
select pg_temp.st(null, 'delete', '{"ns":"prefs","key":"theme"}') as anonymous_delete;
savepoint outside;
\set VERBOSITY terse
select chumbo.state_get('prefs', 'theme');
\set VERBOSITY default
rollback to savepoint outside;

-- 4. Bounds and argument errors
select pg_temp.st(:'alice', 'get', '{"ns":"secrets","key":"k"}') as namespace_not_listed;
select pg_temp.st(:'alice', 'put', '{"ns":"","key":"k","value":1}') as empty_namespace;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', repeat('n', 65), 'key', 'k', 'value', 1)) as long_namespace;
select pg_temp.st(:'alice', 'put', '{"ns":"pre fs","key":"k","value":1}') as namespace_charset;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"","value":1}') as empty_key;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', repeat('k', 257), 'value', 1)) as long_key;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', repeat('é', 129), 'value', 1)) as key_bytes_not_chars;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', repeat('k', 256), 'value', 1)) -> 'ok' as longest_key;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k"}') as sql_null_value;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', 'big', 'value', repeat('x', 65534))) -> 'ok' as value_at_limit;
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', 'big', 'value', repeat('x', 65535))) as value_over_limit;
-- measured as encoded JSON text: escapes count
select pg_temp.st(:'alice', 'put', jsonb_build_object('ns', 'prefs', 'key', 'big', 'value', repeat(E'\n', 32768))) as escapes_count;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k","value":1,"rev":-1}') as negative_revision;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k","value":1,"rev":9007199254740992}') as revision_beyond_2_53;
select pg_temp.st(:'alice', 'delete', '{"ns":"prefs","key":"k","rev":0}') as delete_revision_0;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k","value":1,"ttl":"0.5 seconds"}') as ttl_too_short;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k","value":1,"ttl":"367 days"}') as ttl_too_long;
select pg_temp.st(:'alice', 'put', '{"ns":"prefs","key":"k","value":1,"ttl":"-1 hour"}') as ttl_negative;
-- what the model sees when the capability does not catch the error
select regexp_replace(r -> 'result' -> 'content' -> 0 ->> 'text', 'trace id [0-9a-f]+', 'trace id <masked>') as uncaught,
       r -> 'result' -> 'isError' as is_error
  from (values (pg_temp.tool(:'alice', 'st_raw', '{"ns":"secrets","key":"k","value":1}')),
               (pg_temp.tool(:'alice', 'st_raw', jsonb_build_object('ns', 'prefs', 'key', 'k', 'value', repeat('x', 70000)))),
               (pg_temp.tool(:'alice', 'st_raw', '{"ns":"prefs","key":"k","value":1,"rev":-5}')),
               (pg_temp.tool(:'alice', 'st_raw', '{"ns":"prefs","key":"k","value":1,"rev":77}'))) v(r);

-- 5. TTL: an expired entry reads as missing, can be created again with expected revision 0,
-- and keeps counting revisions while its row is still there. Time is pinned (chumbo.now(),
-- set local chumbo.pinned_now: superuser, this transaction only), so nothing here waits or races.
set local chumbo.pinned_now = '2026-01-01 00:00:00+00';
select chumbo.now() as pinned_now;
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"memo","value":"v1","ttl":"1 second"}') as with_ttl;
select pg_temp.st(:'alice', 'get', '{"ns":"drafts","key":"memo"}') -> 'ok' -> 'expires_at' as expires_at;
set local chumbo.pinned_now = '2026-01-01 00:00:00.999+00';
select pg_temp.st(:'alice', 'get', '{"ns":"drafts","key":"memo"}') -> 'ok' -> 'value' as still_there_before_expiry;
set local chumbo.pinned_now = '2026-01-01 00:00:01.5+00';
select pg_temp.st(:'alice', 'get', '{"ns":"drafts","key":"memo"}') as expired_reads_missing;
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"memo","value":"v2","rev":1}') as cas_on_expired;
select pg_temp.st(:'alice', 'delete', '{"ns":"drafts","key":"memo"}') as delete_expired;
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"memo","value":"v3","ttl":"1 second"}') as recreated;
select pg_temp.st(:'alice', 'get', '{"ns":"drafts","key":"memo"}') -> 'ok' -> 'expires_at' as recreated_expires_at;
set local chumbo.pinned_now = '2026-01-01 00:00:03+00';
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"memo","value":"v4","rev":0}') as create_over_expired;
select pg_temp.st(:'alice', 'get', '{"ns":"drafts","key":"memo"}') -> 'ok' -> 'expires_at' as no_ttl_now;

-- 6. Each write reclaims at most 8 expired entries (any partition), never live ones (expired and
-- live as of the pinned time above).
insert into chumbo.state_entries (partition, namespace, key, value, revision, expires_at)
  select '\x00'::bytea, 'prefs', 'old' || i, '1', 1, chumbo.now() - interval '1 minute' from generate_series(1, 20) i;
insert into chumbo.state_entries (partition, namespace, key, value, revision, expires_at)
  select '\x00'::bytea, 'prefs', 'live' || i, '1', 1, chumbo.now() + interval '1 hour' from generate_series(1, 5) i;
select pg_temp.st(:'bob', 'put', '{"ns":"prefs","key":"trigger","value":1}') -> 'ok' as bob_writes;
select count(*) filter (where key like 'old%') as expired_left, count(*) filter (where key like 'live%') as live_left
  from chumbo.state_entries where partition = '\x00';
select pg_temp.st(:'bob', 'delete', '{"ns":"prefs","key":"trigger"}') -> 'ok' as bob_deletes;
select count(*) filter (where key like 'old%') as expired_left from chumbo.state_entries where partition = '\x00';
select chumbo.prune_state() as pruned_by_job;
select count(*) as left_after_job from chumbo.state_entries where partition = '\x00';

-- 7. At most 1000 keys per caller (updates of existing keys still work at the limit).
create temp table alice_partition as
  select e.partition from chumbo.state_entries e where e.namespace = 'drafts' and e.key = 'memo';
select count(*) as alice_keys from chumbo.state_entries where partition = (table alice_partition);
insert into chumbo.state_entries (partition, namespace, key, value, revision)
  select (table alice_partition), 'drafts', 'filler' || i, '0', 1
    from generate_series(1, 1000 - (select count(*) from chumbo.state_entries where partition = (table alice_partition))) i;
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"one-too-many","value":1}') as key_quota;
select pg_temp.st(:'alice', 'put', '{"ns":"drafts","key":"filler1","value":2}') -> 'ok' as update_at_quota;
select pg_temp.st(:'bob', 'put', '{"ns":"drafts","key":"one-too-many","value":1}') -> 'ok' as bob_has_own_quota;
rollback;
