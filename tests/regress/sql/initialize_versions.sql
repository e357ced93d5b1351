-- Legacy lifecycle: initialize echoes each supported revision, answers an unknown one with the
-- newest it supports, advertises exactly the capabilities it has; ping; initialized.
begin;
select regress.fixture_tools('list_projects', 'summarize_project') as fixture;
create function pg_temp.init(version jsonb) returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'initialize',
         'params', jsonb_build_object('protocolVersion', version, 'capabilities', '{}'::jsonb,
                                      'clientInfo', '{"name":"regress","version":"1.0"}'::jsonb)),
         '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
select v as requested, r #> '{result,protocolVersion}' as answered, r -> 'error' -> 'code' as error
  from (values ('"2024-11-05"'::jsonb), ('"2025-03-26"'), ('"2025-06-18"'), ('"2025-11-25"'),
               ('"2024-10-07"'), ('"1999-01-01"'), ('"2099-12-31"'), ('"latest"')) x(v),
       lateral (select pg_temp.init(v)) y(r);
-- the shape of the answer (2025-11-25)
select r -> 'jsonrpc' as jsonrpc, r -> 'id' as id,
       (select jsonb_agg(k order by k) from jsonb_object_keys(r -> 'result') k) as result_keys,
       (select jsonb_agg(k order by k) from jsonb_object_keys(r #> '{result,capabilities}') k) as capabilities,
       r #> '{result,capabilities,tools}' as tools_cap,
       r #> '{result,capabilities,completions}' as completions_cap,
       r #>> '{result,serverInfo,name}' as server_name,
       jsonb_typeof(r #> '{result,serverInfo,version}') as server_version_type
  from pg_temp.init('"2025-11-25"') r;
-- capabilities are truthful for the caller: anon, who can complete nothing, gets no completions
select (select jsonb_agg(k order by k) from jsonb_object_keys(r #> '{result,capabilities}') k) as anon_capabilities
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}') r;
-- initialize with missing or malformed params
select b as body, r -> 'error' -> 'code' as error, r #> '{result,protocolVersion}' as answered
  from (values ('{"jsonrpc":"2.0","id":1,"method":"initialize"}'),
               ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'),
               ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":20250618,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}'),
               ('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}')) v(b),
       lateral (select chumbo.handle(b::jsonb)) x(r);
-- ping and the initialized notification
select chumbo.handle('{"jsonrpc":"2.0","id":"p","method":"ping"}') as ping,
       chumbo.handle('{"jsonrpc":"2.0","id":"p2","method":"ping","params":{}}') as ping_params,
       chumbo.handle('{"jsonrpc":"2.0","method":"notifications/initialized"}') is null as initialized_no_answer;
-- over HTTP: initialize without a version header; the notification gets 202 and no body;
-- an unsupported mcp-protocol-version header is a 400
select chumbo.configure('{"auth_mode":"public"}') is not null as configured;
select r -> 'status' as status, r #> '{body,result,protocolVersion}' as version
  from chumbo.http('{"method":"POST","path":"/mcp","headers":{"content-type":"application/json","accept":"application/json, text/event-stream"},
       "body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"x\",\"version\":\"1\"}}}"}') r;
select r -> 'status' as status, r -> 'body' as body
  from chumbo.http('{"method":"POST","path":"/mcp","headers":{"content-type":"application/json","mcp-protocol-version":"2025-06-18"},
       "body":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"}') r;
select r -> 'status' as status, r #> '{body,error,code}' as code, r #> '{body,id}' as id
  from chumbo.http('{"method":"POST","path":"/mcp","headers":{"content-type":"application/json","mcp-protocol-version":"1999-01-01"},
       "body":"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}"}') r;
select m as method, r -> 'status' as status
  from (values ('GET'), ('DELETE')) v(m),
       lateral (select chumbo.http(jsonb_build_object('method', m, 'path', '/mcp', 'headers', '{"accept":"text/event-stream"}'::jsonb))) x(r);
rollback;
