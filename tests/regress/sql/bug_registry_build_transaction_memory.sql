-- Bug (issue 32): a registry build left pgrx's copies of every catalog row it decoded (each
-- function's reflection printed from jsonb, its stamp, its types) in the transaction's top
-- memory context until commit: ~3 KB a function, 32 MB of a backend's heap for 10,000 tools,
-- which the backend then kept. The rows are now decoded in SPI's own memory, freed with the
-- connection: the build leaves the transaction's context as it found it.
begin;
do $$ begin for i in 1..1000 loop
  execute format('create function mcp.mem_%s(a text, b int default 1) returns text language sql stable as %L', i, 'select a');
  execute format('comment on function mcp.mem_%s(text, int) is %L', i, format('Generated %s. @mcp {"title": "Mem %s", "annotations": {"readOnlyHint": true}}', i, i));
end loop; end $$;
grant execute on all functions in schema mcp to authenticated;
create temp table before as
  select total_bytes from pg_backend_memory_contexts where name = 'TopTransactionContext';
-- the first call after the DDL rebuilds the registry with 1,000 more functions
select jsonb_array_length(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}')->'result'->'tools') > 0 as listed,
       (chumbo.cache_stats()->>'reflected_last_build')::int >= 1000 as rebuilt;
select c.total_bytes - b.total_bytes < 256 * 1024 as transaction_context_kept_small
  from pg_backend_memory_contexts c, before b where c.name = 'TopTransactionContext';
rollback;
