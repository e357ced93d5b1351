-- chumbo 0.1.0 -> 0.2.0. Leaves a 0.1.0 install exactly as a fresh 0.2.0 one
-- (tests/package/upgrade.sh compares the two). Function bodies below are copied from
-- sql/bootstrap.sql and sql/state.sql at 0.2.0; keep them in step if this script is ever edited.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.2.0'" to load this file. \quit

-- New Rust functions (src/guards.rs, src/lib.rs).
CREATE FUNCTION chumbo."now"() RETURNS timestamp with time zone
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'now_wrapper';
REVOKE ALL ON FUNCTION chumbo."now"() FROM PUBLIC;

CREATE FUNCTION chumbo."_expand_settings"("changes" jsonb) RETURNS jsonb
STRICT
LANGUAGE c
AS 'MODULE_PATHNAME', 'expand_settings_wrapper';
REVOKE ALL ON FUNCTION chumbo."_expand_settings"(jsonb) FROM PUBLIC;

-- The capability version: the table of committed numbers.
create table chumbo.schema_changes (version bigint primary key);
revoke all on chumbo.schema_changes from public;
insert into chumbo.schema_changes values (nextval('chumbo.schema_version'));

create function chumbo._schema_changed() returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    v bigint := nextval('chumbo.schema_version');
begin
    insert into chumbo.schema_changes values (v);
    -- keep the table small: only the newest number matters
    delete from chumbo.schema_changes c where c.ctid in (
        select ctid from chumbo.schema_changes where version < v - 64 limit 16 for update skip locked);
end $$;
revoke all on function chumbo._schema_changed() from public;

-- Event-trigger and settings-trigger functions: SECURITY DEFINER, through _schema_changed.
create or replace function chumbo._bump_schema_version() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed();
    -- subscriptions/listen streams (held by the edge) turn this into list-changed notifications
    perform pg_notify('chumbo_capabilities', tg_tag);
end $$;

create or replace function chumbo._settings_changed() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed();
    return null;
end $$;

-- chumbo.configure expands presets; set_jwks is audited and needs an issuer.
create or replace function chumbo.configure(settings jsonb) returns jsonb
language plpgsql as $$
declare
    merged jsonb;
begin
    if settings is null or jsonb_typeof(settings) <> 'object' then
        raise exception 'chumbo.configure expects a JSON object';
    end if;
    update chumbo.settings s set value = jsonb_strip_nulls(s.value || chumbo._expand_settings(configure.settings))
    returning s.value into merged;
    perform chumbo._check_settings(merged);
    return chumbo.settings_effective();
end $$;
comment on function chumbo.configure(jsonb) is
  'Merge keys into chumbo''s settings (null removes a key; supabase_url also sets the issuer, audience, JWKS URL, oauth mode and require_client_id it implies, unless given) and return the effective settings with secrets redacted.';

