-- Claims (README "Settings", "Entry points"):
--  * the `instructions` setting is sent in the initialize result (legacy) and the server/discover
--    result (2026-07-28), and is absent when unset;
--  * chumbo.metadata_schema() (callable by everyone) is a JSON Schema of @mcp metadata that
--    accepts the metadata every function of the example app carries and rejects an unknown key.
--    It is checked with a real JSON Schema validator: chumbo's own argument validation (the
--    jsonschema crate), by declaring it as the inputSchema of a test tool's `meta` argument
--    (definitions moved to the root so that its $refs resolve).
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.initialize() returns jsonb language sql as $$
  select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
                       '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
create function pg_temp.discover() returns jsonb language sql as $$
  select chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}',
                       '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
select pg_temp.initialize() ? 'instructions' as initialize_has_instructions, pg_temp.discover() ? 'instructions' as discover_has_instructions;
select chumbo.configure('{"instructions": "Projects are per organization. Ask before renaming."}') ->> 'instructions' as configured;
select pg_temp.initialize() ->> 'instructions' as initialize_instructions, pg_temp.discover() ->> 'instructions' as discover_instructions;
-- also over HTTP (public mode), in both eras
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp', 'headers', '{}'::jsonb,
         'body', '{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'))
       #>> '{body,result,instructions}' as http_initialize,
       chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', '{"mcp-protocol-version":"2026-07-28","mcp-method":"server/discover"}'::jsonb,
         'body', '{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'))
       #>> '{body,result,instructions}' as http_discover;
select chumbo.configure('{"instructions": null}') ? 'instructions' as still_set;
select pg_temp.initialize() ? 'instructions' as initialize_has_instructions, pg_temp.discover() ? 'instructions' as discover_has_instructions;
rollback;

begin;
-- metadata_schema(): a JSON Schema object, callable by the API roles, closed to unknown keys
set local role anon;
select jsonb_typeof(chumbo.metadata_schema()) as anon_gets, chumbo.metadata_schema() ->> 'type' as type,
       chumbo.metadata_schema() -> 'additionalProperties' as additional_properties;
reset role;
select array(select jsonb_object_keys(chumbo.metadata_schema() -> 'properties') order by 1) as documented_keys;
-- the example app's metadata: every @mcp object in a comment on a function in mcp (the
-- projects fixture's capabilities, a copy of the example app's: see tests/regress/helpers.sql)
select regress.fixture_tools('list_projects', 'search_documents', 'rename_project', 'create_document',
  'project', 'my_organizations', 'summarize_project', 'status_report', 'preference', 'export_project',
  'open_workspace') as fixture;
create temp table app_meta as
  select p.oid::regprocedure::text as fn,
         substr(obj_description(p.oid, 'pg_proc'), strpos(obj_description(p.oid, 'pg_proc'), '@mcp') + 4)::jsonb as meta
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where n.nspname = 'mcp' and strpos(obj_description(p.oid, 'pg_proc'), '@mcp') > 0;
select count(distinct fn) as example_functions_with_metadata, count(distinct k) as distinct_keys_used
  from app_meta, jsonb_object_keys(meta) k;
-- a tool whose `meta` argument must conform to chumbo.metadata_schema()
create function mcp.ms_check(meta jsonb) returns text language sql stable as $$ select 'conforms' $$;
revoke execute on function mcp.ms_check(jsonb) from public;
grant execute on function mcp.ms_check(jsonb) to authenticated;
do $$
declare
  s jsonb := chumbo.metadata_schema();
  defs_key text := case when s ? '$defs' then '$defs' else 'definitions' end;
  defs jsonb := coalesce(s -> defs_key, '{}');
  input jsonb;
begin
  input := jsonb_build_object('type', 'object', 'required', '["meta"]'::jsonb,
    'properties', jsonb_build_object('meta', jsonb_build_object('$ref', '#/' || defs_key || '/ChumboMetadataRoot')),
    defs_key, defs || jsonb_build_object('ChumboMetadataRoot', s - '$schema' - defs_key - 'title'));
  if s ? '$schema' then input := input || jsonb_build_object('$schema', s -> '$schema'); end if;
  execute format('comment on function mcp.ms_check(jsonb) is %L', 'Checks metadata. @mcp ' || jsonb_build_object('inputSchema', input)::text);
end $$;
select state, reasons from chumbo.doctor() where "function" = 'mcp.ms_check(jsonb)';
create function pg_temp.check(meta jsonb) returns text language sql as $$
  select case when r #>> '{result,content,0,text}' ~ '^Invalid arguments' then 'rejected' else r #>> '{result,content,0,text}' end
    from chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
           'params', jsonb_build_object('name', 'ms_check', 'arguments', jsonb_build_object('meta', meta))),
           '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') r $$;
-- every example function's metadata conforms
select fn, pg_temp.check(meta) as verdict from app_meta order by fn;
-- an unknown key, at the top or nested, and a wrong type are rejected; the validator is not
-- rejecting everything (an empty object and a full one conform)
select label, pg_temp.check(meta) as verdict from (values
  ('empty', '{}'::jsonb),
  ('many keys', '{"title": "T", "scopes": ["a"], "rateLimit": {"perMinute": 3}, "audit": {"arguments": true}, "privileged": false,
                  "annotations": {"readOnlyHint": true}, "params": {"x": {"description": "d", "x-mcp-header": "X"}}}'),
  ('unknown top-level key', '{"titel": "typo"}'),
  ('unknown key in params', '{"params": {"x": {"descripton": "typo"}}}'),
  ('unknown key in annotations', '{"annotations": {"readonlyHint": true}}'),
  ('unknown key in rateLimit', '{"rateLimit": {"perHour": 3}}'),
  ('wrong type', '{"scopes": "not-an-array"}')
) as t(label, meta);
-- and the registry agrees with the schema: the unknown key hides a function, its absence does not
create function mcp.ms_probe() returns int language sql stable as $$ select 1 $$;
revoke execute on function mcp.ms_probe() from public;
grant execute on function mcp.ms_probe() to authenticated;
comment on function mcp.ms_probe() is 'Probe. @mcp {"rateLimit": {"perHour": 3}}';
select state from chumbo.doctor() where "function" = 'mcp.ms_probe()';
comment on function mcp.ms_probe() is 'Probe. @mcp {"rateLimit": {"perMinute": 3}}';
select state from chumbo.doctor() where "function" = 'mcp.ms_probe()';
rollback;
