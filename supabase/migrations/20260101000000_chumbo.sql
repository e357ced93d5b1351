-- Enable chumbo: PostgreSQL answers MCP. Capabilities are the functions in schema mcp that the
-- calling role may EXECUTE (see the example app in the next migration).
create extension if not exists chumbo;

-- The schema for capabilities (the extension may already have created it).
create schema if not exists mcp;

-- Request roles resolve capability functions in mcp; what they may call is decided per function
-- by EXECUTE grants, never by the schema.
grant usage on schema mcp to anon, authenticated;

-- Nothing in mcp is callable by default: a function becomes a capability for a role only when
-- it is granted explicitly (PostgreSQL would otherwise grant EXECUTE to PUBLIC on creation).
alter default privileges in schema mcp revoke execute on functions from public;
