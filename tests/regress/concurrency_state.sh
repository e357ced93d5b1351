#!/usr/bin/env bash
# Concurrency tests of durable state, rate limits and sandboxes with real parallel sessions
# (pgbench, scripts in tests/regress/pgbench/):
#   1. 16 writers do compare-and-set increments of one key of Alice's through a tool
#      (chumbo.state_get + chumbo.state_put with expected_revision, retried on revision_conflict):
#      no update is lost (value = revision = number of calls) and there was contention.
#   2. 32 clients against a limit of N per window get exactly N successes: chumbo._rate_hit as the
#      owner, and through a tool with @mcp {"rateLimit": {"perMinute": N}} called as Bob. Every
#      client's first transaction waits at a barrier (an advisory lock this script holds, let go
#      only once pg_locks shows all 32 waiting), so all 32 are inside a transaction together
#      before any counts: the limit is proven under real contention, not under serial calls.
#   3. two sandbox_idle_stop jobs at once never stop the same sandbox twice: the stopper records
#      every call; each of the idle sandboxes is stopped exactly once, and both jobs did work. The
#      first stopper call of each job session waits until the other job is running too (an advisory
#      lock every call holds for its job shows it), so the jobs provably overlap: the recorded times
#      of two jobs of different sessions intersect.
#   4. 8 sessions of Alice's registering the same provider sandbox at once all get the same id
#      (the loser of the insert race finds the winner's row instead of failing). The same barrier:
#      all 8 first calls hold their statement's snapshot before any of them commits.
#
# Needs a database with chumbo and Supabase's roles (compat/roles.sql), e.g. the example app's
# from `scripts/load-db.sh PORT chumbo_concurrency app` (scripts/test.sh) or the bare one
# tests/regress/run.sh creates. Connection from the environment: PGHOST, PGPORT, PGDATABASE (default chumbo_concurrency),
# PGUSER (default postgres; must be the extension owner or a superuser). Everything it creates is
# removed at the end, and the settings are restored.
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGDATABASE="${PGDATABASE:-chumbo_concurrency}"
export PGUSER="${PGUSER:-postgres}"
HERE="$(cd "$(dirname "$0")" && pwd)"
BENCH="$HERE/pgbench"
q() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
fail=0
check() { # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "concurrency_state: ok   $1 ($3)"
  else echo "concurrency_state: FAIL $1: expected $2, got $3" >&2; fail=1; fi
}
bench() { # bench SCRIPT CLIENTS TRANSACTIONS [pgbench args]: fails on any aborted client
  local script="$1" c="$2" t="$3"; shift 3
  local out
  if ! out="$(pgbench -n -M simple -c "$c" -j "$c" -t "$t" "$@" -f "$BENCH/$script" 2>&1)"; then
    echo "$out" | tail -n 15 >&2
    echo "concurrency_state: FAIL pgbench $script" >&2
    fail=1
    return 0
  fi
  echo "$out" | grep -E '^(number of transactions actually processed|number of failed)' | sed "s/^/  [$script] /" || true
}

# barrier_bench KEY SCRIPT CLIENTS TRANSACTIONS [pgbench args]: bench, with advisory lock KEY
# (bigint, exclusive) held by this script until CLIENTS sessions wait on it (the scripts take it
# shared at the start of each transaction); checks that they all did.
barrier_bench() {
  local key="$1" script="$2" c="$3" t="$4" waiting=0 bench_pid hold_pid line
  shift 4
  coproc HOLD { PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -v ON_ERROR_STOP=1; }
  # shellcheck disable=SC2153  # HOLD_PID is set by coproc HOLD
  hold_pid=$HOLD_PID
  echo "select 'held' from (select pg_advisory_lock($key)) l;" >&"${HOLD[1]}"
  read -r line <&"${HOLD[0]}"; [[ "$line" == held ]] || { echo "concurrency_state: no barrier lock" >&2; exit 1; }
  (bench "$script" "$c" "$t" -D barrier="$key" "$@"; exit "$fail") &   # bench reports a failure in $fail
  bench_pid=$!
  for _ in $(seq 1 300); do   # bounded: 300 polls of pg_locks, not a timing assertion
    waiting="$(q -c "select count(*) from pg_locks where locktype = 'advisory' and objid = $key and objsubid = 1 and not granted
                       and database = (select oid from pg_database where datname = current_database())")"
    ((waiting >= c)) && break
    sleep 0.1
  done
  echo "select pg_advisory_unlock($key); \\q" >&"${HOLD[1]}"
  wait "$hold_pid" 2>/dev/null || true
  wait "$bench_pid" || fail=1
  check "$script: clients waiting together at the barrier" "$c" "$waiting"
}

