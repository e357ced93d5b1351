-- Example application for chumbo: organizations, memberships, projects and documents, private
-- to the members of each organization through Row Level Security, and the MCP capabilities
-- (schema mcp) that expose them. Every capability runs as the calling user (role
-- authenticated, JWT claims in request.jwt.claims), so the policies below decide what a user
-- sees and changes, whichever way the request arrives.
--
-- Needs: roles anon/authenticated/service_role and auth.uid() (Supabase, or
-- supabase/compat/roles.sql on plain PostgreSQL), and the chumbo extension (previous migration).

-------------------------------------------------------------------------------------------------
-- Tables
-------------------------------------------------------------------------------------------------

create table public.organizations (
  id         uuid primary key default gen_random_uuid(),
  name       text not null unique check (length(name) between 1 and 200),
  created_at timestamptz not null default now()
);
comment on table public.organizations is 'Tenants. A user sees the organizations they are a member of.';

create table public.memberships (
  user_id    uuid not null,                  -- auth.users.id on Supabase
  org_id     uuid not null references public.organizations (id) on delete cascade,
  role       text not null default 'member' check (role in ('member', 'admin')),
  created_at timestamptz not null default now(),
  primary key (user_id, org_id)
);
create index memberships_org_id_idx on public.memberships (org_id);
comment on table public.memberships is 'Which user belongs to which organization.';

create table public.projects (
  id          uuid primary key default gen_random_uuid(),
  org_id      uuid not null references public.organizations (id) on delete cascade,
  name        text not null check (length(name) between 1 and 200),
  status      text not null default 'active' check (status in ('active', 'archived')),
  description text,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);
create index projects_org_id_idx on public.projects (org_id);
comment on table public.projects is 'Projects of an organization.';

create table public.documents (
  id         uuid primary key default gen_random_uuid(),
  project_id uuid not null references public.projects (id) on delete cascade,
  title      text not null check (length(title) between 1 and 300),
  body       text not null default '',
  created_by uuid default auth.uid(),
  created_at timestamptz not null default now()
);
create index documents_project_id_idx on public.documents (project_id);
comment on table public.documents is 'Documents of a project.';

-------------------------------------------------------------------------------------------------
-- Membership helpers (Supabase's recommended pattern: a stable SECURITY DEFINER function in a
-- schema the API does not expose, called from policies as (select private.fn())).
-------------------------------------------------------------------------------------------------

do $$
begin
  if not exists (select from pg_namespace where nspname = 'private') then
    create schema private;
  end if;
end
$$;
revoke all on schema private from public;
grant usage on schema private to authenticated;

-- Organizations the current user belongs to.
create function private.user_org_ids()
  returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select m.org_id from public.memberships m where m.user_id = (select auth.uid())
$$;

-- Projects of the organizations the current user belongs to.
create function private.user_project_ids()
  returns setof uuid
  language sql stable security definer
  set search_path = ''
as $$
  select p.id
  from public.projects p
  join public.memberships m on m.org_id = p.org_id
  where m.user_id = (select auth.uid())
$$;

revoke execute on function private.user_org_ids(), private.user_project_ids() from public;
grant execute on function private.user_org_ids(), private.user_project_ids() to authenticated;

-------------------------------------------------------------------------------------------------
-- Row Level Security: enabled and forced on every table; policies for authenticated only, so
-- anon (and any other role) sees and changes nothing.
-------------------------------------------------------------------------------------------------

alter table public.organizations enable row level security;
alter table public.organizations force row level security;
alter table public.memberships enable row level security;
alter table public.memberships force row level security;
alter table public.projects enable row level security;
alter table public.projects force row level security;
alter table public.documents enable row level security;
alter table public.documents force row level security;

create policy "members read their organizations" on public.organizations
  for select to authenticated
  using (id in (select private.user_org_ids()));

create policy "users read their own memberships" on public.memberships
  for select to authenticated
  using (user_id = (select auth.uid()));

create policy "members read projects" on public.projects
  for select to authenticated
  using (org_id in (select private.user_org_ids()));

create policy "members update projects" on public.projects
  for update to authenticated
  using (org_id in (select private.user_org_ids()))
  with check (org_id in (select private.user_org_ids()));

create policy "members create projects" on public.projects
  for insert to authenticated
  with check (org_id in (select private.user_org_ids()));

create policy "members read documents" on public.documents
  for select to authenticated
  using (project_id in (select private.user_project_ids()));

create policy "members create documents" on public.documents
  for insert to authenticated
  with check (
    project_id in (select private.user_project_ids())
    and created_by = (select auth.uid())
  );

-- Grants: only what the app needs (Supabase grants ALL on new public tables to anon and
-- authenticated by default privileges, so revoke first).
revoke all on public.organizations, public.memberships, public.projects, public.documents
  from public, anon, authenticated;
