-- chumbo.handle reads both jsonb arguments off their binary form (src/datum.rs JsonbArg). Claims
-- nested deeper than serde's limit get a JSON-RPC error naming the problem, like a body that deep,
-- never an ERROR of the argument's conversion (before: pgrx's jsonb → text → serde raised one).
-- Values within the limit arrive exactly as their text would (numbers, escapes, key order).
begin;
select regress.fixture_tools('list_projects') as fixture;
select r -> 'error' ->> 'code' as code, r -> 'error' ->> 'message' as message, r -> 'id' as id
  from chumbo.handle('{"jsonrpc":"2.0","id":7,"method":"ping"}',
         ('{"role":"authenticated","deep":' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb) r;
select r -> 'error' ->> 'code' as code, r -> 'error' ->> 'message' as message
  from chumbo.handle(('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":' || repeat('[', 200) || repeat(']', 200) || '}}')::jsonb,
         '{"role":"authenticated"}') r;
-- 127 levels of claims are still a caller (the ping answers).
select r -> 'result' as result
  from chumbo.handle('{"jsonrpc":"2.0","id":7,"method":"ping"}',
         ('{"role":"authenticated","deep":' || repeat('[', 126) || repeat(']', 126) || '}')::jsonb) r;
-- The message arrives as written: a tool call with its arguments, an id with escapes.
select r -> 'id' as id, jsonb_typeof(r -> 'result' -> 'structuredContent' -> 'rows') as rows
  from chumbo.handle('{"jsonrpc":"2.0","id":12345678901,"method":"tools/call","params":{"name":"list_projects","arguments":{"status":"archived"}}}',
         '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') r;
select r -> 'id' as id, r -> 'error' ->> 'code' as code
  from chumbo.handle('{"jsonrpc":"2.0","id":"\u00e9\"\\","method":"nope"}', '{"role":"authenticated"}') r;
rollback;
