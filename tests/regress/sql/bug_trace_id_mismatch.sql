-- Fixed bug (issue 25, item 3): the trace id a client saw in a failing call's message was minted
-- apart from the one of the call's audit row, so the one number an operator has did not find the
-- row. One trace id per request now: every failing kind below shows the id of its own audit row
-- (an application's RAISE, a PostgreSQL error, a failing prompt).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.raises() returns text language plpgsql as $$ begin raise exception 'no project selected'; end $$;
create function mcp.divides() returns int language sql as $$ select 1 / 0 $$;
create function mcp.bad_prompt() returns int language sql as $$ select 1 $$;
comment on function mcp.bad_prompt() is 'A prompt returning neither text nor messages. @mcp {"prompt": true}';
revoke execute on function mcp.raises(), mcp.divides(), mcp.bad_prompt() from public;
grant execute on function mcp.raises(), mcp.divides(), mcp.bad_prompt() to authenticated;
create temporary table seen (label text, answer jsonb, last_audit bigint);
create function pg_temp.see(label text, answer jsonb) returns void language sql as $$
  insert into seen select label, answer, (select max(id) from chumbo.audit_events) $$;
select pg_temp.see('raise', regress.tool(:'alice', 'raises'));
select pg_temp.see('postgres error', regress.tool(:'alice', 'divides'));
select pg_temp.see('prompt', regress.rpc(:'alice', 'prompts/get', '{"name":"bad_prompt"}'));
select s.label,
       substring(s.answer::text from 'trace id ([0-9a-f]+)') is not null as shows_a_trace,
       substring(s.answer::text from 'trace id ([0-9a-f]+)') = a.trace_id as is_its_audit_row,
       a.outcome
  from seen s join chumbo.audit_events a on a.id = s.last_audit
 order by s.label;
rollback;
