-- Smoke test for the regression runner itself: the database it loads has Supabase's roles
-- (supabase/compat/roles.sql) and the extension.
select rolname, rolcanlogin, rolbypassrls
  from pg_roles
 where rolname in ('anon', 'authenticated', 'service_role', 'authenticator')
 order by rolname;
select extname from pg_extension where extname = 'chumbo';
select n.nspname, p.proname
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'auth' and p.proname in ('uid', 'role', 'jwt')
 order by p.proname;
