-- One name rule for every application function that metadata or settings name (issue 25, item 5:
-- policies, the scope resolver, text renderers, model_output, error_projection, the sandbox
-- stopper and completion functions). Before, the policy hooks and model_output each had their own
-- check (and they disagreed: 64-byte and digit-led names), a renderer only needed one dot
-- (`app."x"` passed), completion functions and the settings were not checked at all. Now every one
-- is `schema.function` in plain identifiers (src/postgres/app_function.rs), resolved by one
-- catalog lookup; a name that breaks the rule is a registry problem (the capability is hidden and
-- doctor says why) or refused by chumbo.configure.
begin;
create schema names_app;
create function names_app.render(r jsonb) returns text language sql as $$ select 'rendered' $$;
create function names_app.topics(prefix text) returns setof text language sql
  as $$ select t from unnest(array['alpha', 'beta']) t where t like prefix || '%' $$;
grant usage on schema names_app to authenticated;

-- a text renderer with a quoted identifier: hidden (before: accepted, then the lookup went to the catalog)
create function mcp.quoted_renderer() returns setof int language sql as $$ select 1 $$;
comment on function mcp.quoted_renderer() is '@mcp {"text": "names_app.\"render\""}';
-- a well-formed renderer: served, its text used
create function mcp.rendered() returns setof int language sql as $$ select 1 $$;
comment on function mcp.rendered() is '@mcp {"text": "names_app.render"}';
-- completion functions: an expression, and an unqualified name, are problems; a good one works
create function mcp.topic_prompt(topic text) returns text language sql as $$ select topic $$;
comment on function mcp.topic_prompt(text) is '@mcp {"prompt": true, "completions": {"topic": "names_app.topics(x)"}}';
create function mcp.topic_prompt_bare(topic text) returns text language sql as $$ select topic $$;
comment on function mcp.topic_prompt_bare(text) is '@mcp {"prompt": true, "completions": {"topic": "topics"}}';
create function mcp.topic_prompt_good(topic text) returns text language sql as $$ select topic $$;
comment on function mcp.topic_prompt_good(text) is '@mcp {"prompt": true, "completions": {"topic": "names_app.topics"}}';
-- model_output led by a digit: the same rule as the policy hooks now
create function mcp.digit_projection() returns int language sql as $$ select 1 $$;
comment on function mcp.digit_projection() is '@mcp {"model_output": "1app.counts"}';
revoke execute on all functions in schema mcp from public;
grant execute on all functions in schema mcp to authenticated;

select function, state, reasons from chumbo.doctor()
 where function similar to '%(quoted_renderer|rendered|topic_prompt|digit_projection)%' order by function;
\set alice '{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
select regress.tool(:'alice', 'rendered') #>> '{result,content,0,text}' as rendered_text;
select chumbo.handle('{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"topic_prompt_good"},"argument":{"name":"topic","value":"a"}}}', :'alice'::jsonb)
       #> '{result,completion,values}' as completed;

-- settings: every function name is held to the rule by chumbo.configure
\set VERBOSITY terse
savepoint s;
select chumbo.configure('{"error_projection": "rephrase"}');
\echo sqlstate :LAST_ERROR_SQLSTATE
rollback to s;
select chumbo.configure('{"scope_resolver": "names_app.\"scopes\""}');
rollback to s;
select chumbo.configure('{"sandbox_stopper": "names_app.stop; select 1"}');
rollback to s;
select chumbo.configure('{"error_projection": "names_app.rephrase"}') is not null as well_formed_accepted;
rollback;
