-- Claims (README "Declaring capabilities") not covered elsewhere in regress:
--  * metadata `icons` shows on tools, resources and prompts; `name` names a resource;
--  * resources return text (text/plain), jsonb (JSON text, application/json) or bytea (a base64
--    blob, application/octet-stream unless `mimeType` says otherwise); null means not found;
--  * prompts return text (one user message), a jsonb array of chumbo.message(...), or
--    {"description", "messages"}; anything else is an internal error with a trace id;
--  * completions: a list filtered by prefix, at most 100 values with hasMore; completion/complete
--    (and the `completions` capability) only when a visible capability declares completions;
--  * chumbo.tool_result(content, structured, is_error) is answered exactly.
begin;
create function pg_temp.rpc(method text, params jsonb default '{}', claims jsonb default '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}')
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params), claims) $$;
create function mcp.cs_tool() returns text language sql stable as $$ select 'ok' $$;
comment on function mcp.cs_tool() is 'Tool with an icon. @mcp {"icons": [{"src": "https://example.com/t.png", "mimeType": "image/png"}]}';
create function mcp.cs_text() returns text language sql stable as $$ select 'plain words' $$;
comment on function mcp.cs_text() is 'Text. @mcp {"resource": "app://cs/text", "name": "cs-text-name", "icons": [{"src": "https://example.com/r.png"}]}';
create function mcp.cs_json() returns jsonb language sql stable as $$ select '{"a": [1, 2]}'::jsonb $$;
comment on function mcp.cs_json() is '@mcp {"resource": "app://cs/json"}';
create function mcp.cs_bytes() returns bytea language sql stable as $$ select '\xdeadbeef'::bytea $$;
comment on function mcp.cs_bytes() is '@mcp {"resource": "app://cs/bytes"}';
create function mcp.cs_png() returns bytea language sql stable as $$ select '\x89504e47'::bytea $$;
comment on function mcp.cs_png() is '@mcp {"resource": "app://cs/png", "mimeType": "image/png"}';
create function mcp.cs_item(id text) returns text language sql stable as $$ select case when id = 'known' then 'item ' || id end $$;
comment on function mcp.cs_item(text) is '@mcp {"resource": "app://cs/items/{id}"}';
create function mcp.cs_prompt_text(topic text) returns text language sql stable as $$ select 'Tell me about ' || topic $$;
comment on function mcp.cs_prompt_text(text) is 'Prompt as text. @mcp {"prompt": true, "icons": [{"src": "https://example.com/p.png"}]}';
create function mcp.cs_prompt_messages() returns jsonb language sql stable
  as $$ select jsonb_build_array(chumbo.message('user', chumbo.content_text('Hi')), chumbo.message('assistant', chumbo.content_text('Hello'))) $$;
comment on function mcp.cs_prompt_messages() is '@mcp {"prompt": true}';
create function mcp.cs_prompt_object() returns jsonb language sql stable
  as $$ select jsonb_build_object('description', 'Own description', 'messages', jsonb_build_array(chumbo.message('user', chumbo.content_text('Go')))) $$;
comment on function mcp.cs_prompt_object() is 'Comment description. @mcp {"prompt": true}';
create function mcp.cs_prompt_broken() returns jsonb language sql stable as $$ select '42'::jsonb $$;
comment on function mcp.cs_prompt_broken() is '@mcp {"prompt": true}';
create function mcp.cs_prompt_complete(word text) returns text language sql stable as $$ select word $$;
do $$ begin
  execute format('comment on function mcp.cs_prompt_complete(text) is %L', '@mcp ' || jsonb_build_object('prompt', true,
    'completions', jsonb_build_object('word', (select jsonb_agg('w' || lpad(i::text, 3, '0') order by i) from generate_series(1, 150) i)))::text);
end $$;
create function mcp.cs_result(fail boolean) returns chumbo.tool_result language sql stable
  as $$ select chumbo.tool_result(jsonb_build_array(chumbo.content_text('custom')), '{"k": 1}', fail) $$;
revoke execute on all functions in schema mcp from public;
do $$
declare f regprocedure;
begin
  for f in select p.oid from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'mcp' and p.proname like 'cs\_%' loop
    execute format('grant execute on function %s to authenticated', f);
  end loop;
end $$;

-- icons and names
select jsonb_path_query_first(pg_temp.rpc('tools/list'), '$.result.tools[*] ? (@.name == "cs_tool").icons') as tool_icons,
       jsonb_path_query_first(pg_temp.rpc('resources/list'), '$.result.resources[*] ? (@.uri == "app://cs/text")') as resource,
       jsonb_path_query_first(pg_temp.rpc('prompts/list'), '$.result.prompts[*] ? (@.name == "cs_prompt_text").icons') as prompt_icons;
-- resource contents by return type
select uri, pg_temp.rpc('resources/read', jsonb_build_object('uri', uri)) -> 'result' -> 'contents' as contents
  from unnest(array['app://cs/text', 'app://cs/json', 'app://cs/bytes', 'app://cs/png', 'app://cs/items/known']) uri;
-- null: not found (-32002 with the uri)
select pg_temp.rpc('resources/read', '{"uri":"app://cs/items/unknown"}') -> 'error' as not_found;
-- prompts
select name, r -> 'result' as result from unnest(array['cs_prompt_text', 'cs_prompt_messages', 'cs_prompt_object']) name,
  lateral pg_temp.rpc('prompts/get', jsonb_build_object('name', name, 'arguments',
    case when name = 'cs_prompt_text' then '{"topic":"anvils"}'::jsonb else '{}'::jsonb end)) r;
select r #> '{error,code}' as code, r #>> '{error,message}' ~ '\(trace id [0-9a-f]+\)$' as has_trace_id
  from pg_temp.rpc('prompts/get', '{"name":"cs_prompt_broken"}') r;
-- completions: prefix filter, at most 100 with hasMore
select r #> '{result,completion,values}' as w14x, r #> '{result,completion,hasMore}' as has_more
  from pg_temp.rpc('completion/complete', '{"ref":{"type":"ref/prompt","name":"cs_prompt_complete"},"argument":{"name":"word","value":"w14"}}') r;
select jsonb_array_length(r #> '{result,completion,values}') as all_values, r #> '{result,completion,hasMore}' as has_more
  from pg_temp.rpc('completion/complete', '{"ref":{"type":"ref/prompt","name":"cs_prompt_complete"},"argument":{"name":"word","value":""}}') r;
-- anon sees no capability with completions: no capability advertised, and the method is unknown
select pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #> '{result,capabilities}' ? 'completions' as authenticated_offered,
       pg_temp.rpc('initialize', '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}', '{"role":"anon"}') #> '{result,capabilities}' ? 'completions' as anon_offered,
       pg_temp.rpc('completion/complete', '{"ref":{"type":"ref/prompt","name":"cs_prompt_complete"},"argument":{"name":"word","value":""}}', '{"role":"anon"}') #> '{error,code}' as anon_complete;
-- chumbo.tool_result is answered exactly
select fail, pg_temp.rpc('tools/call', jsonb_build_object('name', 'cs_result', 'arguments', jsonb_build_object('fail', fail))) -> 'result' as result
  from unnest(array[false, true]) fail;
rollback;
