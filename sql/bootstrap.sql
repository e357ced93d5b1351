-- chumbo's own objects, one file per concern, in the order src/lib.rs declares them (this one
-- first). Nothing is reachable by anon/authenticated except what finalize.sql grants explicitly
-- (capability helpers and chumbo.mcp) and the state and sandbox functions.

create schema if not exists mcp;
comment on schema mcp is 'MCP capabilities: functions here are tools, resources and prompts (see chumbo.doctor())';

revoke all on schema chumbo from public;
