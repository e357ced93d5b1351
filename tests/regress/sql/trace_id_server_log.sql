-- Claim (README "Entry points", DESIGN §2): an internal error carries a trace id that the server
-- log also has ("chumbo trace <id>: …", logged server-side only); the client sees the trace id
-- and never the SQL text or the values in the message. The server log is the test cluster's
-- (scripts/cluster.sh starts it with `pg_ctl -l <dir>/server.log`, next to the data directory);
-- only the part written during this test is read.
begin;
select regress.fixture_projects() as fixture;
create function pg_temp.log_path() returns text language sql
  as $$ select current_setting('data_directory') || '/../server.log' $$;
-- the lines of the log written since byte `since` that mention `needle`
create function pg_temp.log_lines(since bigint, needle text) returns setof text language sql as $$
  select line from regexp_split_to_table(
    pg_read_file(pg_temp.log_path(), since, (pg_stat_file(pg_temp.log_path())).size - since), E'\n') as line
   where strpos(line, needle) > 0 $$;
create function pg_temp.rpc(method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params),
                             '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
create function pg_temp.trace(text text) returns text language sql
  as $$ select (regexp_match(text, 'trace id ([0-9a-f]+)'))[1] $$;
-- a tool that fails inside PostgreSQL (an unknown column: SQL text in the error), a tool whose
-- data error quotes a value, and a resource template that fails the same way as the first
create function mcp.tl_broken() returns text language plpgsql stable as $$
begin
  execute 'select tl_secret_column_4711 from public.projects';
  return 'unreachable';
end $$;
create function mcp.tl_bad_value() returns int language plpgsql stable as $$
begin
  return ('tl-secret-value-' || 4712)::int;
end $$;
create function mcp.tl_broken_resource(id text) returns text language plpgsql stable as $$
begin
  execute 'select tl_secret_column_4713 from public.projects';
  return 'unreachable';
end $$;
comment on function mcp.tl_broken_resource(text) is 'Broken. @mcp {"resource": "app://tl/{id}"}';
grant execute on function mcp.tl_broken(), mcp.tl_bad_value(), mcp.tl_broken_resource(text) to authenticated;
select (pg_stat_file(pg_temp.log_path())).size as log_start \gset

-- 1. internal error in a tool: an isError result with "Internal error … (trace id X)" only
select pg_temp.rpc('tools/call', '{"name":"tl_broken"}') -> 'result' as r \gset
select (:'r'::jsonb ->> 'isError')::boolean as is_error,
       :'r'::jsonb #>> '{content,0,text}' ~ '^Internal error' as says_internal_error,
       pg_temp.trace(:'r'::jsonb #>> '{content,0,text}') ~ '^[0-9a-f]{8,}$' as has_trace_id,
       :'r'::jsonb::text !~ 'tl_secret_column|select|projects|42703' as no_sql_in_answer;
select pg_temp.trace(:'r'::jsonb #>> '{content,0,text}') as trace \gset
-- the server log has exactly one line for that trace id, with the real error
select count(*) as log_lines,
       bool_and(line ~ ('chumbo trace ' || :'trace' || ':')) as tagged,
       bool_and(line ~ 'tl_secret_column_4711') as has_the_real_error
  from pg_temp.log_lines(:log_start, :'trace') as line;

-- 2. a data error: the client gets the kind ("Invalid input") without the value; the log has it
select pg_temp.rpc('tools/call', '{"name":"tl_bad_value"}') -> 'result' as r \gset
select (:'r'::jsonb ->> 'isError')::boolean as is_error,
       :'r'::jsonb #>> '{content,0,text}' ~ '^Invalid input' as says_invalid_input,
       :'r'::jsonb::text !~ 'tl-secret-value' as value_not_in_answer;
select pg_temp.trace(:'r'::jsonb #>> '{content,0,text}') as trace \gset
select count(*) as log_lines, bool_and(line ~ 'tl-secret-value-4712') as log_has_the_value
  from pg_temp.log_lines(:log_start, 'chumbo trace ' || :'trace' || ':') as line;

-- 3. a failing resource read: JSON-RPC -32603 whose message carries only the trace id
select pg_temp.rpc('resources/read', '{"uri":"app://tl/1"}') -> 'error' as e \gset
select :'e'::jsonb -> 'code' as code,
       :'e'::jsonb::text !~ 'tl_secret_column|select|projects' as no_sql_in_answer;
select pg_temp.trace(:'e'::jsonb ->> 'message') as trace \gset
select count(*) as log_lines, bool_and(line ~ 'tl_secret_column_4713') as has_the_real_error
  from pg_temp.log_lines(:log_start, 'chumbo trace ' || :'trace' || ':') as line;

-- 4. the same through chumbo.http: the HTTP answer has the trace id, not the error
select chumbo.configure('{"auth_mode":"public"}') ->> 'auth_mode' as mode;
grant execute on function mcp.tl_broken() to anon;
select chumbo.http(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', '{"mcp-protocol-version":"2025-11-25"}'::jsonb,
         'body', '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tl_broken"}}')) as h \gset
select :'h'::jsonb -> 'status' as status,
       :'h'::jsonb::text !~ 'tl_secret_column|select|projects' as no_sql_in_answer;
select pg_temp.trace(:'h'::jsonb #>> '{body,result,content,0,text}') as trace \gset
select count(*) as log_lines, bool_and(line ~ 'tl_secret_column_4711') as has_the_real_error
  from pg_temp.log_lines(:log_start, 'chumbo trace ' || :'trace' || ':') as line;
rollback;
