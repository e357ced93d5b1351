-- chumbo 0.3.0 -> 0.4.0. Leaves a 0.3.0 install exactly as a fresh 0.4.0 one
-- (tests/package/upgrade.sh compares the two). One block per change below, each headed by what it is.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.4.0'" to load this file. \quit

-- cache_stats: the capability cache's size from the counting allocator (src/registry.rs,
-- src/alloc.rs). pgrx's definition; owners only, as sql/finalize.sql leaves it in a fresh install.
CREATE FUNCTION chumbo."cache_stats"() RETURNS jsonb
STRICT
LANGUAGE c
AS 'MODULE_PATHNAME', 'cache_stats_wrapper';
revoke execute on function chumbo.cache_stats() from public;

-- The audit queue (src/audit_queue.rs): audit_flush waits until queued rows are written,
-- audit_queue_stats reports the queue. pgrx's definitions; owners only, as in a fresh install.
CREATE FUNCTION chumbo."audit_flush"() RETURNS bool
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'audit_flush_wrapper';
revoke execute on function chumbo.audit_flush() from public;
CREATE FUNCTION chumbo."audit_queue_stats"() RETURNS jsonb
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'audit_queue_stats_wrapper';
revoke execute on function chumbo.audit_queue_stats() from public;

-- http_parts: the edge's entry point, bodies as text both ways (src/api.rs http_parts); grant_edge
-- grants it, and every role that may call chumbo.http (an edge set up by an earlier version) may
-- call it too, so an upgraded database serves the new edge at once.
CREATE  FUNCTION chumbo."http_parts"(
	"request" TEXT,
	"request_body" TEXT
) RETURNS TABLE (
	"status" INT,
	"headers" TEXT,
	"body" TEXT,
	"events" TEXT,
	"listen" TEXT
)
LANGUAGE c
AS 'MODULE_PATHNAME', 'http_parts_wrapper';
revoke execute on function chumbo.http_parts(text, text) from public;
do $$
declare
    grantee text;
begin
    for grantee in
        select distinct a.grantee::regrole::text
          from pg_proc p, aclexplode(p.proacl) a
         where p.oid = 'chumbo.http(jsonb)'::regprocedure and a.privilege_type = 'EXECUTE'
           and a.grantee <> 0 and a.grantee <> p.proowner
    loop
        execute format('grant execute on function chumbo.http_parts(text, text) to %s', grantee);
    end loop;
end $$;
create or replace function chumbo.grant_edge(edge_role regrole, jwks_courier boolean default false) returns void
language plpgsql as $$
declare
    member text;
begin
    execute format('grant usage on schema chumbo to %s', edge_role);
    execute format('grant execute on function chumbo.http(jsonb) to %s', edge_role);
    execute format('grant execute on function chumbo.http_parts(text, text) to %s', edge_role);
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
comment on function chumbo.grant_edge(regrole, boolean) is
  'Give the HTTP edge''s login role what it needs: usage on schema chumbo and execute on chumbo.http and chumbo.http_parts; with jwks_courier => true also chumbo.set_jwks.';
-- end http_parts

-- Audit table shape: no primary key index, BRIN on `at` (sql/audit.sql; one insert per request).
alter table chumbo.audit_events drop constraint audit_events_pkey;
drop index chumbo.audit_events_at;
create index audit_events_at on chumbo.audit_events using brin (at);
alter table chumbo.audit_events replica identity full;

-- Capability changes: _schema_changed holds a shared advisory lock from before it takes its number
-- until its transaction ends, so a backend can tell when every change given a number has settled
-- (numbers may commit out of order; src/registry.rs changes_settled), and records the functions a
-- change touched when it touched nothing else (a backend then re-reads only those). In this order
-- so that every statement here, which fires the event triggers itself, finds what they call.
alter table chumbo.schema_changes add column functions oid[];
create function chumbo._schema_changed(functions oid[]) returns void
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    v bigint;
begin
    -- Held (shared: changes never wait on each other) from before the number is taken until the
    -- transaction ends: a backend that finds it free knows every number given out is settled,
    -- whatever order they commit in (src/registry.rs, changes_settled).
    perform pg_advisory_xact_lock_shared(1667788130, 1);
    v := nextval('chumbo.schema_version');
    insert into chumbo.schema_changes values (v, functions);
    -- Keep the table small. src/registry.rs (KEPT_CHANGES) relies on every row above the newest
    -- committed number minus 64 staying: a registry further behind reads everything again.
    delete from chumbo.schema_changes c where c.ctid in (
        select ctid from chumbo.schema_changes where version < v - 64 limit 16 for update skip locked);
end $$;
revoke all on function chumbo._schema_changed(oid[]) from public;
create or replace function chumbo._bump_schema_version() returns event_trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
    touched oid[];
begin
    -- A command whose every object is a function (COMMENT ON FUNCTION, CREATE [OR REPLACE]
    -- FUNCTION, ALTER FUNCTION) changed pg_proc and pg_description rows of those functions only.
    -- GRANT names no object here, DROP comes as sql_drop: those, and anything else, record null.
    if tg_event = 'ddl_command_end' then
        select case when bool_and(c.classid = 'pg_catalog.pg_proc'::regclass and c.objid is not null)
                    then array_agg(c.objid) end
          into touched
          from pg_event_trigger_ddl_commands() c;
    end if;
    perform chumbo._schema_changed(touched);
    -- subscriptions/listen streams (held by the edge) turn this into list-changed notifications
    perform pg_notify('chumbo_capabilities', tg_tag);
end $$;
create or replace function chumbo._settings_changed() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed(null);
    return null;
end $$;
create or replace function chumbo._skills_changed() returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed(null);
    perform pg_notify('chumbo_capabilities', 'SKILLS');
end $$;
drop function chumbo._schema_changed();

-- _type_info in plpgsql (sql/registry.sql says why).
create or replace function chumbo._type_info(t oid, depth int default 0) returns jsonb
-- plpgsql, not sql: its plan is kept for the session, where a sql function's body is planned
-- again at every call site of every query (most of reflecting a function, sql/reflect.sql)
language plpgsql stable as $$
begin
    return (
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
    );
end $$;
