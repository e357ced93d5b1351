#!/usr/bin/env bash
# Exactly-once under real concurrency (issue 13, 5): 16 pgbench clients retry one idempotent
# call of Alice's (same key, same arguments) 10 times each, all at once. The tool ran exactly
# once: one write, one stored outcome, exactly one answer "ran"; every other answer is either
# the stored result (the same text) or "in progress"; none is an error of another kind. The tool
# waits on a lock this script holds until all 16 clients have tried once, so the retries
# provably overlap the first call (pg_locks shows the waiting one).
#
# Needs a database with chumbo and Supabase's roles (scripts/test.sh runs it against
# chumbo_concurrency). Connection from the environment: PGHOST, PGPORT, PGDATABASE (default
# chumbo_concurrency), PGUSER (default postgres). Everything it creates is removed at the end.
set -euo pipefail
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGDATABASE="${PGDATABASE:-chumbo_concurrency}"
export PGUSER="${PGUSER:-postgres}"
HERE="$(cd "$(dirname "$0")" && pwd)"
q() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
fail=0
check() { # check NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "concurrency_idempotency: ok   $1 ($3)"
  else echo "concurrency_idempotency: FAIL $1: expected $2, got $3" >&2; fail=1; fi
}
q -c "select 1" >/dev/null || { echo "concurrency_idempotency: cannot connect" >&2; exit 1; }
cleanup() {
  q <<'SQL' || true
drop function if exists mcp.conc_once(int);
drop schema if exists once_conc cascade;
delete from chumbo.idempotency_outcomes where tool = 'conc_once';
SQL
}
trap cleanup EXIT
cleanup
q <<'SQL'
create schema once_conc;
create table once_conc.ledger (amount int);
create table once_conc.answers (status text, text text);
grant usage on schema once_conc to authenticated;
grant insert, select on once_conc.ledger to authenticated;
create function mcp.conc_once(amount int) returns text language plpgsql as $$
begin
  perform pg_advisory_xact_lock_shared(74301);   -- held by this script until the retries overlap
  insert into once_conc.ledger values (amount);
  return 'charged ' || amount;
end $$;
revoke execute on function mcp.conc_once(int) from public;
grant execute on function mcp.conc_once(int) to authenticated;
SQL

# Hold the tool's lock, start the 16 clients, let go once a call is provably running (waiting on
# the lock) and 16 answers or more are logged (everyone else was told "in progress").
coproc HOLD { PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -v ON_ERROR_STOP=1; }
# shellcheck disable=SC2153  # HOLD_PID is set by coproc HOLD
hold_pid=$HOLD_PID
echo "select 'held' from (select pg_advisory_lock(74301)) l;" >&"${HOLD[1]}"
read -r line <&"${HOLD[0]}"; [[ "$line" == held ]] || { echo "concurrency_idempotency: no lock" >&2; exit 1; }
out="$(mktemp)"
pgbench -n -M simple -c 16 -j 16 -t 10 -f "$HERE/pgbench/idempotent_call.sql" > "$out" 2>&1 &
bench=$!
for _ in $(seq 1 600); do
  waiting="$(q -c "select count(*) from pg_locks where locktype = 'advisory' and objid = 74301 and not granted")"
  answered="$(q -c "select count(*) from once_conc.answers")"
  ((waiting >= 1 && answered >= 15)) && break
  # bounded: 600 polls of the state, not a timing assertion
  sleep 0.1
done
echo "select pg_advisory_unlock(74301); \\q" >&"${HOLD[1]}"
wait "$bench" || { tail -n 15 "$out" >&2; echo "concurrency_idempotency: FAIL pgbench" >&2; fail=1; }
rm -f "$out"
wait "$hold_pid" 2>/dev/null || true

check "tool ran once (ledger rows)" 1 "$(q -c "select count(*) from once_conc.ledger")"
check "stored outcomes" 1 "$(q -c "select count(*) from chumbo.idempotency_outcomes where tool = 'conc_once'")"
check "answers" 160 "$(q -c "select count(*) from once_conc.answers")"
check "answers that ran the tool" 1 "$(q -c "select count(*) from once_conc.answers where status = 'ran'")"
check "replays with the first answer's text" 1 "$(q -c "select count(distinct text) from once_conc.answers where status in ('ran', 'replayed')")"
check "other answers" 0 "$(q -c "select count(*) from once_conc.answers where status not in ('ran', 'replayed', 'in_progress')")"
check "retries told in progress while it ran (at least 15)" t "$(q -c "select count(*) >= 15 from once_conc.answers where status = 'in_progress'")"
exit "$fail"
