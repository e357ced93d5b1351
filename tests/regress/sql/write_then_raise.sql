-- Claim (README "Security model": capabilities run inside a subtransaction; "raise exception"
-- becomes an isError result): a tool that writes (insert, update, durable state) and then
-- raises leaves nothing behind, while the request itself still answers and the caller's
-- transaction goes on. A call of the same tool that does not raise keeps its writes (so the
-- checks below can see writes at all), and a later failing call undoes only its own writes.
begin;
select regress.fixture_projects() as fixture;
select chumbo.configure('{"state_namespaces":["wr"]}') -> 'state_namespaces' as namespaces;
create function mcp.wr_then_fail(label text, fail boolean default true) returns jsonb language plpgsql as $$
begin
  insert into public.projects (org_id, name) values ('a0000000-0000-4000-8000-000000000000', label);
  update public.projects set description = 'touched by ' || label where id = 'a1000000-0000-4000-8000-000000000001';
  insert into public.documents (project_id, title) values ('a1000000-0000-4000-8000-000000000001', label);
  perform chumbo.state_put('wr', 'last', to_jsonb(label));
  if fail then
    raise exception 'wr: changed my mind about %', label;
  end if;
  return jsonb_build_object('written', label);
end $$;
revoke execute on function mcp.wr_then_fail(text, boolean) from public;
grant execute on function mcp.wr_then_fail(text, boolean) to authenticated;
create function pg_temp.call(args jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', 'wr_then_fail', 'arguments', args)),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
-- what the tool could have left behind (read as the owner: no RLS)
create function pg_temp.left_behind() returns table (projects text, documents text, description text, state_entries bigint)
  language sql as $$
  select (select string_agg(name, ',' order by name) from public.projects where name like 'wr-%'),
         (select string_agg(title, ',' order by title) from public.documents where title like 'wr-%'),
         (select description from public.projects where id = 'a1000000-0000-4000-8000-000000000001'),
         (select count(*) from chumbo.state_entries where namespace = 'wr') $$;
select * from pg_temp.left_behind();

-- 1. writes, then raises: an isError result with the message, and nothing left behind
select r -> 'isError' as is_error, r #>> '{content,0,text}' ~ '^wr: changed my mind about wr-1' as message
  from pg_temp.call('{"label":"wr-1"}') r;
select * from pg_temp.left_behind();
-- 2. the same tool without raising keeps everything it wrote
select r -> 'structuredContent' as result from pg_temp.call('{"label":"wr-2","fail":false}') r;
select * from pg_temp.left_behind();
-- 3. a failing call after that undoes only its own writes (state still holds wr-2's value)
select r -> 'isError' as is_error from pg_temp.call('{"label":"wr-3"}') r;
select * from pg_temp.left_behind();
select value from chumbo.state_entries where namespace = 'wr';
rollback;
