-- Alice registers the same provider sandbox as everyone else in this run (idempotent per owner),
-- after the barrier lock :barrier (concurrency_state.sh holds it until every client waits on it,
-- so the first calls of all clients took their snapshot before any of them commits).
insert into state_conc.registers (result)
select coalesce(r -> 'result' -> 'structuredContent' ->> 'result', r -> 'result' -> 'content' -> 0 ->> 'text', r::text)
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_register","arguments":{}}}'::jsonb,
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'::jsonb)
          from (select pg_advisory_xact_lock_shared(:barrier)) b) x(r);
