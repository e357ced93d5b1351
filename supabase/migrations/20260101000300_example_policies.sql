-- Tool policies (chumbo issue 13) in the example app: a destructive tool that needs the user's
-- approval and runs only for a project the caller can archive.

-- Execution predicate, run as the caller before every execution (and again after the approval):
-- RLS decides which projects the caller sees; an already archived project is refused with a
-- message the model can act on.
create function private.may_archive_project(args jsonb)
  returns boolean
  language plpgsql stable
  set search_path = ''
as $$
declare
  current_status text;
begin
  select p.status into current_status from public.projects p where p.id = (args->>'project_id')::uuid;
  if current_status is null then
    raise exception 'project not found';
  end if;
  if current_status = 'archived' then
    raise exception 'project is already archived';
  end if;
  return true;
end
$$;
revoke execute on function private.may_archive_project(jsonb) from public;
grant execute on function private.may_archive_project(jsonb) to authenticated;

-- Tool (destructive): archive a project, after the user approved exactly this call.
create function mcp.archive_project(project_id uuid)
  returns jsonb
  language sql volatile
  set search_path = ''
as $$
  update public.projects p
     set status = 'archived', updated_at = now()
   where p.id = archive_project.project_id
  returning jsonb_build_object('id', p.id, 'name', p.name, 'status', p.status)
$$;
comment on function mcp.archive_project(uuid) is
  'Archive one of your projects (it leaves the active list). Needs the user''s approval. @mcp {
    "title": "Archive project",
    "annotations": {"destructiveHint": true, "idempotentHint": true, "openWorldHint": false},
    "params": {"project_id": {"description": "Id of the project (see list_projects)."}},
    "can_execute": "private.may_archive_project",
    "approval": true
  }';
revoke execute on function mcp.archive_project(uuid) from public, anon;
grant execute on function mcp.archive_project(uuid) to authenticated;