create or replace function chumbo.set_jwks(jwks jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    before jsonb;
begin
    if jwks is null or jsonb_typeof(jwks->'keys') is distinct from 'array' then
        raise exception 'chumbo.set_jwks expects a JWKS object {"keys": [...]}';
    end if;
    if coalesce(jsonb_array_length((select value->'jwt_issuers' from chumbo.settings)), 0) = 0 then
        raise exception 'chumbo.set_jwks: no issuer is configured (chumbo.configure jwt_issuers)';
    end if;
    select value->'jwks' into before from chumbo.settings;
    if before is not distinct from jwks then
        return;
    end if;
    update chumbo.settings set value = value || jsonb_build_object('jwks', jwks);
    insert into chumbo.audit_events (trace_id, era, method, capability, principal, outcome, duration_ms, bytes, detail)
    values (encode(chumbo._new_secret(), 'hex'), 'sql', 'chumbo.set_jwks', null, session_user::text, 'jwks changed', 0,
            octet_length(jwks::text),
            jsonb_build_object('kids', (select jsonb_agg(k->'kid') from jsonb_array_elements(jwks->'keys') k),
                               'previous_kids', (select jsonb_agg(k->'kid') from jsonb_array_elements(before->'keys') k),
                               'sha256', encode(sha256(convert_to(jwks::text, 'UTF8')), 'hex')));
end $$;
comment on function chumbo.set_jwks(jsonb) is
  'Replace the JWKS used to verify bearer tokens (the JWKS courier: an edge refreshing it from the issuer). Audited.';

-- grant_edge gains jwks_courier (a new signature: drop the old one).
drop function chumbo.grant_edge(regrole);
create function chumbo.grant_edge(edge_role regrole, jwks_courier boolean default false) returns void
language plpgsql as $$
declare
    member text;
begin
    execute format('grant usage on schema chumbo to %s', edge_role);
    execute format('grant execute on function chumbo.http(jsonb) to %s', edge_role);
    execute format('revoke execute on function chumbo.handle(jsonb, jsonb) from %s', edge_role);
    if jwks_courier then
        execute format('grant execute on function chumbo.set_jwks(jsonb) to %s', edge_role);
    else
        execute format('revoke execute on function chumbo.set_jwks(jsonb) from %s', edge_role);
    end if;
    -- earlier versions made the edge a member of these; it must not be one
    for member in
        select r.rolname from pg_auth_members m join pg_roles r on r.oid = m.roleid
         where m.member = edge_role and r.rolname in ('anon', 'authenticated', 'service_role')
    loop
        execute format('revoke %I from %s', member, edge_role);
        raise notice 'chumbo.grant_edge: revoked membership in % from %', member, edge_role;
    end loop;
end $$;
revoke all on function chumbo.grant_edge(regrole, boolean) from public;
comment on function chumbo.grant_edge(regrole, boolean) is
  'Give the HTTP edge''s login role what it needs: usage on schema chumbo and execute on chumbo.http; with jwks_courier => true also chumbo.set_jwks.';

-- Rate limits, state and sandboxes read the (pinnable) chumbo.now().
create or replace function chumbo._rate_hit(bucket text, window_seconds integer, max_hits integer) returns integer
language plpgsql as $$
#variable_conflict use_column
declare
    now_ts timestamptz := chumbo.now();
    started timestamptz := to_timestamp(floor(extract(epoch from now_ts) / $2) * $2);
    counted integer;
begin
    insert into chumbo.rate_counters as c (bucket, window_start, window_seconds, hits) values ($1, started, $2, 1)
    on conflict (bucket, window_start) do update set hits = c.hits + 1
    where c.hits < max_hits
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

create function chumbo._redeem_request_state(nonce text) returns boolean
language plpgsql as $$
#variable_conflict use_column
declare
    now_ts timestamptz := chumbo.now();
    fresh boolean;
begin
    insert into chumbo.request_state_uses (nonce, expires_at) values ($1, now_ts + interval '15 minutes')
    on conflict do nothing returning true into fresh;
    delete from chumbo.request_state_uses u where u.ctid in (
        select ctid from chumbo.request_state_uses where expires_at < now_ts
         limit 8 for update skip locked);
    return coalesce(fresh, false);
end $$;
revoke all on function chumbo._redeem_request_state(text) from public;

alter table chumbo.state_entries alter column updated_at set default chumbo.now();
alter table chumbo.sandboxes alter column created_at set default chumbo.now();
alter table chumbo.sandboxes alter column last_used_at set default chumbo.now();

-- State and sandboxes: chumbo.now() instead of clock_timestamp().
create or replace function chumbo._state_reclaim(n integer default 8) returns integer
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    gone integer;
begin
    delete from chumbo.state_entries e where e.ctid in (
        select x.ctid from chumbo.state_entries x
        where x.expires_at <= chumbo.now()
        limit n for update skip locked);
    get diagnostics gone = row_count;
    return gone;
end $$;

create or replace function chumbo.state_get(namespace text, key text) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
    found_entry jsonb;
begin
    perform chumbo._state_check(namespace, key);
    select pg_catalog.jsonb_build_object('value', e.value, 'revision', e.revision, 'expires_at', e.expires_at)
      into found_entry
      from chumbo.state_entries e
     where e.partition = chumbo._principal_partition()
       and e.namespace = state_get.namespace and e.key = state_get.key
       and (e.expires_at is null or e.expires_at > chumbo.now());
    return found_entry;
end $$;

create or replace function chumbo.state_put(namespace text, key text, value jsonb,
                                 expected_revision bigint default null, ttl interval default null)
returns bigint
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    p bytea;
    now_ts timestamptz := chumbo.now();
    expires timestamptz;
    size integer;
    new_revision bigint;
    current_revision bigint;
begin
    perform chumbo._state_check(namespace, key);
    if value is null then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_value: the value must not be SQL NULL (JSON null is fine; use chumbo.state_delete to remove a key)';
    end if;
    size := octet_length(value::text);
    if size > 65536 then
        raise exception using errcode = '22001',
            message = pg_catalog.format('chumbo: too_large: the value is %s bytes as JSON text, the limit is 65536', size);
    end if;
    if expected_revision is not null and expected_revision not between 0 and 9007199254740991 then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_revision: expected_revision is null (unconditional), 0 (must not exist) or a revision from chumbo.state_get';
    end if;
    if ttl is not null then
        if ttl < interval '1 second' or ttl > interval '366 days' then
            raise exception using errcode = '22023',
                message = 'chumbo: invalid_ttl: ttl is between 1 second and 366 days (null: no expiry)';
        end if;
        expires := now_ts + ttl;
    end if;
    p := chumbo._principal_partition();

    if expected_revision is null or expected_revision = 0 then
        -- A new key counts against the partition's quota (serialized per partition so the bound is exact).
        if not exists (select from chumbo.state_entries e
                        where e.partition = p and e.namespace = namespace and e.key = key) then
            perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('chumbo.state:' || pg_catalog.encode(p, 'hex'), 0));
            if (select count(*) from chumbo.state_entries e
                 where e.partition = p and (e.expires_at is null or e.expires_at > now_ts)) >= 1000 then
                raise exception using errcode = '54000',
                    message = 'chumbo: too_many_keys: this caller already has 1000 keys; delete some first';
            end if;
        end if;
        -- Upsert. An expired row still in place counts as missing but keeps counting revisions,
        -- so a revision read before it expired never matches again.
        insert into chumbo.state_entries as e (partition, namespace, key, value, revision, expires_at, updated_at)
        values (p, namespace, key, value, 1, expires, now_ts)
        on conflict on constraint state_entries_pkey do update
           set value = excluded.value, revision = e.revision + 1,
               expires_at = excluded.expires_at, updated_at = excluded.updated_at
         where expected_revision is null
            or (e.expires_at is not null and e.expires_at <= now_ts)
        returning e.revision into new_revision;
    else
        update chumbo.state_entries e
           set value = state_put.value, revision = e.revision + 1, expires_at = expires, updated_at = now_ts
         where e.partition = p and e.namespace = namespace and e.key = key
           and e.revision = expected_revision
           and (e.expires_at is null or e.expires_at > now_ts)
        returning e.revision into new_revision;
    end if;

    if new_revision is null then
        select e.revision into current_revision from chumbo.state_entries e
         where e.partition = p and e.namespace = namespace and e.key = key
           and (e.expires_at is null or e.expires_at > chumbo.now());
        raise exception using errcode = '40001',
            message = pg_catalog.format('chumbo: revision_conflict: %s/%s is %s, expected %s',
                namespace, key,
                coalesce('at revision ' || current_revision, 'missing'),
                case when expected_revision = 0 then 'missing' else 'revision ' || expected_revision end),
            hint = 'Read it again with chumbo.state_get and retry with its revision.';
    end if;
    perform chumbo._state_reclaim(8);
    return new_revision;
