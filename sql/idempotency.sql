-- Exactly-once operations and run correlation (src/call/idempotency.rs,
-- src/bookkeeping/runs.rs). Written and read only as the extension owner; anon/authenticated have no access.

-- The stored outcome of an idempotent call: (principal digest, tool, digest of the key) answers
-- retries with the same arguments until expires_at (setting idempotency_ttl_seconds). The key
-- itself is not kept, only its SHA-256.
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

-- The run (src/bookkeeping/runs.rs) a request belonged to, when it carried a run handle.
alter table chumbo.audit_events add column run_id text;
