-- Model-output projection (issue 13, 4): @mcp {"model_output": "schema.fn"} gives the tool's
-- result to the application's function, run as the caller, and the client (and so the model)
-- gets what it returns: an object as structuredContent with its JSON as the text, a string as
-- the text alone. The projection's errors are tool errors (its RAISE text shown) and undo the
-- tool's writes; outputSchema describes the projected value. The setting error_projection
-- rephrases or redacts the (already redacted) error a failed capability reports, as the caller;
-- a projection that fails or returns null keeps chumbo's message; the trace id always stays.
-- Red if: rows reach the client through a projected tool (the documents' bodies are checked in
-- both content and structuredContent), the projection runs as another role, or a failed
-- projection keeps the tool's writes.
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
\set bob '{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
create schema app;
grant usage on schema app to authenticated;
-- counts instead of rows; current_user shows who ran it, and RLS applies to what it reads
create function app.counts(result jsonb) returns jsonb language sql stable as $$
  select jsonb_build_object('documents', jsonb_array_length(result -> 'rows'),
                            'visible_projects', (select count(*) from public.projects),
                            'ran_as', current_user::text) $$;
create function app.as_text(result jsonb) returns jsonb language sql as $$
  select to_jsonb(format('%s documents', jsonb_array_length(result -> 'rows'))) $$;
create function app.refuse(result jsonb) returns jsonb language plpgsql as $$
begin raise exception 'projection refused %', jsonb_array_length(result -> 'rows'); end $$;
create function app.wrong_shape(result jsonb) returns jsonb language sql as $$ select '{"n": "not a number"}'::jsonb $$;
create function mcp.docs_counted() returns setof public.documents language sql stable as $$ select * from public.documents $$;
comment on function mcp.docs_counted() is 'Documents, counted. @mcp {"model_output": "app.counts"}';
create function mcp.docs_text() returns setof public.documents language sql stable as $$ select * from public.documents $$;
comment on function mcp.docs_text() is 'Documents, as a sentence. @mcp {"model_output": "app.as_text"}';
create function mcp.write_then_refused(title text) returns setof public.documents language sql as $$
  insert into public.documents (project_id, title, body) values ('a1000000-0000-4000-8000-000000000001', title, 'x') returning * $$;
comment on function mcp.write_then_refused(text) is 'x @mcp {"model_output": "app.refuse"}';
create function mcp.docs_checked() returns setof public.documents language sql stable as $$ select * from public.documents $$;
comment on function mcp.docs_checked() is 'x @mcp {"model_output": "app.wrong_shape", "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}}';
create function mcp.docs_missing_projection() returns setof public.documents language sql stable as $$ select * from public.documents $$;
comment on function mcp.docs_missing_projection() is 'x @mcp {"model_output": "app.nope"}';
create function mcp.docs_bad_name() returns setof public.documents language sql stable as $$ select * from public.documents $$;
comment on function mcp.docs_bad_name() is 'x @mcp {"model_output": "app.counts(jsonb)"}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;

