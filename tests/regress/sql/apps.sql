-- MCP Apps (SEP-1865, io.modelcontextprotocol/ui): an app stored with chumbo.create_app and linked
-- to tools with chumbo.link_app. Its ui:// resource is listed and read (text/html;profile=mcp-app,
-- _meta.ui) only by callers who may see one of its tools (EXECUTE, scopes, visible policies);
-- anyone else gets exactly the unknown-URI answer. Linked tools carry _meta.ui and the flat
-- ui/resourceUri; an app-only tool is not in tools/list but is callable, as the caller under RLS;
-- the extension is declared in both eras only to callers served an app; tools without UI are
-- unchanged; the size bound is max_app_bytes; the API refuses bad input and is the owner's.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated","scope":"notes"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
\set carol '{"sub":"cccccccc-0000-4000-8000-000000000003","role":"authenticated","scope":"notes"}'
\set anon '{"role":"anon"}'
create function pg_temp.rpc(claims jsonb, method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params), claims) $$;
create function pg_temp.modern(claims jsonb, method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
          'params', params || jsonb_build_object('_meta', jsonb_build_object(
            'io.modelcontextprotocol/protocolVersion', '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities', '{}'::jsonb))), claims) $$;
create function pg_temp.ui_uris(claims jsonb) returns jsonb language sql
  as $$ select coalesce(jsonb_agg(r -> 'uri'), '[]') from jsonb_array_elements(pg_temp.rpc(claims, 'resources/list') #> '{result,resources}') r
        where r ->> 'uri' like 'ui://%' $$;
-- the error of a read with the URI taken out: equal for a hidden app and an unknown URI
create function pg_temp.read_error(claims jsonb, uri text) returns jsonb language sql
  as $$ select jsonb_set(r -> 'error', '{message}', to_jsonb(replace(r #>> '{error,message}', uri, '<uri>')))
                 #- '{data,uri}'
          from pg_temp.rpc(claims, 'resources/read', jsonb_build_object('uri', uri)) r $$;

-- the application: notes under RLS, written through a tool
create table public.app_notes (
    id bigserial primary key,
    owner uuid not null default (current_setting('request.jwt.claims', true)::jsonb ->> 'sub')::uuid,
    body text not null
);
alter table public.app_notes enable row level security;
create policy own on public.app_notes using (owner = (current_setting('request.jwt.claims', true)::jsonb ->> 'sub')::uuid);
grant select, insert on public.app_notes to authenticated;
grant usage on sequence public.app_notes_id_seq to authenticated;
create function mcp.notes_board() returns jsonb language sql stable
  as $$ select jsonb_build_object('notes', coalesce(jsonb_agg(n.body order by n.id), '[]')) from public.app_notes n $$;
comment on function mcp.notes_board() is 'Your notes. @mcp {"scopes": ["notes"]}';
create function mcp.add_note(body text) returns jsonb language sql
  as $$ insert into public.app_notes (body) values (add_note.body) returning jsonb_build_object('id', id, 'owner', owner) $$;
comment on function mcp.add_note(text) is 'Add a note. @mcp {"scopes": ["notes"]}';
create function mcp.notes_export() returns text language sql stable as $$ select 'csv' $$;
comment on function mcp.notes_export() is '@mcp {"scopes": ["notes"]}';
create function mcp.plain_echo(x text) returns text language sql immutable as $$ select x $$;
comment on function mcp.plain_echo(text) is 'Echo.';
revoke execute on function mcp.notes_board(), mcp.add_note(text), mcp.notes_export(), mcp.plain_echo(text) from public;
grant execute on function mcp.notes_board(), mcp.add_note(text), mcp.notes_export(), mcp.plain_echo(text) to authenticated;
grant execute on function mcp.plain_echo(text) to anon;

-- 1. before any app: tools/list of a tool without UI, and initialize's capabilities (kept below)
select pg_temp.rpc(:'alice', 'tools/list') #> '{result,tools}' as tools_before \gset
select pg_temp.rpc(:'alice', 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #> '{result,capabilities}' as caps_before \gset
select :'caps_before'::jsonb ? 'extensions' as extensions_before;

-- 2. the API: stored, linked (the comment keeps its description and other keys)
select chumbo.create_app('ui://notes/board', 'Notes board', '<!doctype html><html><body><form><button>Add</button></form></body></html>',
    csp => '{"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]}',
    permissions => '{"clipboardWrite": {}}', title => 'Notes', prefers_border => true) as created;
select chumbo.link_app('ui://notes/board', 'mcp.notes_board()');
select chumbo.link_app('ui://notes/board', 'mcp.add_note(text)', array['app']);
select chumbo.link_app('ui://notes/board', 'mcp.notes_export()', array['model']);
select obj_description('mcp.add_note(text)'::regprocedure, 'pg_proc') as add_note_comment;
select uri, name, bytes, render, csp, permissions, tools from chumbo.apps();

-- 3. tools/list: _meta.ui and the flat key on linked tools, the app-only tool absent, the tool
-- without UI exactly as before
select t ->> 'name' as tool, t -> '_meta' as meta
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'tools/list') #> '{result,tools}') t order by 1;
select (select t from jsonb_array_elements(pg_temp.rpc(:'alice', 'tools/list') #> '{result,tools}') t where t ->> 'name' = 'plain_echo')
     = (select t from jsonb_array_elements(:'tools_before'::jsonb) t where t ->> 'name' = 'plain_echo') as plain_tool_unchanged;

-- 4. the app-only tool is callable, as the caller under RLS: one row, Alice's
select pg_temp.rpc(:'alice', 'tools/call', '{"name":"add_note","arguments":{"body":"from the view"}}') #> '{result,structuredContent,owner}' as written_by;
select owner, body from public.app_notes;

-- 5. the extension in both eras, to a caller served the app; not to anon
select pg_temp.rpc(:'alice', 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #> '{result,capabilities,extensions}' as legacy_extensions;
select pg_temp.modern(:'alice', 'server/discover') #> '{result,capabilities,extensions}' as modern_extensions;
select pg_temp.rpc(:'anon', 'initialize', '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}') #> '{result,capabilities}' as anon_capabilities;

-- 6. listed and read by Alice, with the mime type and _meta.ui
select r from jsonb_array_elements(pg_temp.rpc(:'alice', 'resources/list') #> '{result,resources}') r where r ->> 'uri' like 'ui://%';
select pg_temp.rpc(:'alice', 'resources/read', '{"uri":"ui://notes/board"}') -> 'result' as read;
select r #> '{result,contents,0,mimeType}' as modern_read, r #> '{result,cacheScope}' as cache_scope
  from pg_temp.modern(:'alice', 'resources/read', '{"uri":"ui://notes/board"}') r;

-- 7. Bob (no "notes" scope) and anon (no EXECUTE): not listed, and reading is exactly an unknown URI
select pg_temp.ui_uris(:'bob') as bob_lists, pg_temp.ui_uris(:'anon') as anon_lists;
select pg_temp.read_error(:'bob', 'ui://notes/board') = pg_temp.read_error(:'bob', 'ui://notes/nothing') as bob_same_as_unknown,
       pg_temp.read_error(:'anon', 'ui://notes/board') = pg_temp.read_error(:'anon', 'ui://notes/nothing') as anon_same_as_unknown,
       pg_temp.read_error(:'bob', 'ui://notes/board') as bob_error;
select pg_temp.rpc(:'bob', 'tools/call', '{"name":"add_note","arguments":{"body":"x"}}') -> 'error' as bob_calls_app_tool;

-- 8. a visible policy hiding the tools hides the app (Carol has the scope but the policy says no)
create function public.notes_open() returns boolean language sql stable
  as $$ select current_setting('request.jwt.claims', true)::jsonb ->> 'sub' <> 'cccccccc-0000-4000-8000-000000000003' $$;
grant execute on function public.notes_open() to authenticated;
comment on function mcp.notes_board() is 'Your notes. @mcp {"scopes": ["notes"], "visible": "public.notes_open", "ui": {"resourceUri": "ui://notes/board"}}';
comment on function mcp.add_note(text) is 'Add a note. @mcp {"scopes": ["notes"], "visible": "public.notes_open", "ui": {"resourceUri": "ui://notes/board", "visibility": ["app"]}}';
comment on function mcp.notes_export() is '@mcp {"scopes": ["notes"], "visible": "public.notes_open", "ui": {"resourceUri": "ui://notes/board", "visibility": ["model"]}}';
select pg_temp.ui_uris(:'carol') as carol_lists, pg_temp.ui_uris(:'alice') as alice_lists;
select pg_temp.read_error(:'carol', 'ui://notes/board') = pg_temp.read_error(:'carol', 'ui://notes/nothing') as carol_same_as_unknown;

-- 9. a view rendered by a function, run as the caller (role, claims, RLS)
create function public.render_whoami() returns text language sql stable
  as $$ select '<!doctype html><html><body>' || current_user || ' ' || (current_setting('request.jwt.claims', true)::jsonb ->> 'sub')
               || ' ' || (select count(*) from public.app_notes) || '</body></html>' $$;
grant execute on function public.render_whoami() to authenticated;
select chumbo.create_app('ui://notes/whoami', 'Who am I', render => 'public.render_whoami()');
select chumbo.link_app('ui://notes/whoami', 'mcp.plain_echo(text)');
select pg_temp.rpc(:'alice', 'resources/read', '{"uri":"ui://notes/whoami"}') #>> '{result,contents,0,text}' as rendered_for_alice;
select pg_temp.rpc(:'bob', 'resources/read', '{"uri":"ui://notes/whoami"}') #>> '{result,contents,0,text}' as rendered_for_bob;
-- anon may call plain_echo but not the render function: not rendered, and nothing leaks
select pg_temp.rpc(:'anon', 'resources/read', '{"uri":"ui://notes/whoami"}') -> 'error' as anon_render_refused;
select t -> '_meta' as plain_echo_meta from jsonb_array_elements(pg_temp.rpc(:'anon', 'tools/list') #> '{result,tools}') t;

-- 10. the size bound: max_app_bytes (default 2 MiB, room for a 1.3 MB bundle)
select chumbo.create_app('ui://notes/big', 'Big', '<!doctype html>' || repeat('x', 1300000)) as bundle_fits;
savepoint s;
select chumbo.create_app('ui://notes/huge', 'Huge', repeat('x', 2097153));
rollback to s;
select chumbo.configure('{"max_app_bytes": 50}') ->> 'max_app_bytes' as configured;
savepoint s;
select chumbo.create_app('ui://notes/small', 'Small', repeat('x', 51));
rollback to s;
-- a stored view grown past the bound is refused at read (an internal error, no HTML)
select pg_temp.rpc(:'alice', 'resources/read', '{"uri":"ui://notes/board"}') -> 'error' ->> 'message' as over_bound;
select chumbo.configure('{"max_app_bytes": null}') ->> 'max_app_bytes' as default_again;
savepoint s;
select chumbo.configure('{"max_app_bytes": 0}');
rollback to s;

-- 11. refused input
savepoint s;
select chumbo.create_app('https://notes/board', 'x', '<html></html>');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', '<html></html>', render => 'public.render_whoami()');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', '<html></html>', csp => '{"connectDomains": ["https://a.example; script-src *"]}');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', '<html></html>', csp => '{"scriptDomains": ["https://a.example"]}');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', '<html></html>', permissions => '{"usb": {}}');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', '<html></html>', permissions => '{"camera": "yes"}');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', '', '<html>secret</html>');
rollback to s;
savepoint s;
select chumbo.create_app('ui://notes/x', 'x', render => 'mcp.plain_echo(text)');
rollback to s;
savepoint s;
select chumbo.link_app('ui://notes/none', 'mcp.plain_echo(text)');
rollback to s;
savepoint s;
select chumbo.link_app('ui://notes/board', 'mcp.plain_echo(text)', array['user']);
rollback to s;
savepoint s;
select chumbo.link_app('ui://notes/board', 'mcp.plain_echo(text)', '{}');
rollback to s;
-- bad @mcp ui keys hide the tool (doctor names the problem), like any unknown key
comment on function mcp.plain_echo(text) is 'Echo. @mcp {"ui": {"resourceUri": "https://x"}}';
select count(*) filter (where t ->> 'name' = 'plain_echo') as listed_with_bad_uri
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'tools/list') #> '{result,tools}') t;
comment on function mcp.plain_echo(text) is 'Echo. @mcp {"ui": {"visibility": ["user"]}}';
select count(*) filter (where t ->> 'name' = 'plain_echo') as listed_with_bad_visibility
  from jsonb_array_elements(pg_temp.rpc(:'alice', 'tools/list') #> '{result,tools}') t;

-- 12. the owner's: anon and authenticated may neither read the table nor use the API
select r.rolname, has_table_privilege(r.rolname, 'chumbo.apps', 'select') as select_apps,
       has_function_privilege(r.rolname, 'chumbo.create_app(text,text,text,regprocedure,jsonb,jsonb,text,text,text,boolean)', 'execute') as create_app,
       has_function_privilege(r.rolname, 'chumbo.link_app(text,regprocedure,text[])', 'execute') as link_app,
       has_function_privilege(r.rolname, 'chumbo.apps()', 'execute') as list_apps
  from pg_roles r where r.rolname in ('anon', 'authenticated') order by 1;

-- 13. dropped: no longer listed or readable
select chumbo.drop_app('ui://notes/board') as dropped, chumbo.drop_app('ui://notes/board') as again;
select pg_temp.ui_uris(:'alice') as after_drop;
rollback;
