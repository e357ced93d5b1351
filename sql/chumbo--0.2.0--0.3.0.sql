-- chumbo 0.2.0 -> 0.3.0. Leaves a 0.2.0 install exactly as a fresh 0.3.0 one
-- (tests/package/upgrade.sh compares the two). Each change set is a block of its own, named by
-- the branch that made it; function bodies are copied from the sql/*.sql they come from.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.3.0'" to load this file. \quit

-- onceonly: exactly-once operations and run correlation (src/idempotency.rs, src/runs.rs,
-- sql/idempotency.sql).
CREATE FUNCTION chumbo."run_id"() RETURNS TEXT
STRICT
LANGUAGE c
AS 'MODULE_PATHNAME', 'run_id_wrapper';
REVOKE ALL ON FUNCTION chumbo."run_id"() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION chumbo."run_id"() TO PUBLIC;

create table chumbo.idempotency_outcomes (
    principal text not null,
    tool text not null,
    key_digest text not null,
    args_digest text not null,
    result jsonb not null,
    run_id text,
    created_at timestamptz not null,
    expires_at timestamptz not null,
    primary key (principal, tool, key_digest)
);
create index idempotency_outcomes_expires_at_idx on chumbo.idempotency_outcomes (expires_at);
revoke all on chumbo.idempotency_outcomes from public;

alter table chumbo.audit_events add column run_id text;
-- end onceonly
