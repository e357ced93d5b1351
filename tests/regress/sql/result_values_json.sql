-- A tool's values reach structuredContent exactly as PostgreSQL's JSON functions write them: rows
-- are read as to_json text (no jsonb built per row), so every type must come out as the same
-- value to_jsonb gives (numbers with their digits, NaN and infinities as strings, timestamps in
-- ISO form, arrays and nested rows as JSON, json columns parsed with the last duplicate key
-- winning, text escaped); the same for scalar results. A value nested deeper than 128 levels is
-- refused with a clear tool error, not a crash.
begin;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.result(tool text, args jsonb default '{}') returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', tool, 'arguments', args)), '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;

create type public.pair as (k text, v numeric);
create table public.typed_values (
  id int primary key,
  n numeric, f float8, big int8, flag boolean, at timestamptz, day date, span interval,
  label text, tags text[], matrix int[], doc json, docb jsonb, p public.pair, raw bytea, u uuid
);
insert into public.typed_values values
  (1, 12.50, 'NaN', 9007199254740993, true, '2026-12-01 10:00:00.123456+00', '2026-12-01', '1 day 02:03:04',
   E'quote " backslash \\ newline \n tab \t é ✓ 🐘', '{a,NULL,"c d"}', '{{1,2},{3,4}}',
   '{"a": 1, "a": 2, "b" : [ 1 , 2 ]}', '{"z": {"y": [true, null]}}', row('k', 0.000001), '\x00ff', 'a1000000-0000-4000-8000-000000000001'),
  (2, -1e-20, 'Infinity', -9223372036854775808, false, 'infinity', '-infinity', '-5 minutes',
   '', '{}', null, '[]', 'null', row(null, null), '', null),
  (3, 1e40, '-Infinity', 0, null, null, null, null, null, null, null, 'null', '"text"', null, null, null),
  (4, 'NaN', 1.5e300, 1, null, null, null, null, null, null, null, '3.25', '-0.5e3', null, null, null);
grant select on public.typed_values to authenticated;

create function mcp.typed_rows() returns setof public.typed_values
  language sql stable as $$ select * from public.typed_values order by id $$;
create function mcp.typed_table() returns table (id int, doc json, p public.pair)
  language sql stable as $$ select id, doc, p from public.typed_values order by id $$;
create function mcp.json_scalar() returns json language sql stable
  as $$ select '{"a": 1, "a": {"b": "last"}, "n": 1.10}'::json $$;
create function mcp.numeric_scalar() returns numeric language sql stable as $$ select 12345.25 $$;
create function mcp.numeric_wide() returns numeric language sql stable as $$ select 123456789012345678901234567890.5 $$;
create function mcp.text_scalar() returns text language sql stable as $$ select E'line 1\nline "2"' $$;
create function mcp.row_scalar() returns public.typed_values language sql stable
  as $$ select * from public.typed_values where id = 1 $$;
create function mcp.nested(depth int) returns jsonb language sql stable
  as $$ select (repeat('[', depth) || repeat(']', depth))::jsonb $$;
create function mcp.nested_rows(depth int) returns table (id int, doc json) language sql stable
  as $$ select 1, (repeat('{"a":', depth) || '1' || repeat('}', depth))::json $$;
