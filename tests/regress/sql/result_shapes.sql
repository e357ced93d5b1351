-- Result shapes and bounds: jsonb → structuredContent (+ the JSON as text); a non-object is
-- wrapped; rows are bounded by max_rows and max_result_bytes and continued by a cursor (paging
-- itself: 365_paged_results); an oversized
-- scalar is a tool error; a declared outputSchema is enforced; an invalid one hides the tool.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.call(tool text, args jsonb default '{}') returns jsonb language sql as $$
  select regexp_replace((chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args)), '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result')::text,
    'trace id [0-9a-f]{32}', 'trace id <masked>')::jsonb $$;

create function mcp.stats() returns jsonb language sql stable as $$ select '{"projects": 3, "open": true}'::jsonb $$;
create function mcp.numbers() returns jsonb language sql stable as $$ select '[1, 2, 3]'::jsonb $$;
create function mcp.series(n int) returns setof int language sql stable as $$ select generate_series(1, n) $$;
create function mcp.big(n int) returns text language sql stable as $$ select repeat('x', n) $$;
create function mcp.nothing() returns void language sql as $$ select $$;
create function mcp.typed(ok boolean) returns jsonb language sql stable
  as $$ select case when ok then '{"count": 1}'::jsonb else '{"count": "one"}'::jsonb end $$;
comment on function mcp.typed(boolean) is 'Typed. @mcp {"outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}}';
create function mcp.badly_typed() returns jsonb language sql stable as $$ select '{}'::jsonb $$;
comment on function mcp.badly_typed() is 'Broken. @mcp {"outputSchema": {"type": 12}}';
grant execute on all functions in schema mcp to authenticated;

select pg_temp.call('stats') as object_result;
select pg_temp.call('numbers') -> 'structuredContent' as wrapped;
select pg_temp.call('nothing') as void_result;
select jsonb_array_length(pg_temp.call('series', '{"n": 5}') #> '{structuredContent,rows}') as five_rows;

select chumbo.configure('{"max_rows": 3}') ->> 'max_rows' as max_rows;
select r #> '{structuredContent,rows}' as bounded_by_rows, r #> '{structuredContent,next_call,arguments}' ?& '{n,cursor}' as continued
  from pg_temp.call('series', '{"n": 10}') r;
select chumbo.configure('{"max_rows": 1000, "page_rows": 1000, "max_result_bytes": 3000}') ->> 'max_result_bytes' as max_bytes;
select jsonb_array_length(r #> '{structuredContent,rows}') as bounded_by_bytes, octet_length(r #>> '{content,0,text}') <= 3000 as text_within,
       r -> 'structuredContent' ? 'next_cursor' as continued
  from pg_temp.call('series', '{"n": 1000}') r;
select pg_temp.call('big', '{"n": 3500}') as too_large;
select chumbo.configure('{"max_result_bytes": null, "page_rows": null}') ->> 'max_result_bytes' as default_bytes;

select pg_temp.call('typed', '{"ok": true}') -> 'structuredContent' as conforming,
       pg_temp.call('typed', '{"ok": false}') as not_conforming;
select jsonb_path_query_array(chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', :'alice'), '$.result.tools[*] ? (@.name == "typed").outputSchema') as advertised,
       jsonb_path_query_array(chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', :'alice'), '$.result.tools[*].name') ? 'badly_typed' as broken_listed;
select state, reasons from chumbo.doctor() where "function" = 'mcp.badly_typed()';
rollback;
