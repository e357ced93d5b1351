-- Example app, part 2: tools that keep state between stateless MCP requests, a tool with a
-- per-tool rate limit, and a tool that starts (or reuses) a sandbox. All of it goes through
-- chumbo's functions, which take the owner from the verified request, never from arguments:
--   chumbo.state_get / state_put / state_delete   durable state, private to the caller's sign-in
--   @mcp {"rateLimit": {"perMinute": N}}           per-tool, per-user limit
--   chumbo.sandbox_for_owner / sandbox_register    sandboxes per user and tenant (organization)
-- The sandbox provider here is fake: "starting" one makes up an id, and the stopper that
-- chumbo.sandbox_idle_stop() calls records the stop in private.fake_sandbox_stops.

-------------------------------------------------------------------------------------------------
-- Deployment settings: which state namespaces capabilities may use (the list replaces the previous
-- one: keep earlier namespaces when adding), and the function that stops idle sandboxes.
-------------------------------------------------------------------------------------------------

do $$
begin
  perform chumbo.configure('{"state_namespaces": ["preferences"], "sandbox_stopper": "private.stop_fake_sandbox"}');
end
$$;

-------------------------------------------------------------------------------------------------
-- Tool: a remembered preference (durable state, compare-and-set).
-------------------------------------------------------------------------------------------------

create function mcp.preference(name text, value text default null, expected_revision bigint default null)
  returns jsonb
  language plpgsql volatile
  set search_path = ''
as $$
declare
  stored jsonb;
  revision bigint;
begin
  if preference.value is null then
    stored := chumbo.state_get('preferences', preference.name);
    return jsonb_build_object('name', preference.name, 'value', stored -> 'value', 'revision', stored -> 'revision');
  end if;
  begin
    revision := chumbo.state_put('preferences', preference.name, to_jsonb(preference.value), preference.expected_revision);
  exception when serialization_failure then
    -- chumbo: revision_conflict: someone (another tab, another agent) changed it meanwhile
    stored := chumbo.state_get('preferences', preference.name);
    raise exception 'preference % changed meanwhile: it is now % (revision %); read it and retry with that revision',
      preference.name, coalesce(stored ->> 'value', 'unset'), coalesce(stored ->> 'revision', '0');
  end;
  return jsonb_build_object('name', preference.name, 'value', to_jsonb(preference.value), 'revision', revision);
end
$$;
comment on function mcp.preference(text, text, bigint) is
  'Read one of your remembered preferences, or remember a new value for it (pass value). Preferences are private to your sign-in and survive between conversations. @mcp {
    "title": "Remembered preference",
    "annotations": {"destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    "params": {
      "name": {"description": "Which preference.", "enum": ["language", "tone", "report_format", "timezone"]},
      "value": {"description": "The new value; leave out to read the current one.", "minLength": 1, "maxLength": 500},
      "expected_revision": {"description": "Only change it if it is still at this revision (from a previous read); 0 = only if unset.", "minimum": 0}
    }
  }';

-------------------------------------------------------------------------------------------------
-- Tool with a per-tool rate limit: an export that is expensive to produce.
-------------------------------------------------------------------------------------------------

create function mcp.export_project(project_id uuid)
  returns text
  language plpgsql stable
  set search_path = ''
as $$
declare
  p record;
  docs text;
begin
  select pr.id, pr.name, pr.status, pr.description into p
  from public.projects pr where pr.id = export_project.project_id;
  if not found then
    raise exception 'project not found';
  end if;
  select coalesce(string_agg(format(E'## %s\n\n%s', d.title, d.body), E'\n\n' order by d.title collate "C"), '(no documents)')
    into docs
  from public.documents d where d.project_id = p.id;
  return format(E'# %s (%s)\n\n%s\n\n%s\n', p.name, p.status, coalesce(p.description, ''), docs);
end
$$;
comment on function mcp.export_project(uuid) is
  'Export one of your projects with all its documents as Markdown. Limited to 3 exports per minute per user. @mcp {
    "title": "Export project",
    "annotations": {"readOnlyHint": true, "openWorldHint": false},
    "params": {"project_id": {"description": "Id of the project (see list_projects)."}},
    "rateLimit": {"perMinute": 3}
  }';

-------------------------------------------------------------------------------------------------
-- Tool that starts a sandbox (a workspace for a project), or reuses the caller's running one for
-- the same organization. The organization is the tenant: a sandbox never serves another one.
-------------------------------------------------------------------------------------------------

create table private.fake_sandbox_stops (
  provider            text not null,
  provider_sandbox_id text not null,
  stopped_at          timestamptz not null default now()
);
revoke all on private.fake_sandbox_stops from public;

-- The stopper chumbo.sandbox_idle_stop() calls (setting sandbox_stopper above). A real one would
-- call the provider's API (e.g. through pg_net or http); this one records the stop.
create function private.stop_fake_sandbox(provider text, provider_sandbox_id text)
  returns void
  language sql
  set search_path = ''
as $$
  insert into private.fake_sandbox_stops (provider, provider_sandbox_id) values (provider, provider_sandbox_id)
$$;
revoke execute on function private.stop_fake_sandbox(text, text) from public;

create function mcp.open_workspace(project_id uuid)
  returns jsonb
  language plpgsql volatile
  set search_path = ''
as $$
declare
  org uuid;
  running jsonb;
  started text;
  sandbox uuid;
begin
  select p.org_id into org from public.projects p where p.id = open_workspace.project_id;
  if org is null then
    raise exception 'project not found';
  end if;
  running := chumbo.sandbox_for_owner('fakebox', org::text);
  if running is not null then
    return jsonb_build_object('sandbox_id', running -> 'id', 'provider_sandbox_id', running -> 'provider_sandbox_id',
                              'reused', true, 'idle_seconds', running -> 'idle_seconds');
  end if;
  -- "start" a sandbox at the fake provider, then record it for the caller and organization
  started := 'fakebox-' || gen_random_uuid();
  sandbox := chumbo.sandbox_register('fakebox', started, org::text, 600);
  return jsonb_build_object('sandbox_id', sandbox, 'provider_sandbox_id', started, 'reused', false, 'idle_seconds', 600);
end
$$;
comment on function mcp.open_workspace(uuid) is
  'Open a sandbox workspace for one of your projects: reuses your running workspace of the project''s organization, or starts one (stopped after 10 idle minutes). @mcp {
    "title": "Open workspace",
    "annotations": {"destructiveHint": false, "openWorldHint": true},
    "params": {"project_id": {"description": "Id of the project (see list_projects)."}}
  }';

revoke execute on function mcp.preference(text, text, bigint), mcp.export_project(uuid), mcp.open_workspace(uuid)
  from public, anon;
grant execute on function mcp.preference(text, text, bigint), mcp.export_project(uuid), mcp.open_workspace(uuid)
  to authenticated;

-- Stopping idle sandboxes is a job for the database owner, e.g. with pg_cron (every minute):
--   select cron.schedule('chumbo-sandbox-idle-stop', '* * * * *', 'select chumbo.sandbox_idle_stop()');
