-- Example app, part 4: a tool that takes a while, as a durable MCP task (README "Tasks").
--   @mcp {"task": "optional"}              a task when the client declared the tasks extension
--   "task_starts_in_request": true         runs in the request until chumbo.continue_as_task()
-- The task runs as the caller, like any call: RLS decides what the export holds.

create function mcp.build_project_report(project_id uuid, seconds double precision default 1)
returns jsonb language plpgsql stable set search_path = '' as $$
begin
  -- Everything before this line runs in the request; from here on, in the task.
  perform chumbo.continue_as_task();
  perform pg_catalog.pg_sleep(least(greatest(seconds, 0), 30));  -- the slow part, for the demo
  return (select jsonb_build_object('project', p.name,
                   'documents', (select pg_catalog.count(*) from public.documents d where d.project_id = p.id))
            from public.projects p where p.id = build_project_report.project_id);
end $$;
comment on function mcp.build_project_report(uuid, double precision) is
  'Builds a report on one of your projects: its name and how many documents it has (takes a while: a task when your client supports tasks). @mcp {"task": "optional", "task_starts_in_request": true, "timeoutMs": 60000}';
revoke execute on function mcp.build_project_report(uuid, double precision) from public, anon;
grant execute on function mcp.build_project_report(uuid, double precision) to authenticated;
