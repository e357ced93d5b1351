-- One retry of Alice's idempotent call (key conc-once-1, same arguments): it either runs the
-- tool, is answered from the stored outcome, or is told the operation is in progress. Logged.
insert into once_conc.answers (status, text)
select coalesce(r #>> '{result,_meta,io.chumbo/idempotency,status}', case when r ? 'error' then 'rpc error' else 'ran' end),
       coalesce(r #>> '{result,content,0,text}', r #>> '{error,message}')
  from (select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"conc_once","arguments":{"amount":5},"_meta":{"io.chumbo/idempotency-key":"conc-once-1"}}}'::jsonb,
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'::jsonb)) x(r);
