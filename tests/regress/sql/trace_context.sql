-- W3C Trace Context in (issue 30, items 1 and 4; application_name at the end): a valid `traceparent`, from the HTTP header or
-- from the message's `params._meta` (which wins for that message), makes its trace id the
-- request's: a failing call's message and its audit row carry it. A malformed one is ignored,
-- never an error and never echoed: the request starts a trace of its own (32 hex digits, like a
-- W3C trace id). A request refused before any method runs keeps the header's trace id too.
begin;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
create function mcp.fails() returns text language plpgsql as $$ begin raise exception 'no project selected'; end $$;
revoke execute on function mcp.fails() from public;
grant execute on function mcp.fails() to anon;
create function pg_temp.http(headers jsonb, body text) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
    'headers', headers || '{"mcp-protocol-version":"2025-11-25","content-type":"application/json"}', 'body', body)) $$;
create function pg_temp.call(headers jsonb, meta jsonb default null) returns jsonb language sql as $$
  select pg_temp.http(headers, jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', 'fails', 'arguments', '{}'::jsonb) || coalesce(jsonb_build_object('_meta', meta), '{}'))::text) $$;
create table public.trace_seen (label text, answer text, audit_trace text);
create function pg_temp.see(label text, answer jsonb) returns text language sql as $$
  insert into public.trace_seen select label, answer::text, (select trace_id from chumbo.audit_events order by id desc limit 1)
  returning label $$;

select pg_temp.see('header', pg_temp.call('{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'));
select pg_temp.see('meta wins', pg_temp.call('{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}',
                                             '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}'));
select pg_temp.see('bad meta, good header', pg_temp.call('{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}',
                                                         '{"traceparent":"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-00"}'));
select pg_temp.see('uppercase header', pg_temp.call('{"traceparent":"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"}'));
select pg_temp.see('zero trace id', pg_temp.call('{"traceparent":"00-00000000000000000000000000000000-b7ad6b7169203331-01"}'));
select pg_temp.see('version ff', pg_temp.call('{"traceparent":"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'));
select pg_temp.see('injected', pg_temp.call('{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}]<script>"}'));
select pg_temp.see('none', pg_temp.call('{}'));
select label,
       substring(answer from 'trace id ([0-9a-f]+)') as shown,
       substring(answer from 'trace id ([0-9a-f]+)') = audit_trace as is_its_audit_row,
       audit_trace ~ '^[0-9a-f]{32}$' as w3c_shaped,
       answer !~* '0af7651916cd43dd8448eb211c80319c-|script|B7AD6B' as nothing_echoed
  from public.trace_seen
 where label in ('header', 'meta wins', 'bad meta, good header')
 order by label;
-- the ignored ones: each a trace of its own, never the malformed value
select label,
       substring(answer from 'trace id ([0-9a-f]+)') = audit_trace as is_its_audit_row,
       audit_trace ~ '^[0-9a-f]{32}$' as w3c_shaped,
       audit_trace not in ('0af7651916cd43dd8448eb211c80319c', '00000000000000000000000000000000') as a_new_trace,
       answer !~* 'script|0AF7651916CD|b7ad6b7169203331' as nothing_echoed
  from public.trace_seen
 where label not in ('header', 'meta wins', 'bad meta, good header')
 order by label;
select count(distinct audit_trace) = 5 as each_its_own
  from public.trace_seen where label not in ('header', 'meta wins', 'bad meta, good header');

-- chumbo.handle (trusted SQL callers): _meta only
select substring(chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 2, 'method', 'tools/call', 'params',
         jsonb_build_object('name', 'fails', 'arguments', '{}'::jsonb,
           '_meta', jsonb_build_object('traceparent', '00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'))),
         '{"role":"anon"}')::text from 'trace id ([0-9a-f]+)') as handle_trace;

-- refused before any method runs (415: not JSON): its audit row has the header's trace id
select r -> 'status' as status
  from chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'headers',
         '{"content-type":"text/plain","traceparent":"00-6bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'::jsonb,
         'body', 'x')) r;
select trace_id, outcome from chumbo.audit_events order by id desc limit 1;

-- item 4: while a tool runs, application_name names its trace (pg_stat_activity, %a in the log);
-- the session's own name is back after the call
create function mcp.whoami() returns text language sql as $$ select current_setting('application_name') $$;
grant execute on function mcp.whoami() to anon;
set application_name = 'regress-session';
select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 3, 'method', 'tools/call', 'params',
         jsonb_build_object('name', 'whoami', '_meta',
           jsonb_build_object('traceparent', '00-7bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'))),
         '{"role":"anon"}') #>> '{result,content,0,text}' as during_the_call,
       current_setting('application_name') as after_the_call;
rollback;
