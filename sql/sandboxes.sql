-- Sandboxes (issue 5), built like durable state (state.sql, whose header lists the errors and
-- their SQLSTATEs): SECURITY DEFINER functions owned by the extension owner derive the owner of
-- every row from the verified principal of the current request, which only Rust can set.

-------------------------------------------------------------------------------------------------
-- Sandboxes (the ai_sandboxes model): compute a tool started at a provider, owned by the
-- principal that started it, bound to one tenant, stopped when idle by chumbo.sandbox_idle_stop.
-------------------------------------------------------------------------------------------------

create table chumbo.sandboxes (
    id uuid primary key default gen_random_uuid(),
    provider text not null,
    provider_sandbox_id text not null,
    owner text not null,                 -- chumbo._principal() digest (keyed HMAC-SHA256, hex), never the subject
    tenant text not null,
    conversation_id text,
    status text not null default 'running' check (status in ('running', 'stopped')),
    idle_seconds integer not null check (idle_seconds between 1 and 604800),
    expires_at timestamptz,
    created_at timestamptz not null default chumbo.now(),
    last_used_at timestamptz not null default chumbo.now(),
    stopped_at timestamptz,
    attempts integer not null default 0,   -- failed stop attempts since it last ran
    last_error text,
    last_attempt_at timestamptz,
    constraint sandboxes_provider_sandbox unique (provider, provider_sandbox_id)
);
create index sandboxes_owner on chumbo.sandboxes (owner, provider, tenant) where status = 'running';
create index sandboxes_running on chumbo.sandboxes (last_used_at) where status = 'running';
revoke all on chumbo.sandboxes from public;
comment on table chumbo.sandboxes is
  'Sandboxes tools started; use chumbo.sandbox_register/touch/for_owner, stopped by chumbo.sandbox_idle_stop.';

-- The owner of the current request's sandboxes: its principal digest; anonymous callers have none.
create function chumbo._sandbox_owner() returns text
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
    me jsonb := chumbo._principal();
begin
    if (me ->> 'anonymous')::boolean then
        raise exception using errcode = '42501',
            message = 'chumbo: anonymous_has_no_sandbox: sandboxes need a signed-in caller (a JWT subject or an API key)';
    end if;
    return me ->> 'digest';
end $$;
revoke all on function chumbo._sandbox_owner() from public;

create function chumbo._sandbox_json(s chumbo.sandboxes) returns jsonb
language sql stable set search_path = pg_catalog, pg_temp as $$
    select pg_catalog.jsonb_build_object(
        'id', s.id, 'provider', s.provider, 'provider_sandbox_id', s.provider_sandbox_id,
        'tenant', s.tenant, 'conversation_id', s.conversation_id, 'status', s.status,
        'idle_seconds', s.idle_seconds, 'expires_at', s.expires_at, 'created_at', s.created_at,
        'last_used_at', s.last_used_at, 'stopped_at', s.stopped_at)
$$;
revoke all on function chumbo._sandbox_json(chumbo.sandboxes) from public;

create function chumbo.sandbox_register(provider text, provider_sandbox_id text, tenant text,
                                        idle_seconds integer default 600,
                                        expires_at timestamptz default null,
                                        conversation_id text default null)
returns uuid
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    me text := chumbo._sandbox_owner();
    now_ts timestamptz := chumbo.now();
    existing chumbo.sandboxes;
    new_id uuid;
