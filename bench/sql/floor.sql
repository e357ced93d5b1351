-- The floors (bench-only schema): the least in-database work one tools/call of list_projects needs,
-- in one round trip, as plpgsql functions pgbench calls as the edge's login role.
--   bench.floor_list_projects       set request.jwt.claims, switch to authenticated, run the body of
--                                   mcp.list_projects inline, build {"rows": [...]} (what the tool's
--                                   structuredContent holds), restore role and claims.
--   bench.floor_like_for_like       issue 14's like-for-like floor: the same response chumbo gives
--                                   (the whole JSON-RPC message with the rows twice, as text and
--                                   as structuredContent), calling the mcp function inside a
--                                   begin ... exception block (chumbo must catch the tool's errors).
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
               where n.nspname = 'mcp' and p.proname like 'zz\_bench\_tool\_%'
               order by p.proname
              offset client % greatest(1, (select count(*) from pg_proc q
                                           where q.pronamespace = 'mcp'::regnamespace
                                             and q.proname like 'zz\_bench\_tool\_%'))
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

-- The like-for-like floor: everything chumbo's answer needs and nothing else (no audit row, no
-- argument validation, no paging). The text block is the rows' JSON text; chumbo renders its own
-- (a Markdown table or JSON lines), a comparable amount of work.
create or replace function bench.floor_like_for_like(id jsonb, claims jsonb, status text default null)
  returns jsonb
  language plpgsql volatile
as $$
declare
  rows jsonb;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  set local role authenticated;
  begin
    select coalesce(jsonb_agg(to_jsonb(p)), '[]'::jsonb) into rows
    from mcp.list_projects(floor_like_for_like.status) p;
  exception when others then
    reset role;
    perform set_config('request.jwt.claims', '', true);
    return jsonb_build_object('jsonrpc', '2.0', 'id', id, 'result', jsonb_build_object(
      'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'The call failed')),
      'isError', true));
  end;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return jsonb_build_object('jsonrpc', '2.0', 'id', id, 'result', jsonb_build_object(
    'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', rows::text)),
    'structuredContent', jsonb_build_object('rows', rows)));
end
$$;
revoke all on function bench.floor_like_for_like(jsonb, jsonb, text) from public;
grant execute on function bench.floor_like_for_like(jsonb, jsonb, text) to chumbo_edge;

-- Issue 32's do-nothing tool (`select 1`): chumbo's fixed cost of a call is all there is. Its
-- like-for-like floor gives the same answer (`{"content": [{"type": "text", "text": "1"}]}`) the
-- same way: the claims set, role authenticated, the function called inside an exception block.
create or replace function mcp.bench_noop()
  returns int language sql stable set search_path = '' as 'select 1';
comment on function mcp.bench_noop() is 'Does nothing: chumbo''s own cost of a call. @mcp {"annotations": {"readOnlyHint": true}}';
revoke execute on function mcp.bench_noop() from public, anon;
grant execute on function mcp.bench_noop() to authenticated;

create or replace function bench.floor_like_noop(id jsonb, claims jsonb)
  returns jsonb
  language plpgsql volatile
as $$
declare
  v int;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  set local role authenticated;
  begin
    v := mcp.bench_noop();
  exception when others then
    reset role;
    perform set_config('request.jwt.claims', '', true);
    return jsonb_build_object('jsonrpc', '2.0', 'id', id, 'result', jsonb_build_object(
      'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', 'The call failed')),
      'isError', true));
  end;
  reset role;
  perform set_config('request.jwt.claims', '', true);
  return jsonb_build_object('jsonrpc', '2.0', 'id', id, 'result', jsonb_build_object(
    'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', v::text))));
end
$$;
revoke all on function bench.floor_like_noop(jsonb, jsonb) from public;
grant execute on function bench.floor_like_noop(jsonb, jsonb) to chumbo_edge;
