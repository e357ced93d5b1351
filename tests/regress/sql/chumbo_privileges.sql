-- chumbo's own objects are out of reach of the request roles: anon and authenticated can read or
-- change no table, view or sequence in schema chumbo, and cannot call the trusted entry points
-- (handle, http, configure, set_jwks, grant_edge). The edge role gets exactly what
-- chumbo.grant_edge gives, and still no table.
begin;
-- 1. catalogue check over every relation in schema chumbo, for every privilege
select r.rolname, c.relname, p.priv
  from pg_class c
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'chumbo'
  cross join (values ('anon'), ('authenticated')) r(rolname)
  cross join (values ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE'), ('TRUNCATE'), ('REFERENCES'), ('TRIGGER')) p(priv)
  where c.relkind in ('r', 'v', 'm', 'p', 'f')
    and has_table_privilege(r.rolname, c.oid, p.priv);
select r.rolname, c.relname
  from pg_class c
  join pg_namespace n on n.oid = c.relnamespace and n.nspname = 'chumbo'
  cross join (values ('anon'), ('authenticated')) r(rolname)
  where c.relkind = 'S'
    and (has_sequence_privilege(r.rolname, c.oid, 'USAGE') or has_sequence_privilege(r.rolname, c.oid, 'SELECT')
         or has_sequence_privilege(r.rolname, c.oid, 'UPDATE'));
-- 2. EXECUTE on the trusted entry points and internals (only chumbo.mcp, the content helpers,
--    doctor-free read helpers may be callable; this lists what anon/authenticated can execute)
select r.rolname, p.oid::regprocedure::text as callable
  from pg_proc p
  join pg_namespace n on n.oid = p.pronamespace and n.nspname = 'chumbo'
  cross join (values ('anon'), ('authenticated')) r(rolname)
  where has_function_privilege(r.rolname, p.oid, 'EXECUTE')
  order by 1, 2;
-- 3. actually try, as each role (errors are the expected output)
\set ON_ERROR_STOP 0
savepoint s;
set local role authenticated;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"ping"}', '{"role":"authenticated"}');
rollback to savepoint s;
set local role authenticated;
select chumbo.http('{"method":"POST","path":"/mcp","headers":{},"body":"{}"}');
rollback to savepoint s;
set local role authenticated;
select * from chumbo.http_parts('{"method":"POST","path":"/mcp","headers":{}}', '{}');
rollback to savepoint s;
set local role authenticated;
select chumbo.configure('{"auth_mode":"public"}');
rollback to savepoint s;
set local role authenticated;
select chumbo.set_jwks('{"keys":[]}');
rollback to savepoint s;
set local role authenticated;
select chumbo.grant_edge('authenticated');
rollback to savepoint s;
set local role authenticated;
select * from chumbo.settings;
rollback to savepoint s;
set local role authenticated;
update chumbo.settings set value = '{}';
rollback to savepoint s;
set local role authenticated;
delete from chumbo.settings;
rollback to savepoint s;
set local role authenticated;
select nextval('chumbo.schema_version');
rollback to savepoint s;
set local role anon;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"ping"}');
rollback to savepoint s;
set local role anon;
select chumbo.http('{"method":"POST","path":"/mcp","headers":{},"body":"{}"}');
rollback to savepoint s;
set local role anon;
select * from chumbo.http_parts('{"method":"POST","path":"/mcp","headers":{}}', '{}');
rollback to savepoint s;
set local role anon;
select * from chumbo.settings;
rollback to savepoint s;
set local role anon;
insert into chumbo.settings values (true, '{}');
rollback to savepoint s;
-- 4. through a capability: a tool that tries to read chumbo's settings fails as the caller. The
--    settings hold a marker first (the owner sees it), so a leak would show it.
select chumbo.configure('{"state_namespaces": ["leak_canary_060"]}') -> 'state_namespaces' as state_namespaces;
select strpos(value::text, 'leak_canary_060') > 0 as owner_sees_marker from chumbo.settings;
select value::text as settings_before from chumbo.settings \gset
create function mcp.peek_settings() returns jsonb language sql stable
  as $$ select value from chumbo.settings $$;
grant execute on function mcp.peek_settings() to authenticated;
select r -> 'result' -> 'isError' as is_error, split_part(r #>> '{result,content,0,text}', ' (trace id', 1) as error,
       strpos(r::text, 'leak_canary_060') = 0 as no_leak
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"peek_settings","arguments":{}}}',
                     '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') r;
create function mcp.poke_settings() returns void language sql
  as $$ update chumbo.settings set value = '{"auth_mode":"public"}' $$;
grant execute on function mcp.poke_settings() to authenticated;
select r -> 'result' -> 'isError' as is_error, split_part(r #>> '{result,content,0,text}', ' (trace id', 1) as error
  from chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"poke_settings","arguments":{}}}',
                     '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') r;
select value::text = :'settings_before' as settings_unchanged from chumbo.settings;
-- 5. the edge role: chumbo.http and chumbo.http_parts yes (they verify the token themselves), chumbo.handle (claims taken
-- on trust) and tables no (see least_privilege_edge for the full list)
create role regress_edge login;
select chumbo.grant_edge('regress_edge');
set local role regress_edge;
select chumbo.http('{"method":"POST","headers":{},"body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"}') ->> 'status' as http_as_edge_no_token;
select status as http_parts_as_edge_no_token, body from chumbo.http_parts('{"method":"POST","headers":{}}', '{"jsonrpc":"2.0","id":1,"method":"ping"}');
savepoint edge;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"ping"}') as handle_as_edge;
rollback to savepoint edge;
select current_user as back_to_edge_role;
select * from chumbo.settings;
rollback to savepoint s;
\set ON_ERROR_STOP 1
rollback;