begin
    if provider is null or provider !~ '^[A-Za-z0-9_.:-]{1,64}$'
       or provider_sandbox_id is null or octet_length(provider_sandbox_id) not between 1 and 256
       or tenant is null or octet_length(tenant) not between 1 and 256
       or octet_length(conversation_id) not between 1 and 256
       or idle_seconds is null or idle_seconds not between 1 and 604800
       or expires_at <= now_ts then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_sandbox: provider is 1-64 of A-Z a-z 0-9 _ . : -; provider_sandbox_id, tenant and conversation_id 1-256 bytes; idle_seconds 1-604800; expires_at in the future';
    end if;
    -- One registration per provider sandbox: idempotent for its owner and tenant, refused for
    -- anyone else. Twice at most: the insert can lose a race to a concurrent registration.
    for attempt in 1 .. 2 loop
        select * into existing from chumbo.sandboxes s
         where s.provider = provider and s.provider_sandbox_id = provider_sandbox_id for update;
        if found then
            if existing.owner <> me or existing.tenant <> tenant then
                raise exception using errcode = '42501',
                    message = 'chumbo: sandbox_forbidden: this provider sandbox is registered to another owner or tenant';
            end if;
            update chumbo.sandboxes s
               set status = 'running', idle_seconds = sandbox_register.idle_seconds,
                   expires_at = sandbox_register.expires_at,
                   conversation_id = coalesce(sandbox_register.conversation_id, s.conversation_id),
                   last_used_at = now_ts, stopped_at = null, attempts = 0, last_error = null
             where s.id = existing.id;
            return existing.id;
        end if;
        if (select count(*) from chumbo.sandboxes s where s.owner = me and s.status = 'running') >= 100 then
            raise exception using errcode = '54000',
                message = 'chumbo: too_many_sandboxes: this caller already has 100 running sandboxes';
        end if;
        insert into chumbo.sandboxes (provider, provider_sandbox_id, owner, tenant, conversation_id,
                                      idle_seconds, expires_at, created_at, last_used_at)
        values (provider, provider_sandbox_id, me, tenant, conversation_id, idle_seconds, expires_at, now_ts, now_ts)
        on conflict on constraint sandboxes_provider_sandbox do nothing
        returning id into new_id;
        if new_id is not null then
            return new_id;
        end if;
    end loop;
    raise exception using errcode = '42501',
        message = 'chumbo: sandbox_forbidden: this provider sandbox is registered to another owner or tenant';
end $$;
comment on function chumbo.sandbox_register(text, text, text, integer, timestamptz, text) is
  'Record a sandbox the tool started for the caller in tenant; returns its id. Registering the same provider sandbox again (same owner and tenant) marks it running and used.';

create function chumbo.sandbox_touch(sandbox_id uuid, tenant text default null) returns jsonb
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    me text := chumbo._sandbox_owner();
    s chumbo.sandboxes;
begin
    -- Only the caller's own (and tenant's) rows are looked at: another owner's sandbox answers
    -- exactly as an unknown id does, and is neither locked nor waited for. Waits for an
    -- idle-stop run holding the caller's own, so a sandbox it stopped is reported stopped.
    select * into s from chumbo.sandboxes x
     where x.id = sandbox_id and x.owner = me and (tenant is null or x.tenant = tenant)
       for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = 'chumbo: sandbox_not_found: no sandbox with this id';
    end if;
    if s.status = 'running' then
        update chumbo.sandboxes x set last_used_at = chumbo.now()
         where x.id = s.id returning * into s;
    end if;
    return chumbo._sandbox_json(s);
end $$;
comment on function chumbo.sandbox_touch(uuid, text) is
  'Mark the caller''s sandbox used now (postpones its idle stop); returns it (check "status": a stopped one stays stopped). Another owner''s sandbox, or with tenant another tenant''s, is not found, exactly like an unknown id.';

create function chumbo.sandbox_for_owner(provider text, tenant text, conversation_id text default null)
returns jsonb
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    me text := chumbo._sandbox_owner();
    now_ts timestamptz := chumbo.now();
    s chumbo.sandboxes;
begin
    -- The most recently used running sandbox of this owner, provider and tenant (and conversation,
    -- when given) that is not due to be stopped; touched atomically so the idle stop spares it.
    -- One an idle-stop run holds is skipped: the tool starts a new one instead.
    update chumbo.sandboxes x set last_used_at = now_ts
     where x.id = (
        select y.id from chumbo.sandboxes y
         where y.owner = me and y.provider = provider and y.tenant = tenant and y.status = 'running'
           and (conversation_id is null or y.conversation_id = conversation_id)
           and y.last_used_at + pg_catalog.make_interval(secs => y.idle_seconds) > now_ts
           and (y.expires_at is null or y.expires_at > now_ts)
         order by y.last_used_at desc, y.id
         limit 1 for update skip locked)
    returning * into s;
    if s.id is null then
        return null;
    end if;
    return chumbo._sandbox_json(s);
end $$;
comment on function chumbo.sandbox_for_owner(text, text, text) is
  'The caller''s running sandbox at provider in tenant (and conversation, when given) to reuse, marked used; null if none. Never one of another tenant.';

