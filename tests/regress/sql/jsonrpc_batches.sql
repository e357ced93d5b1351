-- JSON-RPC batches exist only in 2025-03-26: with that mcp-protocol-version header a JSON array
-- is answered with an array of responses (none for notifications); with any other revision an
-- array is an invalid request.
begin;
select regress.fixture_tools('status_report') as fixture;
select chumbo.configure('{"auth_mode":"public"}') is not null as configured;
grant execute on function mcp.status_report(text) to anon;
create function pg_temp.http(version text, body text) returns jsonb language sql
  as $$ select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', jsonb_strip_nulls(jsonb_build_object('content-type', 'application/json',
                     'accept', 'application/json, text/event-stream', 'mcp-protocol-version', version)),
         'body', body)) $$;
-- 2025-03-26: two requests and a notification -> two responses, in order
select r -> 'status' as status, jsonb_typeof(r -> 'body') as body_type,
       jsonb_path_query_array(r -> 'body', '$[*].id') as ids,
       jsonb_path_query_array(r -> 'body', '$[*].result.prompts[*].name') as prompts,
       jsonb_path_query_array(r -> 'body', '$[*] ? (exists(@.result)).id') as ok_ids
  from pg_temp.http('2025-03-26', '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"two","method":"prompts/list"}]') r;
-- errors inside a batch are per element
select jsonb_path_query_array(r -> 'body', '$[*].id') as ids,
       jsonb_path_query_array(r -> 'body', '$[*].error.code') as codes
  from pg_temp.http('2025-03-26', '[{"jsonrpc":"2.0","id":1,"method":"nope"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"1.0","id":3,"method":"ping"},42]') r;
-- only notifications -> 202, no body
select r -> 'status' as status, r -> 'body' as body
  from pg_temp.http('2025-03-26', '[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]') r;
-- an empty batch is one invalid request (JSON-RPC 2.0 §6)
select r -> 'status' as status, r #> '{body,error,code}' as code, r #> '{body,id}' as id
  from pg_temp.http('2025-03-26', '[]') r;
-- initialize may not be batched (2025-03-26 §lifecycle: it must be sent alone)
select r -> 'status' as status, jsonb_path_query_array(r -> 'body', '$[*].error.code') as codes, r #> '{body,error,code}' as single_code
  from pg_temp.http('2025-03-26', '[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}]') r;
-- other revisions: an array is not a valid request
select v as version, r -> 'status' as status, r #> '{body,error,code}' as code, jsonb_typeof(r -> 'body') as body_type
  from (values ('2024-11-05'), ('2025-06-18'), ('2025-11-25')) x(v),
       lateral (select pg_temp.http(v, '[{"jsonrpc":"2.0","id":1,"method":"ping"}]')) y(r);
-- and chumbo.handle (no HTTP, no version header) does not take batches
select chumbo.handle('[{"jsonrpc":"2.0","id":1,"method":"ping"}]') -> 'error' -> 'code' as handle_batch_code;
rollback;
