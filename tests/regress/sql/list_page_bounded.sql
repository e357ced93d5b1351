-- Claim (issue 32; README "Settings": page_size): a list
-- page looks at the capabilities up to its last item and one more, never further: the visibility
-- predicates of capabilities past the page do not run (a first page costs the same whatever the
-- number of tools); following the cursors still yields every item once, and the page whose next
-- item exists carries a cursor while the last one does not.
begin;
create function public.seen(n int) returns boolean language plpgsql stable as $$
begin raise notice 'visibility of tool %', n; return true; end $$;
grant execute on function public.seen(int) to authenticated;
-- six tools, each with its own visibility function (saying when it runs)
\set ECHO none
select format($f$
  create function public.seen_%1$s() returns boolean language sql stable as 'select public.seen(%1$s)';
  grant execute on function public.seen_%1$s() to authenticated;
  create function mcp.lp_tool_%1$s() returns int language sql stable as 'select %1$s';
  comment on function mcp.lp_tool_%1$s() is '@mcp {"visible": "public.seen_%1$s"}';
  grant execute on function mcp.lp_tool_%1$s() to authenticated;
  $f$, i) from generate_series(1, 6) i
\gexec
\set ECHO all
select chumbo.configure('{"page_size": 2}') ->> 'page_size' as page_size;
create function pg_temp.page(cursor text) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/list',
    'params', case when cursor is null then '{}'::jsonb else jsonb_build_object('cursor', cursor) end),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
-- the first page: tools 1 and 2 are listed, tool 3 is looked at (a next page exists), 4..6 never
select jsonb_path_query_array(pg_temp.page(null), '$.tools[*].name') as names, pg_temp.page(null) ? 'nextCursor' as has_next;
-- the last page (from the third): 5 and 6, and nothing past them; no cursor
select jsonb_path_query_array(pg_temp.page(pg_temp.page(pg_temp.page(null) ->> 'nextCursor') ->> 'nextCursor'), '$.tools[*].name') as last_names;
select pg_temp.page(pg_temp.page(pg_temp.page(null) ->> 'nextCursor') ->> 'nextCursor') ? 'nextCursor' as last_has_next;
rollback;
