-- Claim (README "Declaring capabilities", Tools): inputSchema is derived from the named
-- parameters: text -> string, integers -> integer with their bounds, numeric/floats -> number,
-- boolean, uuid -> string/uuid, date and timestamptz -> string with a format, time and timestamp
-- -> string with a pattern (no offset: they hold none), json/jsonb -> any,
-- arrays, enums -> enum, domains -> their base type, bytea -> base64 string; parameters with
-- defaults are optional. And the derived schema is enforced: a value out of a type's bounds or
-- of the wrong format is a tool error before the function runs, a valid one arrives typed.
begin;
create type public.it_colour as enum ('red', 'green');
create domain public.it_percent as int check (value between 0 and 100);
create function mcp.it_types(
  t text, s smallint, i int, b bigint, n numeric, re real, d double precision, ok boolean, u uuid,
  day date, at time, ts timestamp, tstz timestamptz, j json, jb jsonb, tags text[], grid int[],
  colour public.it_colour, pct public.it_percent, raw bytea,
  opt text default 'x', opt2 int default null)
  returns jsonb language sql stable
  as $$ select jsonb_build_object('t', t, 's', s, 'i', i, 'b', b, 'n', n, 'ok', ok, 'u', u, 'day', day, 'at', at, 'ts', ts,
                                  'tstz', tstz, 'jb', jb, 'tags', tags, 'colour', colour, 'pct', pct,
                                  'raw_given', raw is not null, 'opt', opt) $$;
grant execute on function mcp.it_types to authenticated;
select jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
         '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'), '$.result.tools[*] ? (@.name == "it_types").inputSchema') as s \gset
select key, value from jsonb_each(:'s'::jsonb -> 'properties') order by key;
select :'s'::jsonb -> 'required' as required, :'s'::jsonb -> 'additionalProperties' as additional_properties;

create function pg_temp.call(args jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
    'params', jsonb_build_object('name', 'it_types', 'arguments', args)),
    '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' $$;
create temp table good as select '{"t": "text", "s": 1, "i": 2, "b": 9007199254740993, "n": 1.5, "re": 2.5, "d": 3.5, "ok": true,
  "u": "a1000000-0000-4000-8000-000000000001", "day": "2026-01-31", "at": "12:34:56", "ts": "2026-01-31T12:34:56",
  "tstz": "2026-01-31T12:34:56Z", "j": [1], "jb": {"k": [1, "two"]}, "tags": ["a", "b"], "grid": [1, 2],
  "colour": "green", "pct": 42, "raw": "3q2+7w=="}'::jsonb as args;
-- a valid call arrives typed (bigint beyond 2^53 exactly, default applied; bytea decoding: bug_bytea_param_not_decoded)
select pg_temp.call((table good)) -> 'structuredContent' as typed;
-- each bad value is refused before the function runs
select label, (r ->> 'isError')::boolean as is_error, r #>> '{content,0,text}' ~ '^Invalid arguments' as invalid_arguments
  from (values
    ('smallint above its maximum', '{"s": 32768}'::jsonb),
    ('int below its minimum', '{"i": -2147483649}'),
    ('integer given a fraction', '{"i": 1.5}'),
    ('number given a string', '{"n": "1.5"}'),
    ('boolean given a string', '{"ok": "true"}'),
    ('uuid malformed', '{"u": "not-a-uuid"}'),
    ('date malformed', '{"day": "31/01/2026"}'),
    ('date-time malformed', '{"tstz": "yesterday"}'),
    ('array given a string', '{"tags": "a"}'),
    ('array item of the wrong type', '{"tags": [1]}'),
    ('enum value not listed', '{"colour": "blue"}'),
    ('unknown argument', '{"extra": 1}'),
    ('required argument missing', '{"t": null}')
  ) as v(label, bad),
  lateral pg_temp.call(case when label = 'required argument missing' then (table good) - 't' else (table good) || bad end) r;
