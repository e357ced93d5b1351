-- Lifetimes pinned at their edges on the pinned clock (chumbo.now(), never a sleep): the last
-- second a token or stored outcome is honoured and the first second it is not. Signed tokens hold
-- their expiry "x" in whole Unix seconds and are refused once x < now (so second x itself is still
-- inside): approval tokens x = issue + 300 s (src/approval.rs, "valid for 5 minutes"), MRTR
-- requestStates x = issue + 600 s (src/call/mrtr.rs), run handles x = issue + run_ttl_seconds
-- (src/bookkeeping/runs.rs). Idempotent outcomes answer while expires_at > now, expires_at = stored +
-- idempotency_ttl_seconds (src/idempotency.rs), so their last second is ttl - 1. Page cursors:
-- tests/regress/sql/paged_results.sql (at cursor_ttl_seconds honoured, one second later expired).
-- Each "outside" call comes before the "inside" one: a refused token is not consumed, so the
-- inside call also shows the outside one did not use it up.
-- Red if a lifetime moved by a second either way (>= for >, a constant changed).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create table public.ttl_writes (n serial, what text);
grant select, insert on public.ttl_writes to authenticated;
grant usage on sequence public.ttl_writes_n_seq to authenticated;
create function mcp.confirm_me() returns text language sql as $$ select 'confirmed and ran' $$;
comment on function mcp.confirm_me() is '@mcp {"approval": true}';
create function mcp.ask_name() returns text language plpgsql as $$
begin
  return 'hello ' || (chumbo.input('name', '{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}') #>> '{content,name}');
end $$;
create function mcp.write_once(what text) returns text language sql as $$
  insert into public.ttl_writes (what) values (what) returning 'write #' || n $$;
revoke execute on function mcp.confirm_me(), mcp.ask_name(), mcp.write_once(text) from public;
grant execute on function mcp.confirm_me(), mcp.ask_name(), mcp.write_once(text) to authenticated;
select chumbo.configure('{"run_ttl_seconds": 60, "idempotency_ttl_seconds": 60}') is not null as configured;

create function pg_temp.call(tool text, args jsonb, extra jsonb default '{}', modern boolean default false) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args)
      || case when modern then jsonb_build_object('_meta', jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                                                    'io.modelcontextprotocol/clientCapabilities', '{"elicitation":{}}'::jsonb))
              else '{}' end || extra),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.shown(r jsonb) returns text language sql as $$
  select coalesce(r #>> '{result,resultType}' || ' ' || (select string_agg(k, ',') from jsonb_object_keys(r #> '{result,inputRequests}') k),
                  split_part(r #>> '{result,content,0,text}', E'\n', 1), 'error: ' || (r #>> '{error,message}')) $$;
create function pg_temp.at(t text) returns text language sql as $$ select set_config('chumbo.pinned_now', t, true) $$;

-- everything issued at 2030-01-01 00:00:00
select pg_temp.at('2030-01-01 00:00:00+00') as issued_at;
create temp table issued as
select pg_temp.call('confirm_me', '{}') #>> '{result,_meta,io.chumbo/confirmation,token}' as approval_token,
       (pg_temp.call('confirm_me', '{}') #>> '{result,_meta,io.chumbo/confirmation,expiresInSeconds}')::int as approval_says_seconds,
       pg_temp.call('ask_name', '{}', '{}', true) #>> '{result,requestState}' as request_state,
       pg_temp.call('ask_name', '{}', '{"_meta":{"io.chumbo/run":true}}', true) #>> '{result,_meta,io.chumbo/run}' as run_handle,
       pg_temp.shown(pg_temp.call('write_once', '{"what":"first"}', '{"_meta":{"io.chumbo/idempotency-key":"k1"}}')) as idempotent_first;
select approval_says_seconds, (regress.token_payload(approval_token) ->> 'x')::bigint - extract(epoch from timestamptz '2030-01-01 00:00:00+00')::bigint as approval_x,
       (regress.token_payload(request_state) ->> 'x')::bigint - extract(epoch from timestamptz '2030-01-01 00:00:00+00')::bigint as request_state_x,
       (regress.token_payload(run_handle) ->> 'x')::bigint - extract(epoch from timestamptz '2030-01-01 00:00:00+00')::bigint as run_handle_x,
       idempotent_first
  from issued;

-- idempotent outcome (60 s): replayed at 59 s, gone at 60 s (the tool runs again)
select pg_temp.at('2030-01-01 00:00:59+00') as at,
       pg_temp.shown(pg_temp.call('write_once', '{"what":"first"}', '{"_meta":{"io.chumbo/idempotency-key":"k1"}}')) as idempotent_retry;
select pg_temp.at('2030-01-01 00:01:00+00') as at,
       pg_temp.shown(pg_temp.call('write_once', '{"what":"first"}', '{"_meta":{"io.chumbo/idempotency-key":"k1"}}')) as idempotent_retry;

-- run handle (run_ttl_seconds 60): refused at 61 s, honoured at 60 s
select pg_temp.at('2030-01-01 00:01:01+00') as at, pg_temp.shown(pg_temp.call('write_once', '{"what":"run"}',
         jsonb_build_object('_meta', jsonb_build_object('io.chumbo/run', run_handle)))) as run_handle from issued;
select pg_temp.at('2030-01-01 00:01:00+00') as at, pg_temp.shown(pg_temp.call('write_once', '{"what":"run"}',
         jsonb_build_object('_meta', jsonb_build_object('io.chumbo/run', run_handle)))) as run_handle from issued;

-- approval token (5 minutes): refused at 301 s, honoured (once) at 300 s
select pg_temp.at('2030-01-01 00:05:01+00') as at,
       pg_temp.shown(pg_temp.call('confirm_me', jsonb_build_object('_chumbo_confirm', approval_token))) as approval_token from issued;
select pg_temp.at('2030-01-01 00:05:00+00') as at,
       pg_temp.shown(pg_temp.call('confirm_me', jsonb_build_object('_chumbo_confirm', approval_token))) as approval_token from issued;

-- MRTR requestState (10 minutes): refused at 601 s, honoured (once) at 600 s
select pg_temp.at('2030-01-01 00:10:01+00') as at, pg_temp.shown(pg_temp.call('ask_name', '{}', jsonb_build_object('requestState', request_state,
         'inputResponses', '{"name":{"action":"accept","content":{"name":"Ann"}}}'::jsonb), true)) as request_state from issued;
select pg_temp.at('2030-01-01 00:10:00+00') as at, pg_temp.shown(pg_temp.call('ask_name', '{}', jsonb_build_object('requestState', request_state,
         'inputResponses', '{"name":{"action":"accept","content":{"name":"Ann"}}}'::jsonb), true)) as request_state from issued;
rollback;
