-- The floor (bench-only schema): the least in-database work one tools/call of list_projects needs,
-- in one round trip: set request.jwt.claims, switch to authenticated, run the tool's query (the
-- body of mcp.list_projects, capped like chumbo's max_rows), build the JSON of the rows ({"rows":
-- [...]}, what the tool's structuredContent holds) and restore role and claims.
create schema if not exists bench;
revoke all on schema bench from public;
grant usage on schema bench to chumbo_edge;

create or replace function bench.floor_list_projects(claims jsonb, status text default null)
  returns jsonb
  language plpgsql volatile
as $$
declare
  result jsonb;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  set local role authenticated;
  select jsonb_build_object('rows', coalesce(jsonb_agg(to_jsonb(p)), '[]'::jsonb)) into result
  from (
    select p.*
    from public.projects p
    where floor_list_projects.status is null or p.status = floor_list_projects.status
    order by p.name collate "C"
    limit 1000
  ) p;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return result;
end
$$;
revoke all on function bench.floor_list_projects(jsonb, text) from public;
grant execute on function bench.floor_list_projects(jsonb, text) to chumbo_edge;

-- A DDL change the registry must notice: COMMENT ON one generated tool (a different one per
-- pgbench client, among the generated ones), as the owner (SECURITY DEFINER), so the bench can keep running as chumbo_edge.
create or replace function bench.touch(client int)
  returns void
  language plpgsql volatile security definer
  set search_path = ''
as $$
declare
  fn text := (select format('%I.%I', n.nspname, p.proname)
                from pg_proc p join pg_namespace n on n.oid = p.pronamespace
               where n.nspname = 'mcp' and p.proname like 'bench\_tool\_%'
               order by p.proname
              offset client % greatest(1, (select count(*) from pg_proc q
                                           where q.pronamespace = 'mcp'::regnamespace
                                             and q.proname like 'bench\_tool\_%'))
               limit 1);
begin
  if fn is null then
    raise exception 'bench.touch: no generated bench tool in schema mcp';
  end if;
  execute format('comment on function %s is %L', fn,
    format('Generated bench tool (touched %s). @mcp {"title": "Bench tool", "params": {"a": {"description": "Any text."}}}', clock_timestamp()));
end
$$;
revoke all on function bench.touch(int) from public;
grant execute on function bench.touch(int) to chumbo_edge;

-- The same floor calling the tool function itself (select from mcp.list_projects(...)) instead of
-- running its body inline: what calling the function costs (its `set search_path` keeps
-- PostgreSQL from inlining it, so its body is planned on every call), which chumbo cannot avoid.
-- chumbo against this one is chumbo's own overhead.
create or replace function bench.floor_fn_list_projects(claims jsonb, status text default null)
  returns jsonb
  language plpgsql volatile
as $$
declare
  result jsonb;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  set local role authenticated;
  select jsonb_build_object('rows', coalesce(jsonb_agg(to_jsonb(p)), '[]'::jsonb)) into result
  from (select * from mcp.list_projects(floor_fn_list_projects.status) limit 1000) p;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return result;
end
$$;
revoke all on function bench.floor_fn_list_projects(jsonb, text) from public;
grant execute on function bench.floor_fn_list_projects(jsonb, text) to chumbo_edge;
