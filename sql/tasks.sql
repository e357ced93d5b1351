-- Durable MCP tasks (io.modelcontextprotocol/tasks, SEP-2663): src/call/task.rs keeps them,
-- src/api/tasks.rs runs them. Written and read only as the extension owner; anon/authenticated
-- have no access.

-- One task: the creator (principal digest, role, verified claims and the principal's parts, so a
-- worker can act as exactly that caller), the call's plan (src/call/plan.rs, serialised), its
-- state and its outcome. A task that has not finished never expires (its runs have time bounds);
-- a finished one is deleted ttl_ms after it finished.
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
