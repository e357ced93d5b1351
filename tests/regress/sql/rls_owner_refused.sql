-- Capabilities never run as a role that row-level security does not bind: besides superusers
-- and BYPASSRLS roles, a role that owns a table whose RLS is enabled but not forced, or holds
-- such an owner's privileges through membership, is refused even when it is in allowed_roles.
-- FORCE ROW LEVEL SECURITY on the table makes the owner subject to its policies again.
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
rollback;