create function pg_temp.shown(r jsonb) returns text language sql as $$
  select coalesce(case when (r #>> '{result,isError}')::boolean then 'error: ' else 'ok: ' end
                  || regexp_replace(r #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', ''),
                  'rpc error ' || (r #>> '{error,code}') || ': ' || (r #>> '{error,message}')) $$;

-- Alice and Bob see counts of their own rows; no document body or title reaches the client
select pg_temp.shown(regress.tool(:'alice', 'docs_counted')) as alice_text,
       regress.tool(:'alice', 'docs_counted') #> '{result,structuredContent}' as alice_structured;
select pg_temp.shown(regress.tool(:'bob', 'docs_counted')) as bob_text;
select regress.tool(:'alice', 'docs_counted')::text ~ (select string_agg(title, '|') from public.documents) as titles_leak;
-- a string is the text alone, no structuredContent
select pg_temp.shown(regress.tool(:'alice', 'docs_text')) as text_only,
       regress.tool(:'alice', 'docs_text') #> '{result}' ? 'structuredContent' as has_structured;
-- the projection's error is a tool error with its own words, and the tool's write is undone
select pg_temp.shown(regress.tool(:'alice', 'write_then_refused', '{"title":"projected away"}')) as refused;
select count(*) as kept_writes from public.documents where title = 'projected away';
-- outputSchema checks what the client gets, the projected value
select pg_temp.shown(regress.tool(:'alice', 'docs_checked')) as checked;
-- a projection function that does not exist: the call fails (nothing unprojected is shown)
select pg_temp.shown(regress.tool(:'alice', 'docs_missing_projection')) as missing;
-- a projection the caller may not execute: refused like any privilege
revoke execute on function app.counts(jsonb) from public, authenticated;
select pg_temp.shown(regress.tool(:'alice', 'docs_counted')) as not_executable;
grant execute on function app.counts(jsonb) to authenticated;
-- a malformed name is a registry problem: the tool is hidden and doctor says why
select pg_temp.shown(regress.tool(:'alice', 'docs_bad_name')) as bad_name;
select function, state, reasons from chumbo.doctor() where function like '%docs_bad_name%';
-- model_output on a prompt is a problem too
create function mcp.projected_prompt() returns text language sql as $$ select 'hi' $$;
comment on function mcp.projected_prompt() is 'x @mcp {"prompt": true, "model_output": "app.counts"}';
select function, state, reasons from chumbo.doctor() where function like '%projected_prompt%';

-- error_projection: the application rephrases conflicts and redacts digits from its own texts;
-- it sees the redacted message, the SQLSTATE and whether the application wrote it, never SQL.
-- It runs read-only (like model_output): with app.spy on, it answers with what it was given.
create function app.errors(tool text, error jsonb) returns text language plpgsql as $$
begin
  if current_setting('app.spy', true) = 'on' then return 'seen ' || (error - 'trace_id')::text; end if;
  if error ->> 'sqlstate' = '23505' then return 'That already exists.'; end if;
  if (error ->> 'authored')::boolean then return regexp_replace(error ->> 'message', '[0-9]', '#', 'g'); end if;
  if error ->> 'sqlstate' = '22012' then raise exception 'the projection itself fails'; end if;
  return null;
end $$;
create table app.uniq (id int primary key);
insert into app.uniq values (1);
grant insert, select on app.uniq to authenticated;
create function mcp.conflict() returns int language sql as $$ insert into app.uniq values (1) returning id $$;
create function mcp.says_secret() returns text language plpgsql as $$ begin raise exception 'account 12345 is locked'; end $$;
create function mcp.divides() returns int language sql as $$ select 1 / 0 $$;
create function mcp.bad_input() returns int language sql as $$ select ('x' || pg_backend_pid())::int $$;
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;
select pg_temp.shown(regress.tool(:'alice', 'says_secret')) as before_setting;
select chumbo.configure('{"error_projection": "app.errors"}') ->> 'error_projection' as configured;
select pg_temp.shown(regress.tool(:'alice', 'says_secret')) as redacted,
       regress.tool(:'alice', 'says_secret') #>> '{result,content,0,text}' ~ '\(trace id [0-9a-f]{32}\)$' as keeps_trace_id;
select pg_temp.shown(regress.tool(:'alice', 'divides')) as projection_failed_keeps_message;
select pg_temp.shown(regress.tool(:'alice', 'bad_input')) as null_keeps_message,
       pg_temp.shown(regress.tool(:'alice', 'conflict')) as rephrased;
set local app.spy = 'on';
create function pg_temp.seen(tool text) returns jsonb language sql as $$
  select substr(regexp_replace(regress.tool('{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}', tool)
                               #>> '{result,content,0,text}', ' \(trace id [0-9a-f]+\)$', ''), 6)::jsonb $$;
select tool, e ->> 'sqlstate' as sqlstate, e ->> 'authored' as authored,
       regexp_replace(e ->> 'message', ' \(trace id [0-9a-f]+\)', '') as message
  from unnest(array['bad_input', 'conflict', 'says_secret']) tool, pg_temp.seen(tool) e order by tool;
reset app.spy;
-- and a projection that writes is refused: chumbo's message is kept, nothing is written
create table app.seen (tool text);
grant insert on app.seen to authenticated;
create or replace function app.errors(tool text, error jsonb) returns text language plpgsql as $$
begin insert into app.seen values (tool); return 'written'; end $$;
select pg_temp.shown(regress.tool(:'alice', 'says_secret')) as writing_projection,
       (select count(*) from app.seen) as written;
select chumbo.configure('{"error_projection": null}') ->> 'error_projection' as unset;
rollback;
