-- MCP 2026-07-28 on the same entry points: era from the body, required _meta, -32022 with the
-- supported versions, removed methods as -32601 (HTTP 404), resultType/serverInfo on every
-- result, cache hints on discover/list/read, header cross-checks (-32020, HTTP 400), base64
-- sentinel values, Mcp-Param-* headers for x-mcp-header arguments, log level opt-in.
begin;
select regress.fixture_tools('list_projects', 'project', 'my_organizations', 'summarize_project') as fixture;
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.meta(extra jsonb default '{}') returns jsonb language sql as $$
  select jsonb_build_object('io.modelcontextprotocol/protocolVersion', '2026-07-28',
                            'io.modelcontextprotocol/clientCapabilities', '{}'::jsonb) || extra $$;
create function pg_temp.rpc(method text, params jsonb default '{}', claims jsonb default null) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
                       'params', params || jsonb_build_object('_meta', pg_temp.meta())), claims) $$;
create function pg_temp.http(headers jsonb, body jsonb) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'headers', headers, 'body', body::text)) $$;
create function pg_temp.std(method text, name text default null) returns jsonb language sql as $$
  select jsonb_strip_nulls(jsonb_build_object('mcp-protocol-version', '2026-07-28', 'mcp-method', method, 'mcp-name', name)) $$;
create function pg_temp.body(id int, method text, params jsonb default '{}') returns jsonb language sql as $$
  select jsonb_build_object('jsonrpc', '2.0', 'id', id, 'method', method, 'params', params || jsonb_build_object('_meta', pg_temp.meta())) $$;

-- discover and the shape of results
select (r -> 'result') - '_meta' as discover, r #> '{result,_meta,io.modelcontextprotocol/serverInfo,name}' as server
  from pg_temp.rpc('server/discover', '{}', :'alice') r;
select r -> 'result' ->> 'resultType' as result_type, r -> 'result' -> 'ttlMs' as ttl, r -> 'result' ->> 'cacheScope' as scope,
       jsonb_path_query_array(r, '$.result.tools[*].name') as tools
  from pg_temp.rpc('tools/list', '{}', :'alice') r;
select method, r -> 'result' ->> 'cacheScope' as scope, r -> 'result' ? 'ttlMs' as has_ttl
  from unnest(array['prompts/list', 'resources/list', 'resources/templates/list']) as method,
       lateral pg_temp.rpc(method, '{}', :'alice') r;
select r -> 'result' ->> 'cacheScope' as read_scope, r -> 'result' -> 'ttlMs' as read_ttl,
       r #>> '{result,contents,0,uri}' as uri
  from pg_temp.rpc('resources/read', '{"uri":"app://orgs/mine"}', :'alice') r;
-- a missing resource is -32602 with the uri (not -32002) in 2026
select r -> 'error' as missing from pg_temp.rpc('resources/read', '{"uri":"app://projects/a9999999-0000-4000-8000-000000000009"}', :'alice') r;
-- removed and unknown methods
select method, r -> 'error' -> 'code' as code from unnest(array['initialize', 'ping', 'logging/setLevel',
  'resources/subscribe', 'resources/unsubscribe', 'no/such']) as method, lateral pg_temp.rpc(method) r;

-- envelope errors (through chumbo.handle: no headers)
select label, r -> 'id' as id, r -> 'error' -> 'code' as code, r -> 'error' -> 'data' as data from (values
  ('unsupported version', chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}')),
  ('no clientCapabilities', chumbo.handle('{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')),
  ('capabilities not an object', chumbo.handle('{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}')),
  ('no clientInfo is fine', chumbo.handle('{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'))
) as t(label, r);

