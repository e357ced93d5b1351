-- The isolation database's shared fixture (after supabase/compat/roles.sql and create extension
-- chumbo): request roles may resolve mcp, and helpers every spec may use. Each spec's setup
-- creates only the capabilities and rows it needs, and its teardown removes them.
grant usage on schema mcp to anon, authenticated;
-- iso.postgrest below calls the PostgREST entry, an opt-in
select chumbo.grant_postgrest();

create schema iso;
create function iso.alice() returns jsonb language sql immutable
  as $$ select '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'::jsonb $$;
create function iso.bob() returns jsonb language sql immutable
  as $$ select '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'::jsonb $$;

-- One JSON-RPC message through chumbo.handle for already-verified claims.
create function iso.rpc(claims jsonb, method text, params jsonb default '{}') returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params), claims) $$;

-- A tools/call as the caller sees it, in one line: "ok: <text>", "error: <tool error>" (trace id
-- cut off, it varies) or "rpc error <code>: <message>".
create function iso.call(claims jsonb, tool text, args jsonb default '{}') returns text language sql
  as $$ select case when r ? 'error' then format('rpc error %s: %s', r #>> '{error,code}', r #>> '{error,message}')
                    when (r #>> '{result,isError}')::boolean
                      then 'error: ' || regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)', '')
                    else 'ok: ' || (r #>> '{result,content,0,text}') end
          from (select iso.rpc(claims, 'tools/call', jsonb_build_object('name', tool, 'arguments', args))) x(r) $$;

-- The names tools/list shows the caller, sorted, or "(none)".
create function iso.tools(claims jsonb) returns text language sql
  as $$ select coalesce(string_agg(t ->> 'name', ' ' order by t ->> 'name'), '(none)')
          from jsonb_array_elements(iso.rpc(claims, 'tools/list') #> '{result,tools}') t $$;

-- A tools/call the way PostgREST makes it: in the caller's transaction, role and request.jwt.claims
-- local, then chumbo.mcp; answered as "<HTTP status> [retry-after=N] <outcome as iso.call>". The
-- role stays switched until the transaction ends, as PostgREST's does.
create function iso.mcp(claims jsonb, tool text, args jsonb default '{}') returns text language plpgsql as $$
declare
  r jsonb;
  retry text;
begin
  perform set_config('request.jwt.claims', claims::text, true);
  perform set_config('role', claims ->> 'role', true);
  r := chumbo.mcp(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
                                     'params', jsonb_build_object('name', tool, 'arguments', args)))::jsonb;
  select h ->> 'retry-after' into retry
    from jsonb_array_elements(nullif(current_setting('response.headers', true), '')::jsonb) h where h ? 'retry-after';
  return concat_ws(' ', coalesce(current_setting('response.status', true), '200'), 'retry-after=' || retry,
    case when r ? 'error' then format('rpc error %s: %s', r #>> '{error,code}', r #>> '{error,message}')
         when (r #>> '{result,isError}')::boolean
           then 'error: ' || regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)', '')
         else 'ok: ' || (r #>> '{result,content,0,text}') end);
end $$;
