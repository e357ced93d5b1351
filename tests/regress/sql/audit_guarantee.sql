-- Claim (ledger::audit, docs/security.md "Audit"): the audit row is written in the request's own
-- transaction with no subtransaction of its own. A committed call has its row; a rolled-back call
-- leaves none; a tool error is answered, keeps its row and loses its writes; and a call whose row
-- cannot be written fails as a whole, so nothing of it commits without its row.
-- Committed state on purpose (commits are what is tested); everything is dropped at the end.
create table public.audit_probe (n int);
grant insert, select on public.audit_probe to authenticated;
create function mcp.audit_probe_write(n int) returns int language sql volatile
  as $$ insert into public.audit_probe values (n) returning n $$;
comment on function mcp.audit_probe_write(int) is 'Writes one probe row.';
create function mcp.audit_probe_fail() returns int language plpgsql volatile
  as $$ begin insert into public.audit_probe values (-1); raise exception 'probe failure'; end $$;
comment on function mcp.audit_probe_fail() is 'Writes a probe row, then fails.';
grant execute on function mcp.audit_probe_write(int), mcp.audit_probe_fail() to authenticated;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.rows() returns table (audit_rows bigint, outcomes text, probe_rows text)
language sql as $$
  select (select count(*) from chumbo.audit_events where capability like 'audit_probe%'),
         (select string_agg(capability || ' ' || outcome, ', ' order by id) from chumbo.audit_events
           where capability like 'audit_probe%'),
         (select coalesce(string_agg(n::text, ',' order by n), '') from public.audit_probe) $$;
delete from chumbo.audit_events;
select chumbo.configure('{"audit": true}') ->> 'audit' as audit;

-- a committed call (chumbo.handle relaxes a read's commit; this one wrote): its write and its row
select regress.tool(:'alice', 'audit_probe_write', '{"n":1}') #>> '{result,content,0,text}' as wrote;
select * from pg_temp.rows();
-- the same call rolled back: neither
begin;
select regress.tool(:'alice', 'audit_probe_write', '{"n":2}') #>> '{result,content,0,text}' as wrote;
rollback;
select * from pg_temp.rows();
-- a failing tool: answered with isError and audited; its own write is undone
select regress.tool(:'alice', 'audit_probe_fail') #> '{result,isError}' as is_error;
select * from pg_temp.rows();
-- the audit row cannot be written: the call fails, its write is not committed without its row
alter table chumbo.audit_events add constraint regress_refuse_probe check (capability is distinct from 'audit_probe_write') not valid;
\set VERBOSITY terse
select regress.tool(:'alice', 'audit_probe_write', '{"n":4}') is not null as answered;
\set VERBOSITY default
select * from pg_temp.rows();
alter table chumbo.audit_events drop constraint regress_refuse_probe;

delete from chumbo.audit_events;
drop function mcp.audit_probe_write(int), mcp.audit_probe_fail();
drop table public.audit_probe;
