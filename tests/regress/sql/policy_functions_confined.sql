-- Policy functions, model_output projections and text renderers are application code run like a
-- capability (audit gap G3; src/policy.rs eval_bool and resolved_scopes, src/projection.rs,
-- src/render.rs): as the caller, inside a security-restricted operation, time-bounded. Each of
-- them here runs one injectable statement (the row of attack.now) and then reports who it ran
-- as. Changing the role (SET ROLE, RESET ROLE, set_config('role')) or the claims
-- (request.jwt.claims, request.jwt.claim.sub) is refused: a visibility predicate or scope resolver
-- that fails hides, an execution or approval predicate that fails denies, a projection or
-- renderer that fails fails the call; nothing computed under another identity reaches the caller.
-- pg_sleep(60) is cut at the time bound (call_timeout_ms = 1000; the tool's own for projections
-- and renderers). A write (an INSERT the caller may make anywhere else) is refused too: these
-- functions run read-only (also bug_read_only_contract.sql), and nothing of it is kept.
--
-- Red if: policy functions ran outside run_as_caller (or without SECURITY_RESTRICTED_OPERATION):
-- the attack rows would say "shown"/"RAN ... as service_role" or "... as Bob"; or without a time
-- bound: this file would sleep 60 s per pg_sleep row and the elapsed check would be false.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
select chumbo.configure('{"call_timeout_ms": 1000}') ->> 'call_timeout_ms' as call_timeout_ms;
create schema attack;
grant usage on schema attack to authenticated;
create table attack.now (action text not null);
insert into attack.now values ('select 1');
grant select on attack.now to authenticated;
create table attack.writes (hook text default current_setting('attack.hook', true));
grant insert on attack.writes to authenticated;
-- who the function runs as once the statement ran: role, auth.uid() (from request.jwt.claims)
-- and the legacy claim setting request.jwt.claim.sub
create function attack.run() returns text language plpgsql as $$
begin
  execute (select action from attack.now);
  return concat_ws('/', current_user, auth.uid(), current_setting('request.jwt.claim.sub', true));
end $$;
create function attack.alice() returns text language sql immutable
  as $$ select 'authenticated/aaaaaaaa-0000-4000-8000-000000000001/aaaaaaaa-0000-4000-8000-000000000001' $$;
-- each hook's function: runs the attack, then answers as an honest one would only for Alice as
-- authenticated (so an identity change shows in the answer)
create function attack.visible() returns boolean language plpgsql as $$
begin return attack.run() = attack.alice(); end $$;
create function attack.can_execute(args jsonb) returns boolean language plpgsql as $$
begin return attack.run() = attack.alice(); end $$;
create function attack.approval(args jsonb) returns boolean language plpgsql as $$
begin return attack.run() <> attack.alice(); end $$;
create function attack.projection(v jsonb) returns jsonb language plpgsql as $$
begin return jsonb_build_object('projected_as', attack.run()); end $$;
create function attack.renderer(rows jsonb) returns text language plpgsql as $$
begin return 'rendered as ' || attack.run(); end $$;
create function attack.scopes() returns text[] language plpgsql as $$
begin return array['scoped as ' || attack.run()]; end $$;
grant execute on all functions in schema attack to authenticated;

create function mcp.guarded_by_visible() returns text language sql as $$ select 'ran' $$;
comment on function mcp.guarded_by_visible() is '@mcp {"visible": "attack.visible"}';
create function mcp.guarded_by_can_execute() returns text language sql as $$ select 'ran' $$;
comment on function mcp.guarded_by_can_execute() is '@mcp {"can_execute": "attack.can_execute"}';
create function mcp.guarded_by_approval() returns text language sql as $$ select 'ran' $$;
comment on function mcp.guarded_by_approval() is '@mcp {"approval": "attack.approval"}';
create function mcp.projected() returns int language sql as $$ select 1 $$;
comment on function mcp.projected() is '@mcp {"model_output": "attack.projection"}';
create function mcp.rendered() returns table (n int) language sql as $$ select 1 $$;
comment on function mcp.rendered() is '@mcp {"text": "attack.renderer"}';
create function mcp.needs_scope() returns text language sql as $$ select 'ran' $$;
comment on function mcp.needs_scope() is '@mcp {"scopes": ["scoped as authenticated/aaaaaaaa-0000-4000-8000-000000000001/aaaaaaaa-0000-4000-8000-000000000001"]}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;
select chumbo.configure('{"scope_resolver": "attack.scopes"}') ->> 'scope_resolver' as scope_resolver;

