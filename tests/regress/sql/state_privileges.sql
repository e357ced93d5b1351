-- chumbo's tables for state, limits, sandboxes and audit are out of reach of anon and
-- authenticated: every statement on every table in schemas named chumbo* is refused (actually
-- tried, as each role), the internal "_" functions cannot be called, the public state and sandbox
-- functions are SECURITY DEFINER with a fixed search_path, and a capability cannot pass itself off
-- as someone else by changing request.jwt.claims: the principal comes from the verified request.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create temp table outcomes (rolname text, relname text, op text, sqlstate text);
grant insert on outcomes to anon, authenticated;
-- 1. every table, view and sequence, every statement, as each role
do $$
declare
  r text;
  t record;
  op text;
  stmt text;
  col text;
  results text[] := '{}';
begin
  foreach r in array array['anon', 'authenticated'] loop
    for t in select n.nspname, c.relname, c.relkind, c.oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
              where n.nspname like 'chumbo%' and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S') order by 1, 2 loop
      select quote_ident(a.attname) into col from pg_attribute a
       where a.attrelid = t.oid and a.attnum > 0 and not a.attisdropped and a.attidentity = '' and a.attgenerated = ''
       order by a.attnum limit 1;
      foreach op in array case when t.relkind = 'S' then array['nextval', 'select'] else array['select', 'insert', 'update', 'delete', 'truncate'] end loop
        stmt := case op
          when 'select' then format('select 1 from %I.%I limit 1', t.nspname, t.relname)
          when 'insert' then format('insert into %I.%I (%s) select null where false', t.nspname, t.relname, col)
          when 'update' then format('update %I.%I set %s = %s where false', t.nspname, t.relname, col, col)
          when 'delete' then format('delete from %I.%I where false', t.nspname, t.relname)
          when 'truncate' then format('truncate %I.%I', t.nspname, t.relname)
          when 'nextval' then format('select nextval(%L)', t.nspname || '.' || t.relname) end;
        begin
          execute format('set local role %I', r);
          execute stmt;
          results := results || array[r, t.relname, op, 'ALLOWED'];
        exception when others then
          results := results || array[r, t.relname, op, sqlstate];
        end;
        reset role;
      end loop;
    end loop;
  end loop;
  insert into outcomes select results[i], results[i + 1], results[i + 2], results[i + 3]
    from generate_series(1, coalesce(array_length(results, 1), 0), 4) i;
end $$;
select relname, string_agg(distinct rolname, ', ') as roles, string_agg(distinct op, ' ') as statements,
       string_agg(distinct sqlstate, ', ') as outcomes
  from outcomes group by relname order by relname;
-- Every statement is refused; by privilege (42501) except where the relation refuses it anyway (a
-- view that is not updatable: 55000, truncate of a view: 42809). Reading is refused by privilege
-- everywhere.
select count(*) filter (where sqlstate = 'ALLOWED') as allowed,
       count(*) filter (where op = 'select' and sqlstate <> '42501') as readable,
       count(*) filter (where sqlstate not in ('42501', '55000', '42809')) as other
  from outcomes;

-- 2. the internal functions: no EXECUTE, and a call is refused before it runs (arguments are
--    subqueries so that no strict function is folded away without being called)
select r.rolname, p.oid::regprocedure as internal_callable
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace and n.nspname like 'chumbo%'
  cross join (values ('anon'), ('authenticated')) r(rolname)
 where p.proname like '\_%' and has_function_privilege(r.rolname, p.oid, 'EXECUTE');
truncate outcomes;
do $$
declare
  r text;
  f record;
  results text[] := '{}';
begin
  foreach r in array array['anon', 'authenticated'] loop
    for f in select p.oid, p.proname,
                    (select string_agg('(select null::' || format_type(t, null) || ')', ', ' order by o)
                       from unnest(p.proargtypes) with ordinality a(t, o)) as args
               from pg_proc p join pg_namespace n on n.oid = p.pronamespace and n.nspname = 'chumbo'
              where p.proname like '\_%' and p.prorettype not in ('trigger'::regtype, 'event_trigger'::regtype)
              order by 2 loop
      begin
        execute format('set local role %I', r);
        execute format('select chumbo.%I(%s)', f.proname, coalesce(f.args, ''));
        results := results || array[r, f.proname, 'call', 'ALLOWED'];
      exception when others then
        results := results || array[r, f.proname, 'call', sqlstate];
      end;
      reset role;
    end loop;
  end loop;
  insert into outcomes select results[i], results[i + 1], results[i + 2], results[i + 3]
    from generate_series(1, coalesce(array_length(results, 1), 0), 4) i;
