-- Runs after every Rust-defined function exists: the result type, and privileges.

create domain chumbo.tool_result as jsonb
    check (jsonb_typeof(value -> 'content') = 'array');
comment on domain chumbo.tool_result is 'A complete MCP tools/call result; a tool returning it is answered with exactly this.';

create function chumbo.tool_result(content jsonb, structured jsonb default null, is_error boolean default false)
returns chumbo.tool_result language sql immutable as $$
    select (jsonb_build_object('content', content)
        || case when structured is not null then jsonb_build_object('structuredContent', structured) else '{}'::jsonb end
        || case when is_error then '{"isError": true}'::jsonb else '{}'::jsonb end)::chumbo.tool_result
$$;

-- Functions are executable by PUBLIC by default: close everything, then open the helpers that
-- capability code (running as anon/authenticated) calls.
revoke execute on all functions in schema chumbo from public;
grant usage on schema chumbo to public;
grant execute on function
    chumbo.content_text(text), chumbo.content_image(bytea, text), chumbo.content_audio(bytea, text),
    chumbo.content_resource_link(text, text, text, text), chumbo.content_resource(text, text, text),
    chumbo.content_blob_resource(text, bytea, text), chumbo.message(text, jsonb),
    chumbo.tool_result(jsonb, jsonb, boolean), chumbo.log(text, jsonb, text),
    chumbo.progress(double precision, double precision, text), chumbo.metadata_schema(),
    chumbo.input(text, jsonb), chumbo.inputs(jsonb), chumbo.client_capabilities(), chumbo.surface(),
    chumbo.run_id(), chumbo.continue_as_task(), chumbo.jsonrpc_error(integer, text)
to public;

-- Capabilities run as anon and authenticated. The PostgREST entry chumbo.mcp is not granted
-- here: it is an explicit opt-in (chumbo.grant_postgrest, sql/edge.sql).
do $$
begin
    if exists (select 1 from pg_roles where rolname = 'authenticated') then
        grant usage on schema mcp to authenticated;
    end if;
    if exists (select 1 from pg_roles where rolname = 'anon') then
        grant usage on schema mcp to anon;
    end if;
end $$;
