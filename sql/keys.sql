-- Credentials and secrets: API keys, the deployment keys, and the one-use MRTR requestStates.

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
