-- Skills (SEP-2640): chumbo ships its own skill, chumbo-builder ("how to build MCP tools with
-- chumbo"), granted to nobody. This app serves it to signed-in users, so an agent helping a
-- builder in development can read it (skills/list, then resources/read of each file).
-- An application ships its own skills the same way: chumbo.install_skill(archive, sha256).
select chumbo.grant_skill('chumbo-builder', 'authenticated');
