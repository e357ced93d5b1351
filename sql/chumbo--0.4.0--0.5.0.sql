-- chumbo 0.4.0 -> 0.5.0. Leaves a 0.4.0 install exactly as a fresh 0.5.0 one
-- (tests/package/upgrade.sh compares the two). One block per change below, each headed by what it is.
\echo Use "ALTER EXTENSION chumbo UPDATE TO '0.5.0'" to load this file. \quit

-- chumbo needs a UTF8 database (sql/bootstrap.sql): 0.4.0 could be installed in another, where its
-- texts were refused or garbled call by call; the update says why instead of going on.
do $$
begin
    if pg_catalog.getdatabaseencoding() <> 'UTF8' then
        raise exception 'chumbo needs a UTF8 database; this one''s encoding is %', pg_catalog.getdatabaseencoding()
            using hint = 'Dump the application''s data and restore it into a database created with ENCODING ''UTF8''.';
    end if;
end $$;

-- The PostgREST entry chumbo.mcp is an explicit opt-in: this update revokes it from every role
-- it was granted to. An install that serves POST /rest/v1/rpc/mcp runs, after the update:
--     select chumbo.grant_postgrest();
do $$
declare
    role_name text;
begin
    for role_name in
        select a.grantee::regrole::text
          from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
         where p.oid = 'chumbo.mcp(jsonb)'::regprocedure and a.grantee <> p.proowner and a.grantee <> 0
    loop
        execute format('revoke execute on function chumbo.mcp(jsonb) from %s', role_name);
        raise notice 'chumbo 0.5.0: revoked chumbo.mcp from %: run select chumbo.grant_postgrest() to serve PostgREST again', role_name;
    end loop;
end $$;
create function chumbo.grant_postgrest(enabled boolean default true) returns setof text
language plpgsql as $$
declare
    role_name text;
begin
    if enabled then
        for role_name in
            select r.rolname from pg_catalog.pg_roles r
             where r.rolname in (select jsonb_array_elements_text(coalesce(
                       (select s.value -> 'allowed_roles' from chumbo.settings s), '["anon", "authenticated"]')))
             order by r.rolname
        loop
            execute format('grant execute on function chumbo.mcp(jsonb) to %I', role_name);
            return next role_name;
        end loop;
    else
        -- everyone it was granted to, whatever allowed_roles says now
        for role_name in
            select a.grantee::regrole::text
              from pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             where p.oid = 'chumbo.mcp(jsonb)'::regprocedure and a.grantee <> p.proowner and a.grantee <> 0
             order by 1
        loop
            execute format('revoke execute on function chumbo.mcp(jsonb) from %s', role_name);
            return next role_name;
        end loop;
    end if;
end $$;
revoke all on function chumbo.grant_postgrest(boolean) from public;
comment on function chumbo.grant_postgrest(boolean) is
  'Turn the PostgREST entry chumbo.mcp on (or off) for the allowed roles; returns the roles changed. Off by default.';

-- Rate limits count a batch's messages: _rate_hit takes how many hits to count, all or none.
drop function chumbo._rate_hit(text, integer, integer);
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

-- Another owner's sandbox answers exactly as an unknown id.
create or replace function chumbo.sandbox_touch(sandbox_id uuid, tenant text default null) returns jsonb
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

-- Per method and capability, over the last hour of audit rows: calls, errors (every outcome but
-- ok and input_required) and latency percentiles, for operators without an OpenTelemetry
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

