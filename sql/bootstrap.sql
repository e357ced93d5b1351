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

-- Bumped by DDL, COMMENT, GRANT and settings changes; every backend compares it with the version
-- its capability cache was built from. A sequence because bumps must not roll back with the DDL's
-- transaction failing later (a spurious rebuild is harmless, a missed one is not).
create sequence chumbo.schema_version;
revoke all on sequence chumbo.schema_version from public;

create function chumbo._bump_schema_version() returns event_trigger
language plpgsql as $$
begin
    perform nextval('chumbo.schema_version');
end $$;
revoke all on function chumbo._bump_schema_version() from public;

create event trigger chumbo_ddl_watch on ddl_command_end
    execute function chumbo._bump_schema_version();
create event trigger chumbo_drop_watch on sql_drop
    execute function chumbo._bump_schema_version();

create function chumbo._settings_changed() returns trigger
language plpgsql as $$
begin
    perform nextval('chumbo.schema_version');
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
    update chumbo.settings s set value = jsonb_strip_nulls(s.value || configure.settings) returning s.value into merged;
    perform chumbo._check_settings(merged);
    return chumbo.settings_effective();
end $$;
revoke all on function chumbo.configure(jsonb) from public;
comment on function chumbo.configure(jsonb) is
  'Merge keys into chumbo''s settings (null removes a key) and return the effective settings with secrets redacted.';

create function chumbo.set_jwks(jwks jsonb) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    if jwks is null or jsonb_typeof(jwks->'keys') is distinct from 'array' then
        raise exception 'chumbo.set_jwks expects a JWKS object {"keys": [...]}';
    end if;
    update chumbo.settings set value = value || jsonb_build_object('jwks', jwks);
end $$;
revoke all on function chumbo.set_jwks(jsonb) from public;
comment on function chumbo.set_jwks(jsonb) is
  'Replace the JWKS used to verify bearer tokens (the edge refreshes it from the issuer).';

-- The edge's login role gets exactly what it needs, never superuser.
create function chumbo.grant_edge(edge_role regrole) returns void
language plpgsql as $$
begin
    execute format('grant usage on schema chumbo to %s', edge_role);
    execute format('grant execute on function chumbo.handle(jsonb, jsonb), chumbo.http(jsonb), chumbo.set_jwks(jsonb) to %s', edge_role);
    if exists (select 1 from pg_roles where rolname = 'anon') then
        execute format('grant anon to %s', edge_role);
    end if;
    if exists (select 1 from pg_roles where rolname = 'authenticated') then
        execute format('grant authenticated to %s', edge_role);
    end if;
end $$;
revoke all on function chumbo.grant_edge(regrole) from public;
comment on function chumbo.grant_edge(regrole) is
  'Give the HTTP edge''s login role what it needs: usage on schema chumbo, execute on chumbo.handle/chumbo.http/chumbo.set_jwks, membership in anon and authenticated.';


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
