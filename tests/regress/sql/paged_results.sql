-- Claim (README "Paged results"): a set-returning tool answers one page at a time (page_rows and
-- page_bytes, per-tool "page"), with next_cursor and next_call in structuredContent and the same
-- in words in the text block; following next_call yields every row exactly once, each page run
-- again as the caller (RLS); the cursor is bound to the principal, the tool and the arguments and
-- expires, and a bad one is an isError result; keyset paging ("orderBy") is not shifted by a
-- concurrent insert, offset paging repeats a row (documented); the text is a Markdown table or
-- JSON lines, whichever is smaller, or the tool's own renderer ("text"), whose errors are isError
-- results; an application error's HINT is passed on as the next step.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create table public.paged_items (
  id int primary key,
  owner uuid not null,
  label text not null,
  body text not null default ''
);
alter table public.paged_items enable row level security;
alter table public.paged_items force row level security;
create policy own on public.paged_items
  using (owner = (current_setting('request.jwt.claims', true)::jsonb ->> 'sub')::uuid);
grant select on public.paged_items to authenticated;
insert into public.paged_items (id, owner, label)
  select i, case when i % 5 = 0 then 'bbbbbbbb-0000-4000-8000-000000000002'::uuid
                 else 'aaaaaaaa-0000-4000-8000-000000000001'::uuid end, 'item ' || i
    from generate_series(1, 150) i;   -- Alice 120 rows, Bob 30

create function mcp.items(label_like text default '%') returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items where label like label_like order by id $$;
create function mcp.items_keyed() returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items $$;
comment on function mcp.items_keyed() is '@mcp {"orderBy": ["id"], "page": {"rows": 7}}';
create function mcp.wide(n int, width int) returns table (id int, body text)
  language sql stable as $$ select i, repeat('w', width) from generate_series(1, n) i $$;
create function public.items_text(rows jsonb) returns text language sql stable
  as $$ select string_agg('* ' || (r ->> 'label'), E'\n' order by (r ->> 'id')::int) from jsonb_array_elements(rows) r $$;
create function public.items_text_fails(rows jsonb) returns text language plpgsql stable
  as $$ begin raise exception 'renderer refused % rows', jsonb_array_length(rows); end $$;
create function mcp.rendered() returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items order by id limit 3 $$;
comment on function mcp.rendered() is '@mcp {"text": "public.items_text"}';
create function mcp.render_fails() returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items order by id limit 3 $$;
comment on function mcp.render_fails() is '@mcp {"text": "public.items_text_fails"}';
create function mcp.render_missing() returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items order by id limit 3 $$;
comment on function mcp.render_missing() is '@mcp {"text": "public.no_such_renderer"}';
create function mcp.hinted() returns setof int language plpgsql stable
  as $$ begin raise exception 'no project selected' using hint = 'call list_projects first and pass a project_id'; end $$;
create function mcp.typed_items() returns setof public.paged_items
  language sql stable as $$ select * from public.paged_items order by id limit 5 $$;
comment on function mcp.typed_items() is '@mcp {"page": {"rows": 2}, "outputSchema": {"type": "object",
  "properties": {"rows": {"type": "array", "items": {"type": "object"}}}, "required": ["rows"], "additionalProperties": false}}';
-- paging metadata on a function that returns no set, and a set-returning one with a "cursor" parameter
create function mcp.keyed_scalar() returns int language sql stable as $$ select 1 $$;
comment on function mcp.keyed_scalar() is '@mcp {"orderBy": ["id"]}';
create function mcp.own_cursor("cursor" text) returns setof int language sql stable as $$ select 1 $$;
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;

create function pg_temp.call(claims jsonb, tool text, args jsonb default '{}') returns jsonb language sql as $$
  select regexp_replace(regexp_replace((chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args)), claims) -> 'result')::text,
    'trace id [0-9a-f]{32}', 'trace id <masked>', 'g'), '[A-Za-z0-9_-]{40,}\.[A-Za-z0-9_-]{43}', '<cursor>', 'g')::jsonb $$;
create function pg_temp.raw(claims jsonb, call jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call', 'params', call), claims) -> 'result' $$;
-- follows next_call to the end: pages, ids in order, largest page (rows), largest page's body bytes
create function pg_temp.walk(claims jsonb, tool text, args jsonb default '{}')
  returns table (pages int, ids int[], largest_page int, largest_body_bytes int) language plpgsql as $$
declare
  r jsonb; c jsonb := jsonb_build_object('name', tool, 'arguments', args); page jsonb;
begin
  pages := 0; ids := '{}'; largest_page := 0; largest_body_bytes := 0;
  loop
    r := pg_temp.raw(claims, c);
    if r ? 'isError' then raise exception 'page % failed: %', pages + 1, r; end if;
    page := r -> 'structuredContent' -> 'rows';
    pages := pages + 1;
    ids := ids || array(select (x ->> 'id')::int from jsonb_array_elements(page) x);
    largest_page := greatest(largest_page, jsonb_array_length(page));
    largest_body_bytes := greatest(largest_body_bytes,
      (select coalesce(sum(octet_length(x ->> 'body')), 0) from jsonb_array_elements(page) x));
    c := r -> 'structuredContent' -> 'next_call';
    exit when c is null or pages > 500;
  end loop;
  return next;
end $$;

-- every paged tool gets the cursor argument; a "cursor" parameter of its own and paging keys on a
-- function without a set are refused
select jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', :'alice'),
         '$.result.tools[*] ? (@.name == "items").inputSchema') as items_input_schema;