-- http_parts answers a sixth column, spans: the request's phases timed by the extension when the
-- edge asks for them (it exports traces; src/trace_context.rs). A function's result columns
-- cannot change in place: the old one is renamed so that its grants can be copied, then dropped.
alter function chumbo.http_parts(text, text) rename to _http_parts_0_4_0;
CREATE  FUNCTION chumbo."http_parts"(
	"request" TEXT,
	"request_body" TEXT
) RETURNS TABLE (
	"status" INT,
	"headers" TEXT,
	"body" TEXT,
	"events" TEXT,
	"listen" TEXT,
	"spans" TEXT
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
         where p.oid = 'chumbo._http_parts_0_4_0(text, text)'::regprocedure and a.privilege_type = 'EXECUTE'
           and a.grantee <> 0 and a.grantee <> p.proowner
    loop
        execute format('grant execute on function chumbo.http_parts(text, text) to %s', grantee);
    end loop;
end $$;
drop function chumbo._http_parts_0_4_0(text, text);

-- Durable MCP tasks (sql/tasks.sql; src/call/task.rs, src/api/tasks.rs).
CREATE  FUNCTION chumbo."_task_claim"() RETURNS TEXT /* Option < String > */
STRICT
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'task_claim_wrapper';
CREATE  FUNCTION chumbo."_task_run"(
	"id" TEXT /* & str */
) RETURNS void
STRICT
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'task_run_wrapper';
CREATE  FUNCTION chumbo."continue_as_task"() RETURNS void
STRICT
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'continue_as_task_wrapper';
CREATE  FUNCTION chumbo."jsonrpc_error"(
	"code" INT, /* i32 */
	"message" TEXT /* & str */
) RETURNS void
STRICT
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'jsonrpc_error_wrapper';
revoke execute on function chumbo._task_claim(), chumbo._task_run(text) from public;
grant execute on function chumbo.continue_as_task(), chumbo.jsonrpc_error(integer, text) to public;
create table chumbo.tasks (
    id text primary key,                       -- 32 hex digits: 128 random bits
    principal text not null,                   -- keyed digest (src/identity/principal.rs)
    caller jsonb not null,                     -- role, claims, principal parts
    tool text not null,
    plan jsonb not null,
    status text not null check (status in ('working', 'input_required', 'completed', 'failed', 'cancelled')),
    input_requests jsonb,                      -- the requests still unanswered (input_required)
    input_responses jsonb not null default '{}'::jsonb,  -- every answer given so far
    result jsonb,                              -- completed: the tools/call result
    error jsonb,                               -- failed: the JSON-RPC error object
    attempts integer not null default 0,       -- runs begun
    runs_ended integer not null default 0,     -- runs that ended (fewer: one was cut short)
    runner_pid integer,                        -- the backend running it, while one does
    runner_started timestamptz,                -- that backend's start (a pid is reused)
    trace_id text not null,
    ttl_ms bigint not null check (ttl_ms > 0),
    created_at timestamptz not null,
    updated_at timestamptz not null
);
create index tasks_runnable_idx on chumbo.tasks (created_at) where status = 'working';
create index tasks_finished_idx on chumbo.tasks (updated_at) where status in ('completed', 'failed', 'cancelled');
create index tasks_principal_idx on chumbo.tasks (principal) where status in ('working', 'input_required');
revoke all on chumbo.tasks from public;

-- The fallback runner where background workers cannot be started (the setting task_workers = 0,
-- max_worker_processes used up): `call chumbo.run_tasks()` from pg_cron or any scheduler, as the
-- owner (or a role the owner grants it to). Each task is claimed in one transaction (the claim is
-- durable, so a run cut short by a crash is known) and run in the next: the tool's writes and the
-- task's outcome commit together.
create procedure chumbo.run_tasks(max_tasks integer default 100)
language plpgsql as $$
declare
    task_id text;
    ran integer := 0;
begin
    while ran < max_tasks loop
        task_id := chumbo._task_claim();
        commit;
        exit when task_id is null;
        perform chumbo._task_run(task_id);
        commit;
        ran := ran + 1;
    end loop;
end $$;
revoke all on procedure chumbo.run_tasks(integer) from public;
comment on procedure chumbo.run_tasks(integer) is
  'Runs up to max_tasks waiting MCP tasks in this session, one transaction per task (the fallback for chumbo''s background workers: schedule it with pg_cron when task_workers is 0).';

-- ============================================================================================
-- Replication (issue 28, docs/scaling.md): the edge's read path on a replicated database.
-- chumbo.http_admit (primary), chumbo.http_replica (standby), chumbo.http_audit (primary), and
-- chumbo.grant_edge granting them (through chumbo._grant_edge_replication, sql/replication.sql).
-- ============================================================================================
CREATE  FUNCTION chumbo."http_admit"(
	"request" TEXT,
	"request_body" TEXT
) RETURNS TABLE (
	"status" INT,
	"headers" TEXT,
	"body" TEXT,
	"ticket" TEXT
)
LANGUAGE c
AS 'MODULE_PATHNAME', 'http_admit_wrapper';
CREATE  FUNCTION chumbo."http_replica"(
	"request" TEXT,
	"request_body" TEXT,
	"ticket" TEXT
) RETURNS TABLE (
	"status" INT,
	"headers" TEXT,
	"body" TEXT,
	"events" TEXT,
	"listen" TEXT,
	"spans" TEXT,
	"audit" TEXT
)
LANGUAGE c
AS 'MODULE_PATHNAME', 'http_replica_wrapper';
CREATE  FUNCTION chumbo."http_audit"(
	"ticket" TEXT,
	"rows" TEXT
) RETURNS INT
LANGUAGE c
AS 'MODULE_PATHNAME', 'http_audit_wrapper';
revoke execute on function chumbo.http_admit(text, text) from public;
revoke execute on function chumbo.http_replica(text, text, text) from public;
revoke execute on function chumbo.http_audit(text, text) from public;
create function chumbo._grant_edge_replication(edge_role regrole) returns void
language plpgsql as $$
begin
    execute format('grant execute on function chumbo.http_admit(text, text) to %s', edge_role);
    execute format('grant execute on function chumbo.http_replica(text, text, text) to %s', edge_role);
    execute format('grant execute on function chumbo.http_audit(text, text) to %s', edge_role);
end $$;
revoke all on function chumbo._grant_edge_replication(regrole) from public;
create or replace function chumbo.grant_edge(edge_role regrole, jwks_courier boolean default false) returns void
language plpgsql as $$
declare
    member text;
begin
    if edge_role is null then
        raise exception 'chumbo.grant_edge: edge_role must not be null' using errcode = 'null_value_not_allowed';
    end if;
    execute format('grant usage on schema chumbo to %s', edge_role);
    execute format('grant execute on function chumbo.http(jsonb) to %s', edge_role);
    execute format('grant execute on function chumbo.http_parts(text, text) to %s', edge_role);
    -- the read path on a replicated database (sql/replication.sql)
    perform chumbo._grant_edge_replication(edge_role);
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
-- the edge roles already granted chumbo.http_parts get the read path too
do $$
declare
    grantee text;
begin
    for grantee in
        select distinct a.grantee::regrole::text
          from pg_proc p, aclexplode(p.proacl) a
         where p.oid = 'chumbo.http_parts(text, text)'::regprocedure and a.privilege_type = 'EXECUTE'
           and a.grantee <> 0 and a.grantee <> p.proowner
    loop
        perform chumbo._grant_edge_replication(grantee::regrole);
    end loop;
end $$;
-- end replication

-------------------------------------------------------------------------------------------------
-- MCP Apps (issue 31): the same objects as sql/apps.sql, with the privileges finalize.sql gives a
-- fresh install (no function of chumbo is PUBLIC's unless granted there).
-------------------------------------------------------------------------------------------------


create table chumbo.apps (
    uri text primary key check (uri ~ '^ui://[^[:space:]]+$' and length(uri) <= 512),
    name text not null check (length(name) between 1 and 200),
    title text,
    description text,
    -- the view: a full HTML document, or a function `() returns text` run as the caller that
    -- writes it (exactly one of the two)
    html text,
    render regprocedure,
    -- _meta.ui of the resource: csp {connectDomains, resourceDomains, frameDomains,
    -- baseUriDomains}, permissions {camera, microphone, geolocation, clipboardWrite}, domain,
    -- prefersBorder
    csp jsonb check (jsonb_typeof(csp) = 'object'),
    permissions jsonb check (jsonb_typeof(permissions) = 'object'),
    domain text,
    prefers_border boolean,
    created_at timestamptz not null default now(),
    check (num_nonnulls(html, render) = 1)
);
revoke all on chumbo.apps from public;

create function chumbo._apps_changed() returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    perform chumbo._schema_changed(null);
    perform pg_notify('chumbo_capabilities', 'APPS');
end $$;

create function chumbo._app_named(uri text) returns text
language plpgsql stable set search_path = pg_catalog, pg_temp as $$
begin
    if not exists (select from chumbo.apps a where a.uri = _app_named.uri) then
        raise exception using errcode = '42704', message = pg_catalog.format('chumbo: no app %L', uri);
    end if;
    return uri;
end $$;

create function chumbo._check_app_csp(csp jsonb) returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp as $$
declare
    k text;
    v jsonb;
begin
    if csp is null then
        return;
    end if;
    if jsonb_typeof(csp) <> 'object' then
        raise exception using errcode = '22023', message = 'chumbo: an app''s csp must be a JSON object';
    end if;
    for k, v in select * from jsonb_each(csp) loop
        if k not in ('connectDomains', 'resourceDomains', 'frameDomains', 'baseUriDomains') then
            raise exception using errcode = '22023',
                message = pg_catalog.format('chumbo: unknown csp key %L (connectDomains, resourceDomains, frameDomains, baseUriDomains)', k);
        end if;
        -- origins only: no spaces, quotes or semicolons that would add CSP directives
        if jsonb_typeof(v) <> 'array' or exists (
            select from jsonb_array_elements(v) e
             where jsonb_typeof(e) <> 'string' or e #>> '{}' !~ '^[A-Za-z][A-Za-z0-9+.-]*://[^[:space:];,''"]+$')
        then
            raise exception using errcode = '22023',
                message = pg_catalog.format('chumbo: csp %s must be an array of origins like "https://api.example.com"', k);
        end if;
    end loop;
end $$;

create function chumbo.create_app(
    uri text, name text, html text default null, render regprocedure default null,
    csp jsonb default null, permissions jsonb default null, title text default null,
    description text default null, domain text default null, prefers_border boolean default null)
returns text
language plpgsql set search_path = pg_catalog, pg_temp as $$
declare
    max_bytes bigint := coalesce((chumbo.settings_effective() ->> 'max_app_bytes')::bigint, 2097152);
begin
    if uri is null or uri !~ '^ui://[^[:space:]]+$' then
        raise exception using errcode = '22023', message = 'chumbo.create_app: uri must be a ui:// URI';
    end if;
    if name is null or length(name) not between 1 and 200 then
        raise exception using errcode = '22023', message = 'chumbo.create_app: name must be 1 to 200 characters';
    end if;
    if num_nonnulls(html, render) <> 1 then
        raise exception using errcode = '22023', message = 'chumbo.create_app: give exactly one of html and render';
    end if;
    if octet_length(html) > max_bytes then
        raise exception using errcode = '54000',
            message = pg_catalog.format('chumbo.create_app: the html is %s bytes, more than the setting max_app_bytes (%s)', octet_length(html), max_bytes);
    end if;
    if render is not null and not exists (
        select from pg_proc p where p.oid = render and p.pronargs = 0 and p.prorettype = 'text'::regtype and not p.proretset)
    then
        raise exception using errcode = '22023', message = 'chumbo.create_app: render must be a function () returns text';
    end if;
    perform chumbo._check_app_csp(csp);
    -- each permission an object ({} today), as the MCP Apps specification has it
    if permissions is not null and (jsonb_typeof(permissions) <> 'object' or exists (
        select from jsonb_each(permissions) p
         where p.key not in ('camera', 'microphone', 'geolocation', 'clipboardWrite') or jsonb_typeof(p.value) <> 'object'))
    then
        raise exception using errcode = '22023',
            message = 'chumbo.create_app: permissions may name camera, microphone, geolocation, clipboardWrite, each an object ({})';
    end if;
    insert into chumbo.apps as a (uri, name, title, description, html, render, csp, permissions, domain, prefers_border)
    values (create_app.uri, create_app.name, create_app.title, create_app.description, create_app.html,
            create_app.render, create_app.csp, create_app.permissions, create_app.domain, create_app.prefers_border)
    on conflict on constraint apps_pkey do update
       set name = excluded.name, title = excluded.title, description = excluded.description,
           html = excluded.html, render = excluded.render, csp = excluded.csp,
           permissions = excluded.permissions, domain = excluded.domain,
           prefers_border = excluded.prefers_border;
    perform chumbo._apps_changed();
    return uri;
end $$;
comment on function chumbo.create_app(text, text, text, regprocedure, jsonb, jsonb, text, text, text, boolean) is
  'Store (or replace) an MCP App: a ui:// URI, a name, and its view as a full HTML document (html) or a function () returns text run as the caller (render); csp and permissions become _meta.ui. At most the setting max_app_bytes. Served only to callers who may see one of the tools linked to it (chumbo.link_app).';

-- The @mcp object of a comment, or null (no block, or one that does not parse).
create function chumbo._mcp_metadata(comment text) returns jsonb
language plpgsql immutable set search_path = pg_catalog, pg_temp as $$
begin
    if coalesce(strpos(comment, '@mcp'), 0) = 0 then
        return null;
    end if;
    return substr(comment, strpos(comment, '@mcp') + 4)::jsonb;
exception when others then
    return null;
end $$;

create function chumbo.link_app(uri text, tool regprocedure, visibility text[] default array['model', 'app'])
returns void
language plpgsql set search_path = pg_catalog, pg_temp as $$
declare
    c text;
    at integer;
    description text;
    meta jsonb := '{}';
begin
    perform chumbo._app_named(link_app.uri);
    if tool is null then
        raise exception using errcode = '22004', message = 'chumbo.link_app: tool is required';
    end if;
    if visibility is null or cardinality(visibility) = 0
       or exists (select from unnest(visibility) v where v is null or v not in ('model', 'app')) then
        raise exception using errcode = '22023', message = 'chumbo.link_app: visibility must be a non-empty subset of {model,app}';
    end if;
    c := obj_description(tool, 'pg_proc');
    at := coalesce(strpos(c, '@mcp'), 0);
    if at > 0 then
        description := rtrim(left(c, at - 1));
        meta := substr(c, at + 4)::jsonb;
    else
        description := coalesce(rtrim(c), '');
    end if;
    meta := meta || jsonb_build_object('ui', jsonb_build_object(
        'resourceUri', link_app.uri,
        'visibility', (select jsonb_agg(distinct v) from unnest(visibility) v)));
    -- the catalog's own quoted name (regprocedure) and a quoted literal: no value as SQL text
    execute pg_catalog.format('comment on function %s is %L', tool,
        case when description = '' then '@mcp ' else description || E'\n@mcp ' end || meta::text);
    perform chumbo._apps_changed();
end $$;
comment on function chumbo.link_app(text, regprocedure, text[]) is
  'Link a tool to an app: writes @mcp {"ui": {"resourceUri": uri, "visibility": …}} into the tool''s comment (the rest of it stays). visibility is a subset of {model,app}: ["app"] hides the tool from tools/list (a view may still call it, as the caller); a view may call only tools with "app".';

create function chumbo.drop_app(uri text) returns boolean
language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
    delete from chumbo.apps a where a.uri = drop_app.uri;
    if not found then
        return false;
    end if;
    perform chumbo._apps_changed();
    return true;
end $$;
comment on function chumbo.drop_app(text) is 'Remove an app (tools linked to it keep their metadata and then show no view); false when there was none.';

create function chumbo.apps()
returns table (uri text, name text, bytes integer, render regprocedure, csp jsonb, permissions jsonb,
               tools regprocedure[], created_at timestamptz)
language sql stable set search_path = pg_catalog, pg_temp as $$
    select a.uri, a.name, octet_length(a.html), a.render, a.csp, a.permissions,
           coalesce((select array_agg(p.oid::regprocedure order by p.oid::regprocedure::text)
                       from pg_proc p
                      where p.pronamespace = to_regnamespace('mcp')
                        and chumbo._mcp_metadata(obj_description(p.oid, 'pg_proc')) #>> '{ui,resourceUri}' = a.uri),
                    '{}'),
           a.created_at
      from chumbo.apps a order by a.uri
$$;
comment on function chumbo.apps() is 'The stored apps: size of the stored html, render function, csp, permissions, the tools in schema mcp linked to each.';

revoke execute on function
    chumbo._apps_changed(), chumbo._app_named(text), chumbo._check_app_csp(jsonb),
    chumbo.create_app(text, text, text, regprocedure, jsonb, jsonb, text, text, text, boolean),
    chumbo._mcp_metadata(text), chumbo.link_app(text, regprocedure, text[]), chumbo.drop_app(text),
    chumbo.apps()
from public;

-- ============================================================================================
-- A composite parameter's attributes in its type descriptor (sql/registry.sql): its inputSchema
-- names them, and an unknown key is refused rather than dropped.
-- ============================================================================================
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
                then chumbo._type_info(ty.typbasetype, depth + 1) end,
            -- a composite's attributes, [name, descriptor] in order: its inputSchema's properties
            'attributes', case when ty.typtype = 'c' and depth < 4 then
                (select jsonb_agg(jsonb_build_array(a.attname, chumbo._type_info(a.atttypid, depth + 1)) order by a.attnum)
                   from pg_attribute a where a.attrelid = ty.typrelid and a.attnum > 0 and not a.attisdropped) end
        )
        from pg_type ty join pg_namespace nsp on nsp.oid = ty.typnamespace where ty.oid = t
    );
end $$;
