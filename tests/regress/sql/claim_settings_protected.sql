-- Claim settings under tool code (audit gap G1, src/postgres/guards.rs): a capability cannot change
-- request.jwt.claims nor a request.jwt.claim.<key> setting chumbo defined (the 20 standard keys,
-- carried or not, and every further key a token carried in this backend, up to 64), by SET,
-- SET LOCAL, set_config (local or not) or RESET: the call fails with the identity refusal and
-- nothing read under the changed claim comes back. The policies here read the claims the three
-- ways applications do: auth.jwt() (request.jwt.claims), the legacy request.jwt.claim.<key>
-- setting of a key the token carries (tenant) and of a standard key it does not carry (email).
--
-- A key that no token carried in this backend (and every key past the 64-key cap) has no
-- definition of chumbo's: tool code setting it creates a placeholder setting, which RLS would read
-- as the caller's. Such a call is refused and rolled back, an error it raised after reading under
-- the forged value included (guards::claim_placeholders_made, session::run_as_caller), and the
-- next call finds the key defined and protected (guards::protect_claim_placeholders). Before
-- that fix the first query's rows said RAN with Globex's notes (a bug found by audit G1).
--
-- Red if: guards.rs stops defining request.jwt.claims or the standard keys with
-- GUC_NOT_WHILE_SEC_REST (the rows of the third query would say RAN and show Globex's notes),
-- session.rs set_claims stops calling protect_claim for carried keys (the 'tenant' rows would),
-- or placeholders are no longer refused (the first query's rows and past_the_cap would).
-- This file relies on running in a fresh backend (pg_regress starts one per file): which keys are
-- defined is per backend.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated","tenant":"acme"}'
\set carol '{"sub":"cccccccc-0000-4000-8000-000000000003","role":"authenticated"}'
create table public.notes (tenant text not null, email text, note text not null);
insert into public.notes values ('acme', null, 'acme roadmap'), ('globex', 'ceo@globex.test', 'globex merger plan');
alter table public.notes enable row level security;
alter table public.notes force row level security;
create policy by_jwt on public.notes for select to authenticated
  using (tenant = auth.jwt() ->> 'tenant');
create policy by_legacy_tenant on public.notes for select to authenticated
  using (tenant = current_setting('request.jwt.claim.tenant', true));
create policy by_legacy_email on public.notes for select to authenticated
  using (email = current_setting('request.jwt.claim.email', true));
grant select on public.notes to authenticated;
-- one injectable statement, then what the caller can read
create function mcp.run_sql(action text) returns jsonb language plpgsql volatile as $$
begin
  execute action;
  return jsonb_build_object('notes', (select jsonb_agg(note order by note) from public.notes),
    'tenant', current_setting('request.jwt.claim.tenant', true));
end $$;
grant execute on function mcp.run_sql(text) to authenticated;
create function pg_temp.outcome(r jsonb) returns text language sql as $$
  select case when (r #> '{result,isError}')::boolean
    then regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', '')
    else 'RAN: ' || (r #>> '{result,structuredContent}') end $$;

-- Placeholders first (see the header): in this backend no token has carried "tenant" yet, so
-- Carol's tool creates request.jwt.claim.tenant itself. Refused, whether the tool then returns or
-- raises what the legacy-claim policy let it read; the next call finds the key protected.
select label, pg_temp.outcome(r) as outcome, strpos(r::text, 'globex merger') = 0 as nothing_leaked
from (values
  ('set_config, then raise what it read', $a$do $$ begin perform set_config('request.jwt.claim.tenant', 'globex', true);
     raise exception 'read: %', (select string_agg(note, ',') from public.notes); end $$$a$),
  ('set local, key never carried', 'set local request.jwt.claim.tenant = ''globex'''),
  ('set_config, key never carried', 'select set_config(''request.jwt.claim.tenant'', ''globex'', true)')
) as t(label, action),
lateral regress.tool(:'carol', 'run_sql', jsonb_build_object('action', action)) r;

-- honest calls: Alice (tenant acme) sees Acme's note; Carol (no tenant, no email) sees nothing
select pg_temp.outcome(regress.tool(:'alice', 'run_sql', '{"action":"select 1"}')) as alice_honest,
       pg_temp.outcome(regress.tool(:'carol', 'run_sql', '{"action":"select 1"}')) as carol_honest;

-- every way of changing a claim setting chumbo defined: refused, and no Globex row comes back
select who, label, pg_temp.outcome(r) as outcome, strpos(r::text, 'globex merger') = 0 as nothing_leaked
from (values
  ('alice', 'claims: set_config local',   'select set_config(''request.jwt.claims'', ''{"role":"authenticated","tenant":"globex"}'', true)'),
  ('alice', 'claims: set_config session', 'select set_config(''request.jwt.claims'', ''{"role":"authenticated","tenant":"globex"}'', false)'),
  ('alice', 'claims: set',                'set request.jwt.claims = ''{"role":"authenticated","tenant":"globex"}'''),
  ('alice', 'claims: reset',              'reset request.jwt.claims'),
  ('alice', 'carried key: set local',     'set local request.jwt.claim.tenant = ''globex'''),
  ('alice', 'carried key: set_config',    'select set_config(''request.jwt.claim.tenant'', ''globex'', false)'),
  ('alice', 'carried key: reset',         'reset request.jwt.claim.tenant'),
  ('carol', 'tenant, carried by Alice before', 'set local request.jwt.claim.tenant = ''globex'''),
  ('carol', 'standard key not carried: set local',  'set local request.jwt.claim.email = ''ceo@globex.test'''),
  ('carol', 'standard key not carried: set_config', 'select set_config(''request.jwt.claim.email'', ''ceo@globex.test'', true)'),
  ('carol', 'standard key not carried: set',        'set request.jwt.claim.email = ''ceo@globex.test''')
) as t(who, label, action),
lateral regress.tool(case who when 'alice' then (:'alice')::jsonb else (:'carol')::jsonb end, 'run_sql',
                     jsonb_build_object('action', action)) r;

-- The cap: 20 standard keys + 64 further keys per backend get a protected definition. "tenant"
-- took one; a token with 70 new keys gets 63 of them set as settings, the other 7 only in
-- request.jwt.claims; tool code setting one of those 7 is refused (a placeholder it made).
create function mcp.claim_settings() returns jsonb language plpgsql volatile as $$
begin
  perform set_config('request.jwt.claim.k70', 'forged', true);
  return jsonb_build_object(
    'set_as_settings', (select count(*) from generate_series(1, 70) i
                         where current_setting(format('request.jwt.claim.k%s', i), true) = 'v' || i),
    'k70_in_claims', auth.jwt() ->> 'k70',
    'k70_setting', current_setting('request.jwt.claim.k70', true));
end $$;
grant execute on function mcp.claim_settings() to authenticated;
select pg_temp.outcome(regress.tool((:'carol')::jsonb || (select jsonb_object_agg('k' || i, 'v' || i) from generate_series(1, 70) i),
                                    'claim_settings')) as past_the_cap;

-- this session is untouched
select current_user, coalesce(current_setting('request.jwt.claims', true), '') as claims,
       coalesce(current_setting('request.jwt.claim.tenant', true), '') as tenant;
rollback;