-- HTTP: status codes and header cross-checks; every error echoes the id
select label, r -> 'status' as status, r #> '{body,id}' as id, r #> '{body,error,code}' as code from (values
  ('ok', pg_temp.http(pg_temp.std('tools/list'), pg_temp.body(10, 'tools/list'))),
  ('no headers', pg_temp.http('{}', pg_temp.body(11, 'tools/list'))),
  ('header version differs', pg_temp.http(pg_temp.std('tools/list') || '{"mcp-protocol-version":"2025-11-25"}', pg_temp.body(12, 'tools/list'))),
  ('method header missing', pg_temp.http('{"mcp-protocol-version":"2026-07-28"}', pg_temp.body(13, 'tools/list'))),
  ('method header case', pg_temp.http(pg_temp.std('TOOLS/LIST'), pg_temp.body(14, 'tools/list'))),
  ('method header padded', pg_temp.http(pg_temp.std('  tools/list  '), pg_temp.body(15, 'tools/list'))),
  ('modern header, legacy body', pg_temp.http(pg_temp.std('tools/list'), '{"jsonrpc":"2.0","id":16,"method":"tools/list"}')),
  ('name header missing', pg_temp.http(pg_temp.std('resources/read'), pg_temp.body(17, 'resources/read', '{"uri":"app://orgs/mine"}'))),
  ('name header base64 (headers pass; anon cannot see it: -32602)', pg_temp.http(pg_temp.std('resources/read', '=?base64?' || encode(convert_to('app://orgs/mine', 'UTF8'), 'base64') || '?='), pg_temp.body(18, 'resources/read', '{"uri":"app://orgs/mine"}'))),
  ('name header bad base64', pg_temp.http(pg_temp.std('resources/read', '=?base64?###?='), pg_temp.body(19, 'resources/read', '{"uri":"app://orgs/mine"}'))),
  ('sentinel without suffix is literal (headers pass)', pg_temp.http(pg_temp.std('resources/read', '=?base64?YXBw'), pg_temp.body(20, 'resources/read', '{"uri":"=?base64?YXBw"}'))),
  ('unknown method', pg_temp.http(pg_temp.std('no/such'), pg_temp.body(21, 'no/such'))),
  ('removed method', pg_temp.http(pg_temp.std('ping'), pg_temp.body(22, 'ping'))),
  ('unsupported version', pg_temp.http(pg_temp.std('tools/list') || '{"mcp-protocol-version":"2027-01-01"}',
      pg_temp.body(23, 'tools/list') #- '{params,_meta}' || jsonb_build_object('params', jsonb_build_object('_meta', pg_temp.meta('{"io.modelcontextprotocol/protocolVersion":"2027-01-01"}'))))),
  ('batch', pg_temp.http(pg_temp.std('tools/list'), jsonb_build_array(pg_temp.body(24, 'tools/list')))),
  ('notification', pg_temp.http(pg_temp.std('notifications/cancelled'), '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'))
) as t(label, r);

-- x-mcp-header: an argument mirrored into Mcp-Param-{Name}
create function mcp.weather(region text, days int default 1, verbose boolean default null) returns text language sql
  as $$ select 'weather for ' || region || ' over ' || days || ' days' $$;
comment on function mcp.weather(text, int, boolean) is
  'Weather. @mcp {"params": {"region": {"x-mcp-header": "Region"}, "days": {"x-mcp-header": "Days"}, "verbose": {"x-mcp-header": "Verbose"}}}';
grant execute on function mcp.weather(text, int, boolean) to anon;
select label, r -> 'status' as status, coalesce(r #> '{body,error,code}', r #> '{body,result,content,0,text}') as outcome from (values
  ('all headers', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"us-west","Mcp-Param-Days":"3"}',
      pg_temp.body(30, 'tools/call', '{"name":"weather","arguments":{"region":"us-west","days":3}}'))),
  ('integer compared numerically', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"us-west","mcp-param-days":"03"}',
      pg_temp.body(31, 'tools/call', '{"name":"weather","arguments":{"region":"us-west","days":3}}'))),
  ('base64 value', pg_temp.http(pg_temp.std('tools/call', 'weather') || jsonb_build_object('mcp-param-region', '=?base64?' || encode(convert_to('Zürich', 'UTF8'), 'base64') || '?='),
      pg_temp.body(32, 'tools/call', '{"name":"weather","arguments":{"region":"Zürich"}}'))),
  ('missing param header', pg_temp.http(pg_temp.std('tools/call', 'weather'),
      pg_temp.body(33, 'tools/call', '{"name":"weather","arguments":{"region":"us-west"}}'))),
  ('value differs', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"us-east"}',
      pg_temp.body(34, 'tools/call', '{"name":"weather","arguments":{"region":"us-west"}}'))),
  ('case-sensitive value', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"US-WEST"}',
      pg_temp.body(35, 'tools/call', '{"name":"weather","arguments":{"region":"us-west"}}'))),
  ('boolean', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"x","mcp-param-verbose":"true"}',
      pg_temp.body(36, 'tools/call', '{"name":"weather","arguments":{"region":"x","verbose":true}}'))),
  ('null argument: no header needed, schema refuses null', pg_temp.http(pg_temp.std('tools/call', 'weather') || '{"mcp-param-region":"x"}',
      pg_temp.body(37, 'tools/call', '{"name":"weather","arguments":{"region":"x","verbose":null}}')))
) as t(label, r);

-- log notifications only with a log level, at or above it
create function mcp.chatty() returns text language plpgsql as $$
begin
  perform chumbo.log('debug', '"d"'); perform chumbo.log('info', '"i"'); perform chumbo.log('error', '"e"');
  return 'done';
end $$;
grant execute on function mcp.chatty() to anon;
select label, jsonb_path_query_array(r, '$.events[*].params.level') as levels from (values
  ('no level', pg_temp.http(pg_temp.std('tools/call', 'chatty'), pg_temp.body(40, 'tools/call', '{"name":"chatty"}'))),
  ('info', pg_temp.http(pg_temp.std('tools/call', 'chatty'), pg_temp.body(41, 'tools/call', '{"name":"chatty"}') #- '{params,_meta}'
      || jsonb_build_object('params', jsonb_build_object('name', 'chatty', '_meta', pg_temp.meta('{"io.modelcontextprotocol/logLevel":"info"}'))))),
  ('legacy gets all', pg_temp.http('{}', '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"chatty"}}'))
) as t(label, r);

-- subscriptions/listen is acknowledged with the honoured subset; the edge holds the stream
select r -> 'status' as status, (r -> 'listen') - '{version,principal}'::text[] as listen,
       jsonb_typeof(r #> '{listen,version}') as version, r #>> '{listen,principal}' ~ '^[0-9a-f]{64}$' as principal_digest,
       r -> 'events' -> 0 as ack
  from pg_temp.http(pg_temp.std('subscriptions/listen'), pg_temp.body(50, 'subscriptions/listen',
       '{"notifications":{"toolsListChanged":true,"promptsListChanged":false,"resourceSubscriptions":["app://orgs/mine"]}}')) r;
rollback;
