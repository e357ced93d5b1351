-- chumbo's own objects. Nothing here is reachable by anon/authenticated except what is granted
-- explicitly at the bottom (capability helpers and chumbo.mcp).

create schema if not exists mcp;
comment on schema mcp is 'MCP capabilities: functions here are tools, resources and prompts (see chumbo.doctor())';

revoke all on schema chumbo from public;

-- Settings are a single jsonb object merged over the defaults in Rust (src/settings.rs).
create table chumbo.settings (
    id boolean primary key default true check (id),
    value jsonb not null default '{}'::jsonb check (jsonb_typeof(value) = 'object')
);
insert into chumbo.settings default values;
revoke all on chumbo.settings from public;

-- The capability version. Every DDL, COMMENT, GRANT and settings change takes a number from the
-- sequence (which never rolls back, so any backend sees at once that something may have moved)
-- and records it in chumbo.schema_changes in its own transaction (which becomes visible exactly
-- when the change commits). A backend's registry is labelled with the newest committed number it
-- could see when it read the catalog, so a change still open elsewhere is never cached under a
-- number that its commit would not move again.
create sequence chumbo.schema_version;
revoke all on sequence chumbo.schema_version from public;
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

-- SECURITY DEFINER: event triggers run with the rights of whoever ran the DDL (a migration role,
-- `authenticated` creating a temp table); they must not need rights on chumbo's own objects.
create function chumbo._bump_schema_version() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed();
    -- subscriptions/listen streams (held by the edge) turn this into list-changed notifications
    perform pg_notify('chumbo_capabilities', tg_tag);
end $$;
revoke all on function chumbo._bump_schema_version() from public;

create event trigger chumbo_ddl_watch on ddl_command_end
    execute function chumbo._bump_schema_version();
create event trigger chumbo_drop_watch on sql_drop
    execute function chumbo._bump_schema_version();

create function chumbo._settings_changed() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed();
    return null;
end $$;
revoke all on function chumbo._settings_changed() from public;
create trigger settings_changed after insert or update or delete on chumbo.settings
    for each statement execute function chumbo._settings_changed();

-- Type descriptor used by reflection: enough to derive a JSON Schema without further catalog reads.
create function chumbo._type_info(t oid, depth int default 0) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'oid', ty.oid::int8,
        'name', format_type(ty.oid, null),
        -- schema-qualified, so generated SQL never depends on the caller's search_path
        'sql', case when ty.typcategory = 'A' and ty.typelem <> 0
            then (select quote_ident(en.nspname) || '.' || quote_ident(et.typname) || '[]'
                  from pg_type et join pg_namespace en on en.oid = et.typnamespace where et.oid = ty.typelem)
            else quote_ident(nsp.nspname) || '.' || quote_ident(ty.typname) end,
        'typtype', ty.typtype,
        'category', ty.typcategory,
        'enum', case when ty.typtype = 'e' then
            (select jsonb_agg(e.enumlabel order by e.enumsortorder) from pg_enum e where e.enumtypid = ty.oid) end,
        'elem', case when ty.typcategory = 'A' and ty.typelem <> 0 and depth < 4
            then chumbo._type_info(ty.typelem, depth + 1) end,
        'base', case when ty.typtype = 'd' and depth < 4
            then chumbo._type_info(ty.typbasetype, depth + 1) end
    )
    from pg_type ty join pg_namespace nsp on nsp.oid = ty.typnamespace where ty.oid = t
$$;
revoke all on function chumbo._type_info(oid, int) from public;

-- Settings changes go through this function (owners only): it validates the merged object.
create function chumbo.configure(settings jsonb) returns jsonb
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
revoke all on function chumbo.configure(jsonb) from public;
comment on function chumbo.configure(jsonb) is
  'Merge keys into chumbo''s settings (null removes a key; supabase_url also sets the issuer, audience, JWKS URL, oauth mode and require_client_id it implies, unless given) and return the effective settings with secrets redacted.';

