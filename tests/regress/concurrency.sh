#!/usr/bin/env bash
# Concurrency isolation test: Alice (Acme) and Bob (Globex) call the example app's capabilities
# at the same time from separate sessions through chumbo.handle, a third session alternates
# between them on one backend (per-backend caches must be keyed by role and claims, not shared),
# and a fourth alternates through chumbo.mcp exactly as PostgREST calls it (SET LOCAL ROLE and
# request.jwt.claims per transaction). Hundreds of calls
# each; fails if any answer to one user contains the other organization's data, or if an answer
# is missing the user's own data (so an all-errors run cannot pass).
# The sessions provably overlap: each one's first statement waits on an advisory lock this script
# holds, released only once pg_locks shows all four waiting (a barrier, not a pause); each session
# then prints when its first call started and its last call ended, and the four intervals must
# intersect (the last session to start began before the first one to finish had finished).
#
# Needs a database with the example app loaded (compat/roles.sql, migrations, seed), e.g.
# `scripts/load-db.sh PORT chumbo_concurrency app` (scripts/test.sh does that; the regression
# database is bare). Connection from the environment: PGHOST, PGPORT, PGDATABASE
# (default chumbo_concurrency), PGUSER (default postgres; must be allowed to call chumbo.handle).
# CALLS=N sets the calls per session (default 300).
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGDATABASE="${PGDATABASE:-chumbo_concurrency}"
export PGUSER="${PGUSER:-postgres}"
CALLS="${CALLS:-400}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

ALICE='{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
BOB='{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'

# The requests a session cycles through (all read-only; every answer mentions the caller's org).
REQUESTS=(
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}'
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_documents","arguments":{"query":"confidential","limit":50}}}'
  '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"app://orgs/mine"}}'
  '{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"status_report","arguments":{"status":"active"}}}'
  '{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"summarize_project"},"argument":{"name":"project_id","value":""}}}'
  '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_projects","arguments":{"status":"archived"}}}'
)

# check(claims, user): one SQL statement per call (own transaction) that prints ok/LEAK/MISSING.
check_sql() {
  local claims="$1" who="$2" body="$3" own bad
  if [[ "$who" == alice ]]; then own="(Acme|a1000000-)"; bad="(Globex|b[0-2]000000-)"
  else own="(Globex|b1000000-)"; bad="(Acme|a[0-2]000000-)"; fi
  printf "select case when r ~ '%s' then 'LEAK %s ' || left(r, 300) when r !~ '%s' then 'MISSING %s ' || left(r, 300) else 'ok' end from (select chumbo.handle('%s'::jsonb, '%s'::jsonb)::text) x(r);\n" \
    "$bad" "$who" "$own" "$who" "$body" "$claims"
}

# The same check through the PostgREST entry: one transaction per call, role and claims local.
check_sql_postgrest() {
  local claims="$1" who="$2" body="$3" own bad
  if [[ "$who" == alice ]]; then own="(Acme|a1000000-)"; bad="(Globex|b[0-2]000000-)"
  else own="(Globex|b1000000-)"; bad="(Acme|a[0-2]000000-)"; fi
  printf "begin;\nset local role authenticated;\nset local request.jwt.claims = '%s';\nset local request.headers = '{\"content-type\":\"application/json\",\"accept\":\"application/json, text/event-stream\",\"mcp-protocol-version\":\"2025-06-18\"}';\n" "$claims"
  printf "select case when r ~ '%s' then 'LEAK %s ' || left(r, 300) when r !~ '%s' then 'MISSING %s ' || left(r, 300) else 'ok' end from (select chumbo.mcp('%s'::jsonb)::text) x(r);\ncommit;\n" \
    "$bad" "$who" "$own" "$who" "$body"
}

gen() {  # gen <file> <mode: alice|bob|both|postgrest>
  local file="$1" mode="$2" i who claims body
  : > "$file"
  for ((i = 0; i < CALLS; i++)); do
    body="${REQUESTS[$((i % ${#REQUESTS[@]}))]}"
    case "$mode" in
      alice) who=alice ;;
      bob)   who=bob ;;
      both|postgrest) if ((i % 2)); then who=bob; else who=alice; fi ;;
    esac
    if [[ "$who" == alice ]]; then claims="$ALICE"; else claims="$BOB"; fi
    if [[ "$mode" == postgrest ]]; then check_sql_postgrest "$claims" "$who" "$body" >> "$file"
    else check_sql "$claims" "$who" "$body" >> "$file"; fi
  done
}

