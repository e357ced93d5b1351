-- chumbo's own objects, one file per concern, in the order src/lib.rs declares them (this one
-- first). Nothing is reachable by anon/authenticated except what finalize.sql grants explicitly
-- (capability helpers and chumbo.mcp) and the state and sandbox functions.

-- chumbo reads and writes text as UTF-8 (MCP is UTF-8 JSON, and so is every name, COMMENT and
-- row it serves): in a database of another encoding its texts would be refused or garbled call by
-- call, so it is not installed there at all. A database's encoding never changes.
do $$
begin
    if pg_catalog.getdatabaseencoding() <> 'UTF8' then
        raise exception 'chumbo needs a UTF8 database; this one''s encoding is %', pg_catalog.getdatabaseencoding()
            using hint = 'Create the database with ENCODING ''UTF8'' (and a UTF-8 locale, or LOCALE ''C'' with TEMPLATE template0).';
    end if;
end $$;

create schema if not exists mcp;
comment on schema mcp is 'MCP capabilities: functions here are tools, resources and prompts (see chumbo.doctor())';

revoke all on schema chumbo from public;
