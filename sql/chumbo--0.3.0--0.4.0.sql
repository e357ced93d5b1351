-- chumbo 0.3.0 -> 0.4.0. Leaves a 0.3.0 install exactly as a fresh 0.4.0 one
-- (tests/package/upgrade.sh compares the two). One block per change below, each headed by what it is.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.4.0'" to load this file. \quit

-- cache_stats: the capability cache's size from the counting allocator (src/registry.rs,
-- src/alloc.rs). pgrx's definition; owners only, as sql/finalize.sql leaves it in a fresh install.
CREATE FUNCTION chumbo."cache_stats"() RETURNS jsonb
STRICT
LANGUAGE c
AS 'MODULE_PATHNAME', 'cache_stats_wrapper';
revoke execute on function chumbo.cache_stats() from public;