q -c "select 1" >/dev/null || { echo "concurrency_state: cannot connect" >&2; exit 1; }
saved_settings="$(q -c "select value::text from chumbo.settings")"

cleanup() {
  q <<SQL || true
drop function if exists mcp.conc_incr(), mcp.conc_limited(), mcp.conc_register();
drop schema if exists state_conc cascade;
delete from chumbo.state_entries where namespace = 'conc';
delete from chumbo.sandboxes where provider = 'conc-fake';
delete from chumbo.rate_counters where bucket like 'conc-%' or bucket like 'tool:conc_limited:%';
update chumbo.settings set value = \$settings\$$saved_settings\$settings\$::jsonb;
SQL
}
trap cleanup EXIT
cleanup

RATE_N=50 TOOL_N=40
q <<SQL
create schema state_conc;
create table state_conc.incr_log (attempts int, is_error boolean);
create table state_conc.hits (result int);
create table state_conc.tool_calls (is_error boolean);
create table state_conc.registers (result text);
create table state_conc.stop_calls (provider text, provider_sandbox_id text, backend int,
  job xid8 default pg_current_xact_id(), lock_held_since timestamptz, at timestamptz default clock_timestamp());
-- The application's stopper: records the call and takes a little time, like a provider API would.
-- Every call holds a shared advisory lock until its job (transaction) ends, so each job can see
-- that the other one is running; the first call in each session waits for that (bounded: 30 s,
-- after which the overlap check below fails instead of the run hanging).
create function state_conc.stop(provider text, provider_sandbox_id text) returns void language plpgsql as \$\$
declare
  polls int := 0;
  held_since timestamptz;
begin
  perform pg_advisory_xact_lock_shared(74201);
  held_since := clock_timestamp();
  if not exists (select from state_conc.stop_calls c where c.backend = pg_backend_pid()) then
    while (select count(distinct l.pid) from pg_locks l
            where l.locktype = 'advisory' and l.database = (select oid from pg_database where datname = current_database())
              and l.classid = 0 and l.objid = 74201 and l.objsubid = 1 and l.granted) < 2
          and polls < 3000 loop
      perform pg_sleep(0.01);
      polls := polls + 1;
    end loop;
  end if;
  insert into state_conc.stop_calls (provider, provider_sandbox_id, backend, lock_held_since)
    values (provider, provider_sandbox_id, pg_backend_pid(), held_since);
  perform pg_sleep(0.003);
end \$\$;
update chumbo.settings set value = value
  || jsonb_build_object('state_namespaces', coalesce(value -> 'state_namespaces', '[]') || '["conc"]',
                        'sandbox_stopper', 'state_conc.stop');

-- A compare-and-set increment, retried on revision_conflict; returns the attempts it took.
create function mcp.conc_incr() returns jsonb language plpgsql as \$\$
declare
  cur jsonb;
  attempts int := 0;
begin
  loop
    attempts := attempts + 1;
    cur := chumbo.state_get('conc', 'counter');
    begin
      perform chumbo.state_put('conc', 'counter', to_jsonb(coalesce((cur ->> 'value')::bigint, 0) + 1),
                               coalesce((cur ->> 'revision')::bigint, 0));
      return jsonb_build_object('attempts', attempts);
    exception when serialization_failure then
      if attempts >= 1000 then raise; end if;
    end;
  end loop;
end \$\$;
revoke execute on function mcp.conc_incr() from public;
grant execute on function mcp.conc_incr() to authenticated;

create function mcp.conc_limited() returns text language sql as \$\$ select 'ok' \$\$;
comment on function mcp.conc_limited() is 'Limited. @mcp {"rateLimit": {"perMinute": $TOOL_N}}';
revoke execute on function mcp.conc_limited() from public;
grant execute on function mcp.conc_limited() to authenticated;

create function mcp.conc_register() returns uuid language sql as \$\$
  select chumbo.sandbox_register('conc-fake', 'shared-' || current_setting('state_conc.run'), 'conc-tenant')
\$\$;
revoke execute on function mcp.conc_register() from public;
grant execute on function mcp.conc_register() to authenticated;
SQL