-- time and timestamp hold no time zone: their text without an offset is taken (seconds and a
-- fraction optional, a space for the T), and a value with an offset is refused, not taken with
-- its offset dropped (12:00:00+05:00 arrived as 12:00). timestamptz takes RFC 3339, offset and all.
select label, coalesce(r ->> 'isError', 'false') as is_error,
       coalesce(r -> 'structuredContent' ->> (select min(k) from jsonb_object_keys(given) k), r #>> '{content,0,text}') as outcome
  from (values
    ('time, minutes only', '{"at": "07:05"}'::jsonb),
    ('time with a fraction', '{"at": "23:59:59.123456"}'),
    ('timestamp with a space', '{"ts": "2026-02-28 23:59:59.5"}'),
    ('time with an offset', '{"at": "12:00:00+05:00"}'),
    ('time in UTC', '{"at": "12:00:00Z"}'),
    ('time out of range', '{"at": "24:30:00"}'),
    ('timestamp with an offset', '{"ts": "2026-01-31T12:00:00+05:00"}'),
    ('timestamp in UTC', '{"ts": "2026-01-31T12:00:00Z"}'),
    ('timestamp with no time', '{"ts": "2026-01-31"}'),
    ('timestamp in month 13', '{"ts": "2026-13-01T00:00:00"}')
  ) as v(label, given),
  lateral pg_temp.call((table good) || given) r;
-- A whole number written with a fraction or an exponent is an integer to JSON Schema, so it
-- passes an integer parameter's schema (a Python client writes a float 2.0 as `2.0`): it arrives
-- as that integer, in a smallint, int, bigint, an int array and a domain over int. It was refused
-- by PostgreSQL's integer input as "a value has the wrong syntax for its type".
select coalesce(r ->> 'isError', 'false') as is_error,
       jsonb_build_object('s', r #> '{structuredContent,s}', 'i', r #> '{structuredContent,i}', 'b', r #> '{structuredContent,b}',
                          'pct', r #> '{structuredContent,pct}') as whole_numbers
  from pg_temp.call((table good) || '{"s": 2.0, "i": -3.000, "b": 9007199254740993.0, "grid": [1.0, 2, 3.00], "pct": 42.0}') r;
-- A fraction is still refused by the schema, and a whole number out of range still is.
select label, r #>> '{content,0,text}' as refused
  from (values ('fraction in an exponent', '{"i": 25e-2}'::jsonb), ('whole but too large', '{"i": 3.0e9}')) as v(label, bad),
  lateral pg_temp.call((table good) || bad) r;
-- Through the text entry the edge uses, where an exponent reaches chumbo as written (jsonb would
-- have normalised it); a numeric parameter keeps what it was sent, scale and all. (chumbo.http
-- refuses a session holding a temporary table: the arguments are kept, the table dropped.)
select rtrim(((table good) - 's' - 'i' - 'b' - 'n' - 'pct' - 'grid')::text, '}') as good_args \gset
drop table good;
select chumbo.configure('{"auth_mode": "api-key"}') -> 'auth_mode' as auth_mode;
select chumbo.create_api_key('authenticated') as key \gset
select coalesce(r ->> 'isError', 'false') as is_error,
       (select jsonb_build_object('s', t -> 's', 'i', t -> 'i', 'b', t -> 'b', 'n', t -> 'n', 'pct', t -> 'pct')
          from (select (r #>> '{content,0,text}')::jsonb as t) x) as through_http
  from (select coalesce(body::jsonb -> 'result', jsonb_build_object('isError', body)) as r -- (the text block: no protocol version, no structuredContent)
          from chumbo.http_parts(jsonb_build_object('method', 'POST', 'path', '/mcp',
                 'headers', jsonb_build_object('content-type', 'application/json', 'x-api-key', :'key'))::text,
               '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"it_types","arguments":' ||
               :'good_args' || ', "s": 1e1, "i": 250E-1, "b": 2.5e1, "n": 1.50, "pct": 0.42e2, "grid": [1E0, 2.0]}}}')) h;
rollback;
