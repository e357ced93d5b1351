-- Fixed bug (issue 25, item 8): the text a model reads listed a table's columns alphabetically,
-- not in the order the function declares them (a table of (title, id, created_at) started with
-- created_at). Now the Markdown table lists them as declared, whether the page was written as
-- text while read (a plain call) or as values (an idempotent call, whose outcome is stored), and
-- when a column's type is read through row_to_json (an array); structuredContent's JSON objects
-- keep their keys sorted by name (JSON objects have no order).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.recent_notes() returns table (title text, id int, created_at date)
  language sql as $$ select 'note ' || i, i, date '2026-12-01' + i from generate_series(1, 8) i $$;
create function mcp.recent_notes_once(request_id text) returns table (title text, id int, created_at date)
  language sql as $$ select 'note ' || i, i, date '2026-12-01' + i from generate_series(1, 8) i $$;
comment on function mcp.recent_notes_once(text) is '@mcp {"idempotency_key": "request_id"}';
create function mcp.tagged_notes() returns table (title text, tags text[], id int)
  language sql as $$ select 'note ' || i, array['a', 'b'], i from generate_series(1, 8) i $$;
revoke execute on function mcp.recent_notes(), mcp.recent_notes_once(text), mcp.tagged_notes() from public;
grant execute on function mcp.recent_notes(), mcp.recent_notes_once(text), mcp.tagged_notes() to authenticated;
create function pg_temp.first_lines(r jsonb, n int) returns text language sql as $$
  select array_to_string((string_to_array(r #>> '{result,content,0,text}', e'\n'))[1:n], e'\n') $$;
select pg_temp.first_lines(regress.tool(:'alice', 'recent_notes'), 3) as as_text;
select pg_temp.first_lines(regress.tool(:'alice', 'recent_notes_once', '{"request_id": "r1"}'), 3) as as_values;
select pg_temp.first_lines(regress.tool(:'alice', 'tagged_notes'), 3) as through_row_to_json;
select regress.tool(:'alice', 'recent_notes') #> '{result,structuredContent,rows,0}' as structured_row;
rollback;
