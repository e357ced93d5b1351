-- A composite parameter's inputSchema was {"type": "object"}: a misspelt attribute was dropped
-- without a word (jsonb_to_record ignores keys it does not know) and the tool ran with NULL in
-- its place; a wrong value was "a value has the wrong syntax for its type", naming nothing. Now
-- the schema lists the attributes by their types (any value for a type with no schema), and no
-- other key; a left-out attribute is NULL; an integer attribute takes a whole number written 2.0
-- (as a parameter does: input_schema_types). Adding an attribute shows at the next request.
begin;
create type public.cp_size as enum ('small', 'large');
create type public.cp_item as (label text, qty int, size public.cp_size, wait interval);
create type public.cp_order as (item public.cp_item, note text);
create function mcp.cp_take(o public.cp_order, extra public.cp_item[] default null) returns jsonb
  language sql stable as $$ select jsonb_build_object('o', to_jsonb(o), 'extra', to_jsonb(extra)) $$;
grant execute on function mcp.cp_take to authenticated;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function pg_temp.schema() returns jsonb language sql as $$
  select jsonb_path_query_first(chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
           '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'),
         '$.result.tools[*] ? (@.name == "cp_take").inputSchema.properties') $$;
create function pg_temp.call(args jsonb) returns text language sql as $$
  select coalesce(r #>> '{structuredContent}', r #>> '{content,0,text}')
    from (select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
            'params', jsonb_build_object('name', 'cp_take', 'arguments', args)),
            '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}') -> 'result' as r) x $$;
select jsonb_pretty(pg_temp.schema());
select label, pg_temp.call(args) as outcome
  from (values
    ('all attributes', '{"o": {"item": {"label": "pen", "qty": 2, "size": "large", "wait": "1 day"}, "note": "n"}}'::jsonb),
    ('left out: NULL', '{"o": {"note": "only a note"}}'),
    ('misspelt attribute', '{"o": {"note": "n", "itme": {"label": "pen"}}}'),
    ('misspelt nested', '{"o": {"item": {"lable": "pen"}}}'),
    ('wrong type, named', '{"o": {"item": {"qty": "two"}}}'),
    ('enum value not listed', '{"o": {"item": {"size": "medium"}}}'),
    ('in an array', '{"o": {}, "extra": [{"label": "a"}, {"labl": "b"}]}'),
    ('whole numbers as 2.0, 1e1', '{"o": {"item": {"qty": 2.0}}, "extra": [{"qty": 1e1}]}')
  ) as v(label, args);
-- a new attribute is in the schema at the next request, and taken
alter type public.cp_item add attribute colour text;
select pg_temp.schema() #> '{o,properties,item,properties}' ? 'colour' as colour_listed;
select pg_temp.call('{"o": {"item": {"colour": "red"}}}') as with_colour;
rollback;
