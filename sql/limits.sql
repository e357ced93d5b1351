-- Rate limits: fixed-window counters. One statement, so concurrent callers serialize on the row
-- and exactly max_hits of them get through per window.
create table chumbo.rate_counters (
    bucket text not null,
    window_start timestamptz not null,
    window_seconds integer not null,
    hits integer not null,
    primary key (bucket, window_start)
);
revoke all on chumbo.rate_counters from public;

create function chumbo._rate_hit(bucket text, window_seconds integer, max_hits integer, hits integer default 1)
returns integer
language plpgsql as $$
#variable_conflict use_column
declare
    now_ts timestamptz := chumbo.now();
    started timestamptz := to_timestamp(floor(extract(epoch from now_ts) / $2) * $2);
    counted integer;
begin
    if hits < 1 then
        raise exception 'chumbo._rate_hit: hits must be at least 1';
    end if;
    -- All or nothing: a batch of n messages counts n hits, or none when they do not all fit.
    insert into chumbo.rate_counters as c (bucket, window_start, window_seconds, hits)
    select $1, started, $2, $4 where $4 <= max_hits
    on conflict (bucket, window_start) do update set hits = c.hits + excluded.hits
    where c.hits + excluded.hits <= max_hits
    returning c.hits into counted;
    if counted is null then
        -- refused: seconds until the window ends
        return greatest(1, ceil(extract(epoch from started + make_interval(secs => $2) - now_ts))::integer);
    end if;
    -- reclaim a few windows that have ended, whatever their length
    delete from chumbo.rate_counters r where r.ctid in (
        select ctid from chumbo.rate_counters
         where window_start + make_interval(secs => window_seconds) < now_ts
         limit 8 for update skip locked);
    return 0;
end $$;
revoke all on function chumbo._rate_hit(text, integer, integer, integer) from public;
comment on function chumbo._rate_hit(text, integer, integer, integer) is
  'Count hits (default 1) for bucket in the current fixed window, all or none; 0 if allowed, else seconds until the window resets.';
