-- Issue 9 (3): the edge's login role is not a universal key. chumbo.grant_edge gives exactly
-- usage on schema chumbo and EXECUTE on chumbo.http and http_parts, and on the replicated read path
-- (http_admit, http_replica, http_audit; docs/scaling.md) (plus chumbo.set_jwks only with
-- jwks_courier => true); no chumbo.handle, no table, no membership in anon/authenticated (an
-- older grant is taken back). The full privilege list is compared, so any new grant shows here.
begin;
select regress.fixture_projects() as fixture;
create role regress_edge_320 login;
-- what an earlier chumbo version handed out, to see grant_edge take it back
grant authenticated, anon to regress_edge_320;
grant execute on function chumbo.handle(jsonb, jsonb), chumbo.set_jwks(jsonb) to regress_edge_320;
set local client_min_messages = notice;
select chumbo.grant_edge('regress_edge_320');
reset client_min_messages;
create function pg_temp.privileges(r text) returns table (kind text, object text) language sql as $$
  select 'execute', p.oid::regprocedure::text from pg_proc p
   where p.pronamespace = 'chumbo'::regnamespace and has_function_privilege(r, p.oid, 'execute')
     and not has_function_privilege('public', p.oid, 'execute')   -- what everyone has is listed below
  union all
  select 'table ' || string_agg(priv, ','), c.oid::regclass::text from pg_class c,
         unnest(array['select','insert','update','delete','truncate','references','trigger']) priv
   where c.relnamespace in ('chumbo'::regnamespace, 'public'::regnamespace, 'auth'::regnamespace)
     and c.relkind in ('r','v','m','S','p') and has_table_privilege(r, c.oid, priv)
   group by c.oid
  union all
  select 'member of', g.rolname from pg_roles g where pg_has_role(r, g.oid, 'member') and g.rolname <> r
  union all
  select 'schema usage', n.nspname from pg_namespace n
   where n.nspname in ('chumbo', 'mcp', 'public', 'auth', 'private') and has_schema_privilege(r, n.oid, 'usage')
  order by 1, 2 $$;
select * from pg_temp.privileges('regress_edge_320');
-- what PUBLIC may execute in schema chumbo: helpers capability code calls; none reads or writes
-- chumbo's tables outside a request
select p.oid::regprocedure as public_function from pg_proc p
 where p.pronamespace = 'chumbo'::regnamespace and has_function_privilege('public', p.oid, 'execute') order by p.oid::regprocedure::text;
-- with the JWKS courier turned on by the owner
select chumbo.grant_edge('regress_edge_320', jwks_courier => true);
select * from pg_temp.privileges('regress_edge_320') where kind = 'execute';

-- as the edge: no chumbo.handle, no RLS table even with hand-set claims
set local role regress_edge_320;
set local request.jwt.claims = '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}';
savepoint s;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"role":"authenticated","sub":"bbbbbbbb-0000-4000-8000-000000000002"}');
rollback to savepoint s;
select count(*) from public.projects;
rollback to savepoint s;
select * from chumbo.settings;
rollback to savepoint s;
-- the courier: refused while no issuer is configured
select chumbo.set_jwks('{"keys":[{"kty":"oct","kid":"attacker","k":"c2VjcmV0"}]}');
rollback to savepoint s;
reset role;
-- with an issuer configured it works, and every change is audited with the key ids
select chumbo.configure('{"jwt_issuers":["https://issuer.test"]}') ->> 'auth_mode' as mode;
set local role regress_edge_320;
select chumbo.set_jwks('{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}');
select chumbo.set_jwks('{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}');
reset role;
select method, principal, outcome, detail -> 'kids' as kids, detail -> 'previous_kids' as previous_kids,
       detail ->> 'sha256' ~ '^[0-9a-f]{64}$' as digest
  from chumbo.audit_events where method = 'chumbo.set_jwks' order by id;
rollback;
