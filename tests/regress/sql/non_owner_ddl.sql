-- Issue 9 (10): DDL by roles other than the extension owner works. chumbo's event trigger bumps
-- the capability version with its own rights (SECURITY DEFINER), so a temp table created by
-- `authenticated` (e.g. through PostgREST) or a migration run by a non-superuser role no longer
-- fails with "permission denied for sequence schema_version" -- and the change is still seen.
begin;
create role regress_migrator_335 nologin;
grant create, usage on schema public, mcp to regress_migrator_335;
select last_value as before from chumbo.schema_version \gset
set local role authenticated;
create temp table scratch_335 (x int);
drop table scratch_335;
reset role;
set local role regress_migrator_335;
create table public.migrated_335 (id int);
create function mcp.migrated_tool_335() returns int language sql stable as $$ select 335 $$;
comment on function mcp.migrated_tool_335() is 'Added by a non-superuser migration.';
reset role;
select last_value > :before as version_bumped from chumbo.schema_version;
grant execute on function mcp.migrated_tool_335() to authenticated;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', '{"role":"authenticated","sub":"aaaaaaaa-0000-4000-8000-000000000001"}')
  @? '$.result.tools[*] ? (@.name == "migrated_tool_335")' as new_tool_listed;
rollback;
