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

-- Per method and capability, over the last hour of audit rows: calls, errors (every outcome but
-- ok, input_required, a task created, and a task's run that completed, asked for input or was
-- cancelled) and latency percentiles, for operators without an OpenTelemetry
-- collector. Readable by the extension owner and whoever it grants it to; a view reads with its
-- owner's rights, so a grant shows these aggregates and never a row, a principal or a trace id.
create view chumbo.metrics as
select method,
       capability,
       count(*) as calls,
       count(*) filter (where outcome not in ('ok', 'input_required', 'task', 'task completed', 'task input_required', 'task cancelled')) as errors,
       percentile_cont(0.5) within group (order by duration_ms) as p50_ms,
       percentile_cont(0.95) within group (order by duration_ms) as p95_ms,
       percentile_cont(0.99) within group (order by duration_ms) as p99_ms,
       max(duration_ms) as max_ms,
       min(at) as first_at,
       max(at) as last_at
  from chumbo.audit_events
 where at >= now() - interval '1 hour'
 group by method, capability;
revoke all on chumbo.metrics from public;
comment on view chumbo.metrics is
  'Calls, errors and p50/p95/p99 latency per method and capability over the last hour of chumbo.audit_events. Owner only unless granted.';
