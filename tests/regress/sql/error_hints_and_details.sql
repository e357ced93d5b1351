-- What of an error's HINT and DETAIL reaches the model (audit gap G5; src/execute.rs
-- public_error, src/identity/session.rs caught): the application's own RAISE ... USING HINT follows its
-- message as "Next step: ...", in a tool and in a policy function; its DETAIL never passes.
-- PostgreSQL's own errors pass as the fixed message of their SQLSTATE, without their HINT ("Perhaps
-- you meant to reference the column ...") or DETAIL ("Key (email)=(...) already exists", strict
-- INTO's parameter values), also when the application re-raises them with a bare RAISE. Every
-- secret below is checked against the whole JSON-RPC answer, not only the text.
--
-- Red if: public_error appended any hint (PostgreSQL's name columns and functions), or a detail,
-- or if caught() counted a re-raised PostgreSQL error (bare RAISE) as the application's words.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create table public.contacts (email text primary key, name text not null);
insert into public.contacts values ('ceo@globex.test', 'secret-ceo'), ('cfo@globex.test', 'secret-cfo');
grant select, insert on public.contacts to authenticated;

create function mcp.app_hint() returns text language plpgsql as $$
begin
  raise exception 'Project is archived' using hint = 'Unarchive it first with set_status.', detail = 'secret-detail-1 row 4242';
end $$;
create function mcp.app_detail_only() returns text language plpgsql as $$
begin
  raise exception 'Not possible now' using detail = 'secret-detail-2', errcode = '22023';
end $$;
create function mcp.app_hint_custom_state() returns text language plpgsql as $$
begin
  raise sqlstate 'P0099' using message = 'Quota reached', hint = 'Wait until tomorrow.';
end $$;
create function mcp.pg_column_hint() returns text language plpgsql as $$
declare r text;
begin
  execute 'select nme from public.contacts' into r;   -- HINT: Perhaps you meant ... "contacts.name"
  return r;
end $$;
create function mcp.pg_function_hint() returns text language plpgsql as $$
begin
  perform lower(4242);   -- HINT: No function matches the given name and argument types ...
  return 'never';
end $$;
create function mcp.pg_unique_detail() returns text language sql as $$
  insert into public.contacts values ('ceo@globex.test', 'again') returning name $$;
create function mcp.pg_reraised() returns text language plpgsql as $$
begin
  insert into public.contacts values ('ceo@globex.test', 'again');
  return 'never';
exception when unique_violation then
  raise;   -- re-raises PostgreSQL's error as it was, DETAIL included
end $$;
create function mcp.pg_strict_params(wanted text) returns text language plpgsql as $$
#print_strict_params on
declare r text;
begin
  select c.name into strict r from public.contacts c where c.email <> wanted;   -- DETAIL: parameters: wanted = '...'
  return r;
end $$;
-- an execution policy whose own RAISE has a hint and a detail
create function public.policy_hint(args jsonb) returns boolean language plpgsql as $$
begin
  raise exception 'Only on weekdays' using hint = 'Try again on Monday.', detail = 'secret-detail-3';
end $$;
grant execute on function public.policy_hint(jsonb) to authenticated;
create function mcp.guarded() returns text language sql as $$ select 'ran' $$;
comment on function mcp.guarded() is '@mcp {"can_execute": "public.policy_hint"}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;

select tool,
       regexp_replace(coalesce(r #>> '{result,content,0,text}', r #>> '{error,message}'), 'trace id [0-9a-f]+', 'trace id <masked>', 'g') as the_model_sees,
       r::text !~ '(secret|4242|nme|contacts|lower\(|explicit type casts|Perhaps|ceo@globex)' as nothing_else
from (values ('app_hint', '{}'), ('app_detail_only', '{}'), ('app_hint_custom_state', '{}'), ('guarded', '{}'),
             ('pg_column_hint', '{}'), ('pg_function_hint', '{}'), ('pg_unique_detail', '{}'), ('pg_reraised', '{}'),
             ('pg_strict_params', '{"wanted": "secret-param@acme.test"}')) as t(tool, args),
     lateral regress.tool(:'alice', tool, args::jsonb) r;

-- control: PostgreSQL does give those errors their hints and details (in plain SQL, as Alice)
set local role authenticated;
create function pg_temp.diag(sql text) returns text language plpgsql as $$
declare d text; h text;
begin
  execute sql;
  return 'no error';
exception when others then
  get stacked diagnostics d = pg_exception_detail, h = pg_exception_hint;
  return concat_ws(' | ', 'detail: ' || nullif(d, ''), 'hint: ' || nullif(h, ''));
end $$;
select label, pg_temp.diag(sql) as postgres_says from (values
  ('column', 'select nme from public.contacts'),
  ('function', 'select lower(4242)'),
  ('unique', 'insert into public.contacts values (''ceo@globex.test'', ''again'')'),
  ('strict', 'select mcp.pg_strict_params(''secret-param@acme.test'')')
) as t(label, sql);
reset role;
rollback;
