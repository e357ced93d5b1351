-- Alice registers the same provider sandbox as everyone else in this run (idempotent per owner).
insert into state_conc.registers (result)
select coalesce(r -> 'result' -> 'structuredContent' ->> 'result', r -> 'result' -> 'content' -> 0 ->> 'text', r::text)
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_register","arguments":{}}}'::jsonb,
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'::jsonb)) x(r);
