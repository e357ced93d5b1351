-- Run correlation (issue 13, 5): _meta {"io.chumbo/run": true} starts a run and the result's
-- _meta carries its handle (HMAC-signed, bound to the principal, expiring with
-- run_ttl_seconds); later requests pass the handle. The run id reaches capability code
-- (chumbo.run_id(), to scope state by run), the audit events and the stored outcomes of
-- idempotent calls. Forged, tampered, foreign (Bob replaying Alice's) and expired handles are
-- refused with -32602.
-- Red if: a handle verifies for another principal or after tampering, or the run id is missing
-- from the audit events of the run's requests.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create function mcp.which_run() returns text language sql as $$ select coalesce(chumbo.run_id(), 'no run') $$;
revoke execute on function mcp.which_run() from public;
grant execute on function mcp.which_run() to authenticated;
create function pg_temp.call(claims jsonb, run jsonb, key text default null) returns jsonb language sql as $$
  select regress.rpc(claims, 'tools/call', jsonb_build_object('name', 'which_run', 'arguments', '{}'::jsonb,
    '_meta', jsonb_strip_nulls(jsonb_build_object('io.chumbo/run', run, 'io.chumbo/idempotency-key', key)))) $$;
create function pg_temp.shown(r jsonb) returns text language sql as $$
  select coalesce('ok: ' || (r #>> '{result,content,0,text}'), 'rpc error ' || (r #>> '{error,code}') || ': ' || (r #>> '{error,message}')) $$;
create temp table runs (who text, r jsonb);
delete from chumbo.audit_events;

select pg_temp.shown(regress.rpc(:'alice', 'tools/call', '{"name":"which_run"}')) as without_run;
-- start a run on tools/list: the handle comes back in _meta
insert into runs select 'alice', regress.rpc(:'alice', 'tools/list', '{"_meta":{"io.chumbo/run":true}}');
select r #>> '{result,_meta,io.chumbo/run}' ~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' as handle_issued,
       r #> '{result}' ? 'tools' as still_lists from runs;
-- the run id inside the capability, twice with the same handle, not re-issued
select pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}') #>> '{result,content,0,text}' ~ '^[0-9a-f]{32}$' as run_id_seen,
       pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}') #>> '{result,content,0,text}'
         = pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}') #>> '{result,content,0,text}' as same_run,
       pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}') #> '{result,_meta}' is null as not_reissued
  from runs;
-- audit events carry it
select count(distinct run_id) as runs_in_audit, count(*) filter (where run_id is not null) as events_with_run
  from chumbo.audit_events where capability = 'which_run' or method = 'tools/list';
-- stored outcomes of idempotent calls in a run carry it
select pg_temp.shown(pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}', 'k-run')) <> 'ok: no run' as idempotent_in_run from runs;
select run_id is not null as outcome_has_run from chumbo.idempotency_outcomes where tool = 'which_run';
-- refused: Bob replaying Alice's handle, a tampered handle, a forged one, a wrong type
select pg_temp.shown(pg_temp.call(:'bob', r #> '{result,_meta,io.chumbo/run}')) as bob_replays from runs;
select pg_temp.shown(pg_temp.call(:'alice', to_jsonb(regexp_replace(r #>> '{result,_meta,io.chumbo/run}', '^.', 'x')))) as tampered from runs;
select pg_temp.shown(pg_temp.call(:'alice', to_jsonb(regress.b64url(convert_to('{"p":"x","r":"00","x":99999999999}', 'utf8')) || '.' || regress.b64url('\x00'::bytea)))) as forged;
select pg_temp.shown(pg_temp.call(:'alice', '42')) as wrong_type;
-- a run started by Bob is his
select pg_temp.shown(pg_temp.call(:'bob', regress.rpc(:'bob', 'tools/call', '{"name":"which_run","_meta":{"io.chumbo/run":true}}') #> '{result,_meta,io.chumbo/run}')) ~ '^ok: [0-9a-f]{32}$' as bob_own_run;
-- expiry (run_ttl_seconds on the pinned clock)
select chumbo.configure('{"run_ttl_seconds": 60}') is not null as configured;
set local chumbo.pinned_now = '2030-01-01 00:00:00+00';
insert into runs select 'pinned', regress.rpc(:'alice', 'tools/list', '{"_meta":{"io.chumbo/run":true}}');
set local chumbo.pinned_now = '2030-01-01 00:00:59+00';
select pg_temp.shown(pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}')) ~ '^ok: [0-9a-f]{32}$' as within_ttl from runs where who = 'pinned';
set local chumbo.pinned_now = '2030-01-01 00:01:01+00';
select pg_temp.shown(pg_temp.call(:'alice', r #> '{result,_meta,io.chumbo/run}')) as expired from runs where who = 'pinned';
-- chumbo.run_id() outside a request is null
select chumbo.run_id() is null as outside_request;
rollback;
