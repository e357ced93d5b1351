-- Bug (issue 32): listing every page made a backend keep each listed function's whole pg_proc
-- row (source text included) in its syscache: the EXECUTE check of each tool went through
-- pg_proc_aclcheck, 16 MB once a backend had walked 10,000 tools. The check now reads the ACL
-- the registry keeps (sql/reflect.sql's `executors`): walking 1,000 tools leaves the cache as
-- it was. (Who may execute what is checked in revoked_execute and execute_by_membership.)
-- The functions are committed and listed from a new backend: the one that created them has
-- their rows cached already.
do $$ begin for i in 1..1000 loop
  execute format('create function mcp.walk_%s(a text) returns text language sql stable as %L', i, 'select a || ' || quote_literal(repeat('x', 1000)));
  execute format('comment on function mcp.walk_%s(text) is %L', i, format('Walk %s. @mcp {"annotations": {"readOnlyHint": true}}', i));
  execute format('grant execute on function mcp.walk_%s(text) to authenticated', i);
end loop; end $$;
\c
-- the first page rebuilds the registry; the cache is measured after it
select jsonb_array_length(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}')->'result'->'tools') as first_page;
create temp table before as
  select total_bytes from pg_backend_memory_contexts where name = 'CacheMemoryContext';
create temp table walked (pages int, tools int);
do $$ declare c text := null; r jsonb; pages int := 0; tools int := 0; begin
  loop
    r := chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/list', 'params',
           case when c is null then '{}'::jsonb else jsonb_build_object('cursor', c) end),
         '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}');
    pages := pages + 1; tools := tools + jsonb_array_length(r->'result'->'tools');
    c := r->'result'->>'nextCursor';
    exit when c is null or pages > 100;
  end loop;
  insert into walked values (pages, tools);
end $$;
select pages >= 10 as many_pages, tools >= 1000 as every_tool_listed from walked;
select c.total_bytes - b.total_bytes < 512 * 1024 as syscache_kept_small
  from pg_backend_memory_contexts c, before b where c.name = 'CacheMemoryContext';
do $$ begin for i in 1..1000 loop execute format('drop function mcp.walk_%s(text)', i); end loop; end $$;
