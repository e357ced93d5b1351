-- MCP Apps (SEP-1865, extension io.modelcontextprotocol/ui): HTML views stored by the owner and
-- served as `ui://` resources (src/catalog/apps.rs, src/protocol/apps.rs). An app is linked to
-- tools by their `@mcp {"ui": {"resourceUri": …}}` metadata (chumbo.link_app writes it), and is
-- served to exactly the callers who may see one of its tools (EXECUTE, scopes, `visible`). Every
-- function here is the owner's (finalize.sql revokes them from PUBLIC; nothing is granted to
-- anon/authenticated). A change moves the capability version like DDL does.

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
