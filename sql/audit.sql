-- Audit events: one row per request outcome. Never arguments, results, tokens or SQL text unless
-- a capability opts in (@mcp {"audit": {"arguments": true}}).
-- Written once per request on the hot path, so it carries no index per row it does not need: no
-- primary key (nothing refers to id), a BRIN on `at` for pruning and time windows (rows arrive in
-- time order). Replica identity full keeps prune's deletes valid under a FOR ALL TABLES publication.
create table chumbo.audit_events (
    id bigint generated always as identity,
    at timestamptz not null default now(),
    trace_id text not null,
    era text not null,
    method text,
    capability text,
    principal text not null,
    outcome text not null,
    duration_ms double precision not null,
    bytes integer not null,
    detail jsonb
);
create index audit_events_at on chumbo.audit_events using brin (at);
alter table chumbo.audit_events replica identity full;
revoke all on chumbo.audit_events from public;

create function chumbo.prune_audit_events(older_than interval default '30 days') returns bigint
language sql as $$
    with gone as (delete from chumbo.audit_events where at < now() - older_than returning 1)
    select count(*) from gone
$$;
revoke all on function chumbo.prune_audit_events(interval) from public;
comment on function chumbo.prune_audit_events(interval) is
  'Delete audit events older than the retention (default 30 days); schedule it with pg_cron.';
