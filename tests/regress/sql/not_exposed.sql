-- Claims (README "Declaring capabilities", DESIGN §3): overloaded, variadic, unnamed-parameter
-- and unsupported-type functions are not exposed, nor a function whose @mcp metadata has an
-- unknown key (at the top or nested), nor one whose name is not 1-128 of A-Za-z0-9_.-, nor a
-- procedure; chumbo.doctor() says why for each. A well-formed control
-- function next to them is exposed, so an empty list cannot pass.
begin;
create function pg_temp.rpc(method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params),
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function mcp.ne_control(a int) returns int language sql stable as $$ select a $$;
create function mcp.ne_twin(a int) returns int language sql stable as $$ select a $$;
create function mcp.ne_twin(a text) returns text language sql stable as $$ select a $$;
create function mcp.ne_variadic(variadic nums int[]) returns int language sql stable
  as $$ select sum(n)::int from unnest(nums) n $$;
create function mcp.ne_unnamed(int) returns int language sql stable as $$ select $1 $$;
create function mcp.ne_half_named(a int, int) returns int language sql stable as $$ select a + $2 $$;
create function mcp.ne_point(p point) returns text language sql stable as $$ select p::text $$;
create function mcp.ne_range(r int4range) returns text language sql stable as $$ select r::text $$;
create function mcp."ne_bad name!"() returns int language sql stable as $$ select 1 $$;
create procedure mcp.ne_procedure(a int) language sql as $$ select a $$;
create function mcp.ne_typo() returns text language sql stable as $$ select 'typo' $$;
comment on function mcp.ne_typo() is 'Typo in a key. @mcp {"titel": "Typo"}';
create function mcp.ne_nested_typo(a int) returns int language sql stable as $$ select a $$;
comment on function mcp.ne_nested_typo(int) is 'Typo in a nested key. @mcp {"params": {"a": {"descripton": "x"}}}';
create function mcp.ne_annotation_typo() returns int language sql stable as $$ select 1 $$;
comment on function mcp.ne_annotation_typo() is 'Typo in an annotation. @mcp {"annotations": {"readonlyHint": true}}';
create function mcp.ne_resource_typo() returns text language sql stable as $$ select 'r' $$;
comment on function mcp.ne_resource_typo() is 'A resource with a typo. @mcp {"resource": "app://ne/typo", "mimetype": "text/plain"}';
create function mcp.ne_prompt_typo(topic text) returns text language sql stable as $$ select topic $$;
comment on function mcp.ne_prompt_typo(text) is 'A prompt with a typo. @mcp {"prompt": true, "completion": {"topic": ["a"]}}';
-- every one of them is executable by authenticated (and not by PUBLIC, so doctor adds no warning)
do $$
declare f regprocedure;
begin
  for f in select p.oid from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'mcp' and p.proname like 'ne\_%' loop
    execute format('revoke execute on routine %s from public', f);
    execute format('grant execute on routine %s to authenticated', f);
  end loop;
end $$;

-- only the control is listed
select jsonb_path_query_array(pg_temp.rpc('tools/list'), '$.result.tools[*].name ? (@ starts with "ne_")') as tools,
       jsonb_path_query_array(pg_temp.rpc('resources/list'), '$.result.resources[*].uri ? (@ starts with "app://ne/")') as resources,
       jsonb_path_query_array(pg_temp.rpc('prompts/list'), '$.result.prompts[*].name ? (@ starts with "ne_")') as prompts;
-- and only the control can be called; the others are unknown (-32602), never guessed
select name, coalesce(r #> '{result,content,0,text}', r #> '{error,code}') as outcome
  from unnest(array['ne_control', 'ne_twin', 'ne_variadic', 'ne_unnamed', 'ne_half_named', 'ne_point',
                    'ne_range', 'ne_typo', 'ne_nested_typo', 'ne_annotation_typo', 'ne_bad name!', 'ne_procedure']) as name,
       lateral pg_temp.rpc('tools/call', jsonb_build_object('name', name, 'arguments',
         case name when 'ne_control' then '{"a": 1}'::jsonb else '{}'::jsonb end)) r
 order by name;
select pg_temp.rpc('resources/read', '{"uri":"app://ne/typo"}') #> '{error,code}' as resource_read,
       pg_temp.rpc('prompts/get', '{"name":"ne_prompt_typo","arguments":{"topic":"a"}}') #> '{error,code}' as prompt_get;
-- doctor: hidden, with the reason; the control is exposed to authenticated
-- (serde's list of the keys it expected is cut off: it grows with every new metadata key)
select "function", state, exposed_to, array(select regexp_replace(x, ', expected one of .*$', '') from unnest(reasons) x) as reasons
  from chumbo.doctor() where "function" ~ '^mcp\."?ne_' order by 1;
rollback;
