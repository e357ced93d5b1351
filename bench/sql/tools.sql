-- Generate :n tools in schema mcp (bench databases only): mcp.zz_bench_tool_00001 ... with a
-- description, metadata and three parameters, executable by authenticated like the app's tools.
-- Named to sort after the app's own tools: the first page of tools/list is then the same 100
-- tools whether the database has 100, 1,000 or 10,000 (bench/run.sh checks it).
--   psql -v n=996 -f tools.sql
select format($f$
  create function mcp.%1$I(a text, b int default 1, c boolean default false)
    returns text language sql stable set search_path = ''
    as $b$ select a || b::text || c::text $b$;
  comment on function mcp.%1$I(text, int, boolean) is %2$L;
  revoke execute on function mcp.%1$I(text, int, boolean) from public, anon;
  grant execute on function mcp.%1$I(text, int, boolean) to authenticated;
  $f$,
  format('zz_bench_tool_%s', lpad(i::text, 5, '0')),
  format('Generated bench tool number %s: echoes its arguments. @mcp {"title": "Bench tool %s", '
         '"annotations": {"readOnlyHint": true}, "params": {"a": {"description": "Any text.", "maxLength": 100}, '
         '"b": {"description": "A small number.", "minimum": 0, "maximum": 1000}}}', i, i))
from generate_series(1, :n) i
\gexec