# 1. CAS increments: 16 writers x 25 calls on one key.
WRITERS=16 CALLS=25
bench state_cas_increment.sql "$WRITERS" "$CALLS"
read -r value revision < <(q -F ' ' -c "select e.value, e.revision from chumbo.state_entries e where e.namespace = 'conc' and e.key = 'counter'")
read -r calls errors attempts < <(q -F ' ' -c "select count(*), count(*) filter (where is_error), coalesce(sum(attempts), 0) from state_conc.incr_log")
check "CAS increments: calls" "$((WRITERS * CALLS))" "$calls"
check "CAS increments: failed calls" 0 "$errors"
check "CAS increments: final value (no lost update)" "$((WRITERS * CALLS))" "$value"
check "CAS increments: revision (one write per increment)" "$((WRITERS * CALLS))" "$revision"
if ((attempts > calls)); then echo "concurrency_state: ok   CAS increments: contention ($((attempts - calls)) revision conflicts retried)"
else echo "concurrency_state: FAIL CAS increments: no revision conflict at all, the writers did not overlap" >&2; fail=1; fi

# 2a. _rate_hit: 32 clients x 10 hits against a limit of RATE_N.
RUN="$(date +%s%N)"
barrier_bench 74402 rate_hit.sql 32 10 -D run="$RUN" -D limit="$RATE_N"
check "rate limit (_rate_hit): successes of 320 hits" "$RATE_N" "$(q -c "select count(*) filter (where result = 0) from state_conc.hits")"
check "rate limit (_rate_hit): every refusal says when to retry" 0 "$(q -c "select count(*) filter (where result <> 0 and result < 1) from state_conc.hits")"
check "rate limit (_rate_hit): counter" "$RATE_N" "$(q -c "select hits from chumbo.rate_counters where bucket = 'conc-$RUN'")"

# 2b. the same through a tool limited per minute (the script pins the time inside one window).
barrier_bench 74403 rate_limited_tool.sql 32 5
check "rate limit (tool, perMinute $TOOL_N): successes of 160 calls" "$TOOL_N" "$(q -c "select count(*) filter (where not is_error) from state_conc.tool_calls")"

# 3. two idle-stop jobs at once over 300 idle sandboxes.
SANDBOXES=300
q -c "insert into chumbo.sandboxes (provider, provider_sandbox_id, owner, tenant, idle_seconds, last_used_at)
      select 'conc-fake', 'sb-' || i, 'conc-owner', 'conc-tenant', 60, clock_timestamp() - interval '1 hour'
        from generate_series(1, $SANDBOXES) i"
bench sandbox_idle_stop.sql 2 25
read -r stops distinct_stops backends < <(q -F ' ' -c "select count(*), count(distinct provider_sandbox_id), count(distinct backend) from state_conc.stop_calls")
check "idle stop: stopper calls" "$SANDBOXES" "$stops"
check "idle stop: distinct sandboxes stopped (none twice)" "$SANDBOXES" "$distinct_stops"
check "idle stop: still running" 0 "$(q -c "select count(*) from chumbo.sandboxes where provider = 'conc-fake' and status = 'running'")"
check "idle stop: both jobs stopped some" 2 "$backends"
check "idle stop: every sandbox stopped cleanly (status, stopped_at, no error, no retry)" "$SANDBOXES" \
  "$(q -c "select count(*) from chumbo.sandboxes where provider = 'conc-fake' and status = 'stopped' and stopped_at is not null and last_error is null and attempts = 0")"
# Overlap: a job of one session and a job of the other were stopping sandboxes at the same time
# (from its first stopper call taking the lock to its last recorded stop). The barrier makes this
# hold by construction: both first jobs hold the lock at the moment the later of them took it.
# Jobs that only ran one after the other (say, serialized by a lock) would not intersect.
check "idle stop: jobs of both sessions overlapped in time" t "$(q -c "
  with jobs as (select backend, job, min(lock_held_since) as started, max(at) as last_call from state_conc.stop_calls group by 1, 2)
  select exists (select from jobs a join jobs b on a.backend < b.backend
                  where a.started <= b.last_call and b.started <= a.last_call)")"

# 4. concurrent registrations of one provider sandbox by its owner.
q -c "alter database \"$PGDATABASE\" set state_conc.run = '$RUN'"
barrier_bench 74404 sandbox_register.sql 8 5
q -c "alter database \"$PGDATABASE\" reset state_conc.run"
read -r registrations ids < <(q -F ' ' -c "select count(*), count(distinct result) from state_conc.registers")
check "concurrent registration: calls" 40 "$registrations"
check "concurrent registration: one sandbox id for all" 1 "$ids"
check "concurrent registration: answers are ids" 0 "$(q -c "select count(*) from state_conc.registers where result !~ '^[0-9a-f-]{36}$'")"

if ((fail)); then echo "concurrency_state: FAILED" >&2; exit 1; fi
echo "concurrency_state: ok"