psql -X -q -v ON_ERROR_STOP=1 -c "select 1" >/dev/null || { echo "concurrency: cannot connect" >&2; exit 1; }
# The fourth session calls the PostgREST entry, an opt-in.
psql -X -q -v ON_ERROR_STOP=1 -c "select chumbo.grant_postgrest()" >/dev/null

gen "$WORK/alice.sql" alice
gen "$WORK/bob.sql" bob
gen "$WORK/both.sql" both
gen "$WORK/postgrest.sql" postgrest

# The barrier: every session waits on lock 74400 (shared) before its first call and prints its
# start; after its last call, its end (microseconds since the epoch).
BARRIER=74400
for s in alice bob both postgrest; do
  { echo "select 'started ' || (extract(epoch from clock_timestamp()) * 1000000)::bigint from (select pg_advisory_xact_lock_shared($BARRIER)) b;"
    cat "$WORK/$s.sql"
    echo "select 'ended ' || (extract(epoch from clock_timestamp()) * 1000000)::bigint;"
  } > "$WORK/$s.barrier.sql"
done
coproc HOLD { psql -X -q -A -t -v ON_ERROR_STOP=1; }
# shellcheck disable=SC2153  # HOLD_PID is set by coproc HOLD
hold_pid=$HOLD_PID
echo "select 'held' from (select pg_advisory_lock($BARRIER)) l;" >&"${HOLD[1]}"
read -r line <&"${HOLD[0]}"; [[ "$line" == held ]] || { echo "concurrency: could not take the barrier lock" >&2; exit 1; }

pids=()
for s in alice bob both postgrest; do
  psql -X -q -A -t -v ON_ERROR_STOP=1 -f "$WORK/$s.barrier.sql" > "$WORK/$s.out" 2> "$WORK/$s.err" &
  pids+=($!)
done
waiting=0
for _ in $(seq 1 300); do   # bounded: 300 polls of pg_locks, not a timing assertion
  waiting="$(psql -X -q -A -t -c "select count(*) from pg_locks where locktype = 'advisory' and objid = $BARRIER and objsubid = 1 and not granted and database = (select oid from pg_database where datname = current_database())")"
  ((waiting >= 4)) && break
  sleep 0.1
done
echo "select pg_advisory_unlock($BARRIER); \\q" >&"${HOLD[1]}"
wait "$hold_pid" 2>/dev/null || true
fail=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || fail=1
done
if ((waiting < 4)); then
  fail=1
  echo "concurrency: only $waiting of 4 sessions reached the barrier together" >&2
fi
# intervals: the latest start must come before the earliest end
last_start=0 first_end=""
for s in alice bob both postgrest; do
  started="$(sed -n 's/^started //p' "$WORK/$s.out")" ended="$(sed -n 's/^ended //p' "$WORK/$s.out")"
  if [[ -z "$started" || -z "$ended" ]]; then fail=1; echo "concurrency: session $s printed no start or end" >&2; continue; fi
  ((started > last_start)) && last_start=$started
  if [[ -z "$first_end" ]] || ((ended < first_end)); then first_end=$ended; fi
done
if [[ -n "$first_end" ]] && ((last_start < first_end)); then
  overlap_ms=$(((first_end - last_start) / 1000))
else
  fail=1
  echo "concurrency: the sessions did not overlap (latest start $last_start, earliest end ${first_end:-none})" >&2
fi

total=0
for s in alice bob both postgrest; do
  oks=$(grep -c '^ok$' "$WORK/$s.out" || true)
  total=$((total + oks))
  if [[ "$oks" -ne "$CALLS" ]]; then
    fail=1
    echo "concurrency: session $s: $oks of $CALLS answers ok" >&2
    grep -v '^ok$' "$WORK/$s.out" | head -n 5 >&2 || true
    head -n 5 "$WORK/$s.err" >&2 || true
  fi
done

if [[ "$fail" -ne 0 ]]; then
  echo "concurrency: FAILED" >&2
  exit 1
fi
echo "concurrency: ok ($total calls in 4 sessions released together from a barrier, all four running together for $overlap_ms ms, no cross-organization data)"