grant select on public.organizations, public.memberships, public.projects, public.documents
  to authenticated;
grant insert (org_id, name, status, description) on public.projects to authenticated;
grant update (name, status, description, updated_at) on public.projects to authenticated;
grant insert (project_id, title, body) on public.documents to authenticated;
grant all on public.organizations, public.memberships, public.projects, public.documents
  to service_role;

-------------------------------------------------------------------------------------------------
-- MCP capabilities (schema mcp). Each is a plain SECURITY INVOKER function: it runs as the
-- caller, so RLS above applies. COMMENT = description, optional `@mcp {json}` = metadata.
-------------------------------------------------------------------------------------------------

-- Tool: list projects.
create function mcp.list_projects(status text default null)
  returns setof public.projects
  language sql stable
  set search_path = ''
as $$
  select p.*
  from public.projects p
  where list_projects.status is null or p.status = list_projects.status
  order by p.name collate "C"
$$;
comment on function mcp.list_projects(text) is
  'List the projects of your organizations, optionally only those with a given status. @mcp {
    "title": "List projects",
    "annotations": {"readOnlyHint": true, "openWorldHint": false},
    "params": {"status": {"description": "Only projects with this status.", "enum": ["active", "archived"]}}
  }';

-- Tool: full-text-ish search in the documents you can read.
create function mcp.search_documents(query text, "limit" int default 10)
  returns table (id uuid, project text, title text, snippet text)
  language sql stable
  set search_path = ''
as $$
  select d.id, p.name, d.title, left(d.body, 200)
  from public.documents d
  join public.projects p on p.id = d.project_id
  where strpos(lower(d.title || ' ' || d.body), lower(search_documents.query)) > 0
  order by p.name collate "C", d.title collate "C"
  limit greatest(1, least(coalesce(search_documents."limit", 10), 50))
$$;
comment on function mcp.search_documents(text, int) is
  'Search the documents of your projects by a word or phrase (case-insensitive) in title or body. @mcp {
    "title": "Search documents",
    "annotations": {"readOnlyHint": true, "openWorldHint": false},
    "params": {
      "query": {"description": "Text to look for.", "minLength": 1, "maxLength": 200},
      "limit": {"description": "Maximum number of documents to return.", "minimum": 1, "maximum": 50}
    }
  }';

-- Tool (write): rename a project. RLS hides other organizations' projects from the UPDATE, so
-- "nothing updated" means "not found for you": say so instead of reporting success.
create function mcp.rename_project(project_id uuid, name text)
  returns jsonb
  language plpgsql volatile
  set search_path = ''
as $$
declare
  result jsonb;
begin
  if rename_project.name is null or length(btrim(rename_project.name)) = 0 then
    raise exception 'name must not be empty';
  end if;
  update public.projects p
     set name = btrim(rename_project.name), updated_at = now()
   where p.id = rename_project.project_id
  returning jsonb_build_object('id', p.id, 'name', p.name, 'status', p.status) into result;
  if result is null then
    raise exception 'project not found';
  end if;
  return result;
end
$$;
comment on function mcp.rename_project(uuid, text) is
  'Rename one of your projects. @mcp {
    "title": "Rename project",
    "annotations": {"destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    "params": {
      "project_id": {"description": "Id of the project (see list_projects)."},
      "name": {"description": "The new name.", "minLength": 1, "maxLength": 200}
    }
  }';

-- Tool (write): add a document to a project. The INSERT policy's WITH CHECK refuses projects of
-- other organizations; the explicit check first gives the model a clear message.
create function mcp.create_document(project_id uuid, title text, body text)
  returns jsonb
  language plpgsql volatile
  set search_path = ''
as $$
declare
  result jsonb;
begin
  if not exists (select from public.projects p where p.id = create_document.project_id) then
    raise exception 'project not found';
  end if;
  insert into public.documents as d (project_id, title, body)
  values (create_document.project_id, create_document.title, coalesce(create_document.body, ''))
  returning jsonb_build_object('id', d.id, 'project_id', d.project_id, 'title', d.title) into result;
  return result;
end
$$;
comment on function mcp.create_document(uuid, text, text) is
  'Create a document in one of your projects. @mcp {
    "title": "Create document",
    "annotations": {"destructiveHint": false, "openWorldHint": false},
    "params": {
      "project_id": {"description": "Id of the project (see list_projects)."},
      "title": {"description": "Document title.", "minLength": 1, "maxLength": 300},
      "body": {"description": "Document text (markdown)."}
    }
  }';

