-- Fixed bug (claim, DESIGN §4 / README "Security model": capabilities run inside a subtransaction "so
-- that a failing tool becomes an isError result"; write_then_raise shows that a tool that raises leaves
-- nothing behind): when chumbo itself turns a tool's answer into an isError result AFTER the
-- tool ran (the result does not match the declared outputSchema, or it is over
-- max_result_bytes), the tool's writes are kept: the subtransaction was already released. The
-- model is told the call failed and may well retry it, writing twice. The expected output below
-- is the right behaviour, which chumbo now has: an isError result leaves nothing behind, whoever decided it.
begin;
select regress.fixture_projects() as fixture;
create function pg_temp.call(tool text, label text) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', jsonb_build_object('label', label))),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
create function mcp.ik_bad_output(label text) returns jsonb language plpgsql as $$
begin
  insert into public.projects (org_id, name) values ('a0000000-0000-4000-8000-000000000000', label);
  return jsonb_build_object('count', 'not a number');
end $$;
comment on function mcp.ik_bad_output(text) is
  'Writes, then returns a result its outputSchema refuses. @mcp {"outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}}}';
create function mcp.ik_too_big(label text) returns text language plpgsql as $$
begin
  insert into public.projects (org_id, name) values ('a0000000-0000-4000-8000-000000000000', label);
  return repeat('x', 5000);
end $$;
revoke execute on function mcp.ik_bad_output(text), mcp.ik_too_big(text) from public;
grant execute on function mcp.ik_bad_output(text), mcp.ik_too_big(text) to authenticated;
select chumbo.configure('{"max_result_bytes": 1000}') ->> 'max_result_bytes' as max_result_bytes;
select tool, (pg_temp.call(tool, 'ik-' || tool) ->> 'isError')::boolean as is_error
  from unnest(array['ik_bad_output', 'ik_too_big']) tool order by tool;
select tool, (select count(*) from public.projects where name = 'ik-' || tool) as rows_left_behind
  from unnest(array['ik_bad_output', 'ik_too_big']) tool order by tool;
rollback;
