-- Fixed bug (issue 26, item 3): application functions named in metadata or settings were looked
-- up as the session user before the switch to the caller. Through chumbo.http that is the edge's
-- login role, which may not use the schema the function lives in: completion/complete failed
-- with -32603 ("permission denied for schema private") and a failing tool's error_projection
-- failed the whole method as an internal error. Both are resolved as the caller now (and run as
-- the caller, read-only), whatever the session user may use. chumbo.handle as a superuser never
-- showed it: this test calls chumbo.http as a non-superuser edge role with a real token.
begin;
create table public.topics (owner uuid not null, name text not null);
alter table public.topics enable row level security;
create policy own on public.topics using (owner = (current_setting('request.jwt.claims')::jsonb ->> 'sub')::uuid);
insert into public.topics values ('aaaaaaaa-0000-4000-8000-000000000001', 'alice-topic'),
                                 ('bbbbbbbb-0000-4000-8000-000000000002', 'bob-topic');
grant select on public.topics to authenticated;
create schema callers_only;
revoke all on schema callers_only from public;
grant usage on schema callers_only to authenticated;
create function callers_only.topic_names(prefix text) returns setof text language sql stable
  as $$ select name from public.topics where name like prefix || '%' order by name $$;
create function callers_only.rephrase(capability text, error jsonb) returns text language sql stable
  as $$ select 'rephrased for the caller: ' || capability $$;
grant execute on function callers_only.topic_names(text), callers_only.rephrase(text, jsonb) to authenticated;
create function mcp.brief(topic text) returns text language sql as $$ select 'Brief on ' || topic $$;
comment on function mcp.brief(text) is 'A brief. @mcp {"prompt": true, "completions": {"topic": "callers_only.topic_names"}}';
create function mcp.fails() returns text language plpgsql as $$ begin raise exception 'it failed'; end $$;
revoke execute on function mcp.brief(text), mcp.fails() from public;
grant execute on function mcp.brief(text), mcp.fails() to authenticated;
select chumbo.configure('{"auth_mode":"bearer","jwt_issuers":["https://issuer.test"],"jwt_hs256_secret":"regress-secret","jwt_audience":["https://mcp.test"],"error_projection":"callers_only.rephrase"}') ->> 'auth_mode' as mode;
create role regress_edge_resolve login;
select chumbo.grant_edge('regress_edge_resolve');
select has_schema_privilege('regress_edge_resolve', 'callers_only', 'usage') as edge_may_use_the_schema;
select regress.hs256(jsonb_build_object('iss', 'https://issuer.test', 'aud', 'https://mcp.test', 'sub', 'aaaaaaaa-0000-4000-8000-000000000001',
  'role', 'authenticated', 'exp', extract(epoch from now())::int + 300)) as alice_token \gset
create function pg_temp.http(token text, method text, params jsonb) returns jsonb language sql as $$
  select chumbo.http(jsonb_build_object('method', 'POST', 'headers', jsonb_build_object('authorization', 'Bearer ' || token,
    'content-type', 'application/json', 'mcp-protocol-version', '2025-11-25'),
    'body', jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method, 'params', params)::text)) -> 'body' $$;
grant execute on function pg_temp.http(text, text, jsonb) to regress_edge_resolve;
set local role regress_edge_resolve;
select pg_temp.http(:'alice_token', 'completion/complete',
         '{"ref":{"type":"ref/prompt","name":"brief"},"argument":{"name":"topic","value":""}}') -> 'result' as alice_completions;
select regexp_replace(pg_temp.http(:'alice_token', 'tools/call', '{"name":"fails","arguments":{}}') #>> '{result,content,0,text}',
         'trace id [0-9a-f]+', 'trace id <masked>') as projected_error;
reset role;
rollback;
