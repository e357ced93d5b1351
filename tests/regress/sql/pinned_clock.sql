-- chumbo.now() is the clock of every time-dependent part of chumbo (rate windows, state and
-- sandbox expiry, MRTR lifetimes, API key expiry). A superuser can pin it for a transaction, so
-- tests control time; nobody else can, and a capability cannot.
begin;
select chumbo.now() between clock_timestamp() - interval '1 minute' and clock_timestamp() as wall_clock;
set local chumbo.pinned_now = '2030-01-01 00:00:59+00';
select chumbo.now() as pinned;
-- a fixed window seen at its last second: 3 hits, then refused for exactly 1 s
select n, chumbo._rate_hit('regress-340', 60, 3) as retry_after from generate_series(1, 4) n;
set local chumbo.pinned_now = '2030-01-01 00:01:00+00';
select chumbo._rate_hit('regress-340', 60, 3) as next_window;
-- API key expiry follows the clock
select chumbo.create_api_key('authenticated', expires_at => '2030-01-01 00:02:00+00') as key \gset
select chumbo.configure('{"auth_mode":"api-key"}') ->> 'auth_mode' as mode;
create function pg_temp.ping(key text) returns text language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'headers', jsonb_build_object('x-api-key', key),
    'body', '{"jsonrpc":"2.0","id":1,"method":"ping"}')) ->> 'status' $$;
select pg_temp.ping(:'key') as before_expiry;
set local chumbo.pinned_now = '2030-01-01 00:02:01+00';
select pg_temp.ping(:'key') as after_expiry;
reset chumbo.pinned_now;
-- only superusers may pin it
savepoint s;
set local role authenticated;
set local chumbo.pinned_now = '2000-01-01';
rollback to savepoint s;
-- and a capability cannot, even through set_config
create function mcp.time_travel() returns timestamptz language sql volatile
  as $$ select set_config('chumbo.pinned_now', '2000-01-01', true)::timestamptz $$;
grant execute on function mcp.time_travel() to authenticated;
select regexp_replace(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"time_travel","arguments":{}}}',
  '{"role":"authenticated","sub":"aaaaaaaa-0000-4000-8000-000000000001"}') #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', '') as capability;
-- nor can anyone create a placeholder under chumbo.* for the library to adopt
savepoint s;
set local role authenticated;
set local chumbo.anything = 'x';
rollback to savepoint s;

-- What a tool sees of the clock (audit gap G6): now() is the transaction's start as always, never
-- the pin, and chumbo.now() is not the tool's to call (owner only). A tool cannot move or drop the
-- pin chumbo's own decisions read: not as authenticated
-- (SUSET: permission), not through a superuser's SECURITY DEFINER helper (superuser, so only the
-- setting's GUC_NOT_WHILE_SEC_REST flag refuses it: the call is refused like an identity change),
-- and RESET ALL leaves it (GUC_NO_RESET_ALL; the tool still reads the pin after it). Red if
-- GUC_NOT_WHILE_SEC_REST went: the definer rows would run and show the pin 2000-01-01 or none;
-- if GUC_NO_RESET_ALL went: RESET ALL (which needs no privilege) would drop the pin.
set local chumbo.pinned_now = '2030-06-01 12:00:00+00';
create function public.definer_pin(action text) returns void language plpgsql security definer set search_path = ''
  as $$ begin execute action; end $$;
grant execute on function public.definer_pin(text) to authenticated;
create function mcp.clock(action text) returns jsonb language plpgsql volatile as $$
begin
  execute action;
  return jsonb_build_object('pin', current_setting('chumbo.pinned_now', true),
                            'now_is_transaction_start', now() = transaction_timestamp(),
                            'now_is_the_pin', now() = '2030-06-01 12:00:00+00'::timestamptz,
                            'may_call_chumbo_now', has_function_privilege('chumbo.now()', 'execute'));
end $$;
grant execute on function mcp.clock(text) to authenticated;
select label, regexp_replace(coalesce(r #>> '{result,structuredContent}', r #>> '{result,content,0,text}'), ' \(trace id [0-9a-f]+\)$', '') as tool_sees
from (values
  ('honest',                 'select 1'),
  ('set local',              'set local chumbo.pinned_now = ''2000-01-01'''),
  ('set_config session',     'select set_config(''chumbo.pinned_now'', ''2000-01-01'', false)'),
  ('reset',                  'reset chumbo.pinned_now'),
  ('definer set local',      'select public.definer_pin(''set local chumbo.pinned_now = ''''2000-01-01'''''')'),
  ('definer set_config',     'select public.definer_pin(''select set_config(''''chumbo.pinned_now'''', ''''2000-01-01'''', false)'')'),
  ('definer reset',          'select public.definer_pin(''reset chumbo.pinned_now'')'),
  ('reset all',              'reset all')
) as t(label, action),
lateral chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
  'params', jsonb_build_object('name', 'clock', 'arguments', jsonb_build_object('action', action))),
  '{"role":"authenticated","sub":"aaaaaaaa-0000-4000-8000-000000000001"}') r;
-- the session's pin is where the superuser put it
select chumbo.now() = '2030-06-01 12:00:00+00' as still_pinned;
rollback;