-- Resource template: one project with its documents, as JSON. null (not visible) = not found.
create function mcp.project(id uuid)
  returns jsonb
  language sql stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'id', p.id,
    'name', p.name,
    'status', p.status,
    'description', p.description,
    'organization', o.name,
    'documents', coalesce((
      select jsonb_agg(jsonb_build_object('id', d.id, 'title', d.title) order by d.title)
      from public.documents d
      where d.project_id = p.id
    ), '[]'::jsonb)
  )
  from public.projects p
  join public.organizations o on o.id = p.org_id
  where p.id = project.id
$$;
comment on function mcp.project(uuid) is
  'A project of yours with the list of its documents. @mcp {
    "resource": "app://projects/{id}",
    "mimeType": "application/json",
    "title": "Project"
  }';

-- Static resource: the organizations you belong to, with their project counts.
create function mcp.my_organizations()
  returns jsonb
  language sql stable
  set search_path = ''
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', o.id,
           'name', o.name,
           'projects', (select count(*) from public.projects p where p.org_id = o.id)
         ) order by o.name), '[]'::jsonb)
  from public.organizations o
$$;
comment on function mcp.my_organizations() is
  'The organizations you are a member of. @mcp {
    "resource": "app://orgs/mine",
    "name": "my-organizations",
    "mimeType": "application/json",
    "title": "My organizations"
  }';

-- Completion source for project ids (runs as the caller, so only visible projects complete).
create function private.complete_project_id(value text)
  returns setof text
  language sql stable
  set search_path = ''
as $$
  select p.id::text
  from public.projects p
  where p.id::text like replace(replace(replace(coalesce(value, ''), '\', '\\'), '%', '\%'), '_', '\_') || '%'
  order by p.name collate "C"
  limit 100
$$;
revoke execute on function private.complete_project_id(text) from public;
grant execute on function private.complete_project_id(text) to authenticated;

-- Prompt: summarize a project (embeds the project's documents).
create function mcp.summarize_project(project_id text)
  returns jsonb
  language plpgsql stable
  set search_path = ''
as $$
declare
  pid uuid;
  p record;
  docs text;
begin
  begin
    pid := summarize_project.project_id::uuid;
  exception when invalid_text_representation then
    raise exception 'project_id must be a UUID';
  end;
  select pr.id, pr.name, pr.status, pr.description into p
  from public.projects pr where pr.id = pid;
  if not found then
    raise exception 'project not found';
  end if;
  select coalesce(string_agg(format(E'## %s\n\n%s', d.title, d.body), E'\n\n' order by d.title), '(no documents)')
    into docs
  from public.documents d where d.project_id = pid;
  return jsonb_build_object(
    'description', format('Summarize the project %s', p.name),
    'messages', jsonb_build_array(
      chumbo.message('user', chumbo.content_text(format(
        E'Summarize the project "%s" (status: %s) for a busy manager: goals, progress, open risks. Use only the documents below.',
        p.name, p.status))),
      chumbo.message('user', chumbo.content_resource(
        'app://projects/' || p.id::text, docs, 'text/markdown'))
    )
  );
end
$$;
comment on function mcp.summarize_project(text) is
  'Summarize one of your projects from its documents. @mcp {
    "prompt": true,
    "title": "Summarize project",
    "params": {"project_id": {"description": "Id of the project to summarize."}},
    "completions": {"project_id": "private.complete_project_id"}
  }';

-- Prompt: status report over all projects with a status (static completions for the status).
create function mcp.status_report(status text default 'active')
  returns text
  language sql stable
  set search_path = ''
as $$
  select format(
    E'Write a short status report of these %s projects:\n%s',
    coalesce(status_report.status, 'active'),
    coalesce(string_agg('- ' || p.name || coalesce(': ' || p.description, ''), E'\n' order by p.name), '(none)'))
  from public.projects p
  where p.status = coalesce(status_report.status, 'active')
$$;
comment on function mcp.status_report(text) is
  'A status report over your projects with a given status. @mcp {
    "prompt": true,
    "title": "Status report",
    "params": {"status": {"description": "active or archived (default active)."}},
    "completions": {"status": ["active", "archived"]}
  }';

-- Capabilities are for signed-in users only.
revoke execute on function
  mcp.list_projects(text), mcp.search_documents(text, int), mcp.rename_project(uuid, text),
  mcp.create_document(uuid, text, text), mcp.project(uuid), mcp.my_organizations(),
  mcp.summarize_project(text), mcp.status_report(text)
  from public, anon;
grant execute on function
  mcp.list_projects(text), mcp.search_documents(text, int), mcp.rename_project(uuid, text),
  mcp.create_document(uuid, text, text), mcp.project(uuid), mcp.my_organizations(),
  mcp.summarize_project(text), mcp.status_report(text)
  to authenticated;
