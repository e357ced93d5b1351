#!/usr/bin/env bash
# Durable tasks run by chumbo's background workers (src/api/tasks.rs), on a cluster of its own
# started with shared_preload_libraries = 'chumbo' (the launcher that resumes tasks after a
# restart needs it; the workers themselves do not, and tests/regress tasks covers the fallback
# runner `call chumbo.run_tasks()`). Claims checked, each failing without what it checks:
#   - a worker runs a task with nobody calling run_tasks, as its creator (RLS), writes and result together;
#   - tasks/cancel stops the running statement at once, rolls its writes back, settles `cancelled`;
#   - an immediate stop while a task runs: after the restart (no client polling), a tool that is
#     not safe to run again fails with a clear error, a read-only one and one that declares
#     idempotentHint run again and complete (the latter's write kept once);
#   - an immediate stop just after a task was created: it is never lost, never run twice;
#   - a fast shutdown does not wait for a running task;
#   - a burst of 20 tasks from one user: at most task_workers workers at once, another user's call
#     is answered meanwhile, every task completes.
# Env: TASKS_PG_PORT (default: a free port).
set -euo pipefail
source "$(dirname "$0")/../../scripts/lib.sh"

source "$(dirname "$0")/../preloaded-cluster.sh"

pick_port TASKS_PG_PORT
crash() { ctl -m immediate stop; }
trap stop_if_running EXIT
preloaded_cluster tasks "$TASKS_PG_PORT"
"$ROOT/scripts/load-db.sh" "$PORT" chumbo_tasks app >/dev/null

q() { psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d chumbo_tasks "$@"; }
fails=0
check() { # what expected actual
  if [[ "$2" == "$3" ]]; then log "ok: $1"
  else printf 'FAIL: %s\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" >&2; fails=$((fails + 1)); fi
}
ALICE='{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
BOB='{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'

q <<'SQL'
create table public.task_probe (tag text not null, owner uuid not null default auth.uid());
alter table public.task_probe enable row level security;
create policy own on public.task_probe for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
grant select, insert on public.task_probe to authenticated;
-- writes, then waits: a task that is not safe to run again
create function mcp.task_write(tag text, seconds float8 default 0) returns text language plpgsql volatile as $$
begin
  insert into public.task_probe (tag) values (tag);
  perform pg_advisory_xact_lock_shared(4242);  -- the test holds it to keep the run waiting here
  perform pg_sleep(seconds);
  return 'wrote ' || tag;
end $$;
comment on function mcp.task_write(text, float8) is 'Writes, then waits @mcp {"task": "optional"}';
-- only reads: safe to run again
create function mcp.task_read(tag text) returns text language plpgsql stable as $$
begin
  perform pg_advisory_xact_lock_shared(4242);
  return 'read ' || tag || ' as ' || auth.uid();
end $$;
comment on function mcp.task_read(text) is 'Reads @mcp {"task": "optional"}';
-- writes, but says running it again is harmless: safe to run again after a crash
create function mcp.task_idempotent(tag text) returns text language plpgsql volatile as $$
begin
  insert into public.task_probe (tag) values (tag);
  perform pg_advisory_xact_lock_shared(4242);
  return 'wrote ' || tag || ' once';
end $$;
comment on function mcp.task_idempotent(text) is 'Writes, idempotent @mcp {"task": "optional", "annotations": {"idempotentHint": true}}';
create function mcp.task_ping() returns text language sql stable as $$ select 'pong' $$;
grant execute on function mcp.task_write(text, float8), mcp.task_read(text), mcp.task_idempotent(text), mcp.task_ping() to authenticated;
create function public.rpc(claims jsonb, method text, params jsonb) returns jsonb language sql as $$
  select chumbo.handle(jsonb_build_object('jsonrpc', '2.0', 'id', 1, 'method', method,
    'params', params || jsonb_build_object('_meta', jsonb_build_object(
      'io.modelcontextprotocol/protocolVersion', '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities', '{"extensions": {"io.modelcontextprotocol/tasks": {}}}'::jsonb))), claims) $$;
SQL

# create CLAIMS TOOL ARGS: a task's id
create() { q -c "select public.rpc('$1', 'tools/call', jsonb_build_object('name', '$2', 'arguments', '$3'::jsonb)) #>> '{result,taskId}'"; }
status() { q -c "select status from chumbo.tasks where id = '$1'"; }
# wait_status ID STATUS [SECONDS]: polls the row (not tasks/get: that would wake a worker)
wait_status() {
  for _ in $(seq $((${3:-15} * 10))); do [[ "$(status "$1")" == "$2" ]] && return 0; sleep 0.1; done
  return 1
}
running() { q -c "select runner_pid is not null from chumbo.tasks where id = '$1'"; }
wait_running() { for _ in $(seq 100); do [[ "$(running "$1")" == t ]] && return 0; sleep 0.1; done; return 1; }
probe() { q -c "select count(*) from public.task_probe where tag = '$1'"; }

# 1. a worker runs it, as Alice
t=$(create "$ALICE" task_write '{"tag": "plain"}')
wait_status "$t" completed || true
check "a background worker completed the task" completed "$(status "$t")"
check "its write is kept, as Alice's" "1 t" "$(q -c "select count(*), bool_and(owner = 'aaaaaaaa-0000-4000-8000-000000000001') from public.task_probe where tag = 'plain'" | tr '|' ' ')"
check "tasks/get inlines the result" "wrote plain" "$(q -c "select public.rpc('$ALICE', 'tasks/get', jsonb_build_object('taskId', '$t')) #>> '{result,result,content,0,text}'")"

