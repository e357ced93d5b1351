-- Helpers shared by the SQL regression tests, loaded once by tests/regress/run.sh into the bare
-- regression database (Supabase's roles, the extension, nothing of the example app); not part of
-- the extension. Fixture builders (regress.fixture_*) create what a test needs inside the test's
-- own transaction (begin ... rollback), so no test depends on the example app or on another test.
-- dblink: a second backend, for tests about other sessions. A PostgreSQL without contrib's dblink
-- (the PyPI wheel PostgreSQL 16 is tested with) runs the suite without the tests that use it:
-- tests/regress/run.sh leaves them out and names them.
do $$ begin
  if exists (select from pg_available_extensions where name = 'dblink') then
    create extension if not exists dblink;
  end if;
end $$;
create schema if not exists regress;

-- base64url without padding (JWT segments)
create or replace function regress.b64url(b bytea) returns text language sql immutable
  as $$ select translate(rtrim(replace(encode(b, 'base64'), E'\n', ''), '='), '+/', '-_') $$;
create or replace function regress.b64url_decode(t text) returns bytea language sql immutable
  as $$ select decode(rpad(translate(t, '-_', '+/'), (length(t) + 3) / 4 * 4, '='), 'base64') $$;
-- the JSON payload of a chumbo-signed token (base64url(payload).base64url(mac): cursors, run
-- handles, requestStates, approval tokens)
create or replace function regress.token_payload(token text) returns jsonb language sql immutable
  as $$ select convert_from(regress.b64url_decode(split_part(token, '.', 1)), 'UTF8')::jsonb $$;

-- HMAC-SHA-256 (RFC 2104) on the core sha256(): the suite needs no pgcrypto, which not every
-- PostgreSQL build ships (the wheels the other majors are tested on have none)
create or replace function regress.hmac_sha256(data bytea, key bytea) returns bytea
  language sql immutable strict as $$
    with k as (select case when length(key) > 64 then sha256(key) else key end as k0),
         padded as (select k0 || decode(repeat('00', 64 - length(k0)), 'hex') as k from k)
    select sha256(string_agg(set_byte('\x00'::bytea, 0, get_byte(k, i) # 92), ''::bytea order by i) ||
                  sha256(string_agg(set_byte('\x00'::bytea, 0, get_byte(k, i) # 54), ''::bytea order by i) || data))
      from padded, generate_series(0, 63) i $$;
-- What chumbo signs a token of this kind's label with (src/tokens.rs): its own key, HMAC of the
-- request_state secret over 'chumbo token key v2' NUL label, then HMAC of the payload; the token
-- is base64url(payload).base64url(tag). Labels: 'request state', 'page cursor', 'approval token',
-- 'run handle'.
create or replace function regress.sign_token(label text, payload bytea) returns text
  language sql stable strict as $$
    select regress.b64url(payload) || '.' || regress.b64url(regress.hmac_sha256(payload,
             regress.hmac_sha256(convert_to('chumbo token key v2', 'UTF8') || '\x00'::bytea || convert_to(label, 'UTF8'),
                                 (select secret from chumbo.keys where name = 'request_state')))) $$;

-- an HS256 JWT of `payload`, signed with `secret` (chumbo accepts HS256 only when the setting
-- jwt_hs256_secret names the same secret)
create or replace function regress.hs256(payload jsonb, secret text default 'regress-secret',
                                         header jsonb default '{"alg":"HS256","typ":"JWT"}')
  returns text language sql immutable as $$
    with p as (select regress.b64url(convert_to(header::text, 'UTF8')) || '.' ||
                      regress.b64url(convert_to(payload::text, 'UTF8')) as signing_input)
    select signing_input || '.' ||
           regress.b64url(regress.hmac_sha256(convert_to(signing_input, 'UTF8'), convert_to(secret, 'UTF8')))
      from p $$;

-- One JSON-RPC request through chumbo.handle (the trusted caller's entry) with the given claims
-- (null: anon), and a tools/call of one tool.
create or replace function regress.rpc(claims jsonb, method text, params jsonb default '{}', id int default 1)
  returns jsonb language sql
  as $$ select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', id, 'method', method, 'params', params), claims) $$;
create or replace function regress.tool(claims jsonb, name text, args jsonb default '{}')
  returns jsonb language sql
  as $$ select regress.rpc(claims, 'tools/call', jsonb_build_object('name', name, 'arguments', args)) $$;

-- The projects fixture: a small multi-tenant app with Row Level Security, a frozen copy of the
-- example app's data model and seed (supabase/migrations, supabase/seed.sql) so tests keep their
-- names and ids but never change when the example app does. Names make a leak obvious:
--   Alice aaaaaaaa-0000-4000-8000-000000000001  member of Acme
--   Bob   bbbbbbbb-0000-4000-8000-000000000002  member of Globex
--   Carol cccccccc-0000-4000-8000-000000000003  member of nothing
-- Tables organizations, memberships, projects, documents (public), RLS forced, policies for
-- authenticated only; private.user_org_ids()/user_project_ids() (security definer, as Supabase
-- recommends) and private.complete_project_id() (a completion source). No capabilities: add
-- them with regress.fixture_tools(). Call it inside the test's transaction; idempotent.
create or replace function regress.fixture_projects() returns text language plpgsql as $fixture$
begin
  if to_regclass('public.projects') is null then
    execute $ddl$
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

insert into public.organizations (id, name) values
  ('a0000000-0000-4000-8000-000000000000', 'Acme'),
  ('b0000000-0000-4000-8000-000000000000', 'Globex');

insert into public.memberships (user_id, org_id, role) values
  ('aaaaaaaa-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000000', 'admin'),
  ('bbbbbbbb-0000-4000-8000-000000000002', 'b0000000-0000-4000-8000-000000000000', 'admin');

insert into public.projects (id, org_id, name, status, description) values
  ('a1000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000000', 'Acme Rocket', 'active', 'Acme rocket-powered roller skates'),
  ('a1000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000000', 'Acme Anvil', 'active', 'Acme portable anvil'),
  ('a1000000-0000-4000-8000-000000000003', 'a0000000-0000-4000-8000-000000000000', 'Acme Old Catapult', 'archived', 'Acme catapult, retired'),
  ('b1000000-0000-4000-8000-000000000001', 'b0000000-0000-4000-8000-000000000000', 'Globex Secret Plan', 'active', 'Globex plan to take over the east coast'),
  ('b1000000-0000-4000-8000-000000000002', 'b0000000-0000-4000-8000-000000000000', 'Globex Doomsday Device', 'active', 'Globex doomsday device'),
  ('b1000000-0000-4000-8000-000000000003', 'b0000000-0000-4000-8000-000000000000', 'Globex Retired Laser', 'archived', 'Globex laser, decommissioned');

insert into public.documents (id, project_id, title, body, created_by) values
  ('a2000000-0000-4000-8000-000000000001', 'a1000000-0000-4000-8000-000000000001', 'Acme Rocket launch checklist',
   'Fuel the Acme rocket, check the skates, launch at dawn. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('a2000000-0000-4000-8000-000000000002', 'a1000000-0000-4000-8000-000000000001', 'Acme Rocket budget',
   'Acme budget: 3 rockets, 1 coyote. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('a2000000-0000-4000-8000-000000000003', 'a1000000-0000-4000-8000-000000000002', 'Acme Anvil drop test',
   'Acme anvil dropped from 100 m: no damage to the anvil. Acme confidential.', 'aaaaaaaa-0000-4000-8000-000000000001'),
  ('b2000000-0000-4000-8000-000000000001', 'b1000000-0000-4000-8000-000000000001', 'Globex Secret Plan step 1',
   'Globex will acquire the east coast. Launch at midnight. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002'),
  ('b2000000-0000-4000-8000-000000000002', 'b1000000-0000-4000-8000-000000000001', 'Globex launch codes',
   'Globex launch codes: 0000. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002'),
  ('b2000000-0000-4000-8000-000000000003', 'b1000000-0000-4000-8000-000000000002', 'Globex Doomsday Device blueprint',
   'Globex doomsday device wiring. Globex confidential.', 'bbbbbbbb-0000-4000-8000-000000000002');
    $ddl$;
  end if;
  return format('%s organizations, %s projects, %s documents',
    (select count(*) from public.organizations), (select count(*) from public.projects),
    (select count(*) from public.documents));
end
$fixture$;

-- regress.fixture_tools(name, ...): the named capabilities of the projects fixture (created
-- first if missing), each executable by authenticated only, as the example app defines them:
--   tools     list_projects, search_documents, rename_project, create_document,
--             preference (state namespace "preferences"), export_project (rateLimit 3/min),
--             open_workspace (sandboxes at the fake provider "fakebox"; the stopper records
--             stops in private.fake_sandbox_stops)
--   resources project (app://projects/{id}), my_organizations (app://orgs/mine)
--   prompts   summarize_project (completions from private.complete_project_id), status_report
-- Returns the names created, so the expected output shows the test's surface.
create or replace function regress.fixture_tools(variadic names text[]) returns text[]
language plpgsql as $fixture$
declare
  n text;
begin
  perform regress.fixture_projects();
  foreach n in array names loop
    case n
    when 'list_projects' then
      execute $ddl$
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
      $ddl$;
    when 'search_documents' then
      execute $ddl$
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
      $ddl$;
    when 'rename_project' then
      execute $ddl$
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
      $ddl$;
    when 'create_document' then
      execute $ddl$
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
      $ddl$;
    when 'project' then
      execute $ddl$
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
      $ddl$;
    when 'my_organizations' then
      execute $ddl$
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
      $ddl$;
    when 'summarize_project' then
      execute $ddl$
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
      $ddl$;
    when 'status_report' then
      execute $ddl$
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
      $ddl$;
    when 'preference' then
      perform chumbo.configure(jsonb_build_object('state_namespaces',
        (select coalesce(jsonb_agg(distinct x), '[]') from (
           select jsonb_array_elements_text(coalesce(chumbo.configure('{}') -> 'state_namespaces', '[]')) x
           union select 'preferences') s)));
      execute $ddl$
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
      $ddl$;
    when 'export_project' then
      execute $ddl$
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
      $ddl$;
    when 'open_workspace' then
      if to_regclass('private.fake_sandbox_stops') is null then
        execute $ddl$
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
        $ddl$;
      end if;
      perform chumbo.configure('{"sandbox_stopper": "private.stop_fake_sandbox"}');
      execute $ddl$
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
      $ddl$;
    else
      raise exception 'regress.fixture_tools: no capability %', n;
    end case;
    execute format('revoke execute on function mcp.%I from public, anon', n);
    execute format('grant execute on function mcp.%I to authenticated', n);
  end loop;
  return names;
end
$fixture$;

-- Undo regress.fixture_projects()/fixture_tools() for the few tests that must commit their
-- fixture (other backends, e.g. a dblink connection, only see committed state): drops the
-- capabilities, tables and schema private the fixture made. Settings the fixture_tools of
-- preference/open_workspace changed are not restored: those tests must not commit them.
create or replace function regress.drop_fixture_projects() returns text language plpgsql
  set client_min_messages = warning as $fixture$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
            where n.nspname = 'mcp' and p.proname in ('list_projects', 'search_documents', 'rename_project',
              'create_document', 'project', 'my_organizations', 'summarize_project', 'status_report',
              'preference', 'export_project', 'open_workspace') loop
    execute format('drop function %s', f);
  end loop;
  drop table if exists public.documents, public.projects, public.memberships, public.organizations;
  drop schema if exists private cascade;
  return 'dropped';
end
$fixture$;
