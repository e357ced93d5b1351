-- One CAS increment of Alice's counter through the conc_incr tool (retries on revision_conflict
-- inside the tool); logs the attempts it took and whether the call failed.
insert into state_conc.incr_log (attempts, is_error)
select (r -> 'result' -> 'structuredContent' ->> 'attempts')::int, coalesce((r -> 'result' ->> 'isError')::boolean, r ? 'error')
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_incr","arguments":{}}}'::jsonb,
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'::jsonb)) x(r);