# 2. cancel a running task: its statement stops, its write goes
t=$(create "$ALICE" task_write '{"tag": "cancelled", "seconds": 60}')
wait_running "$t" || true
sleep 0.3
started=$SECONDS
check "tasks/cancel acks" complete "$(q -c "select public.rpc('$ALICE', 'tasks/cancel', jsonb_build_object('taskId', '$t')) #>> '{result,resultType}'")"
for _ in $(seq 50); do
  [[ "$(q -c "select count(*) from pg_stat_activity where backend_type = 'chumbo task' and wait_event = 'PgSleep'")" == 0 ]] && break
  sleep 0.1
done
check "the running statement stopped within 5 s" yes "$( ((SECONDS - started <= 5)) && echo yes || echo no)"
check "the task is cancelled" cancelled "$(status "$t")"
sleep 0.5
check "its write was rolled back" 0 "$(probe cancelled)"
check "cancel again acks the same" complete "$(q -c "select public.rpc('$ALICE', 'tasks/cancel', jsonb_build_object('taskId', '$t')) #>> '{result,resultType}'")"

# 3. an immediate stop while tasks run (held at the advisory lock), then a restart nobody polls
hold() { # keeps lock 4242 in a session of its own until the crash ends it
  q -c "select pg_advisory_lock(4242)" -c "select pg_sleep(120)" >/dev/null 2>&1 &
  sleep 0.5
}
q -c "select chumbo.configure('{\"task_workers\": 3}')" >/dev/null   # the three runs at once
hold
tw=$(create "$ALICE" task_write '{"tag": "interrupted"}')
tr=$(create "$ALICE" task_read '{"tag": "again"}')
ti=$(create "$ALICE" task_idempotent '{"tag": "idempotent"}')
wait_running "$tw" || true
wait_running "$tr" || true
wait_running "$ti" || true
check "the three runs are held before the crash" "working working working" "$(status "$tw") $(status "$tr") $(status "$ti")"
crash
start
wait_status "$tw" failed 30 || true
check "after a crash, a tool not safe to run again fails (no poll needed)" failed "$(status "$tw")"
check "... with a clear error" t "$(q -c "select error ->> 'message' like '%not safe to run again%' from chumbo.tasks where id = '$tw'")"
check "... and nothing of it was kept" 0 "$(probe interrupted)"
wait_status "$tr" completed 30 || true
check "a read-only tool runs again and completes" completed "$(status "$tr")"
check "... as its creator" "read again as aaaaaaaa-0000-4000-8000-000000000001" "$(q -c "select result #>> '{content,0,text}' from chumbo.tasks where id = '$tr'")"
wait_status "$ti" completed 30 || true
check "a tool that declares idempotentHint runs again and completes" completed "$(status "$ti")"
check "... its write kept once (the cut-short run's was rolled back)" 1 "$(probe idempotent)"
q -c "select chumbo.configure('{\"task_workers\": null}')" >/dev/null

# 4. an immediate stop just after a task was created: never lost, never run twice
t=$(create "$ALICE" task_write '{"tag": "just-created"}')
crash
start
for _ in $(seq 300); do [[ "$(status "$t")" =~ ^(completed|failed)$ ]] && break; sleep 0.1; done
outcome="$(status "$t") $(probe just-created)"
case "$outcome" in
  "completed 1" | "failed 0") log "ok: a task created just before a crash settled exactly once ($outcome)" ;;
  *) printf 'FAIL: a task created just before a crash: %s (expected "completed 1" or "failed 0")\n' "$outcome" >&2; fails=$((fails + 1)) ;;
esac

# 5. a fast shutdown does not wait for a long task (its worker ends at once; the run is cut short)
t=$(create "$ALICE" task_write '{"tag": "shutdown", "seconds": 120}')
wait_running "$t" || true
started=$SECONDS
ctl -m fast stop
check "a fast shutdown with a task mid-statement took under 10 s" yes "$( ((SECONDS - started < 10)) && echo yes || echo "no ($((SECONDS - started)) s)")"
start
wait_status "$t" failed 30 || true
check "... and that task, not safe to run again, failed after the restart" failed "$(status "$t")"

# 6. a burst of 20 tasks from Alice: at most task_workers (2) workers, Bob is served meanwhile
ids=()
for n in $(seq 20); do ids+=("$(create "$ALICE" task_write "{\"tag\": \"burst\", \"seconds\": 0.2}")"); done
most=0 bob_ok=0
for _ in $(seq 40); do
  n=$(q -c "select count(*) from pg_stat_activity where backend_type = 'chumbo task'")
  ((n > most)) && most=$n
  [[ "$(q -c "select public.rpc('$BOB', 'tools/call', '{\"name\": \"task_ping\"}') #>> '{result,content,0,text}'")" == pong ]] && bob_ok=$((bob_ok + 1))
  sleep 0.1
done
check "at most task_workers workers ran at once" yes "$( ((most >= 1 && most <= 2)) && echo "yes" || echo "no ($most)")"
check "Bob's calls were answered during the burst" 40 "$bob_ok"
for id in "${ids[@]}"; do wait_status "$id" completed 30 || true; done
check "every task of the burst completed" 20 "$(q -c "select count(*) from chumbo.tasks where status = 'completed' and id in ($(printf "'%s'," "${ids[@]}" | sed 's/,$//'))")"
check "each ran once" 20 "$(probe burst)"

((fails == 0)) || { warn "tasks: $fails check(s) failed (server log: $DIR/server.log)"; exit 1; }
log "tasks: every check passed"
