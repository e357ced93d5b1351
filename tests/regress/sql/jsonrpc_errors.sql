-- Every JSON-RPC error code the server emits, each with the request's id echoed (null when the
-- id cannot be known) and nothing else but the error.
begin;
select regress.fixture_tools('list_projects', 'rename_project', 'summarize_project') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.err(r jsonb) returns jsonb language sql
  as $$ select jsonb_build_object('id', r -> 'id', 'code', r -> 'error' -> 'code', 'jsonrpc', r -> 'jsonrpc',
         'has_message', jsonb_typeof(r -> 'error' -> 'message') = 'string', 'has_result', r ? 'result') $$;
-- chumbo.http in public mode (anon): the raw body text is parsed by chumbo
select chumbo.configure('{"auth_mode":"public"}') is not null as configured;
grant execute on function mcp.list_projects(text) to anon;
create function pg_temp.http(body text, headers jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', '{"content-type":"application/json","accept":"application/json, text/event-stream"}'::jsonb || headers,
         'body', body)) $$;
-- -32700 parse error: status 400? (the spec leaves it open; the body must be the error with id null)
select r -> 'status' as status, pg_temp.err(r -> 'body') as body
  from (values ('{"jsonrpc":"2.0","id":1,"method":"ping"'), ('not json'), (''), ('{"jsonrpc":"2.0","id":1,"method":"ping"}}'),
               ('{''jsonrpc'':''2.0''}'), ('[{"jsonrpc":"2.0","id":1,"method":"ping"},')) v(b),
       lateral (select pg_temp.http(b)) x(r);
-- -32600 invalid request
select pg_temp.err(chumbo.handle(b::jsonb, :'alice')) as invalid_request, b as body
  from (values ('{"jsonrpc":"1.0","id":1,"method":"ping"}'),
               ('{"id":1,"method":"ping"}'),
               ('{"jsonrpc":"2.0","id":1}'),
               ('{"jsonrpc":"2.0","id":1,"method":42}'),
               ('{"jsonrpc":"2.0","id":null,"method":"ping"}'),
               ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'),
               ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}'),
               ('{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}'),
               ('"ping"'),
               ('42'),
               ('null'),
               ('[]')) v(b);
-- -32601 method not found (id echoed, string ids too)
select pg_temp.err(chumbo.handle(b::jsonb, :'alice')) as method_not_found
  from (values ('{"jsonrpc":"2.0","id":1,"method":"no/such/method"}'),
               ('{"jsonrpc":"2.0","id":"abc","method":"tools/delete"}'),
               ('{"jsonrpc":"2.0","id":2,"method":"TOOLS/LIST"}'),
               ('{"jsonrpc":"2.0","id":3,"method":""}')) v(b);
-- -32602 invalid params
select pg_temp.err(chumbo.handle(b::jsonb, :'alice')) as invalid_params, b as body
  from (values ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}'),
               ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}'),
               ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":42}}'),
               ('{"jsonrpc":"2.0","id":4,"method":"tools/call"}'),
               ('{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"no_such_prompt"}}'),
               ('{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"summarize_project","arguments":{}}}'),
               ('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"not-a-cursor"}}'),
               ('{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{}}'),
               ('{"jsonrpc":"2.0","id":9,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"no_such_prompt"},"argument":{"name":"x","value":""}}}'),
               ('{"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"loud"}}'),
               ('{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"list_projects","arguments":{},"_meta":"x"}}'),
               ('{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"list_projects","arguments":{},"_meta":{"progressToken":{"a":1}}}}')) v(b);
-- what is wrong with a request's _meta, said (every request shares its shape)
select b as body, r #>> '{error,message}' as message
  from (values ('{"jsonrpc":"2.0","id":14,"method":"ping","params":{"_meta":[1]}}'),
               ('{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"_meta":{"progressToken":true}}}')) v(b),
       lateral (select chumbo.handle(b::jsonb, :'alice')) x(r);
-- bad argument values are tool execution errors (isError), not protocol errors (SEP-1303)
select r -> 'result' -> 'isError' as is_error, r ? 'error' as protocol_error, b as arguments
  from (values ('{"status":"deleted"}'), ('{"status":42}'), ('{"bogus":1}')) v(b),
       lateral (select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 11, 'method', 'tools/call',
                'params', jsonb_build_object('name', 'list_projects', 'arguments', b::jsonb)), :'alice')) x(r);
-- -32002 resource not found (legacy revisions), also for another org's project
select pg_temp.err(chumbo.handle(b::jsonb, :'alice')) as resource_not_found
  from (values ('{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://nothing/here"}}'),
               ('{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"app://projects/b1000000-0000-4000-8000-000000000001"}}'),
               ('{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"app://projects/00000000-0000-4000-8000-000000000000"}}')) v(b);
-- -32603 internal error: a resource or prompt whose function fails unexpectedly (here: a table
-- that does not exist). MCP: "Internal errors: -32603". The message must not leak SQL text or
-- the internal error; it carries a trace id (masked here).
create function mcp.broken_resource() returns text language plpgsql stable
  as $$ begin execute 'select * from regress_no_such_table'; return 'x'; end $$;
comment on function mcp.broken_resource() is 'x @mcp {"resource": "app://broken"}';
create function mcp.broken_prompt() returns text language plpgsql stable
  as $$ begin execute 'select * from regress_no_such_table'; return 'x'; end $$;
comment on function mcp.broken_prompt() is 'x @mcp {"prompt": true}';
create function mcp.broken_tool() returns text language plpgsql stable
  as $$ begin execute 'select * from regress_no_such_table'; return 'x'; end $$;
select b as request, pg_temp.err(r) as internal_error,
       regexp_replace(coalesce(r #>> '{error,message}', r #>> '{result,content,0,text}'), 'trace id [0-9a-f]+', 'trace id <masked>') as message,
       r::text ~* 'regress_no_such_table|select|execute' as leaks_sql
  from (values ('{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"app://broken"}}'),
               ('{"jsonrpc":"2.0","id":"p1","method":"prompts/get","params":{"name":"broken_prompt"}}'),
               ('{"jsonrpc":"2.0","id":"t1","method":"tools/call","params":{"name":"broken_tool","arguments":{}}}')) v(b),
       lateral (select chumbo.handle(b::jsonb, :'alice')) x(r);
-- an application error (raise exception) in a prompt is the caller's problem: -32602 with the
-- application's message
select pg_temp.err(r) as app_error, regexp_replace(r #>> '{error,message}', 'trace id [0-9a-f]+', 'trace id <masked>') as message
  from chumbo.handle('{"jsonrpc":"2.0","id":"p2","method":"prompts/get","params":{"name":"summarize_project","arguments":{"project_id":"not-a-uuid"}}}', :'alice') r;
-- notifications never get an answer, even unknown or malformed ones
select chumbo.handle(b::jsonb, :'alice') is null as no_answer, b as notification
  from (values ('{"jsonrpc":"2.0","method":"notifications/initialized"}'),
               ('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'),
               ('{"jsonrpc":"2.0","method":"notifications/no_such_thing"}'),
               ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"rename_project","arguments":{"project_id":"a1000000-0000-4000-8000-000000000001","name":"via notification"}}}')) v(b);
select name as not_renamed_by_notification from public.projects where id = 'a1000000-0000-4000-8000-000000000001';
rollback;
