#!/usr/bin/env bash
# Issue 9 (7): fairness across connections. A principal may have at most max_in_flight (4)
# requests running at once, whichever connections carry them: Alice's fifth concurrent call is
# answered 429 with Retry-After at once, while Bob (another principal) is served. Four sessions
# hold slow calls (PostgREST's contract: SET LOCAL ROLE + request.jwt.claims, then chumbo.mcp);
# the test waits until all four are running, checks, then cancels them. No fixed sleeps.
#
# Needs the example app database (`scripts/load-db.sh PORT chumbo_concurrency app`, as
# scripts/test.sh does). Connection from PGHOST, PGPORT, PGDATABASE (default chumbo_concurrency),
# PGUSER (default postgres).
set -euo pipefail
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGDATABASE="${PGDATABASE:-chumbo_concurrency}"
export PGUSER="${PGUSER:-postgres}"
WORK="$(mktemp -d)"
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
cleanup() {
  q -c "select pg_cancel_backend(pid) from pg_stat_activity where query like '%inflight_nap_%' and pid <> pg_backend_pid()" >/dev/null || true
  wait || true
  q -c "drop function if exists mcp.inflight_nap(float8)" >/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

ALICE='{"sub":"aaaaaaaa-0000-4000-8000-000000000001","role":"authenticated"}'
BOB='{"sub":"bbbbbbbb-0000-4000-8000-000000000002","role":"authenticated"}'
q -c "create or replace function mcp.inflight_nap(seconds float8) returns text language sql volatile as \$\$ select pg_sleep(seconds)::text || 'awake' \$\$;
      grant execute on function mcp.inflight_nap(float8) to authenticated;
      select chumbo.configure('{\"max_in_flight\": 4}');" >/dev/null

# call CLAIMS BODY: prints "<status> <body>" as PostgREST would see them
call_sql() {
  printf "begin; set local role authenticated; select set_config('request.jwt.claims', '%s', true) \\\\g /dev/null\n select coalesce(current_setting('response.status', true), '200') || ' ' || coalesce(chumbo.mcp('%s'::jsonb)::text, ''); commit;\n" "$1" "$2"
}
NAP='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inflight_nap","arguments":{"seconds":120}}}'
for i in 1 2 3 4; do
  (call_sql "$ALICE" "$NAP" | q > "$WORK/nap$i" 2>&1 || true) &
done
for _ in $(seq 1 300); do
  running="$(q -c "select count(*) from pg_stat_activity where state = 'active' and query like '%inflight_nap_%' and pid <> pg_backend_pid()")"
  [[ "$running" == 4 ]] && break
  sleep 0.1
done
[[ "$running" == 4 ]] || fail "the four slow calls did not start (running: $running)"

# response.status is set by chumbo.mcp in the same statement: read it in the next one
status_of() {
  q <<SQL
begin;
set local role authenticated;
select set_config('request.jwt.claims', '$1', true) \g /dev/null
select chumbo.mcp('$2'::jsonb) \g /dev/null
select coalesce(current_setting('response.status', true), '200') || ' ' || coalesce(current_setting('response.headers', true), '');
commit;
SQL
}
PING='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_projects","arguments":{}}}'
alice="$(status_of "$ALICE" "$PING")"
bob="$(status_of "$BOB" "$PING")"
echo "alice's fifth call: $alice"
echo "bob meanwhile:      $bob"
[[ "$alice" == 429* && "$alice" == *retry-after* ]] || fail "Alice's fifth concurrent call was not refused with 429 + Retry-After"
[[ "$bob" == 200* ]] || fail "Bob was not served while Alice held her four slots"

q -c "select pg_cancel_backend(pid) from pg_stat_activity where query like '%inflight_nap_%' and pid <> pg_backend_pid()" >/dev/null
wait || true
after="$(status_of "$ALICE" "$PING")"
echo "alice afterwards:   $after"
[[ "$after" == 200* ]] || fail "Alice's slots were not released when her calls ended"
echo "in-flight limit: ok"