-- Only column types chumbo reads straight off the row (src/result_json.rs), with a dropped column.
create table public.direct_values (
  id int primary key, gone text, n numeric, f float8, r real, small int2, big int8, flag boolean,
  at timestamptz, ts timestamp, day date, label text, v varchar(40), doc json, docb jsonb, u uuid
);
alter table public.direct_values drop column gone;
insert into public.direct_values values
  (1, 12.50, 'NaN', 1.1, -32768, 9007199254740993, true, '2026-12-01 10:00:00.123456+00', '2026-12-01 10:00:00',
   '2026-12-01', E'quote " backslash \\ newline \n tab \t é ✓ 🐘', 'v', '{"a": 1, "a": 2}', '{"z": [true, null]}',
   'a1000000-0000-4000-8000-000000000001'),
  (2, 'NaN', 'Infinity', '-Infinity', 0, -9223372036854775808, false, 'infinity', '-infinity', 'infinity',
   '', '', 'null', '"text"', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
  (3, -1e-20, 0.1, 3.4e38, 1, 0, null, '1999-01-08 04:05:06+02', '0001-01-01 00:00:00 BC', '0001-01-01 BC',
   null, null, null, null, null),
  (4, 1e40, 1.5e300, 1e-30, null, null, null, null, null, null, null, null, '3.25', '-0.5e3', null);
grant select on public.direct_values to authenticated;
create function mcp.direct_rows() returns setof public.direct_values
  language sql stable as $$ select * from public.direct_values order by id $$;
create function mcp.direct_table() returns table (id int, label text, at timestamptz, u uuid)
  language sql stable as $$ select id, label, at, u from public.direct_values order by id $$;
grant execute on all functions in schema mcp to authenticated;

-- Every row, column by column, equals what to_jsonb makes of it.
select r -> 'structuredContent' -> 'rows' = (select jsonb_agg(to_jsonb(t) order by id) from public.typed_values t) as rows_equal_to_jsonb,
       coalesce(r ->> 'isError', 'false') as is_error
  from pg_temp.result('typed_rows') r;
select r -> 'structuredContent' -> 'rows' = (select jsonb_agg(jsonb_build_object('id', id, 'doc', doc::jsonb, 'p', to_jsonb(p)) order by id) from public.typed_values) as table_equals_to_jsonb
  from pg_temp.result('typed_table') r;
-- The same for rows read column by column, also when the session prints floats with fewer digits.
select r -> 'structuredContent' -> 'rows' = (select jsonb_agg(to_jsonb(t) order by id) from public.direct_values t) as direct_rows_equal_to_jsonb,
       coalesce(r ->> 'isError', 'false') as is_error
  from pg_temp.result('direct_rows') r;
select r -> 'structuredContent' -> 'rows' = (select jsonb_agg(jsonb_build_object('id', id, 'label', label, 'at', at, 'u', u) order by id) from public.direct_values) as direct_table_equal_to_jsonb
  from pg_temp.result('direct_table') r;
set extra_float_digits = 0;
select r -> 'structuredContent' -> 'rows' = (select jsonb_agg(to_jsonb(t) order by id) from public.direct_values t) as direct_rows_equal_short_floats
  from pg_temp.result('direct_rows') r;
reset extra_float_digits;
select jsonb_pretty(r #> '{structuredContent,rows,1}') as direct_second_row from pg_temp.result('direct_rows') r;
-- What the values look like: digits kept where JSON can hold them, strings for the rest.
select jsonb_pretty(r -> 'structuredContent' -> 'rows' -> 0) as first_row from pg_temp.result('typed_rows') r;
select r #> '{structuredContent,rows,1}' as second_row from pg_temp.result('typed_rows') r;
select r #> '{structuredContent,rows,2,doc}' as json_null, r #> '{structuredContent,rows,2,docb}' as jsonb_string,
       r #> '{structuredContent,rows,3,n}' as numeric_nan, (r #>> '{structuredContent,rows,3,f}')::float8 = 1.5e300 as big_float
  from pg_temp.result('typed_rows') r;
-- The text block is the same rows (JSON lines or a table), never jsonb's printout.
select r #>> '{content,0,text}' like '%quote \\" backslash%' or r #>> '{content,0,text}' like '%quote " backslash%' as text_has_label
  from pg_temp.result('typed_rows') r;

-- Scalars: a json value with duplicate keys keeps the last, as jsonb would; numbers keep their value.
select r -> 'structuredContent' as json_scalar, r -> 'structuredContent' = to_jsonb('{"a": 1, "a": {"b": "last"}, "n": 1.10}'::json::jsonb) as same_as_jsonb
  from pg_temp.result('json_scalar') r;
select r #>> '{content,0,text}' as numeric_scalar from pg_temp.result('numeric_scalar') r;
-- Numbers keep every digit, as to_jsonb writes them: a numeric wider than a double is not rounded
-- (it was, to 1.2345678901234568e+29), in a scalar's text, in rows (structuredContent and the text
-- block) and in a json value.
select r #>> '{content,0,text}' as numeric_exact from pg_temp.result('numeric_wide') r;
create table public.wide_values (id int primary key, amount numeric(40,10), ratio numeric, doc jsonb);
insert into public.wide_values values
  (1, 123456789012345678901234567890.1234567890, 0.10, '{"x": 12345678901234567890.123456789, "y": 1.50}');
grant select on public.wide_values to authenticated;
create function mcp.wide_rows() returns setof public.wide_values language sql stable
  as $$ select * from public.wide_values $$;
grant execute on function mcp.wide_rows() to authenticated;
select r #>> '{structuredContent,rows,0,amount}' as amount, r #>> '{structuredContent,rows,0,ratio}' as ratio,
       r #> '{structuredContent,rows,0,doc}' as doc,
       r #>> '{content,0,text}' as text_block
  from pg_temp.result('wide_rows') r;
-- And on the way in: a numeric or int8 argument is the number the client wrote, digit for digit
-- (a numeric argument was rounded to 17 significant digits, so a tool got another amount than
-- the one it was sent), through the jsonb entry and the text entry the edge uses.
create function mcp.echo_amount(amount numeric, big int8) returns text language sql stable
  as $$ select amount::text || ' ' || big::text $$;
grant execute on function mcp.echo_amount(numeric, int8) to authenticated;
select r #>> '{content,0,text}' as echoed
  from pg_temp.result('echo_amount', '{"amount": 12345678901234567890.123456789, "big": 9007199254740993}') r;
select chumbo.configure('{"auth_mode": "api-key"}') -> 'auth_mode' as auth_mode;
select chumbo.create_api_key('authenticated') as key \gset
select body::jsonb #>> '{result,content,0,text}' as echoed_through_http
  from chumbo.http_parts(jsonb_build_object('method', 'POST', 'path', '/mcp',
         'headers', jsonb_build_object('content-type', 'application/json', 'x-api-key', :'key'))::text,
       '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo_amount","arguments":{"amount":-0.000000000000000000012345678901234567890,"big":-9007199254740993}}}');
select r #>> '{content,0,text}' as text_scalar from pg_temp.result('text_scalar') r;
select r -> 'structuredContent' = (select to_jsonb(t) from public.typed_values t where id = 1) as row_scalar_equal
  from pg_temp.result('row_scalar') r;

-- Depth: 100 levels pass, 200 are a tool error that says why (no backend crash: the next call works).
select jsonb_typeof(r -> 'structuredContent') as hundred_levels, coalesce(r ->> 'isError', 'false') as is_error
  from pg_temp.result('nested', '{"depth": 100}') r;
select r ->> 'isError' as is_error, regexp_replace(r #>> '{content,0,text}', 'trace id [0-9a-f]{32}', 'trace id <masked>') as too_deep
  from pg_temp.result('nested', '{"depth": 200}') r;
select r ->> 'isError' as is_error, regexp_replace(r #>> '{content,0,text}', 'trace id [0-9a-f]{32}', 'trace id <masked>') as too_deep_row
  from pg_temp.result('nested_rows', '{"depth": 200}') r;
select r #>> '{content,0,text}' as after_refusal from pg_temp.result('numeric_scalar') r;
rollback;