end $$;

create or replace function chumbo.state_delete(namespace text, key text, expected_revision bigint default null)
returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    p bytea;
    now_ts timestamptz := chumbo.now();
    was_live boolean;
    current_revision bigint;
begin
    perform chumbo._state_check(namespace, key);
    if expected_revision is not null and expected_revision not between 1 and 9007199254740991 then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_revision: expected_revision is null (unconditional) or a revision from chumbo.state_get';
    end if;
    p := chumbo._principal_partition();
    delete from chumbo.state_entries e
     where e.partition = p and e.namespace = namespace and e.key = key
       and (expected_revision is null
            or (e.revision = expected_revision and (e.expires_at is null or e.expires_at > now_ts)))
    returning e.expires_at is null or e.expires_at > now_ts into was_live;
    if expected_revision is not null and was_live is null then
        select e.revision into current_revision from chumbo.state_entries e
         where e.partition = p and e.namespace = namespace and e.key = key
           and (e.expires_at is null or e.expires_at > chumbo.now());
        raise exception using errcode = '40001',
            message = pg_catalog.format('chumbo: revision_conflict: %s/%s is %s, expected revision %s',
                namespace, key, coalesce('at revision ' || current_revision, 'missing'), expected_revision),
            hint = 'Read it again with chumbo.state_get and retry with its revision.';
    end if;
    perform chumbo._state_reclaim(8);
    return coalesce(was_live, false);
end $$;

create or replace function chumbo.sandbox_register(provider text, provider_sandbox_id text, tenant text,
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

create or replace function chumbo.sandbox_touch(sandbox_id uuid, tenant text default null) returns jsonb
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
#variable_conflict use_variable
declare
    me text := chumbo._sandbox_owner();
    s chumbo.sandboxes;
begin
    -- waits for an idle-stop run holding it, so a sandbox it stopped is reported stopped
    select * into s from chumbo.sandboxes x where x.id = sandbox_id for update;
    if not found then
        raise exception using errcode = 'P0002',
            message = 'chumbo: sandbox_not_found: no sandbox with this id';
    end if;
    if s.owner <> me or (tenant is not null and s.tenant <> tenant) then
        raise exception using errcode = '42501',
            message = 'chumbo: sandbox_forbidden: this sandbox belongs to another owner or tenant';
    end if;
    if s.status = 'running' then
        update chumbo.sandboxes x set last_used_at = chumbo.now()
         where x.id = s.id returning * into s;
    end if;
    return chumbo._sandbox_json(s);
end $$;

create or replace function chumbo.sandbox_for_owner(provider text, tenant text, conversation_id text default null)
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

create or replace function chumbo.sandbox_idle_stop(max_sandboxes integer default 100) returns integer
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

create or replace function chumbo.prune_sandboxes(older_than interval default '30 days') returns bigint
language sql set search_path = pg_catalog, pg_temp as $$
    with gone as (delete from chumbo.sandboxes s
                   where s.status = 'stopped' and s.stopped_at < chumbo.now() - older_than
                  returning 1)
    select count(*) from gone
$$;

