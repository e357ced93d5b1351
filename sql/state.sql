-- Durable state (issue 5); sandboxes.sql is built the same way.
--
-- Capability code (running as the caller's role) reaches these tables only through the
-- functions below. They are SECURITY DEFINER, owned by the extension owner, and derive the owner
-- of every row from the verified principal of the current request (chumbo._principal*), which
-- only Rust can set: a capability can neither see nor choose whose state or sandbox it touches.
-- Works inside CREATE EXTENSION and run by hand after it (psql -f), so every name is qualified
-- and nothing depends on search_path.
--
-- Errors: the message starts with "chumbo: <name>: ", the name is stable; the SQLSTATE:
--   anonymous_has_no_state, anonymous_has_no_sandbox,
--   namespace_not_allowed, sandbox_forbidden            42501 insufficient_privilege
--   invalid_namespace, invalid_key, invalid_value,
--   invalid_revision, invalid_ttl, invalid_sandbox      22023 invalid_parameter_value
--   too_large                                           22001 string_data_right_truncation
--   revision_conflict                                   40001 serialization_failure
--   too_many_keys, too_many_sandboxes                   54000 program_limit_exceeded
--   sandbox_not_found                                   P0002 no_data_found
--   sandbox_stopper_missing                             55000 object_not_in_prerequisite_state
-- Outside a request chumbo._principal() raises "chumbo: no MCP request is in progress" (42501).

-------------------------------------------------------------------------------------------------
-- Durable state
-------------------------------------------------------------------------------------------------

-- partition = HMAC-SHA256(deployment key, auth kind + credential identity), from Rust only.
create table chumbo.state_entries (
    partition bytea not null,
    namespace text not null,
    key text not null,
    value jsonb not null,
    revision bigint not null check (revision between 1 and 9007199254740991),
    expires_at timestamptz,
    updated_at timestamptz not null default chumbo.now(),
    primary key (partition, namespace, key)
);
create index state_entries_expires_at on chumbo.state_entries (expires_at) where expires_at is not null;
revoke all on chumbo.state_entries from public;
comment on table chumbo.state_entries is
  'Durable state of capabilities, one partition per credential; use chumbo.state_get/put/delete.';

-- Bounds (see the README): namespace 1-64 of [A-Za-z0-9_.:-] and listed in the setting
-- state_namespaces; key 1-256 bytes; value at most 64 KiB as JSON text; revisions 1 .. 2^53-1
-- (exact in JSON/JavaScript numbers); TTL from 1 second to 366 days; 1000 keys per partition.
create function chumbo._state_check(namespace text, key text) returns void
language plpgsql stable security definer set search_path = pg_catalog, pg_temp as $$
declare
    allowed jsonb;
begin
    if namespace is null or namespace !~ '^[A-Za-z0-9_.:-]{1,64}$' then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_namespace: a namespace is 1 to 64 characters of A-Z a-z 0-9 _ . : -';
    end if;
    if key is null or octet_length(key) not between 1 and 256 then
        raise exception using errcode = '22023',
            message = 'chumbo: invalid_key: a key is 1 to 256 bytes of text';
    end if;
    select s.value -> 'state_namespaces' into allowed from chumbo.settings s;
    if allowed is null or jsonb_typeof(allowed) <> 'array'
       or not allowed @> pg_catalog.jsonb_build_array(namespace) then
        raise exception using errcode = '42501',
            message = pg_catalog.format('chumbo: namespace_not_allowed: state namespace %s is not in the setting state_namespaces', namespace),
            hint = 'An owner allows it: select chumbo.configure(''{"state_namespaces": ["..."]}'')';
    end if;
    if (chumbo._principal() ->> 'anonymous')::boolean then
        raise exception using errcode = '42501',
            message = 'chumbo: anonymous_has_no_state: durable state needs a signed-in caller (a JWT subject or an API key)';
    end if;
end $$;
revoke all on function chumbo._state_check(text, text) from public;

-- Deletes at most `n` expired rows that nobody else holds; every write calls it.
create function chumbo._state_reclaim(n integer default 8) returns integer
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
revoke all on function chumbo._state_reclaim(integer) from public;

create function chumbo.state_get(namespace text, key text) returns jsonb
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
comment on function chumbo.state_get(text, text) is
  'The caller''s value under namespace/key as {"value", "revision", "expires_at"}, or null when missing or expired.';

create function chumbo.state_put(namespace text, key text, value jsonb,
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
comment on function chumbo.state_put(text, text, jsonb, bigint, interval) is
  'Store value under namespace/key for the caller; returns the new revision. expected_revision: null = unconditional, 0 = only if missing, n = only if at revision n (atomic compare-and-set). ttl: expires after that long (1 s .. 366 days).';

create function chumbo.state_delete(namespace text, key text, expected_revision bigint default null)
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
comment on function chumbo.state_delete(text, text, bigint) is
  'Delete the caller''s namespace/key; true if it existed (and had not expired). expected_revision n: only if at revision n (else revision_conflict).';

-- For a scheduled job (owners only): reclaim expired state in bounded batches.
create function chumbo.prune_state(max_rows integer default 10000) returns integer
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    return chumbo._state_reclaim(greatest(max_rows, 0));
end $$;
revoke all on function chumbo.prune_state(integer) from public;
comment on function chumbo.prune_state(integer) is
  'Delete up to max_rows expired state entries (writes also reclaim a few each); schedule it with pg_cron.';

-------------------------------------------------------------------------------------------------
-- Privileges: the tables belong to the owner alone; capability code gets the public functions.
-------------------------------------------------------------------------------------------------

revoke execute on function
    chumbo.state_get(text, text), chumbo.state_put(text, text, jsonb, bigint, interval),
    chumbo.state_delete(text, text, bigint)
from public;

do $$
declare
    r text;
begin
    foreach r in array array['anon', 'authenticated'] loop
        if exists (select from pg_catalog.pg_roles where rolname = r) then
            execute pg_catalog.format('grant execute on function
                chumbo.state_get(text, text), chumbo.state_put(text, text, jsonb, bigint, interval),
                chumbo.state_delete(text, text, bigint)
              to %I', r);
        end if;
    end loop;
end $$;
