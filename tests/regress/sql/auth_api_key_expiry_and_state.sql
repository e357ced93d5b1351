-- Claims (README "Settings" auth_mode api-key, "Durable state"): an API key past its
-- expires_at is refused (401) while an unexpired one works; each key is its own durable-state
-- partition (two keys of the same role see different state); a rotated credential (a new key
-- replacing a revoked one) starts empty; rotating the deployment key ('state') starts every
-- partition empty. Through chumbo.http with x-api-key / Authorization: Bearer.
begin;
select chumbo.configure('{"auth_mode":"api-key","state_namespaces":["notes"]}') ->> 'auth_mode' as mode;
create function pg_temp.http(key text, body jsonb) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', jsonb_build_object('x-api-key', key, 'mcp-protocol-version', '2025-11-25'), 'body', body::text)) $$;
-- note(value): remembers value under "memo" when given; returns what is stored for the caller
create function mcp.ak_note(value text default null) returns jsonb language plpgsql as $$
begin
  if value is not null then
    perform chumbo.state_put('notes', 'memo', to_jsonb(value));
  end if;
  return jsonb_build_object('memo', chumbo.state_get('notes', 'memo') -> 'value');
end $$;
revoke execute on function mcp.ak_note(text) from public;
grant execute on function mcp.ak_note(text) to authenticated;
create function pg_temp.note(key text, value text default null) returns text language sql as $$
  select case when r ->> 'status' = '200' and r #> '{body,result,structuredContent}' ? 'memo'
              then coalesce(r #>> '{body,result,structuredContent,memo}', '(nothing stored)')
              else r ->> 'status' || ' ' || coalesce(r #>> '{body,error,message}', r::text) end
    from pg_temp.http(key, jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
           'params', jsonb_build_object('name', 'ak_note', 'arguments', jsonb_strip_nulls(jsonb_build_object('value', value))))) r $$;

-- 1. expiry, on chumbo.now() pinned (superuser, transaction-local): a key expiring at 00:10 works
-- until then and is refused (401, ApiKey challenge, request id echoed) from 00:10 on
select chumbo.create_api_key('authenticated', '{}', 'expiring', '2026-01-01 00:10:00+00') as exp_key \gset
create function pg_temp.at(pinned text) returns text language plpgsql as $$
declare r jsonb;
begin
  perform set_config('chumbo.pinned_now', pinned, true);
  r := pg_temp.http(current_setting('x.exp_key'), '{"jsonrpc":"2.0","id":3,"method":"tools/list"}');
  return concat_ws(' ', r ->> 'status', r -> 'headers' ->> 'www-authenticate', 'id ' || (r #>> '{body,id}'));
end $$;
select set_config('x.exp_key', :'exp_key', true) is not null as key_kept;
select pinned, pg_temp.at(pinned) as outcome
  from unnest(array['2026-01-01 00:00:00+00', '2026-01-01 00:09:59.999+00', '2026-01-01 00:10:00+00', '2027-01-01 00:00:00+00'])
       with ordinality as t(pinned, n) order by n;
-- a key that expired a second ago by the wall clock is refused, one without expiry works
select set_config('chumbo.pinned_now', '', true) as wall_clock;
select chumbo.create_api_key('authenticated', '{}', 'expired', now() - interval '1 second') as expired_key \gset
select chumbo.create_api_key('authenticated', '{}', 'no expiry') as forever_key \gset
select r -> 'status' as expired_status from pg_temp.http(:'expired_key', '{"jsonrpc":"2.0","id":4,"method":"tools/list"}') r;
select r -> 'status' as no_expiry_status from pg_temp.http(:'forever_key', '{"jsonrpc":"2.0","id":5,"method":"tools/list"}') r;

-- 2. partitions: two keys of the same role have separate state
select chumbo.create_api_key('authenticated', '{}', 'first') as key1 \gset
select chumbo.create_api_key('authenticated', '{}', 'second') as key2 \gset
select pg_temp.note(:'key1', 'written with key 1') as key1_writes;
select pg_temp.note(:'key2') as key2_reads;
select pg_temp.note(:'key2', 'written with key 2') as key2_writes;
select pg_temp.note(:'key1') as key1_reads, pg_temp.note(:'key2') as key2_reads_own;
-- the Authorization: Bearer form is the same credential
select r #>> '{body,result,structuredContent,memo}' as key1_as_bearer
  from chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', jsonb_build_object('authorization', 'Bearer ' || :'key1', 'mcp-protocol-version', '2025-11-25'),
         'body', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ak_note"}}')) r;
select count(distinct partition) as partitions from chumbo.state_entries where namespace = 'notes';

-- 3. rotation: key 1 is replaced by key 3 (same role, scopes and label); key 3 starts empty,
-- key 1 stops working, key 2 is unaffected
select chumbo.create_api_key('authenticated', '{}', 'first') as key3 \gset
select chumbo.revoke_api_key(split_part(:'key1', '_', 2)::uuid) as key1_revoked;
select pg_temp.note(:'key3') as rotated_key_reads, pg_temp.note(:'key1') as old_key, pg_temp.note(:'key2') as key2_still;

-- 4. rotating the deployment key: every credential starts empty
select chumbo.rotate_key('state');
select pg_temp.note(:'key2') as key2_after_key_rotation, pg_temp.note(:'key3') as key3_after_key_rotation;
rollback;
