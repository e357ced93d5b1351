-- Capabilities never run as a role that row-level security does not bind: besides superusers
-- and BYPASSRLS roles, a role that owns a table (RLS enabled or not), or holds an owner's
-- privileges through membership, is refused even when it is in allowed_roles. FORCE ROW LEVEL
-- SECURITY does not make the owner safe: an owner can turn RLS off or rewrite the policies from
-- tool code. Nor may a member of the extension owner run capabilities (it would read
-- chumbo.keys and everyone's state), and a role that owns only a temporary table is not refused
-- (any login could otherwise lock a role out by creating one).
begin;
create role regress_owner_345 nologin;
create role regress_member_345 nologin in role regress_owner_345;
create table public.notes_345 (body text);
alter table public.notes_345 owner to regress_owner_345;
alter table public.notes_345 enable row level security;
grant usage on schema mcp to regress_owner_345, regress_member_345;
select chumbo.configure('{"allowed_roles": ["anon", "authenticated", "regress_owner_345", "regress_member_345"]}') ->> 'auth_mode' as mode;
create function pg_temp.ping(role text) returns text language sql as $$
  select coalesce(r #>> '{error,message}', 'ok')
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"ping"}', jsonb_build_object('role', role, 'sub', 'x')) r $$;
select role, pg_temp.ping(role) as outcome
  from (values ('authenticated'), ('regress_owner_345'), ('regress_member_345')) v(role);
alter table public.notes_345 force row level security;
select role, pg_temp.ping(role) as outcome_when_forced
  from (values ('regress_owner_345'), ('regress_member_345')) v(role);
-- A member of the extension owner (the owner of schema chumbo and its tables).
do $$ begin
  execute format('create role regress_extowner_member_345 nologin in role %I',
                 (select nspowner::regrole::text from pg_namespace where nspname = 'chumbo'));
end $$;
create role regress_temp_owner_345 nologin;
grant usage on schema mcp to regress_extowner_member_345, regress_temp_owner_345;
do $$ begin execute format('grant temporary on database %I to regress_temp_owner_345', current_database()); end $$;
set local role regress_temp_owner_345;
create temporary table temp_notes_345 (body text);
reset role;
select chumbo.configure('{"allowed_roles": ["regress_extowner_member_345", "regress_temp_owner_345"]}') ->> 'auth_mode' as mode;
select role, pg_temp.ping(role) as outcome_extension_owner
  from (values ('regress_extowner_member_345'), ('regress_temp_owner_345')) v(role);
-- Roles that could give themselves any of the above, or read, write or signal past privileges:
-- CREATEROLE, members of pg_read_all_data / pg_write_all_data / pg_signal_backend /
-- pg_read_all_stats, the owner of a schema (it may drop or rename what is in it), and the
-- database's owner (pg_database_owner). A plain role with usage on mcp is served.
create role regress_createrole_345 nologin createrole;
create role regress_reader_345 nologin in role pg_read_all_data;
create role regress_writer_345 nologin in role pg_write_all_data;
create role regress_signaller_345 nologin in role pg_signal_backend;
create role regress_stats_345 nologin in role pg_monitor;
create role regress_schema_owner_345 nologin;
create schema regress_schema_345 authorization regress_schema_owner_345;
create role regress_plain_345 nologin;
create role regress_dbowner_345 nologin;
do $$ begin execute format('alter database %I owner to regress_dbowner_345', current_database()); end $$;
grant usage on schema mcp to regress_dbowner_345, regress_createrole_345, regress_reader_345, regress_writer_345,
  regress_signaller_345, regress_stats_345, regress_schema_owner_345, regress_plain_345;
select chumbo.configure('{"allowed_roles": ["regress_dbowner_345", "regress_createrole_345", "regress_reader_345", "regress_writer_345",
  "regress_signaller_345", "regress_stats_345", "regress_schema_owner_345", "regress_plain_345"]}') ->> 'auth_mode' as mode;
select role, pg_temp.ping(role) as outcome_past_privileges
  from (values ('regress_createrole_345'), ('regress_reader_345'), ('regress_writer_345'), ('regress_signaller_345'),
               ('regress_stats_345'), ('regress_schema_owner_345'), ('regress_dbowner_345'), ('regress_plain_345')) v(role);
rollback;
