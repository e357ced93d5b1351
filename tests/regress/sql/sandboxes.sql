-- Sandboxes (chumbo.sandbox_register/touch/for_owner/idle_stop), called by capability functions
-- through chumbo.handle as Alice and Bob: registration, reuse, the tenant and owner boundaries
-- (sandbox_forbidden), every error, and the idle-stop job with a stopper that records its calls
-- and fails for some sandboxes (left running, error recorded, retried by the next run).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function pg_temp.tool(claims jsonb, name text, args jsonb default '{}')
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
          'params', jsonb_build_object('name', name, 'arguments', args)), claims) $$;
create function mcp.sb(op text, a jsonb default '{}') returns jsonb language plpgsql as $$
declare
  r jsonb;
begin
  case op
    when 'register' then r := to_jsonb(chumbo.sandbox_register(a ->> 'provider', a ->> 'psid', a ->> 'tenant',
        coalesce((a ->> 'idle')::int, 600), (a ->> 'expires_at')::timestamptz, a ->> 'conversation'));
    when 'register_null_idle' then r := to_jsonb(chumbo.sandbox_register(a ->> 'provider', a ->> 'psid', a ->> 'tenant', null));
    when 'touch' then r := chumbo.sandbox_touch((a ->> 'id')::uuid, a ->> 'tenant');
    when 'reuse' then r := chumbo.sandbox_for_owner(a ->> 'provider', a ->> 'tenant', a ->> 'conversation');
  end case;
  return jsonb_build_object('ok', r);
exception when others then
  return jsonb_build_object('sqlstate', sqlstate, 'error', sqlerrm);
end $$;
revoke execute on function mcp.sb(text, jsonb) from public;
grant execute on function mcp.sb(text, jsonb) to anon, authenticated;
create function pg_temp.sb(claims jsonb, op text, a jsonb default '{}') returns jsonb language sql
  as $$ select pg_temp.tool(claims, 'sb', jsonb_build_object('op', op, 'a', a)) -> 'result' -> 'structuredContent' $$;
