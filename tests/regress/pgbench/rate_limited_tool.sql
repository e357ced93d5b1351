-- One call of the per-tool limited conc_limited tool as Bob.
insert into state_conc.tool_calls (is_error)
select coalesce((r -> 'result' ->> 'isError')::boolean, r ? 'error')
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_limited","arguments":{}}}'::jsonb,
                             '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'::jsonb)) x(r);