-- one line per hook: what Alice gets
create function pg_temp.hooks() returns table (hook text, outcome text) language sql as $$
  with listed as (select jsonb_path_query_array(regress.rpc('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}',
                                                            'tools/list'), '$.result.tools[*].name') as names)
  select 'visible', case when names ? 'guarded_by_visible' then 'shown' else 'hidden' end from listed
  union all
  select 'scope_resolver', case when names ? 'needs_scope' then 'shown' else 'hidden' end from listed
  union all
  select h, regexp_replace(split_part(coalesce(r #>> '{result,structuredContent,projected_as}', r #>> '{result,content,0,text}',
                                                r #>> '{error,message}'), E'\n', 1),
                           ' ?\(trace id [0-9a-f]+\)', '', 'g')
    from (values ('can_execute', 'guarded_by_can_execute'), ('approval', 'guarded_by_approval'),
                 ('model_output', 'projected'), ('text renderer', 'rendered')) t(h, tool),
         lateral regress.tool('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}', tool) r $$;

-- honest: shown, allowed, no approval needed, projected and rendered as Alice
select * from pg_temp.hooks();

-- attacks on the identity: every hook refuses them
create temp table outcomes (attack text, hook text, outcome text);
create function pg_temp.attack(label text, action text) returns void language sql as $$
  update attack.now set action = $2;
  insert into outcomes select $1, h.hook, h.outcome from pg_temp.hooks() h $$;
select count(pg_temp.attack(label, action)) as attacks from (values
  ('set role',          'set local role service_role'),
  ('reset role',        'reset role'),
  ('set_config role',   'select set_config(''role'', ''service_role'', true)'),
  ('claims rewritten',  'select set_config(''request.jwt.claims'', ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'', true)'),
  ('claim sub',         'set local request.jwt.claim.sub = ''bbbbbbbb-0000-4000-8000-000000000002'''),
  ('write',             'insert into attack.writes default values')
) as t(label, action);
select attack, hook, outcome from outcomes order by attack, hook;
select count(*) as writes_kept from attack.writes;
-- nothing computed as service_role or as Bob came back
select count(*) filter (where outcome ~ 'service_role|bbbbbbbb') as leaked,
       count(*) filter (where outcome = 'hidden' or outcome ~ '^(Not allowed: )?(whether guarded_by_approval needs approval could not be decided: )?Refused: a (capability cannot change|write where only reading)') as refused,
       count(*) as total
  from outcomes;

-- control: the same statements in plain SQL (this superuser session, claims set as for Alice, no
-- restricted operation) do change the identity, so only the way chumbo runs the hooks refuses them
create function pg_temp.control(action text) returns text language plpgsql as $$
begin
  update attack.now set action = $1;
  begin
    perform set_config('request.jwt.claims', '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}', true);
    perform set_config('request.jwt.claim.sub', 'aaaaaaaa-0000-4000-8000-000000000001', true);
    perform set_config('role', 'authenticated', true);
    raise exception using message = attack.run();   -- undoes the settings the attack made
  exception when raise_exception then
    return sqlerrm;
  end;
end $$;
select attack, pg_temp.control(action) as as_plain_sql from (values
  ('set role',          'set local role service_role'),
  ('reset role',        'reset role'),
  ('set_config role',   'select set_config(''role'', ''service_role'', true)'),
  ('claims rewritten',  'select set_config(''request.jwt.claims'', ''{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'', true)'),
  ('claim sub',         'set local request.jwt.claim.sub = ''bbbbbbbb-0000-4000-8000-000000000002''')
) as t(attack, action);
select current_user as still;

-- pg_sleep(60) in each hook: cut at the time bound (1 s for the policies, the tool's for the
-- projection and the renderer); the whole round of six takes seconds, not minutes
update attack.now set action = 'select pg_sleep(60)';
select clock_timestamp() as started \gset
select * from pg_temp.hooks();
select clock_timestamp() - :'started'::timestamptz < interval '30 seconds' as bounded;
rollback;