-- sandbox ids are random: show them by name
create temp table ids (name text primary key, id uuid);
create function pg_temp.named(j jsonb) returns jsonb language sql
  as $$ select case when j ? 'ok' and jsonb_typeof(j -> 'ok') = 'string'
                    then jsonb_build_object('ok', coalesce((select name from ids where id::text = j ->> 'ok'), 'unnamed id'))
                    when jsonb_typeof(j -> 'ok') = 'object'
                    then jsonb_build_object('ok', (j -> 'ok') - '{created_at,last_used_at,stopped_at,expires_at}'::text[]
                         || jsonb_build_object('id', coalesce((select name from ids where id::text = j #>> '{ok,id}'), 'unnamed id')))
                    else j end $$;

-- 1. register, reuse, touch
insert into ids select 'alice-acme-1', (pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"fb-1","tenant":"acme"}') ->> 'ok')::uuid;
insert into ids select 'alice-acme-conv', (pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"fb-2","tenant":"acme","conversation":"conv-7","idle":60}') ->> 'ok')::uuid;
insert into ids select 'bob-globex-1', (pg_temp.sb(:'bob', 'register', '{"provider":"fakebox","psid":"fb-3","tenant":"globex"}') ->> 'ok')::uuid;
select name, id is not null as registered from ids order by name;
select s.provider_sandbox_id, i.name, s.tenant, s.conversation_id, s.status, s.idle_seconds, length(s.owner) as owner_digest_length,
       s.owner !~ 'aaaaaaaa|bbbbbbbb' as owner_is_no_subject
  from chumbo.sandboxes s join ids i using (id) order by 1;
-- registering the same provider sandbox again is idempotent for its owner and tenant
select pg_temp.named(pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"fb-1","tenant":"acme"}')) as register_again;
-- reuse: the most recently used running one, of this owner, provider, tenant (and conversation)
select pg_temp.named(pg_temp.sb(:'alice', 'reuse', '{"provider":"fakebox","tenant":"acme"}')) as reuse_any;
select pg_temp.named(pg_temp.sb(:'alice', 'reuse', '{"provider":"fakebox","tenant":"acme","conversation":"conv-7"}')) as reuse_conversation;
select pg_temp.sb(:'alice', 'reuse', '{"provider":"fakebox","tenant":"acme","conversation":"conv-8"}') as other_conversation;
select pg_temp.sb(:'alice', 'reuse', '{"provider":"otherbox","tenant":"acme"}') as other_provider;
select pg_temp.named(pg_temp.sb(:'alice', 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1'), 'tenant', 'acme'))) as touch;
select pg_temp.named(pg_temp.sb(:'alice', 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1')))) as touch_without_tenant;

-- 2. never across tenants or owners
select pg_temp.sb(:'alice', 'reuse', '{"provider":"fakebox","tenant":"globex"}') as alice_in_globex;
select pg_temp.sb(:'bob', 'reuse', '{"provider":"fakebox","tenant":"acme"}') as bob_in_acme;
select pg_temp.named(pg_temp.sb(:'bob', 'reuse', '{"provider":"fakebox","tenant":"globex"}')) as bob_own;
select pg_temp.sb(:'alice', 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1'), 'tenant', 'globex')) as other_tenant_touch;
select pg_temp.sb(:'bob', 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1'))) as bob_touches_alice;
select pg_temp.sb(:'bob', 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1'), 'tenant', 'acme')) as bob_touches_alice_in_acme;
select pg_temp.sb(:'bob', 'register', '{"provider":"fakebox","psid":"fb-1","tenant":"acme"}') as bob_registers_alice_sandbox;
select pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"fb-1","tenant":"globex"}') as alice_moves_tenant;
select pg_temp.sb(:'bob', 'touch', '{"id":"00000000-0000-4000-8000-000000000000"}') as not_found;
select pg_temp.sb(null, 'register', '{"provider":"fakebox","psid":"fb-9","tenant":"acme"}') as anonymous_register;
select pg_temp.sb(null, 'reuse', '{"provider":"fakebox","tenant":"acme"}') as anonymous_reuse;
select pg_temp.sb(null, 'touch', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1'))) as anonymous_touch;
-- what the model sees uncaught
create function mcp.sb_raw(id uuid) returns jsonb language sql as $$ select chumbo.sandbox_touch(id) $$;
revoke execute on function mcp.sb_raw(uuid) from public;
grant execute on function mcp.sb_raw(uuid) to authenticated;
select regexp_replace(pg_temp.tool(:'bob', 'sb_raw', jsonb_build_object('id', (select id from ids where name = 'alice-acme-1')))
         -> 'result' -> 'content' -> 0 ->> 'text', 'trace id [0-9a-f]+', 'trace id <masked>') as uncaught;

-- 3. argument errors
select v.what, pg_temp.sb(:'alice', 'register', v.a) ->> 'error' as error
  from (values ('empty provider', '{"provider":"","psid":"x","tenant":"acme"}'::jsonb),
               ('provider charset', '{"provider":"fake box","psid":"x","tenant":"acme"}'),
               ('no provider id', '{"provider":"fakebox","tenant":"acme"}'),
               ('long provider id', jsonb_build_object('provider', 'fakebox', 'psid', repeat('x', 257), 'tenant', 'acme')),
               ('empty tenant', '{"provider":"fakebox","psid":"x","tenant":""}'),
               ('no tenant', '{"provider":"fakebox","psid":"x"}'),
               ('idle 0', '{"provider":"fakebox","psid":"x","tenant":"acme","idle":0}'),
               ('idle over a week', '{"provider":"fakebox","psid":"x","tenant":"acme","idle":604801}'),
               ('expiry in the past', '{"provider":"fakebox","psid":"x","tenant":"acme","expires_at":"2020-01-01T00:00:00Z"}'),
               ('empty conversation', '{"provider":"fakebox","psid":"x","tenant":"acme","conversation":""}')) v(what, a);
select pg_temp.sb(:'alice', 'register_null_idle', '{"provider":"fakebox","psid":"x","tenant":"acme"}') ->> 'sqlstate' as null_idle_sqlstate;
-- at most 100 running sandboxes per owner
insert into chumbo.sandboxes (provider, provider_sandbox_id, owner, tenant, idle_seconds)
  select 'fakebox', 'filler-' || i, s.owner, 'acme', 600
    from chumbo.sandboxes s, generate_series(1, 98) i where s.id = (select id from ids where name = 'alice-acme-1');
select pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"fb-101","tenant":"acme"}') as sandbox_quota;
delete from chumbo.sandboxes where provider_sandbox_id like 'filler-%';

-- 4. idle stop. The stopper records each call; it fails for provider ids starting with "flaky".
create table public.stopped_calls (n serial, provider text, provider_sandbox_id text);
create table public.flaky_ok (ok boolean);
insert into public.flaky_ok values (false);
create function public.stop_sandbox(provider text, provider_sandbox_id text) returns void language plpgsql as $$
begin
  if provider_sandbox_id like 'flaky%' and not (select ok from public.flaky_ok) then
    raise exception 'provider unreachable for %', provider_sandbox_id;
  end if;
  insert into public.stopped_calls (provider, provider_sandbox_id) values (provider, provider_sandbox_id);
end $$;
savepoint no_stopper;
\set VERBOSITY terse
select chumbo.configure('{"sandbox_stopper": null}') ->> 'sandbox_stopper' as sandbox_stopper;
select chumbo.sandbox_idle_stop();
rollback to savepoint no_stopper;
select chumbo.configure('{"sandbox_stopper": "public.missing_stopper"}') ->> 'sandbox_stopper' as sandbox_stopper;
select chumbo.sandbox_idle_stop();
rollback to savepoint no_stopper;
\set VERBOSITY default
select chumbo.configure('{"sandbox_stopper": "public.stop_sandbox"}') ->> 'sandbox_stopper' as sandbox_stopper;
-- from here time is pinned (chumbo.now(); set local chumbo.pinned_now: superuser, this
-- transaction only) and moved by the test, so idle and expiry never depend on the wall clock
set local chumbo.pinned_now = '2026-01-01 00:00:00+00';
insert into ids select 'alice-flaky', (pg_temp.sb(:'alice', 'register', '{"provider":"fakebox","psid":"flaky-1","tenant":"acme","idle":1}') ->> 'ok')::uuid;
insert into ids select 'alice-expiring', (pg_temp.sb(:'alice', 'register', jsonb_build_object('provider', 'fakebox', 'psid', 'fb-exp', 'tenant', 'acme',
  'expires_at', chumbo.now() + interval '1 second')) ->> 'ok')::uuid;
-- nothing is idle yet
select chumbo.sandbox_idle_stop() as stopped_now;
-- fb-1 and fb-3 idle for an hour, fb-2 (idle 60 s) used 30 s ago, flaky-1 idle 1 s; fb-exp expires in 1 s;
-- then 2 s pass
update chumbo.sandboxes set last_used_at = chumbo.now() - interval '1 hour' where provider_sandbox_id in ('fb-1', 'fb-3');
update chumbo.sandboxes set last_used_at = chumbo.now() - interval '30 seconds' where provider_sandbox_id = 'fb-2';
set local chumbo.pinned_now = '2026-01-01 00:00:02+00';
-- an idle one is no longer offered for reuse
select pg_temp.named(pg_temp.sb(:'alice', 'reuse', '{"provider":"fakebox","tenant":"acme"}')) -> 'ok' -> 'id' as reusable;
select chumbo.sandbox_idle_stop() as stopped;
select provider, provider_sandbox_id from public.stopped_calls order by 2;
select provider_sandbox_id, status, stopped_at is not null as has_stopped_at, attempts, last_error
  from chumbo.sandboxes order by 1;
-- a stopped sandbox is reported by touch and never reused; registering it again revives it
select pg_temp.named(pg_temp.sb(:'bob', 'touch', jsonb_build_object('id', (select id from ids where name = 'bob-globex-1')))) -> 'ok' ->> 'status' as bob_touch_stopped;
select pg_temp.sb(:'bob', 'reuse', '{"provider":"fakebox","tenant":"globex"}') as bob_reuse_stopped;
-- the next run retries the failing one; it fails again, then succeeds once the provider is back
select chumbo.sandbox_idle_stop() as retry_failing;
select provider_sandbox_id, status, attempts, last_error from chumbo.sandboxes where provider_sandbox_id = 'flaky-1';
update public.flaky_ok set ok = true;
select chumbo.sandbox_idle_stop() as retry_recovered;
select provider_sandbox_id, status, attempts, last_error from chumbo.sandboxes where provider_sandbox_id = 'flaky-1';
select count(*) as calls, count(distinct provider_sandbox_id) as distinct_sandboxes from public.stopped_calls;
-- max_sandboxes bounds one run, and a run takes the longest idle first (all idle here, each a
-- minute longer than the next by provider id: time is pinned, so nothing else orders them)
update chumbo.sandboxes s set status = 'running', stopped_at = null, last_attempt_at = null,
       last_used_at = chumbo.now() - interval '1 hour' - interval '1 minute' * (10 - o.n)
  from (select id, row_number() over (order by provider_sandbox_id) as n from chumbo.sandboxes) o
 where o.id = s.id;
select count(*) as running from chumbo.sandboxes where status = 'running';
select chumbo.sandbox_idle_stop(2) as bounded;
select string_agg(provider_sandbox_id, ' ' order by provider_sandbox_id) as still_running from chumbo.sandboxes where status = 'running';
select pg_temp.named(pg_temp.sb(:'bob', 'register', '{"provider":"fakebox","psid":"fb-3","tenant":"globex"}')) as bob_revives;
select provider_sandbox_id, status from chumbo.sandboxes where provider_sandbox_id = 'fb-3';
-- the stopper is called as a function with parameters, whatever the provider id holds
insert into ids select 'alice-quote', (pg_temp.sb(:'alice', 'register', jsonb_build_object('provider', 'fakebox', 'psid', 'x''); drop table public.stopped_calls; --', 'tenant', 'acme', 'idle', 1)) ->> 'ok')::uuid;
update chumbo.sandboxes set last_used_at = chumbo.now() - interval '1 hour' where id = (select id from ids where name = 'alice-quote');
select chumbo.sandbox_idle_stop() as stopped_with_hostile_id;
select provider_sandbox_id from public.stopped_calls where provider_sandbox_id like 'x%';
-- a second later, everything stopped so far is older than 0 seconds
set local chumbo.pinned_now = '2026-01-01 00:00:03+00';
select chumbo.prune_sandboxes('0 seconds') as pruned;
select count(*) as stopped_left from chumbo.sandboxes where status = 'stopped';
rollback;
