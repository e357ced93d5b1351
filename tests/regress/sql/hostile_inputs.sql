-- Hostile input: every case gets the spec's answer (an error with the right code, an isError
-- tool result, or no answer for a notification), never a backend crash, never a leak. Cases go
-- through chumbo.handle (jsonb) and chumbo.http (raw body text, so malformed JSON and escapes
-- that jsonb refuses reach the parser). The file ends with `select 1`: the backend is alive.
begin;
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project', 'project', 'summarize_project') as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.outcome(r jsonb) returns text language sql
  as $$ select case
    when r is null then 'no answer'
    when r ? 'error' then 'error ' || (r -> 'error' ->> 'code') || ' id=' || coalesce(left(r ->> 'id', 40), 'null')
    when r -> 'result' ->> 'isError' = 'true' then 'isError id=' || coalesce(left(r ->> 'id', 40), 'null')
    when r ? 'result' then 'result id=' || coalesce(left(r ->> 'id', 40), 'null')
    else 'unexpected: ' || left(r::text, 200) end $$;
create function pg_temp.call(name text, args jsonb) returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
         'params', jsonb_build_object('name', name, 'arguments', args)),
         '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
-- A. envelopes through chumbo.handle
select n, label, pg_temp.outcome(chumbo.handle(body, :'alice')) as outcome
  from (values
    (1, 'method is a number',          '{"jsonrpc":"2.0","id":1,"method":1}'::jsonb),
    (2, 'method is null',              '{"jsonrpc":"2.0","id":1,"method":null}'),
    (3, 'method is an array',          '{"jsonrpc":"2.0","id":1,"method":["ping"]}'),
    (4, 'jsonrpc is a number',         '{"jsonrpc":2.0,"id":1,"method":"ping"}'),
    (5, 'jsonrpc with a space',        '{"jsonrpc":"2.0 ","id":1,"method":"ping"}'),
    (6, 'id is a boolean',             '{"jsonrpc":"2.0","id":true,"method":"ping"}'),
    (7, 'id is an array',              '{"jsonrpc":"2.0","id":[1],"method":"ping"}'),
    (8, 'id is an object',             '{"jsonrpc":"2.0","id":{"$gt":""},"method":"ping"}'),
    (9, 'id is null',                  '{"jsonrpc":"2.0","id":null,"method":"ping"}'),
    (10, 'id is a fraction',           '{"jsonrpc":"2.0","id":0.5,"method":"ping"}'),
    (11, 'missing id, unknown method', '{"jsonrpc":"2.0","method":"drop_everything"}'),
    (12, 'missing id, tools/list',     '{"jsonrpc":"2.0","method":"tools/list"}'),
    (13, 'params is an array',         '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1,2]}'),
    (14, 'params is null',             '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}'),
    (15, 'params is a string',         '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"list_projects"}'),
    (16, 'unknown method',             '{"jsonrpc":"2.0","id":1,"method":"tools/drop"}'),
    (17, 'method with SQL',            '{"jsonrpc":"2.0","id":1,"method":"ping''; drop table public.projects; --"}'),
    (18, 'method very long',           jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', repeat('x', 100000))),
    (19, 'rpc.discover',               '{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}'),
    (20, 'id very long string',        jsonb_build_object('jsonrpc', '2.0', 'id', repeat('i', 100000), 'method', 'ping')),
    (21, 'extra top-level members',    '{"jsonrpc":"2.0","id":1,"method":"ping","result":{},"error":{"code":1}}'),
    (22, 'a response sent as request', '{"jsonrpc":"2.0","id":1,"result":{}}'),
    (23, 'empty object',               '{}'),
    (24, 'deeply nested params',       ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":' || repeat('[', 3000) || repeat(']', 3000) || '}}')::jsonb),
    (25, 'deeply nested id',           ('{"jsonrpc":"2.0","method":"ping","id":' || repeat('{"a":', 3000) || '1' || repeat('}', 3000) || '}')::jsonb),
    (26, 'initialize twice the keys',  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":["2025-06-18"],"capabilities":"all","clientInfo":7}}'),
    (27, 'completion with a bad ref',  '{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/table","name":"projects"},"argument":{"name":"x","value":""}}}'),
    (28, 'completion ref is a string', '{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":"summarize_project","argument":{"name":"project_id","value":""}}}'),
    (29, 'resources/read uri number',  '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":42}}'),
    (30, 'resources/read SQL in uri',  '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://projects/''); drop table public.projects; --"}}'),
    (31, 'resources/read huge uri',    jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'resources/read', 'params', jsonb_build_object('uri', 'app://projects/' || repeat('9', 200000)))),
    (32, 'resources/read file uri',    '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}'),
    (33, 'prompt argument not a string', '{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summarize_project","arguments":{"project_id":{"$ne":null}}}}'),
    (34, 'prompt arguments an array',  '{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summarize_project","arguments":["a1000000-0000-4000-8000-000000000001"]}}'),
    (35, 'prompt name with SQL',       '{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"summarize_project(null); --"}}'),
    (36, 'setLevel with SQL',          '{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug''; reset role; --"}}')
  ) v(n, label, body)
  order by n;
-- B. tool names and arguments (tools/call)
select n, label, pg_temp.outcome(pg_temp.call(name, args)) as outcome
  from (values
    (40, 'name with SQL',             'list_projects; drop table public.projects', '{}'::jsonb),
    (41, 'qualified name',            'mcp.list_projects', '{}'),
    (42, 'other schema function',     'pg_sleep', '{"seconds":10}'),
    (43, 'chumbo internal',           'configure', '{"settings":{"auth_mode":"public"}}'),
    (44, 'upper-case name',           'LIST_PROJECTS', '{}'),
    (45, 'quoted name',               '"list_projects"', '{}'),
    (46, 'empty name',                '', '{}'),
    (47, 'name with a null-like',     'list_projects ', '{}'),
    (48, 'helper in private schema',  'user_org_ids', '{}'),
    (49, 'arguments is an array',     'list_projects', '["active"]'),
    (50, 'arguments is a string',     'list_projects', '"active"'),
    (51, 'SQL in an enum argument',   'list_projects', '{"status":"active'' or ''1''=''1"}'),
    (52, 'wrong type for text',       'list_projects', '{"status":["active"]}'),
    (53, 'unknown argument',          'list_projects', '{"status":"active","org_id":"b0000000-0000-4000-8000-000000000000"}'),
    (54, 'limit as a string',         'search_documents', '{"query":"e","limit":"10"}'),
    (55, 'limit too big',             'search_documents', '{"query":"e","limit":1e30}'),
    (56, 'limit negative',            'search_documents', '{"query":"e","limit":-1}'),
    (57, 'limit a fraction',          'search_documents', '{"query":"e","limit":2.5}'),
    (58, 'missing required argument', 'search_documents', '{}'),
    (59, 'required argument null',    'search_documents', '{"query":null}'),
    (60, 'query 1 MB long',           'search_documents', jsonb_build_object('query', repeat('a', 1000000))),
    (61, 'project_id not a uuid',     'rename_project', '{"project_id":"1 or 1=1","name":"x"}'),
    (62, 'project_id a number',       'rename_project', '{"project_id":1,"name":"x"}'),
    (63, 'name empty',                'rename_project', '{"project_id":"a1000000-0000-4000-8000-000000000001","name":""}'),
    (64, 'resource called as a tool', 'project', '{"id":"a1000000-0000-4000-8000-000000000001"}'),
    (65, 'prompt called as a tool',   'summarize_project', '{"project_id":"a1000000-0000-4000-8000-000000000001"}')
  ) v(n, label, name, args)
  order by n;
-- SQL in a text argument is just text: no rows, no error
select jsonb_path_query_array(pg_temp.call('search_documents', '{"query":"'' or 1=1 --"}'), '$.result.structuredContent.rows[*].title') as sql_as_query,
       jsonb_path_query_array(pg_temp.call('search_documents', '{"query":"%"}'), '$.result.structuredContent.rows[*].title') as percent_query;
-- hostile claims
select label, pg_temp.outcome(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', claims)) as outcome,
       strpos(coalesce(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}', claims)::text, ''), 'Globex') = 0 as no_globex
  from (values ('sub is not a uuid', '{"sub":"1 or 1=1","role":"authenticated"}'::jsonb),
               ('sub is an object', '{"sub":{"a":1},"role":"authenticated"}'),
               ('claims is an array', '[{"role":"authenticated"}]'),
               ('claims is a string', '"authenticated"'),
               ('claims is empty', '{}')) v(label, claims);
-- C. raw bodies through chumbo.http (public mode: anon). A Content-Type that is present and not
-- application/json (parameters allowed) is 415; an absent one is accepted.
select chumbo.configure('{"auth_mode":"public"}') is not null as configured;
select n, label, r -> 'status' as status,
       coalesce(r #>> '{body,error,code}', case when r -> 'body' = 'null'::jsonb or r -> 'body' is null then 'no body'
                when jsonb_typeof(r -> 'body') = 'array' then 'batch ' || jsonb_path_query_array(r -> 'body', '$[*].error.code')::text
                when r #> '{body,result}' is not null then 'result' else jsonb_typeof(r -> 'body') end) as code,
       r #> '{body,id}' as id
  from (values
    (70::numeric, 'truncated JSON',   '{"jsonrpc":"2.0","id":1,"method":"ping"', null::jsonb),
    (71, 'trailing garbage',          '{"jsonrpc":"2.0","id":1,"method":"ping"} x', null),
    (72, 'two objects',               '{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}', null),
    (73, 'lone surrogate escape',     '{"jsonrpc":"2.0","id":1,"method":"ping\ud800"}', null),
    (76, 'byte order mark',           E'\uFEFF{"jsonrpc":"2.0","id":1,"method":"ping"}', null),
    (77, 'duplicate id keys',         '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', null),
    (78, 'single quotes',             '{''jsonrpc'':''2.0'',''id'':1,''method'':''ping''}', null),
    (79, 'NaN id',                    '{"jsonrpc":"2.0","id":NaN,"method":"ping"}', null),
    (80, 'huge integer id',           '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}', null),
    (81, 'comment in JSON',           '{"jsonrpc":"2.0",/* hi */"id":1,"method":"ping"}', null),
    (82, 'deeply nested array',       repeat('[', 100000) || repeat(']', 100000), null),
    (83, 'deeply nested params',      '{"jsonrpc":"2.0","id":1,"method":"ping","params":' || repeat('{"a":', 100000) || '1' || repeat('}', 100000) || '}', null),
    (84, 'body of 5 MB',              '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' || repeat('x', 5 * 1024 * 1024) || '"}}', null),
    (85, 'JSON string body',          '"ping"', null),
    (86, 'whitespace only',           E' \n\t ', null),
    (87, 'wrong content type',        '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"text/plain"}'),
    (87.1, 'form content type',       '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"application/x-www-form-urlencoded"}'),
    (87.2, 'json with charset',       '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"application/json; charset=utf-8"}'),
    (87.3, 'no content type',         '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":null}'),
    (87.4, 'json in latin1',          '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"application/json; charset=ISO-8859-1"}'),
    (87.5, 'json in utf-16',          '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"application/json;charset=utf-16"}'),
    (87.6, 'quoted UTF-8, other param', '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-type":"application/json; v=1; charset=\"UTF-8\""}'),
    (87.7, 'gzip content encoding',   '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-encoding":"gzip"}'),
    (87.8, 'identity, then gzip',     '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-encoding":"identity, GZIP"}'),
    (87.9, 'identity content encoding', '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"content-encoding":"Identity"}'),
    (88, 'control chars in string',   E'{"jsonrpc":"2.0","id":1,"method":"ping\x01"}', null),
    (89, 'mcp-protocol-version SQL',  '{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"mcp-protocol-version":"2025-06-18''; --"}'),
    (90, 'nested batch (2025-03-26)', '[[{"jsonrpc":"2.0","id":1,"method":"ping"}]]', '{"mcp-protocol-version":"2025-03-26"}')
  ) v(n, label, body, headers),
  lateral (select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
           -- a header given as null is left out
           'headers', jsonb_strip_nulls('{"content-type":"application/json","accept":"application/json, text/event-stream"}'::jsonb || coalesce(headers, '{}')),
           'body', body))) x(r)
  order by n;
-- what each 415 says the body must be (the client's header is not echoed), and that a content
-- coding is refused with the one the server takes (RFC 9110 §8.4)
select label, r -> 'status' as status, r #>> '{body,error,message}' as message,
       r #>> '{headers,accept-encoding}' as accept_encoding
  from (values ('text/plain', '{"content-type":"text/plain"}'::jsonb),
               ('latin1', '{"content-type":"application/json; charset=latin1"}'),
               ('deflate', '{"content-encoding":"deflate"}')) v(label, headers),
  lateral (select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
           'headers', '{"content-type":"application/json"}'::jsonb || headers,
           'body', '{"jsonrpc":"2.0","id":1,"method":"ping"}'))) x(r);
-- a batch of 1000 pings (2025-03-26) is answered in full, in order, where the owner allows such
-- batches (each message is a request in flight and a rate-limit hit: tests/regress/sql/batch_limits.sql)
select chumbo.configure('{"max_batch_messages": 1000, "max_in_flight": 0, "rate_limit_per_minute": 100000}') ->> 'max_batch_messages' as max_batch_messages;
select jsonb_array_length(r -> 'body') as answers,
       (select bool_and((e ->> 'id')::int = i) from jsonb_array_elements(r -> 'body') with ordinality t(e, i)) as in_order
  from chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
       'headers', '{"content-type":"application/json","accept":"application/json, text/event-stream","mcp-protocol-version":"2025-03-26"}'::jsonb,
       'body', (select '[' || string_agg(format('{"jsonrpc":"2.0","id":%s,"method":"ping"}', i), ',') || ']' from generate_series(1, 1000) i))) r;
