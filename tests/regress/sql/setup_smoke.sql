-- Smoke test for the regression runner itself: the database it creates has Supabase's roles
-- (supabase/compat/roles.sql), the extension and the helpers (tests/regress/helpers.sql), and
-- nothing of the example app: every test builds its own fixture (and leaves no capability behind).
select rolname, rolcanlogin, rolbypassrls
  from pg_roles
 where rolname in ('anon', 'authenticated', 'service_role', 'authenticator')
 order by rolname;
select extname from pg_extension where extname = 'chumbo';
select n.nspname, p.proname
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'auth' and p.proname in ('uid', 'role', 'jwt')
 order by p.proname;
select n.nspname, p.proname
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace
 where n.nspname = 'regress' and p.proname like 'fixture\_%'
 order by p.proname;
select to_regclass('public.projects') is null as no_example_tables,
       (select count(*) from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'mcp') as mcp_functions;