select "function", state, reasons from chumbo.doctor()
 where "function" in ('mcp.keyed_scalar()', 'mcp.own_cursor(text)') order by 1;

-- a declared outputSchema of a paged tool is published with next_cursor and next_call, and every
-- page conforms to it
select array(select jsonb_object_keys(jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', :'alice'),
         '$.result.tools[*] ? (@.name == "typed_items").outputSchema.properties')) order by 1) as published_properties;
select pages, ids, largest_page from pg_temp.walk(:'alice', 'typed_items');

-- the first page: 50 rows, the cursor, the exact next call, and the same in words
select jsonb_array_length(r #> '{structuredContent,rows}') as rows, r #> '{structuredContent,next_cursor}' as next_cursor,
       r #> '{structuredContent,next_call}' as next_call, r ? 'isError' as is_error
  from pg_temp.call(:'alice', 'items') r;
select split_part(r #>> '{content,0,text}', E'\n', 1) as first_line, split_part(r #>> '{content,0,text}', E'\n', 3) as first_row,
       regexp_replace(r #>> '{content,0,text}', '^.*\n\n', '') as footer
  from pg_temp.call(:'alice', 'items') r;

-- walking it: every one of Alice's 120 rows exactly once, in order, none of Bob's; the same for
-- Bob; arguments other than the cursor ride along in next_call
select 'alice' as who, w.pages, cardinality(w.ids) as n, w.ids = array(select i from generate_series(1, 150) i where i % 5 <> 0) as exactly_hers, w.largest_page
  from pg_temp.walk(:'alice', 'items') w
union all
select 'bob', w.pages, cardinality(w.ids), w.ids = array(select i from generate_series(5, 150, 5) i), w.largest_page
  from pg_temp.walk(:'bob', 'items') w;
select w.pages, cardinality(w.ids) as n from pg_temp.walk(:'alice', 'items', '{"label_like": "item 1%"}') w;
-- the last page says so and has no cursor
select r -> 'structuredContent' ? 'next_cursor' as has_cursor, regexp_replace(r #>> '{content,0,text}', '^.*\n\n', '') as footer
  from pg_temp.raw(:'alice', (pg_temp.raw(:'alice', (pg_temp.raw(:'alice', '{"name": "items"}') #> '{structuredContent,next_call}')) #> '{structuredContent,next_call}')) r;
select pg_temp.call(:'alice', 'items', '{"label_like": "nothing%"}') as no_rows;

-- the cursor is bound: Bob replaying Alice's, Alice with other arguments, a tampered or made-up
-- cursor, a cursor of another tool: isError results, nothing of Alice's shown
create temp table alice_next as select pg_temp.raw(:'alice', '{"name": "items"}') #> '{structuredContent,next_call}' as c;
select 'bob replays' as case, pg_temp.call(:'bob', 'items', c -> 'arguments') as result from alice_next
union all
select 'other arguments', pg_temp.call(:'alice', 'items', (c -> 'arguments') || '{"label_like": "%"}') from alice_next
union all
select 'tampered', pg_temp.call(:'alice', 'items', jsonb_build_object('cursor', overlay(c #>> '{arguments,cursor}' placing 'x' from 3 for 1))) from alice_next
union all
select 'made up', pg_temp.call(:'alice', 'items', '{"cursor": "b2Zmc2V0OjUw"}')
union all
select 'other tool', pg_temp.call(:'alice', 'items_keyed', c -> 'arguments') from alice_next;
select pg_temp.raw(:'alice', c) -> 'isError' as alice_herself_is_error from alice_next;

-- expiry: cursor_ttl_seconds after it was issued (time pinned)
set local chumbo.pinned_now = '2026-01-01 00:00:00+00';
select chumbo.configure('{"cursor_ttl_seconds": 60}') ->> 'cursor_ttl_seconds' as ttl;
create temp table pinned_next as select pg_temp.raw(:'alice', '{"name": "items"}') #> '{structuredContent,next_call}' as c;
set local chumbo.pinned_now = '2026-01-01 00:01:00+00';
select pg_temp.raw(:'alice', c) ? 'isError' as at_ttl_is_error from pinned_next;
set local chumbo.pinned_now = '2026-01-01 00:01:01+00';
select pg_temp.call(:'alice', 'items', c -> 'arguments') as after_ttl from pinned_next;
reset chumbo.pinned_now;
select chumbo.configure('{"cursor_ttl_seconds": null}') ->> 'cursor_ttl_seconds' as default_ttl;

-- a concurrent insert between pages. Offset paging (no orderBy): a row inserted before the
-- position shifts the rest, so page 2 starts with the last row of page 1 again.
create temp table offset_next as select pg_temp.raw(:'alice', '{"name": "items"}') as p1;
insert into public.paged_items values (0, 'aaaaaaaa-0000-4000-8000-000000000001', 'item 0');
select (select jsonb_agg(x -> 'id') from jsonb_path_query(p1, '$.structuredContent.rows[last]') x) as page1_last,
       (pg_temp.raw(:'alice', p1 #> '{structuredContent,next_call}') #> '{structuredContent,rows,0,id}') as page2_first
  from offset_next;
delete from public.paged_items where id = 0;
-- keyset paging ("orderBy": ["id"], 7 rows a page): the next page starts after the last key, so a
-- row inserted before the position is not seen, one after it is seen once, none is repeated
create temp table keyed_first as select pg_temp.raw(:'alice', '{"name": "items_keyed"}') as p1;
select jsonb_path_query_array(p1, '$.structuredContent.rows[*].id') as page1 from keyed_first;
insert into public.paged_items values (0, 'aaaaaaaa-0000-4000-8000-000000000001', 'item 0'),
                                      (1000, 'aaaaaaaa-0000-4000-8000-000000000001', 'item 1000');
create temp table keyed_rest as
  select w.* from keyed_first, pg_temp.walk(:'alice', 'items_keyed', p1 #> '{structuredContent,next_call,arguments}') w;
select pages, largest_page, 0 = any(ids) as sees_inserted_before, 1000 = any(ids) as sees_inserted_after,
       cardinality(ids) = (select count(distinct x) from unnest(ids) x) as no_repeats,
       array(select jsonb_array_elements(p1 #> '{structuredContent,rows}') ->> 'id')::int[] || ids
         = array(select i from generate_series(1, 150) i where i % 5 <> 0) || 1000 as every_row_once
  from keyed_rest, keyed_first;
select (pg_temp.raw(:'alice', '{"name": "items_keyed"}') #>> '{structuredContent,next_call,arguments,cursor}') ~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' as cursor_is_opaque_text;
delete from public.paged_items where id in (0, 1000);

-- byte budgets with wide rows: 5,000-byte rows and a 12,000-byte page give 2 rows a page; a row
-- wider than the page still comes, alone
select chumbo.configure('{"page_bytes": 12000}') ->> 'page_bytes' as page_bytes;
select pages, cardinality(ids) as n, largest_page, largest_body_bytes from pg_temp.walk(:'alice', 'wide', '{"n": 9, "width": 5000}');
select pages, cardinality(ids) as n, largest_page, largest_body_bytes from pg_temp.walk(:'alice', 'wide', '{"n": 3, "width": 20000}');
select octet_length(pg_temp.raw(:'alice', '{"name": "wide", "arguments": {"n": 9, "width": 5000}}') #>> '{content,0,text}') < 12000 + 1000 as text_within_budget;
select chumbo.configure('{"page_bytes": null, "page_rows": 4}') ->> 'page_rows' as page_rows;
select pages, cardinality(ids) as n, largest_page from pg_temp.walk(:'alice', 'items', '{"label_like": "item 1%"}');
select chumbo.configure('{"page_rows": null}') ->> 'page_rows' as default_page_rows;
\set ON_ERROR_STOP 0
savepoint s;
select chumbo.configure('{"page_rows": 0}');
rollback to savepoint s;
select chumbo.configure('{"cursor_ttl_seconds": 0}');
rollback to savepoint s;
\set ON_ERROR_STOP 1

-- readable text: narrow flat rows as a Markdown table, wide rows as JSON lines (the smaller);
-- structuredContent keeps the exact JSON
select pg_temp.call(:'alice', 'wide', '{"n": 10, "width": 3}') #>> '{content,0,text}' as narrow;
select left(r #>> '{content,0,text}', 12) as wide_starts, r #> '{structuredContent,rows,0,id}' as exact_id
  from pg_temp.call(:'alice', 'wide', '{"n": 2, "width": 300}') r;
-- the tool's own renderer runs as the caller (Alice's rows only); its failure is an isError result
select pg_temp.call(:'alice', 'rendered') -> 'content' as rendered_alice, pg_temp.call(:'bob', 'rendered') -> 'content' as rendered_bob;
select pg_temp.call(:'alice', 'render_fails') as render_fails, pg_temp.call(:'alice', 'render_missing') as render_missing;
-- an application error's HINT is the next step
select pg_temp.call(:'alice', 'hinted') as hinted;
rollback;
