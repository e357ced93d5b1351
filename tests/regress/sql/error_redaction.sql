-- Issue 9 (8): what a failing capability shows the model is decided by an allow-list. The
-- application's own words (RAISE, any SQLSTATE, ASSERT) pass; every error PostgreSQL raises
-- becomes a fixed message for its kind with no value, name or SQL text in it; anything else is
-- "Internal error" with a trace id. One row per error class; `leaks` lists secret values, table
-- and constraint names found in the whole response (none may be; the random trace id is masked
-- first, it may contain "2222" by chance).
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create table public.regress_315_parent (id int primary key);
create table public.regress_315_items (
  id int primary key,
  name text not null constraint regress_315_short check (length(name) < 20),
  parent int references public.regress_315_parent);
grant select, insert on public.regress_315_items, public.regress_315_parent to authenticated;
insert into public.regress_315_parent values (1);
insert into public.regress_315_items values (424242, 'secret-name-0042', 1);
create function mcp.run_sql(action text) returns text language plpgsql volatile as $$
declare
  result text;
begin
  execute action into result;
  return result;
end $$;
grant execute on function mcp.run_sql(text) to authenticated;
create function pg_temp.call(action text) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', 'run_sql', 'arguments', jsonb_build_object('action', action))),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') $$;
select class, regexp_replace(r #>> '{result,content,0,text}', '\(trace id [0-9a-f]{32}\)$', '(trace id <masked>)') as shown,
       (r #> '{result,isError}')::boolean as is_error,
       array_to_string(array(select w from unnest(array['98765432109', '424242', 'secret-name-0042', 'regress_315',
         'Globex', 'no_such_table', 'select ', 'chumbo.settings', '2222']) w
         where strpos(regexp_replace(r::text, 'trace id [0-9a-f]{32}', 'trace id <masked>', 'g'), w) > 0), ',') as leaks
from (values
  ('22003 out of range',        'select 98765432109::int::text'),
  ('22P02 bad syntax',          'select ''x98765432109''::int::text'),
  ('22007 bad date',            'select ''2222-99-99''::date::text'),
  ('22012 division by zero',    'select (98765432109 / 0)::text'),
  ('23505 unique',              'insert into public.regress_315_items values (424242, ''x'', 1) returning ''no'''),
  ('23503 foreign key',         'insert into public.regress_315_items values (1, ''x'', 98765432109 % 1000) returning ''no'''),
  ('23502 not null',            'insert into public.regress_315_items values (2, null, 1) returning ''no'''),
  ('23514 check',               'insert into public.regress_315_items values (3, ''secret-name-0042-and-more'', 1) returning ''no'''),
  ('42501 privilege',           'select value::text from chumbo.settings'),
  ('42501 row-level security',  'insert into public.projects (org_id, name) values (''b0000000-0000-4000-8000-000000000000'', ''Globex takeover'') returning ''no'''),
  ('42P01 undefined table',     'select * from no_such_table'),
  ('42703 undefined column',    'select secret_name_0042 from public.regress_315_items'),
  ('P0002 no row (INTO STRICT)','do $x$ declare v int; begin select id into strict v from public.regress_315_items where id = -1; end $x$'),
  ('P0001 app raise',           'do $x$ begin raise exception ''The project % is archived'', 7; end $x$'),
  ('MC001 app sqlstate',        'do $x$ begin raise exception using errcode = ''MC001'', message = ''Quota reached for this month''; end $x$'),
  ('22003 app sqlstate',        'do $x$ begin raise exception using errcode = ''22003'', message = ''Amount must be below 1000''; end $x$'),
  ('assert',                    'do $x$ begin assert false, ''Invariant broken: app says so''; end $x$')
) as t(class, action), lateral pg_temp.call(action) r;
rollback;
