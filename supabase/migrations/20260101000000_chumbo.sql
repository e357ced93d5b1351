-- Enable chumbo: PostgreSQL answers MCP. Capabilities are the functions in schema mcp that the
-- calling role may EXECUTE (see the example app in the next migration).
create extension if not exists chumbo;

-- The schema for capabilities (the extension creates it; kept for older versions).
do $$
begin
  if not exists (select from pg_namespace where nspname = 'mcp') then
    create schema mcp;
  end if;
end
$$;

-- Request roles resolve capability functions in mcp; what they may call is decided per function
-- by EXECUTE grants, never by the schema.
grant usage on schema mcp to anon, authenticated;

-- Note: PostgreSQL grants EXECUTE on every new function to PUBLIC (so to anon), and a per-schema
-- ALTER DEFAULT PRIVILEGES cannot take that away. Every capability must therefore say who may
-- call it: `revoke execute on function mcp.f from public, anon; grant execute ... to authenticated;`
-- (chumbo.doctor() shows each function's exposed_to).
