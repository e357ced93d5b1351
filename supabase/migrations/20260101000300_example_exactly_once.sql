-- Example app, part 3 (issue 13): what the model sees, and writes that happen exactly once.
--   @mcp {"model_output": "schema.fn"}      the model gets the function's view of a result
--   @mcp {"idempotency_key": "param"}       a retried call with the same key runs once
--   _meta {"io.chumbo/idempotency-key": k}  the same for any tool that is not read-only
--   setting error_projection                the application rephrases or redacts its errors

-------------------------------------------------------------------------------------------------
-- Projection: the documents of a project, of which the model sees counts and titles only (never
-- the bodies). The projection runs as the caller, like the tool, so RLS applies to it too.
-------------------------------------------------------------------------------------------------

create function private.document_overview(result jsonb)
  returns jsonb
  language sql stable
  set search_path = ''
as $$
  select jsonb_build_object(
    'documents', jsonb_array_length(result -> 'rows'),
    'titles', coalesce((select jsonb_agg(r ->> 'title' order by r ->> 'title') from jsonb_array_elements(result -> 'rows') r), '[]'),
    'truncated', coalesce((result ->> 'truncated')::boolean, false))
$$;
revoke execute on function private.document_overview(jsonb) from public;
grant execute on function private.document_overview(jsonb) to authenticated;

create function mcp.project_documents(project_id uuid)
  returns setof public.documents
  language sql stable
  set search_path = ''
as $$
  select d.* from public.documents d where d.project_id = project_documents.project_id order by d.title collate "C"
$$;
comment on function mcp.project_documents(uuid) is
  'An overview of the documents of one of your projects: how many, and their titles. @mcp {
    "title": "Project documents",
    "model_output": "private.document_overview",
    "outputSchema": {"type": "object", "properties": {
      "documents": {"type": "integer"}, "titles": {"type": "array", "items": {"type": "string"}},
      "truncated": {"type": "boolean"}}, "required": ["documents", "titles"]},
    "params": {"project_id": {"description": "Id of the project (see list_projects)."}}
  }';
revoke execute on function mcp.project_documents(uuid) from public;
grant execute on function mcp.project_documents(uuid) to authenticated;

-------------------------------------------------------------------------------------------------
-- Exactly once: post a note to a project. A client that retries after a timeout passes the same
-- request_id (or _meta io.chumbo/idempotency-key) and gets the first call's answer back; the
-- note is written once.
-------------------------------------------------------------------------------------------------

create function mcp.post_note(project_id uuid, text text, request_id text default null)
  returns jsonb
  language plpgsql volatile
  set search_path = ''
as $$
declare
  result jsonb;
begin
  if not exists (select from public.projects p where p.id = post_note.project_id) then
    raise exception 'project not found';
  end if;
  insert into public.documents as d (project_id, title, body)
  values (post_note.project_id, 'Note', post_note.text)
  returning jsonb_build_object('id', d.id, 'project_id', d.project_id,
    'notes', (select count(*) + 1 from public.documents n where n.project_id = post_note.project_id and n.title = 'Note'))
  into result;
  return result;
end
$$;
comment on function mcp.post_note(uuid, text, text) is
  'Post a note to one of your projects. Retrying with the same request_id does not post it twice. @mcp {
    "title": "Post note",
    "idempotency_key": "request_id",
    "annotations": {"destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    "params": {
      "project_id": {"description": "Id of the project (see list_projects)."},
      "text": {"description": "The note.", "minLength": 1, "maxLength": 2000},
      "request_id": {"description": "Any unique string; a retry with the same one is answered without posting again.", "maxLength": 255}
    }
  }';
revoke execute on function mcp.post_note(uuid, text, text) from public;
grant execute on function mcp.post_note(uuid, text, text) to authenticated;