-- D. escaped NUL characters (valid JSON, but PostgreSQL text and jsonb cannot hold them): a
-- JSON-RPC error or an isError result, never an SQL error
grant execute on function mcp.search_documents(text, int) to anon;
select n, label,
       coalesce(r #>> '{body,error,code}' in ('-32700', '-32600', '-32601', '-32602'), false)
         or coalesce(r #>> '{body,result,isError}' = 'true', false) as rejected
  from (values
    (91, 'escaped NUL in method',     '{"jsonrpc":"2.0","id":1,"method":"ping\u0000"}'),
    (92, 'escaped NUL in tool name',  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects\u0000","arguments":{}}}'),
    (93, 'escaped NUL in string id',  '{"jsonrpc":"2.0","id":"a\u0000b","method":"ping"}'),
    (94, 'escaped NUL in argument',   '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_documents","arguments":{"query":"a\u0000b"}}}'),
    (95, 'escaped NUL in a key',      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_documents","arguments":{"query\u0000":"a"}}}'),
    (96, 'escaped NUL in resource uri', '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"app://orgs/mine\u0000"}}')
  ) v(n, label, body),
  lateral (select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
           'headers', '{"content-type":"application/json","accept":"application/json, text/event-stream"}'::jsonb,
           'body', body))) x(r)
  order by n;
-- E. numbers that a few bytes write as thousands of digits (chumbo keeps a number's every digit,
-- so 1e100000 would be 100,001 digits in any text written of it): more than 1,000 digits written
-- out is refused as an invalid request, through the text entry and through chumbo.handle (whose
-- jsonb argument PostgreSQL already wrote out); 1,000 digits pass that check
select n, label, r #>> '{body,error,code}' as code, r #>> '{body,error,message}' as message
  from (values
    (97, 'exponent of 100,000 in an argument', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_documents","arguments":{"query":"a","limit":1e100000}}}'),
    (98, 'exponent of -100,000 in _meta',      '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"n":-1e-100000}}}'),
    (99, 'exponent beyond any integer',        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e99999999999999999999}}'),
    (100, '1,001 digits',                      '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":' || repeat('9', 1001) || '}}'),
    (101, '1,000 digits, and 1e999',           '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":' || repeat('9', 1000) || ',"m":1e999}}')
  ) v(n, label, body),
  lateral (select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
           'headers', '{"content-type":"application/json","accept":"application/json, text/event-stream"}'::jsonb,
           'body', body))) x(r)
  order by n;
select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 7, 'method', 'ping', 'params', jsonb_build_object('n', '1e100000'::numeric)), null) as handle_refuses;
-- nothing was changed by any of this
select count(*) as projects, count(*) filter (where name like 'Acme%' or name like 'Globex%') as untouched from public.projects;
select current_user;
rollback;
select 1;
