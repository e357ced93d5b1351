-- Bug: a backend that rebuilt its registry inside a transaction that then rolled back kept the
-- rolled-back DDL or settings, because the schema version (a sequence) does not roll back.
-- A registry built by a writing transaction is now only trusted inside that transaction.
-- Committed state on purpose (the bug is about what survives a rollback): the probe capability
-- is created before the test transactions and dropped at the end.
create function mcp.rolled_back_probe() returns int language sql stable as $$ select 1 $$;
comment on function mcp.rolled_back_probe() is 'Committed description';
grant execute on function mcp.rolled_back_probe() to authenticated;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.description() returns text language sql as $$
  select jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'), '$.result.tools[*] ? (@.name == "rolled_back_probe").description') #>> '{}' $$;
select pg_temp.description() as committed;
-- a COMMENT seen inside its own transaction, then rolled back
begin;
comment on function mcp.rolled_back_probe() is 'Temporary description';
select pg_temp.description() as inside;
rollback;
select pg_temp.description() as after_rollback;
-- a settings change seen inside its own transaction, then rolled back
begin;
select chumbo.configure('{"audit": false}') ->> 'audit' as audit_inside;
select chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"ping"}', :'alice') is not null as pinged;
rollback;
begin;
select count(*) as before from chumbo.audit_events \gset
select chumbo.handle('{"jsonrpc":"2.0","id":3,"method":"ping"}', :'alice') is not null as pinged;
select count(*) - :before as audit_rows_after_rollback from chumbo.audit_events;
rollback;
drop function mcp.rolled_back_probe();
