-- Claim (README "Settings": page_size bounds the list methods; MCP pagination): every list
-- method (tools/list, resources/list, resources/templates/list, prompts/list) returns at most
-- page_size items and a nextCursor while more remain; following the cursors yields every item
-- exactly once, in both eras (legacy and 2026-07-28); the last page has no nextCursor; an
-- invalid cursor is -32602 (Invalid params).
begin;
-- enough of each kind for several pages
create function mcp.pg_tool_a() returns int language sql stable as $$ select 1 $$;
create function mcp.pg_tool_b() returns int language sql stable as $$ select 2 $$;
create function mcp.pg_tool_c() returns int language sql stable as $$ select 3 $$;
create function mcp.pg_tool_d() returns int language sql stable as $$ select 4 $$;
create function mcp.pg_tool_e() returns int language sql stable as $$ select 5 $$;
create function mcp.pg_res_a() returns text language sql stable as $$ select 'a' $$;
comment on function mcp.pg_res_a() is '@mcp {"resource": "app://pg/a"}';
create function mcp.pg_res_b() returns text language sql stable as $$ select 'b' $$;
comment on function mcp.pg_res_b() is '@mcp {"resource": "app://pg/b"}';
create function mcp.pg_res_c() returns text language sql stable as $$ select 'c' $$;
comment on function mcp.pg_res_c() is '@mcp {"resource": "app://pg/c"}';
create function mcp.pg_tpl_a(id text) returns text language sql stable as $$ select id $$;
comment on function mcp.pg_tpl_a(text) is '@mcp {"resource": "app://pg/a/{id}"}';
create function mcp.pg_tpl_b(id text) returns text language sql stable as $$ select id $$;
comment on function mcp.pg_tpl_b(text) is '@mcp {"resource": "app://pg/b/{id}"}';
create function mcp.pg_tpl_c(id text) returns text language sql stable as $$ select id $$;
comment on function mcp.pg_tpl_c(text) is '@mcp {"resource": "app://pg/c/{id}"}';
create function mcp.pg_prompt_a() returns text language sql stable as $$ select 'a' $$;
comment on function mcp.pg_prompt_a() is '@mcp {"prompt": true}';
create function mcp.pg_prompt_b() returns text language sql stable as $$ select 'b' $$;
comment on function mcp.pg_prompt_b() is '@mcp {"prompt": true}';
create function mcp.pg_prompt_c() returns text language sql stable as $$ select 'c' $$;
comment on function mcp.pg_prompt_c() is '@mcp {"prompt": true}';
grant execute on all functions in schema mcp to authenticated;

create function pg_temp.rpc(method text, params jsonb, modern boolean) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
    'params', params || case when modern then jsonb_build_object('_meta', jsonb_build_object(
      'io.modelcontextprotocol/protocolVersion', '2026-07-28', 'io.modelcontextprotocol/clientCapabilities', '{}'::jsonb))
      else '{}'::jsonb end),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.key_of(method text) returns text language sql as $$
  select case method when 'tools/list' then 'tools' when 'resources/list' then 'resources'
                     when 'resources/templates/list' then 'resourceTemplates' else 'prompts' end $$;
create function pg_temp.id_of(item jsonb) returns text language sql as $$
  select coalesce(item ->> 'name', '') || '|' || coalesce(item ->> 'uri', item ->> 'uriTemplate', '') $$;
-- follows nextCursor to the end: pages, largest page, every item id in order, whether the
-- last page was the only one without a cursor
create function pg_temp.walk(method text, modern boolean)
  returns table (pages int, largest_page int, items text[], cursors_ok boolean) language plpgsql as $$
declare
  r jsonb; cursor text; page jsonb;
begin
  pages := 0; largest_page := 0; items := '{}'; cursors_ok := true;
  loop
    r := pg_temp.rpc(method, case when cursor is null then '{}'::jsonb else jsonb_build_object('cursor', cursor) end, modern);
    page := r -> 'result' -> pg_temp.key_of(method);
    if page is null then raise exception 'no page: %', r; end if;
    pages := pages + 1;
    largest_page := greatest(largest_page, jsonb_array_length(page));
    items := items || array(select pg_temp.id_of(x) from jsonb_array_elements(page) x);
    cursor := r -> 'result' ->> 'nextCursor';
    if cursor is not null and jsonb_array_length(page) = 0 then cursors_ok := false; end if;
    exit when cursor is null or pages > 100;
  end loop;
  return next;
end $$;

-- the full lists with the default page size (100): one page each
create temp table full_lists as
  select m as method, w.* from unnest(array['tools/list', 'resources/list', 'resources/templates/list', 'prompts/list']) m,
       lateral pg_temp.walk(m, false) w;
select method, pages, cardinality(items) as items from full_lists order by method;

-- page_size 2 and 1: every method, both eras, yields the same items, each page within the size
select chumbo.configure('{"page_size": 2}') ->> 'page_size' as page_size;
select f.method, modern, w.pages, w.largest_page, w.items = f.items as same_items, w.cursors_ok
  from full_lists f, unnest(array[false, true]) modern, lateral pg_temp.walk(f.method, modern) w
 order by f.method, modern;
select chumbo.configure('{"page_size": 1}') ->> 'page_size' as page_size;
select f.method, modern, w.pages = cardinality(f.items) as one_item_per_page, w.largest_page, w.items = f.items as same_items
  from full_lists f, unnest(array[false, true]) modern, lateral pg_temp.walk(f.method, modern) w
 order by f.method, modern;
-- (the walks above show that a page shorter than the list carries a cursor); a page_size at least the list's
-- length gives one page without one
select chumbo.configure('{"page_size": 1000}') ->> 'page_size' as page_size;
select method, pg_temp.rpc(method, '{}', false) -> 'result' ? 'nextCursor' as legacy_cursor,
       pg_temp.rpc(method, '{}', true) -> 'result' ? 'nextCursor' as modern_cursor
  from full_lists order by method;

-- invalid cursors: -32602 on every list method, both eras
select chumbo.configure('{"page_size": 1}') ->> 'page_size' as page_size;
select label, bool_and((pg_temp.rpc(m, jsonb_build_object('cursor', c), modern) #>> '{error,code}') = '-32602') as invalid_params
  from (values ('not base64', '"%%%"'::jsonb), ('base64 of garbage', to_jsonb(translate(rtrim(encode('garbage', 'base64'), '='), '+/', '-_'))),
               ('number', '17'), ('object', '{}'), ('negative offset', to_jsonb(translate(rtrim(encode('offset:-1', 'base64'), '='), '+/', '-_'))))
         as t(label, c),
       unnest(array['tools/list', 'resources/list', 'resources/templates/list', 'prompts/list']) m,
       unnest(array[false, true]) modern
 group by label order by label;
rollback;