-- The JWKS courier: an edge that fetches the issuer's keys hands them over here. Whoever may
-- call this decides which keys sign valid tokens, so only the owner can turn it on (grant_edge
-- with jwks_courier => true), only with a configured issuer, and every change is audited.
create function chumbo.set_jwks(jwks jsonb) returns void
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
revoke all on function chumbo.set_jwks(jsonb) from public;
comment on function chumbo.set_jwks(jsonb) is
  'Replace the JWKS used to verify bearer tokens (the JWKS courier: an edge refreshing it from the issuer). Audited.';

-- The edge's login role gets exactly what it needs, never superuser: chumbo.http, and the JWKS
-- courier only when the owner asks for it. No chumbo.handle (it takes claims on trust), no
-- membership in anon/authenticated (capabilities run as the caller's role without it).
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


-- API keys (auth_mode "api-key"): a principal with a role and scopes, no fabricated user. Only
-- the SHA-256 of the secret is stored; the key itself is shown once by chumbo.create_api_key.
create table chumbo.api_keys (
    id uuid primary key default gen_random_uuid(),
    secret_sha256 bytea not null,
    role text not null,
    scopes text[] not null default '{}',
    label text,
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    revoked_at timestamptz
);
revoke all on chumbo.api_keys from public;

create function chumbo.revoke_api_key(key_id uuid) returns boolean
language sql as $$
    update chumbo.api_keys set revoked_at = now() where id = key_id and revoked_at is null returning true
$$;
revoke all on function chumbo.revoke_api_key(uuid) from public;

-- Secrets the extension holds: 'state' keys durable-state partitions, 'request_state' protects
-- MRTR state. 32 bytes from gen_random_uuid() pairs (pg_strong_random underneath).
create table chumbo.keys (
    name text primary key,
    secret bytea not null,
    created_at timestamptz not null default now()
);
revoke all on chumbo.keys from public;
create function chumbo._new_secret() returns bytea language sql volatile as $$
    select decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex')
$$;
revoke all on function chumbo._new_secret() from public;
insert into chumbo.keys (name, secret) values ('state', chumbo._new_secret()), ('request_state', chumbo._new_secret());
create trigger keys_changed after insert or update or delete on chumbo.keys
    for each statement execute function chumbo._settings_changed();

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

create function chumbo._rate_hit(bucket text, window_seconds integer, max_hits integer) returns integer
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
revoke all on function chumbo._rate_hit(text, integer, integer) from public;
comment on function chumbo._rate_hit(text, integer, integer) is
  'Count one hit for bucket in the current fixed window; 0 if allowed, else seconds until the window resets.';

-- Audit events: one row per request outcome. Never arguments, results, tokens or SQL text unless
-- a capability opts in (@mcp {"audit": {"arguments": true}}).
create table chumbo.audit_events (
    id bigint generated always as identity primary key,
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
create index audit_events_at on chumbo.audit_events (at);
revoke all on chumbo.audit_events from public;

create function chumbo.prune_audit_events(older_than interval default '30 days') returns bigint
language sql as $$
    with gone as (delete from chumbo.audit_events where at < now() - older_than returning 1)
    select count(*) from gone
$$;
revoke all on function chumbo.prune_audit_events(interval) from public;
comment on function chumbo.prune_audit_events(interval) is
  'Delete audit events older than the retention (default 30 days); schedule it with pg_cron.';

-- Nonces of MRTR requestStates already redeemed: each state is good for one retry. A nonce is
-- kept a little longer than the state it belongs to can live, then reclaimed a few at a time.
create table chumbo.request_state_uses (
    nonce text primary key,
    expires_at timestamptz not null
);
revoke all on chumbo.request_state_uses from public;

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

create function chumbo.rotate_key(key_name text) returns void
language plpgsql as $$
begin
    update chumbo.keys set secret = chumbo._new_secret(), created_at = now() where name = key_name;
    if not found then
        raise exception 'chumbo.rotate_key: no key named %', key_name;
    end if;
end $$;
revoke all on function chumbo.rotate_key(text) from public;
comment on function chumbo.rotate_key(text) is
  'Replace a key: ''request_state'' invalidates every MRTR requestState issued so far; ''state'' starts new durable-state partitions (earlier state becomes unreachable).';