end $$;
select string_agg(distinct sqlstate, ', ') as outcomes, count(*) filter (where sqlstate <> '42501') as allowed,
       bool_or(relname = '_principal') and bool_or(relname = '_principal_partition') and bool_or(relname = '_rate_hit')
       and bool_or(relname = '_state_check') and bool_or(relname = '_sandbox_owner') as includes_the_principal_and_state_internals
  from outcomes;
select relname as refused_only_for_one_role from outcomes group by relname having count(distinct rolname) <> 2;

-- 3. what the request roles may call of state and sandboxes, and how those functions run
select p.oid::regprocedure as function, has_function_privilege('anon', p.oid, 'EXECUTE') as anon,
       has_function_privilege('authenticated', p.oid, 'EXECUTE') as authenticated,
       p.prosecdef as security_definer, p.proconfig as config, pg_get_userbyid(p.proowner) = (
         select pg_get_userbyid(e.extowner) from pg_extension e where e.extname = 'chumbo') as owned_by_extension_owner
  from pg_proc p join pg_namespace n on n.oid = p.pronamespace and n.nspname = 'chumbo'
 where p.proname ~ '^(state_|sandbox_|prune_state|prune_sandboxes|_state_|_sandbox_)'
 order by p.oid::regprocedure::text;

-- 4. outside a request the public functions do nothing, whatever request.jwt.claims says
select chumbo.configure('{"state_namespaces": ["prefs"]}') -> 'state_namespaces' as state_namespaces;
\set VERBOSITY terse
savepoint s;
set local role authenticated;
select set_config('request.jwt.claims', :'alice', true) is not null as forged_claims;
select chumbo.state_put('prefs', 'k', '1');
rollback to savepoint s;
set local role authenticated;
select chumbo.sandbox_for_owner('fakebox', 'acme');
rollback to savepoint s;
\set VERBOSITY default

-- 5. inside a request, changing request.jwt.claims does not change whose state it is
create function mcp.impersonate(claims jsonb) returns jsonb language plpgsql as $$
begin
  perform set_config('request.jwt.claims', claims::text, true);
  perform set_config('request.jwt.claim.sub', claims ->> 'sub', true);
  return jsonb_build_object('sub_now', auth.uid(), 'read', chumbo.state_get('prefs', 'secret'));
end $$;
create function mcp.remember(v text) returns bigint language sql as $$ select chumbo.state_put('prefs', 'secret', to_jsonb(v)) $$;
revoke execute on function mcp.impersonate(jsonb), mcp.remember(text) from public;
grant execute on function mcp.impersonate(jsonb), mcp.remember(text) to authenticated;
-- remember answers the new revision as text (a scalar result has no structuredContent); recall
-- reads it back in a later request: the state is really Alice's, and not Bob's
create function mcp.recall() returns jsonb language sql as $$ select chumbo.state_get('prefs', 'secret') $$;
revoke execute on function mcp.recall() from public;
grant execute on function mcp.recall() to authenticated;
select r #> '{result,isError}' as is_error, r #>> '{result,content,0,text}' as alice_stored_revision
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"remember","arguments":{"v":"alice secret"}}}', :'alice') r;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{}}}', :'alice') #> '{result,structuredContent}' as alice_recalls,
       chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":{}}}', :'bob') #> '{result,structuredContent}' as bob_recalls;
-- changing the claims inside a capability fails the call: nothing read under them comes back
select regexp_replace((chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
         'params', jsonb_build_object('name', 'impersonate', 'arguments', jsonb_build_object('claims', :'alice'::jsonb))), :'bob')
  -> 'result')::text, 'trace id [0-9a-f]+', 'trace id <masked>') as bob_claiming_to_be_alice;
select regexp_replace((chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
         'params', jsonb_build_object('name', 'impersonate', 'arguments', jsonb_build_object('claims', :'bob'::jsonb))), :'alice')
  -> 'result')::text, 'trace id [0-9a-f]+', 'trace id <masked>') as alice_claiming_to_be_bob;
rollback;
