-- The capability registry's inputs: the capability version every backend compares its cached
-- registry against, what moves it, and the type descriptor reflection reads (sql/reflect.sql,
-- src/catalog/registry/mod.rs).

-- The capability version. Every DDL, COMMENT, GRANT and settings change takes a number from the
-- sequence (which never rolls back, so any backend sees at once that something may have moved)
-- and records it in chumbo.schema_changes in its own transaction (which becomes visible exactly
-- when the change commits). A backend's registry is labelled with the newest committed number it
-- could see when it read the catalog. Numbers are taken in one order and may commit in another,
-- so the newest committed number alone does not say that nothing is missing: a registry built
-- while any change was still open is built again once every change has settled (the advisory
-- lock in _schema_changed; src/catalog/registry/changes.rs). A change that touched only functions records which:
-- a backend whose registry is a few changes behind then re-reads those functions alone.
create sequence chumbo.schema_version;
revoke all on sequence chumbo.schema_version from public;
create table chumbo.schema_changes (
    version bigint primary key,
    -- the pg_proc oids the change touched when it touched nothing else; null: anything may have moved
    functions oid[]
);
revoke all on chumbo.schema_changes from public;
insert into chumbo.schema_changes values (nextval('chumbo.schema_version'));

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

-- SECURITY DEFINER: event triggers run with the rights of whoever ran the DDL (a migration role,
-- `authenticated` creating a temp table); they must not need rights on chumbo's own objects.
create function chumbo._bump_schema_version() returns event_trigger
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
revoke all on function chumbo._bump_schema_version() from public;

create event trigger chumbo_ddl_watch on ddl_command_end
    execute function chumbo._bump_schema_version();
create event trigger chumbo_drop_watch on sql_drop
    execute function chumbo._bump_schema_version();

create function chumbo._settings_changed() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed(null);
    return null;
end $$;
revoke all on function chumbo._settings_changed() from public;

-- Type descriptor used by reflection: enough to derive a JSON Schema without further catalog reads.
create function chumbo._type_info(t oid, depth int default 0) returns jsonb
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
                then chumbo._type_info(ty.typbasetype, depth + 1) end,
            -- a composite's attributes, [name, descriptor] in order: its inputSchema's properties
            'attributes', case when ty.typtype = 'c' and depth < 4 then
                (select jsonb_agg(jsonb_build_array(a.attname, chumbo._type_info(a.atttypid, depth + 1)) order by a.attnum)
                   from pg_attribute a where a.attrelid = ty.typrelid and a.attnum > 0 and not a.attisdropped) end
        )
        from pg_type ty join pg_namespace nsp on nsp.oid = ty.typnamespace where ty.oid = t
    );
end $$;
revoke all on function chumbo._type_info(oid, int) from public;
