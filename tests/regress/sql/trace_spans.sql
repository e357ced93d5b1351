-- Spans out (issue 30, item 2): an edge that exports traces asks chumbo.http_parts for the
-- request's phases ("trace": true); they come back in the sixth column, `spans`, timed by the
-- extension in microseconds since the request began: the request's own phases (registry,
-- authenticate, identify, admit: one span, authenticate), and per message its facts (method,
-- target, id, protocol version, trace id and parent, outcome) and phases (policy, approval and
-- idempotency as one span, policy; execute; render; audit). A failing tool's execute phase is
-- there too. A message whose trace is not sampled (its traceparent's flags 00) has its facts and
-- no phases. Nothing of the arguments or the result is in them, and an edge that does not ask
-- gets null.
begin;
set local chumbo.pinned_now = '2026-01-01 00:00:30+00';
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
create function mcp.echo(words text) returns text language sql as $$ select 'said ' || words $$;
create function mcp.fails() returns text language plpgsql as $$ begin raise exception 'no project selected'; end $$;
revoke execute on function mcp.echo(text), mcp.fails() from public;
grant execute on function mcp.echo(text), mcp.fails() to anon;
create function pg_temp.spans(trace boolean, tool text, args jsonb, flags text default '01') returns jsonb language sql as $$
  select spans::jsonb from chumbo.http_parts(
    jsonb_build_object('method', 'POST', 'path', '/mcp', 'trace', trace,
      'headers', jsonb_build_object('content-type', 'application/json', 'mcp-protocol-version', '2025-11-25',
                                    'traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-' || flags))::text,
    jsonb_build_object('jsonrpc', '2.0', 'id', 7, 'method', 'tools/call',
      'params', jsonb_build_object('name', tool, 'arguments', args))::text) $$;

select pg_temp.spans(false, 'echo', '{"words":"zebra-secret"}') is null as none_unless_asked;
create table public.span_seen as select pg_temp.spans(true, 'echo', '{"words":"zebra-secret"}') as s;
select (select string_agg(x ->> 'name', ', ' order by (x ->> 'start_us')::bigint) from jsonb_array_elements(s -> 'spans') x) as request_phases,
       s #>> '{messages,0,method}' as method, s #>> '{messages,0,target}' as target,
       s #>> '{messages,0,request_id}' as request_id, s #>> '{messages,0,protocol_version}' as version,
       s #>> '{messages,0,trace_id}' as trace_id, s #>> '{messages,0,parent_id}' as parent_id,
       s #>> '{messages,0,trace_flags}' as flags,
       s #>> '{messages,0,outcome}' as outcome,
       (select string_agg(x ->> 'name', ', ' order by (x ->> 'start_us')::bigint) from jsonb_array_elements(s #> '{messages,0,spans}') x) as message_phases
  from public.span_seen;
-- times: every phase within its message, every message within the request, none backwards
select bool_and((x ->> 'start_us')::bigint <= (x ->> 'end_us')::bigint
                and (x ->> 'start_us')::bigint >= (s #>> '{messages,0,start_us}')::bigint
                and (x ->> 'end_us')::bigint <= (s #>> '{messages,0,end_us}')::bigint) as phases_within_message,
       (s #>> '{messages,0,end_us}')::bigint <= (s ->> 'total_us')::bigint as message_within_request
  from public.span_seen, jsonb_array_elements(s #> '{messages,0,spans}') x group by s;
select s::text !~ 'zebra|said' as nothing_of_arguments_or_result from public.span_seen;
-- a failing tool: its execute phase is recorded, the outcome says how it ended
select s #>> '{messages,0,outcome}' as outcome,
       exists (select 1 from jsonb_array_elements(s #> '{messages,0,spans}') x where x ->> 'name' = 'execute') as has_execute
  from (select pg_temp.spans(true, 'fails', '{}') as s) f;
-- an unknown tool: a JSON-RPC error outcome
select pg_temp.spans(true, 'nope', '{}') #>> '{messages,0,outcome}' as unknown_tool;
-- not sampled: the facts (the edge's duration metric), no phase of the message or the request
select s #>> '{messages,0,outcome}' as outcome, s #>> '{messages,0,trace_flags}' as flags,
       s #> '{messages,0,spans}' is null as no_message_phases, s -> 'spans' = '[]' as no_request_phases
  from (select pg_temp.spans(true, 'echo', '{"words":"zebra-secret"}', '00') as s) f;
rollback;
