-- Fixed bug: a capability with a parameter named "r" cannot be called: the SQL chumbo generates
-- (src/execute.rs call_sql) is
--   select pg_catalog.to_jsonb(r) from pg_catalog.jsonb_to_record($1) as _a("r" numeric),
--          lateral mcp."f"("r" => _a."r") as r
-- and "r" is then both the argument column _a.r and the function's result column r, so a call
-- of a function returning a scalar fails with 42702 "column reference "r" is ambiguous" (an
-- "Internal error" for the model); worse, for a function returning rows with no column named r,
-- "r" silently means the ARGUMENT: pr_names answers {"rows": [2, 2]} instead of two names.
-- The expected output below is the right behaviour, which chumbo now has: the tools answer with their results.
begin;
select regress.fixture_projects() as fixture;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
create function mcp.pr_area(r numeric) returns numeric language sql stable as $$ select round(3.14159 * r * r, 2) $$;
create function mcp.pr_points(r int) returns setof int language sql stable as $$ select generate_series(1, r) $$;
create function mcp.pr_circle(r numeric) returns jsonb language sql stable as $$ select jsonb_build_object('radius', r) $$;
create function mcp.pr_names(r int) returns table (name text) language sql stable
  as $$ select p.name from public.projects p order by p.name collate "C" limit r $$;
grant execute on function mcp.pr_area(numeric), mcp.pr_points(int), mcp.pr_circle(numeric), mcp.pr_names(int) to authenticated;
select name, r -> 'isError' as is_error, coalesce(r -> 'structuredContent', r #> '{content,0,text}') as result
  from (values ('pr_area'), ('pr_points'), ('pr_circle')) v(name),
       lateral (select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', 'tools/call',
                  'params', jsonb_build_object('name', name, 'arguments', '{"r": 5}'::jsonb)), :'alice') -> 'result') x(r)
 order by name;
select r -> 'structuredContent' as names
  from (select chumbo.handle('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pr_names","arguments":{"r":2}}}', :'alice') -> 'result') x(r);
rollback;