-- The job (owners only, e.g. pg_cron):
--   select cron.schedule('chumbo-sandbox-idle-stop', '* * * * *', 'select chumbo.sandbox_idle_stop()');
-- Claims running sandboxes idle past idle_seconds or past expires_at with FOR UPDATE SKIP LOCKED
-- (so concurrent runs never take the same one), calls the stopper named in the setting
-- sandbox_stopper, a function (provider text, provider_sandbox_id text) resolved with
-- to_regprocedure and called with the values as parameters, and marks the sandbox stopped. A
-- stopper error leaves it running with attempts and last_error recorded; the next run retries.
-- Runs as its caller (not SECURITY DEFINER), so the stopper runs with the job owner's rights.
create function chumbo.sandbox_idle_stop(max_sandboxes integer default 100) returns integer
language plpgsql volatile set search_path = pg_catalog, pg_temp as $$
declare
    stopper_name text;
    stopper regprocedure;
    call_sql text;
    s record;
    stopped integer := 0;
    err text;
begin
    select x.value ->> 'sandbox_stopper' into stopper_name from chumbo.settings x;
    if stopper_name is not null then
        stopper := pg_catalog.to_regprocedure(stopper_name || '(text,text)');
    end if;
    if stopper is null then
        raise exception using errcode = '55000',
            message = pg_catalog.format('chumbo: sandbox_stopper_missing: the setting sandbox_stopper (%s) does not name a function (provider text, provider_sandbox_id text)',
                coalesce(stopper_name, 'unset'));
    end if;
    select pg_catalog.format('select %I.%I($1, $2)', n.nspname, p.proname) into call_sql
      from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
     where p.oid = stopper;

    for s in
        select x.id, x.provider, x.provider_sandbox_id from chumbo.sandboxes x
         where x.status = 'running'
           and (x.last_used_at + pg_catalog.make_interval(secs => x.idle_seconds) <= chumbo.now()
                or x.expires_at <= chumbo.now())
         order by x.last_attempt_at nulls first, x.last_used_at, x.id
         limit greatest(max_sandboxes, 0)
         for update skip locked
    loop
        begin
            execute call_sql using s.provider, s.provider_sandbox_id;
            update chumbo.sandboxes x
               set status = 'stopped', stopped_at = chumbo.now(),
                   last_attempt_at = chumbo.now(), last_error = null
             where x.id = s.id;
            stopped := stopped + 1;
        exception when others then
            get stacked diagnostics err = message_text;
            update chumbo.sandboxes x
               set attempts = x.attempts + 1, last_error = left(err, 1000),
                   last_attempt_at = chumbo.now()
             where x.id = s.id;
        end;
    end loop;
    return stopped;
end $$;
revoke all on function chumbo.sandbox_idle_stop(integer) from public;
comment on function chumbo.sandbox_idle_stop(integer) is
  'Stop up to max_sandboxes sandboxes idle past idle_seconds or expires_at through the sandbox_stopper setting; returns how many stopped. Schedule it with pg_cron.';

create function chumbo.prune_sandboxes(older_than interval default '30 days') returns bigint
language sql set search_path = pg_catalog, pg_temp as $$
    with gone as (delete from chumbo.sandboxes s
                   where s.status = 'stopped' and s.stopped_at < chumbo.now() - older_than
                  returning 1)
    select count(*) from gone
$$;
revoke all on function chumbo.prune_sandboxes(interval) from public;
comment on function chumbo.prune_sandboxes(interval) is
  'Delete records of sandboxes stopped longer ago than older_than (default 30 days).';

-------------------------------------------------------------------------------------------------
-- Privileges: the tables belong to the owner alone; capability code gets the public functions.
-------------------------------------------------------------------------------------------------

revoke execute on function
    chumbo.sandbox_register(text, text, text, integer, timestamptz, text),
    chumbo.sandbox_touch(uuid, text), chumbo.sandbox_for_owner(text, text, text)
from public;

do $$
declare
    r text;
begin
    foreach r in array array['anon', 'authenticated'] loop
        if exists (select from pg_catalog.pg_roles where rolname = r) then
            execute pg_catalog.format('grant execute on function
                chumbo.sandbox_register(text, text, text, integer, timestamptz, text),
                chumbo.sandbox_touch(uuid, text), chumbo.sandbox_for_owner(text, text, text)
              to %I', r);
        end if;
    end loop;
end $$;
