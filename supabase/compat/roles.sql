-- Supabase-compatible roles and auth.* functions for plain PostgreSQL.
--
-- On Supabase all of this already exists; this file only creates what is missing, so it is safe
-- to run on Supabase, on a fresh cluster, and any number of times. It never alters an existing
-- role or function. Run it as a superuser (it creates roles) before the migrations.
--
-- Roles (as on Supabase):
--   anon, authenticated   nologin, the roles PostgREST / chumbo switch to for a request
--   service_role          nologin, BYPASSRLS (server-side keys; chumbo refuses to run as it)
--   authenticator         login, NOINHERIT, member of the three above (switches with SET ROLE)
-- Schema auth with auth.uid(), auth.role(), auth.jwt(), which read the request's JWT claims from
-- the transaction-local setting request.jwt.claims (JSON), falling back to the legacy
-- per-claim settings request.jwt.claim.sub / request.jwt.claim.role / request.jwt.claim.

do $$
begin
  if not exists (select from pg_roles where rolname = 'anon') then
    create role anon nologin noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin noinherit;
  end if;
  if not exists (select from pg_roles where rolname = 'service_role') then
    create role service_role nologin noinherit bypassrls;
  end if;
  if not exists (select from pg_roles where rolname = 'authenticator') then
    -- No password here: set one (or use trust/peer auth) in the environment that needs it.
    create role authenticator login noinherit;
  end if;
end
$$;

-- authenticator may switch to the three request roles (GRANT of a role is idempotent: a repeat
-- only raises a NOTICE).
do $$
declare
  r text;
begin
  foreach r in array array['anon', 'authenticated', 'service_role'] loop
    if not exists (
      select from pg_auth_members m
      join pg_roles g on g.oid = m.roleid
      join pg_roles u on u.oid = m.member
      where g.rolname = r and u.rolname = 'authenticator'
    ) then
      execute format('grant %I to authenticator', r);
    end if;
  end loop;
end
$$;

do $$
begin
  if not exists (select from pg_namespace where nspname = 'auth') then
    create schema auth;
  end if;
end
$$;

-- The functions are created only when missing (Supabase's own definitions stay untouched).
do $$
begin
  if to_regprocedure('auth.uid()') is null then
    create function auth.uid() returns uuid
      language sql stable
      as $f$
        select nullif(
          coalesce(
            nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub',
            current_setting('request.jwt.claim.sub', true)
          ),
          ''
        )::uuid
      $f$;
    comment on function auth.uid() is
      'Deprecated. Use auth.jwt() -> ''sub'' instead. (Supabase-compatible: the sub claim of the request JWT.)';
  end if;

  if to_regprocedure('auth.role()') is null then
    create function auth.role() returns text
      language sql stable
      as $f$
        select nullif(
          coalesce(
            nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role',
            current_setting('request.jwt.claim.role', true)
          ),
          ''
        )::text
      $f$;
    comment on function auth.role() is
      'Deprecated. Use auth.jwt() -> ''role'' instead. (Supabase-compatible: the role claim of the request JWT.)';
  end if;

  if to_regprocedure('auth.jwt()') is null then
    create function auth.jwt() returns jsonb
      language sql stable
      as $f$
        select coalesce(
          nullif(current_setting('request.jwt.claims', true), ''),
          nullif(current_setting('request.jwt.claim', true), '')
        )::jsonb
      $f$;
    comment on function auth.jwt() is
      'Supabase-compatible: the claims of the request JWT as jsonb.';
  end if;
end
$$;

grant usage on schema auth to anon, authenticated, service_role;
grant execute on function auth.uid(), auth.role(), auth.jwt() to anon, authenticated, service_role;
