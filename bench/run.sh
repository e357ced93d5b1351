#!/usr/bin/env bash
# `make bench`: what issue 32's table asks (and issue 30's tracing rows), on a dedicated cluster of the PostgreSQL lib.sh names
# (CHUMBO_PG_ROOT's private copy when set); regenerates bench/RESULTS.md. Not part of `make test`.
# About 10 minutes at the defaults (BENCH_SECONDS per point and side).
#
#   1. pgbench (-M prepared, as the edge's login role chumbo_edge): tools/call list_projects with one
#      page of rows (BENCH_PAGE_ROWS, 50) and with 1 row, `select chumbo.handle(...)` against the
#      like-for-like floor and the plain floor (bench/sql/floor.sql); a do-nothing tool
#      (bench_noop, `select 1`) against its like-for-like floor; the first page of tools/list with
#      100, 1,000 and 10,000 tools, and with 1,000 while one tool's COMMENT changes every second;
#      the one-row tools/call, and resources/list with a resources/read, with 100 and with 10,000
#      tools. The sides of a comparison
#      alternate in rounds; CPU time per call of the backends and of pgbench from /proc.
#   2. end to end: wrk (Debian) against the chumbo edge (scripts/edge.sh) and the reference Node
#      server (bench/reference: official MCP SDK, jose, pg), same tokens, same tool, and pgbench
#      running the tool's query alone (no JSON, no HTTP), alternating in rounds at each
#      concurrency; every response checked, plus a verification pass (bench/verify.mjs) with Alice
#      and Bob interleaved; CPU time per request of each process (edge, reference, PostgreSQL, wrk
#      or pgbench) from /proc/<pid>/stat over the measured window.
#   3. backend RssAnon before/after the first tools/list with 10,000, 1,000 and 14 tools, and the cache's
#      own bytes from chumbo.cache_stats() where it exists (bench/reference/memory.mjs).
#   4. perf profiles (when perf can sample), then bench/report.py writes bench/RESULTS.md.
#
# Environment: BENCH_SECONDS (10) measured seconds per point, split into BENCH_ROUNDS (2) rounds
# the sides of a comparison alternate in, BENCH_E2E_SECONDS (20) and BENCH_E2E_ROUNDS (4) the same
# for the end-to-end points (wrk), BENCH_WARMUP (3) extra seconds per pgbench round (the
# window starts once every client has finished its first transaction), BENCH_CLIENTS ("8", in the
# database), BENCH_E2E_CLIENTS ("8 32"), BENCH_PAGE_ROWS (50), BENCH_PERF (1: profiles),
# BENCH_EXTRA (0; 1: also tools/list of 10 tools and DDL-then-list points), BENCH_DB_POOL (database
# connections of each HTTP server, the edge and the reference alike; 8, both servers' default),
# BENCH_PG_PORT (54380),
# BENCH_EDGE_PORT (54381), BENCH_REF_PORT (54382), BENCH_TRACED_EDGE_PORT (54383),
# BENCH_OTLP_SINK_PORT (54384), BENCH_SAMPLED_EDGE_PORT (54385), BENCH_TRACED_JSON_EDGE_PORT (54386),
# BENCH_TRACE_RATIO (0.1: the share
# of requests the sampled edge traces), BENCH_OUT (bench/RESULTS.md).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"

SECS="${BENCH_SECONDS:-10}"
WARMUP="${BENCH_WARMUP:-3}"
ROUNDS="${BENCH_ROUNDS:-2}"
# End to end, more and shorter rounds: the edges compared there are separate processes whose
# req/s moves by ±5% from one 5 s window to the next (bench/analysis.md, issue 30, sessions 22
# and 23).
E2E_SECS="${BENCH_E2E_SECONDS:-20}"
E2E_ROUNDS="${BENCH_E2E_ROUNDS:-4}"
CLIENTS="${BENCH_CLIENTS:-8}"
E2E_CLIENTS="${BENCH_E2E_CLIENTS:-8 32}"
EXTRA="${BENCH_EXTRA:-0}"
PERF_WANTED="${BENCH_PERF:-1}"
PORT="${BENCH_PG_PORT:-54380}"
EDGE_PORT="${BENCH_EDGE_PORT:-54381}"
REF_PORT="${BENCH_REF_PORT:-54382}"
TRACED_PORT="${BENCH_TRACED_EDGE_PORT:-54383}"   # a second edge exporting traces (issue 30)
SINK_PORT="${BENCH_OTLP_SINK_PORT:-54384}"       # an OTLP/HTTP endpoint that takes and drops them
SAMPLED_PORT="${BENCH_SAMPLED_EDGE_PORT:-54385}"  # a third edge tracing a share of the requests
TRACED_JSON_PORT="${BENCH_TRACED_JSON_EDGE_PORT:-54386}"  # and one exporting every request as OTLP/JSON
TRACE_RATIO="${BENCH_TRACE_RATIO:-0.1}"
PAGE_ROWS="${BENCH_PAGE_ROWS:-50}"
DB_POOL="${BENCH_DB_POOL:-8}"
OUT="${BENCH_OUT:-$ROOT/bench/RESULTS.md}"
PGBENCH="$PG_BIN/pgbench"
DB10=chumbo_bench            # the example app + bench data: its 13 listed tools (and the app-only add_note)
DB1K=chumbo_bench_1k         # the example app, 1,000 tools
DB100=chumbo_bench_100       # the example app + bench data, 100 tools (issue 32: 100 / 1,000 / 10,000)
DB10K=chumbo_bench_10k       # the example app + bench data, 10,000 tools
DIR="$BASE/bench"            # cluster (outside the repo, owned by postgres)
WORK="$STATE/bench"          # raw outputs of this run (git-ignored)
RESULTS="$WORK/results.jsonl"
EDGE_ID=bench-edge
TRACED_ID=bench-edge-traced
SAMPLED_ID=bench-edge-sampled
TRACED_JSON_ID=bench-edge-traced-json
SINK_PID=
EDGE_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"
REF_URL="http://127.0.0.1:$REF_PORT/mcp"
ALICE_SUB=aaaaaaaa-0000-4000-8000-000000000001
BOB_SUB=bbbbbbbb-0000-4000-8000-000000000002
ALICE_CLAIMS="{\"sub\":\"$ALICE_SUB\",\"role\":\"authenticated\"}"
CALL_PAGE='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{"status":"archived"}}}'
CALL_ONE='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{"status":"active"}}}'
STARTED="$(date -u +%FT%TZ)"
T0=$SECONDS

if ! command -v wrk >/dev/null && [[ $EUID == 0 ]] && command -v apt-get >/dev/null; then
  log "apt-get install wrk"; apt-get install -y -qq wrk >/dev/null
fi
for tool in "$PGBENCH" wrk jq python3 node deno; do
  command -v "$tool" >/dev/null || die "bench: $tool not found (node/deno: scripts/setup.sh; wrk: apt-get install wrk)"
done
[[ -f "$PG_SHAREDIR/extension/chumbo.control" ]] || die "bench: the chumbo extension is not installed (make install)"

so_id() { local so; so="$("$PG_CONFIG" --pkglibdir)/chumbo.so"; echo "$(sha256sum "$so" | cut -c1-12) $(date -u -r "$so" +%FT%TZ)"; }
SO_START="$(so_id)"
rm -rf "$WORK"; mkdir -p "$WORK"
: >"$RESULTS"
record() { jq -cn "$@" >>"$RESULTS"; }

# --- the bench cluster ---------------------------------------------------------------------------
as_pg() { (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- "$@"); }
REF_PID=
cleanup() {
  if [[ -n "$REF_PID" ]]; then kill "$REF_PID" 2>/dev/null || true; fi
  if [[ -n "$SINK_PID" ]]; then kill "$SINK_PID" 2>/dev/null || true; fi
  CHUMBO_EDGE_ID=$EDGE_ID CHUMBO_PORT=$EDGE_PORT "$ROOT/scripts/edge.sh" stop >/dev/null 2>&1 || true
  CHUMBO_EDGE_ID=$TRACED_ID CHUMBO_PORT=$TRACED_PORT "$ROOT/scripts/edge.sh" stop >/dev/null 2>&1 || true
  CHUMBO_EDGE_ID=$SAMPLED_ID CHUMBO_PORT=$SAMPLED_PORT "$ROOT/scripts/edge.sh" stop >/dev/null 2>&1 || true
  CHUMBO_EDGE_ID=$TRACED_JSON_ID CHUMBO_PORT=$TRACED_JSON_PORT "$ROOT/scripts/edge.sh" stop >/dev/null 2>&1 || true
  if [[ -f "$DIR/data/PG_VERSION" ]]; then as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

log "bench cluster: fresh on 127.0.0.1:$PORT ($DIR)"
mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
if [[ -f "$DIR/data/PG_VERSION" ]]; then as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; fi
if pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2; then die "port $PORT is taken (set BENCH_PG_PORT)"; fi
rm -rf "$DIR/data"
as_pg "$PG_BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR -c max_connections=120 -c shared_preload_libraries=chumbo" \
  start >/dev/null

q() { psql_at "$PORT" "$@"; }
q1() { q "$1" -At -c "$2"; }
n_tools() { q1 "$1" "select jsonb_array_length(chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}', '$ALICE_CLAIMS')->'result'->'tools')"; }

load_db() { # DB TOTAL_TOOLS
  "$ROOT/scripts/load-db.sh" "$PORT" "$1" app --edge
  q "$1" -f bench/sql/floor.sql
  local have; have="$(n_tools "$1")"
  q "$1" -v n="$(($2 - have))" -f bench/sql/tools.sql >/dev/null
}
# The reference server and the memory probe (step 3) need bench/reference's packages.
( cd bench/reference && if [[ ! -d node_modules ]]; then npm ci --no-audit --no-fund >/dev/null; fi )
load_db "$DB10" 10
q "$DB10" -v page_rows="$PAGE_ROWS" -f bench/sql/data.sql
load_db "$DB1K" 1000
for db in "$DB100" "$DB10K"; do
  n=100; [[ $db == "$DB10K" ]] && n=10000
  load_db "$db" "$n"
  q "$db" -v page_rows="$PAGE_ROWS" -f bench/sql/data.sql
done
# pg_backend_memory_contexts is for superusers and pg_read_all_stats (bench cluster only).
q postgres -c 'grant pg_read_all_stats to chumbo_edge'
# The in-database comparison calls chumbo.handle and the floor (which does SET ROLE authenticated)
# as chumbo_edge, playing a trusted server-side caller. grant_edge gives the edge chumbo.http only,
# so on this throwaway bench cluster that role also gets what such a caller has.
for db in "$DB10" "$DB1K" "$DB100" "$DB10K"; do
  # chumbo.cache_stats() reports the calling backend's cache: memory.mjs calls it in its own session.
  q "$db" -c 'grant execute on function chumbo.handle(jsonb, jsonb), chumbo.cache_stats() to chumbo_edge'
done
q postgres -c 'grant authenticated to chumbo_edge'
EDGE_PW="$(cat "$STATE/edge-password")"
export PGPASSWORD="$EDGE_PW"

# tools/list walking every page with 1,000 tools: the cursors the server hands out.
pages_script="$WORK/chumbo_list_all_pages.sql"
cursor=; tools_1k=0; : >"$pages_script"
while :; do
  params=; [[ -n "$cursor" ]] && params=",\"params\":{\"cursor\":\"$cursor\"}"
  body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"$params}"
  echo "select chumbo.handle('$body', '$ALICE_CLAIMS');" >>"$pages_script"
  page="$(q1 "$DB1K" "select chumbo.handle('$body', '$ALICE_CLAIMS')->'result'")"
  tools_1k=$((tools_1k + $(jq '.tools | length' <<<"$page")))
  cursor="$(jq -r '.nextCursor // empty' <<<"$page")"
  [[ -n "$cursor" ]] || break
done
[[ "$tools_1k" == 1000 ]] || die "bench sanity: $DB1K lists $tools_1k tools, expected 1000"
PAGES="$(wc -l <"$pages_script")"

# Sanity: every scenario answers as expected before anything is timed.
check() { # DB SQL EXPECTED
  local got; got="$(psql -X -At -h 127.0.0.1 -p "$PORT" -U chumbo_edge -d "$1" -c "$2")"
  [[ "$got" == "$3" ]] || die "bench sanity: $1: $2 gave '$got', expected '$3'"
}
# The two tools/call sizes: chumbo answers each in one page (no cursor) with exactly the rows of
# the floors, so all sides give the same response.
for call in page:archived one:active; do
  name="${call%%:*}" status="${call#*:}" body="$CALL_PAGE"; [[ $name == one ]] && body="$CALL_ONE"
  chumbo="chumbo.handle('$body', '$ALICE_CLAIMS')->'result'"
  like="bench.floor_like_for_like('1', '$ALICE_CLAIMS', '$status')->'result'"
  check "$DB10" "select ($chumbo->'structuredContent') = jsonb_build_object('rows', $like->'structuredContent'->'rows')" t
  check "$DB10" "select $like->'structuredContent' = bench.floor_list_projects('$ALICE_CLAIMS', '$status')" t
  check "$DB10" "select $like->'content'->0->>'text' = ($like->'structuredContent'->'rows')::text" t
  check "$DB10" "select coalesce($chumbo->>'isError', 'false')" false
  n="$(q1 "$DB10" "select jsonb_array_length(bench.floor_list_projects('$ALICE_CLAIMS', '$status')->'rows')")"
  if [[ $name == page ]]; then ROWS_PAGE="$n"; else ROWS_ONE="$n"; fi
done
[[ "$ROWS_ONE" == 1 && "$ROWS_PAGE" == "$PAGE_ROWS" ]] || die "bench sanity: list_projects gave $ROWS_ONE and $ROWS_PAGE rows, expected 1 and $PAGE_ROWS"
PGOPTIONS="-c role=authenticated -c request.jwt.claims=$ALICE_CLAIMS" \
  check "$DB10" "select count(*) from mcp.list_projects('archived') p where p.name like 'Acme%'" "$PAGE_ROWS"
# the example app's 13 listed tools and bench_noop (bench/sql/floor.sql)
check "$DB10" "select jsonb_array_length(chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}', '$ALICE_CLAIMS')->'result'->'tools')" 14
check "$DB10" "select chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"bench_noop\",\"arguments\":{}}}', '$ALICE_CLAIMS') = bench.floor_like_noop('1', '$ALICE_CLAIMS')" t
# The first page of tools/list holds the same tools with 100, 1,000 and 10,000 (bench/sql/tools.sql).
first_page() { q1 "$1" "select jsonb_path_query_array(chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}', '$ALICE_CLAIMS'), '\$.result.tools[*].name')"; }
page100="$(first_page "$DB100")"
for db in "$DB1K" "$DB10K"; do
  [[ "$(first_page "$db")" == "$page100" ]] || die "bench sanity: the first page of tools/list differs between $DB100 and $db"
done
for db in "$DB100" "$DB10K"; do   # the one-row call answers one row with 100 and 10,000 tools
  check "$db" "select jsonb_array_length(chumbo.handle('$CALL_ONE', '$ALICE_CLAIMS')->'result'->'structuredContent'->'rows')" 1
done
# bench/pgbench/chumbo_resources.sql: the same resources with 100 and 10,000 tools, and one is read.
resources() { q1 "$1" "select jsonb_path_query_array(chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}', '$ALICE_CLAIMS'), '\$.result.resources[*].uri')"; }
[[ "$(resources "$DB100")" == "$(resources "$DB10K")" ]] || die "bench sanity: resources/list differs between $DB100 and $DB10K"
check "$DB10K" "select jsonb_array_length(chumbo.handle('{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"app://orgs/mine\"}}', '$ALICE_CLAIMS')->'result'->'contents')" 1
# shellcheck disable=SC2016  # a jq program: $rows_page etc. are jq variables
record --arg rows_page "$ROWS_PAGE" --arg rows_one "$ROWS_ONE" --arg pages "$PAGES" \
  '{kind:"setup", rows_page:($rows_page|tonumber), rows_one:($rows_one|tonumber), pages:($pages|tonumber)}'

# --- 1. pgbench -----------------------------------------------------------------------------------
# The audit queue has one worker, for one database at a time (src/bookkeeping/audit_queue.rs); a
# round in another database than the last one's would write its audit rows in its calls until that
# worker idles out (10 s, about the warm-up), then switch; and the rows a run left queued would be
# written during the next run, on its CPU. So every run (pgbench round or wrk run) starts without
# a worker (it drains and exits on SIGTERM) and its own first call starts one for its database, as
# in a deployment with one database (bench/analysis.md, issue 32, session 18; issue 30, sessions 22
# and 23: a drain takes ~0.1 s, so a slower one is worth a look).
audit_settle() {
  local t0 ms; t0="$(date +%s%N)"
  q postgres -c "select pg_terminate_backend(pid) from pg_stat_activity where backend_type = 'chumbo audit'" >/dev/null
  for _ in $(seq 200); do
    [[ "$(q1 postgres "select count(*) from pg_stat_activity where backend_type = 'chumbo audit'")" == 0 ]] && break
    sleep 0.05
  done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [[ $ms -gt 1000 ]]; then log "the audit worker took $ms ms to drain and stop"; fi
}
PM_PID() { head -1 "$DIR/data/postmaster.pid"; }
# One pgbench round of a point: NAME DB SCRIPT CLIENTS SECONDS EXTRA_WARMUP_S ROUND. CPU time of
# the cluster's processes and of pgbench from the end of the warm-up on (report.py cpu); a point
# named *_ddl1s runs while one tool's COMMENT changes every second; PGB_OPTIONS: the sessions'
# PGOPTIONS.
pgb_round() {
  local name="$1" db="$2" script="$3" c="$4" secs="$5" warm=$((WARMUP + $6)) r="$7"
  local j=$(( c < 2 ? c : 2 )) prefix="$WORK/pgb-$1-c$4-r$7" toucher=
  log "pgbench $name c=$c round $r (${secs}s + ${warm}s warm-up)"
  if [[ $name == *_ddl1s ]]; then
    # One session of the owner's for every COMMENT, as a migration tool or an admin's console
    # would hold: a new psql and backend each second cost more CPU than the change itself
    # (~3 ms per pgbench backend, to bring one tool up to date), on the same cores.
    # psql prints an empty line per done COMMENT (a void result, -At).
    # It stops when told to (the stop file): psql then reads the end of its input and exits.
    ( while [[ ! -e $prefix.stop ]]; do echo "select bench.touch(0);"; sleep 1; done ) | q "$db" -At >"$prefix.ddl" &
    toucher=$!
  fi
  audit_settle
  local rc=0
  PGOPTIONS="${PGB_OPTIONS:-}" python3 bench/report.py cpu "$prefix.cpu.json" "$warm" postgres="$(PM_PID)" -- \
    "$PGBENCH" -n -h 127.0.0.1 -p "$PORT" -U chumbo_edge -M prepared -c "$c" -j "$j" \
    -T "$((secs + warm))" -f "$script" -l --log-prefix="$prefix" "$db" >"$prefix.out" 2>&1 || rc=$?
  if [[ -n "$toucher" ]]; then touch "$prefix.stop"; wait "$toucher" || true; rm -f "$prefix.stop"; fi
  if [[ $rc != 0 ]]; then cat "$prefix.out" >&2; die "pgbench $name c=$c failed"; fi
}
# Points compared with each other, interleaved in ROUNDS rounds of SECS/ROUNDS seconds each:
#   pair CLIENTS EXTRA_WARMUP_S warm|cold NAME DB SCRIPT [NAME DB SCRIPT ...]
pair() {
  local c="$1" extra="$2" mode="$3"; shift 3
  local secs=$(( (SECS + ROUNDS - 1) / ROUNDS )) r i names=()
  for r in $(seq "$ROUNDS"); do
    for ((i = 1; i <= $#; i += 3)); do
      pgb_round "${@:i:1}" "${@:i+1:1}" "${@:i+2:1}" "$c" "$secs" "$extra" "$r"
    done
  done
  for ((i = 1; i <= $#; i += 3)); do names+=("${@:i:1}"); done
  for name in "${names[@]}"; do
    local files=() ddl=0
    for r in $(seq "$ROUNDS"); do
      files+=("$WORK/pgb-$name-c$c-r$r")
      [[ -f "$WORK/pgb-$name-c$c-r$r.ddl" ]] && ddl=$((ddl + $(wc -l <"$WORK/pgb-$name-c$c-r$r.ddl")))
    done
    python3 bench/report.py pgbench "$((WARMUP + extra))" "$mode" "${files[@]}" |
      jq -c --arg name "$name" --argjson c "$c" --argjson ddl "$ddl" '. + {kind:"pgbench", name:$name, c:$c, ddl:$ddl}' >>"$RESULTS"
    rm -f "$WORK/pgb-$name-c$c-r"*.[0-9]*
  done
}
P=bench/pgbench
for c in $CLIENTS; do
  for size in page one; do
    pair "$c" 0 warm floor_like_call_$size "$DB10" $P/floor_like_call_$size.sql chumbo_call_$size "$DB10" $P/chumbo_call_$size.sql \
      floor_call_$size "$DB10" $P/floor_call_$size.sql
  done
  # Issue 32: the do-nothing tool (chumbo's fixed cost) against its like-for-like floor.
  pair "$c" 0 warm floor_like_call_noop "$DB10" $P/floor_like_call_noop.sql chumbo_call_noop "$DB10" $P/chumbo_call_noop.sql
  # The first page of tools/list with 100, 1,000 and 10,000 tools, and with 1,000 while one tool's
  # COMMENT changes every second. Every new backend first reflects the tools (the window starts
  # once every client has answered once; 10,000 tools take ~1.5 s of CPU per backend): extra
  # warm-up c s, so that each round still measures several seconds.
  # The two 1,000-tool points run next to each other: this machine's throughput drifts by more
  # than the COMMENT costs, so their ratio is the better for being measured close together.
  pair "$c" "$c" warm list_100 "$DB100" $P/chumbo_list.sql list_10000 "$DB10K" $P/chumbo_list.sql \
    list_1000 "$DB1K" $P/chumbo_list.sql list_1000_ddl1s "$DB1K" $P/chumbo_list.sql
  # The same one-row tools/call with 100 and with 10,000 tools.
  pair "$c" "$c" warm call_one_100 "$DB100" $P/chumbo_call_one.sql call_one_10000 "$DB10K" $P/chumbo_call_one.sql
  # resources/list and a resources/read with 100 and with 10,000 tools (the app's resources the same).
  pair "$c" "$c" warm resources_100 "$DB100" $P/chumbo_resources.sql resources_10000 "$DB10K" $P/chumbo_resources.sql
  if [[ $EXTRA == 1 ]]; then
    pair "$c" $((c / 3)) warm list_10 "$DB10" $P/chumbo_list.sql list_1000_all "$DB1K" "$pages_script"
    pair "$c" 0 cold ddl_only_10 "$DB10" $P/ddl_only.sql ddl_list_10 "$DB10" $P/ddl_then_list.sql
    # Every call reloads 1,000 tools in every backend: a longer warm-up to see enough of them.
    pair "$c" $((c / 2)) cold ddl_only_1000 "$DB1K" $P/ddl_only.sql ddl_list_1000 "$DB1K" $P/ddl_then_list.sql
  fi
done

# --- 3. memory (before the HTTP part: nothing else touches the bench databases) ---------------------
for db in "$DB10" "$DB1K" "$DB10K"; do
  log "memory: first tools/list in a fresh backend of $db"
  node bench/reference/memory.mjs "postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PORT/$db" "$ALICE_CLAIMS" |
    jq -c --arg db "$db" '. + {kind:"memory", db:$db}' >>"$RESULTS"
done

# --- perf -----------------------------------------------------------------------------------------
PERF=
if [[ $PERF_WANTED == 1 ]] && command -v perf >/dev/null && perf record -e cpu-clock -o "$WORK/perf.probe" -- true >/dev/null 2>&1; then PERF=1; fi
profile() { # NAME SECONDS COMMAND...: sample the whole machine while COMMAND runs
  local name="$1" s="$2"; shift 2
  [[ -n "$PERF" ]] || return 0
  "$@" >/dev/null 2>&1 &
  local load=$!
  sleep 2
  perf record -e cpu-clock -F 499 -a -g -o "$WORK/perf-$name.data" -- sleep "$s" >/dev/null 2>&1 || true
  wait "$load" || true
  { perf report -i "$WORK/perf-$name.data" --stdio --no-children --sort comm -g none --percent-limit 2 2>/dev/null |
      grep -E '^ +[0-9]' | head -8 || true
    echo "--"
    perf report -i "$WORK/perf-$name.data" --stdio --no-children --comm postgres --sort dso,sym -g none \
      --percent-limit 0.8 2>/dev/null | grep -E '^ +[0-9]' | head -30 || true
  } >"$WORK/perf-$name.txt"
  jq -Rsc --arg name "$name" '{kind:"perf", name:$name, text:.}' "$WORK/perf-$name.txt" >>"$RESULTS"
}
# Where one chumbo tools/call spends its time: the call graph of one backend (DWARF unwinding,
# the library has debug info), inclusive time of chumbo's functions and a few PostgreSQL ones.
callgraph() {
  "$PGBENCH" -n -h 127.0.0.1 -p "$PORT" -U chumbo_edge -M prepared -c 1 -T 10 -f $P/chumbo_call_page.sql "$DB10" >/dev/null 2>&1 &
  local load=$! pid
  sleep 2
  pid="$(q1 postgres "select pid from pg_stat_activity where usename = 'chumbo_edge' and application_name like 'pgbench%' limit 1")"
  perf record --call-graph dwarf,32768 -F 199 -p "$pid" -o "$WORK/perf-callgraph.data" -- sleep 5 >/dev/null 2>&1 || true
  wait "$load" || true
  perf report -i "$WORK/perf-callgraph.data" --stdio --children --sort sym -g none --percent-limit 0.8 2>/dev/null |
    grep -E '\] (chumbo::[a-z_]+::[a-z_]+|SPI_execute_with_args|ExecMakeTableFunctionResult|jsonb_in|jsonb_out|to_jsonb|XLogFlush|CommitTransactionCommand|<serde_json::value::Value as core::fmt::Display>::fmt|<pgrx::datum::json::JsonB as pgrx::callconv::BoxRet>::box_into|pgrx::spi::tuple::SpiHeapTupleData::get) *$' |
    head -40 >"$WORK/perf-callgraph.txt" || true
  jq -Rsc '{kind:"perf", name:"callgraph_c1", text:.}' "$WORK/perf-callgraph.txt" >>"$RESULTS"
}
if [[ -n "$PERF" ]]; then
  log "perf: call graph of one backend answering tools/call"
  callgraph
  log "perf: chumbo tools/call at concurrency 8"
  profile call_c8 8 "$PGBENCH" -n -h 127.0.0.1 -p "$PORT" -U chumbo_edge -M prepared -c 8 -j 2 -T 12 -f $P/chumbo_call_page.sql "$DB10"
  log "perf: tools/list right after a DDL change, 1,000 tools, concurrency 8"
  profile ddl_list_1000_c8 8 "$PGBENCH" -n -h 127.0.0.1 -p "$PORT" -U chumbo_edge -M prepared -c 8 -j 2 -T 12 -f $P/ddl_then_list.sql "$DB1K"
else
  record '{kind:"perf", name:"unavailable", text:"perf cannot sample on this machine"}'
fi

# --- 2. end to end ---------------------------------------------------------------------------------
log "end to end: chumbo edge on $EDGE_PORT, reference on $REF_PORT"
export CHUMBO_PUBLIC_URL="$EDGE_URL"
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$PORT/$DB10"
# Two users drive up to 32 requests in flight: the per-principal fairness limit (default 4) would
# turn this throughput comparison into a 429 count; the reference server has no such limit.
q1 "$DB10" "select chumbo.configure('{\"max_in_flight\": 64}') is not null" >/dev/null
ALICE_TOKEN="$(deno run -A scripts/mint-token.ts alice)"
BOB_TOKEN="$(deno run -A scripts/mint-token.ts bob)"
deno run -A scripts/mint-token.ts jwks >"$WORK/jwks.json"
ISSUER="$(deno run -A scripts/mint-token.ts settings | jq -r '.jwt_issuers[0]')"
DBURL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PORT/$DB10"
CHUMBO_EDGE_ID=$EDGE_ID CHUMBO_PORT=$EDGE_PORT CHUMBO_DB_POOL=$DB_POOL EDGE_DATABASE_URL="$DBURL" "$ROOT/scripts/edge.sh" start >/dev/null
EDGE_PID="$(cat "$STATE/$EDGE_ID.pid")"
# The same edge exporting every request's spans and the duration histogram over OTLP/HTTP
# (protobuf, the default encoding) to a sink that answers 200 and drops them: what tracing costs the edge and the
# database (the spans the database times and returns), apart from a collector's own work. Same
# public URL, so the same tokens (their audience) are valid on it.
node bench/otlp-sink.mjs "$SINK_PORT" 2>>"$WORK/otlp-sink.log" &
SINK_PID=$!
CHUMBO_EDGE_ID=$TRACED_ID CHUMBO_PORT=$TRACED_PORT CHUMBO_DB_POOL=$DB_POOL EDGE_DATABASE_URL="$DBURL" \
  OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
  OTEL_SERVICE_NAME=chumbo-bench "$ROOT/scripts/edge.sh" start >/dev/null
TRACED_PID="$(cat "$STATE/$TRACED_ID.pid")"
TRACED_URL="http://127.0.0.1:$TRACED_PORT/functions/v1/mcp"
# The same in the other OTLP encoding, http/json (in Deno a small Uint8Array costs ~10 times what it
# does in Node, and the protobuf serializer makes several per span: docs/observability.md).
CHUMBO_EDGE_ID=$TRACED_JSON_ID CHUMBO_PORT=$TRACED_JSON_PORT CHUMBO_DB_POOL=$DB_POOL EDGE_DATABASE_URL="$DBURL" \
  OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=http/json \
  OTEL_SERVICE_NAME=chumbo-bench-json "$ROOT/scripts/edge.sh" start >/dev/null
TRACED_JSON_PID="$(cat "$STATE/$TRACED_JSON_ID.pid")"
TRACED_JSON_URL="http://127.0.0.1:$TRACED_JSON_PORT/functions/v1/mcp"
# And one that samples as a production deployment would: the standard parent-based ratio sampler
# (the edge reads OTEL_TRACES_SAMPLER), so TRACE_RATIO of the requests (wrk sends no traceparent: each
# is a root) export their spans; the others still record the duration histogram.
CHUMBO_EDGE_ID=$SAMPLED_ID CHUMBO_PORT=$SAMPLED_PORT CHUMBO_DB_POOL=$DB_POOL EDGE_DATABASE_URL="$DBURL" \
  OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
  OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG="$TRACE_RATIO" \
  OTEL_SERVICE_NAME=chumbo-bench-sampled "$ROOT/scripts/edge.sh" start >/dev/null
SAMPLED_PID="$(cat "$STATE/$SAMPLED_ID.pid")"
SAMPLED_URL="http://127.0.0.1:$SAMPLED_PORT/functions/v1/mcp"
# In a session of its own, as scripts/edge.sh starts each edge: with the kernel's autogroups
# (/proc/sys/kernel/sched_autogroup_enabled), a session is what the scheduler shares CPU between,
# so both servers are placed alike, apart from the load generators (an edge sharing wrk's session
# had a p99 four to ten times its own; the reference moved within the noise: bench/analysis.md,
# session 27).
DATABASE_URL="$DBURL" JWKS_FILE="$WORK/jwks.json" JWT_ISSUER="$ISSUER" JWT_AUDIENCE="$EDGE_URL" PORT="$REF_PORT" \
  DB_POOL="$DB_POOL" setsid node bench/reference/server.mjs >"$WORK/reference.log" 2>&1 &
REF_PID=$!
for _ in $(seq 100); do
  [[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$REF_URL" || true)" == 401 ]] && break; sleep 0.1
done

ids() { q1 "$DB10" "select coalesce(json_agg(p.id order by p.name collate \"C\"), '[]') from projects p join memberships m on m.org_id = p.org_id where m.user_id = '$1' and p.status = 'archived'"; }
jq -n --arg at "$ALICE_TOKEN" --arg bt "$BOB_TOKEN" --argjson ai "$(ids $ALICE_SUB)" --argjson bi "$(ids $BOB_SUB)" \
  --argjson body "$CALL_PAGE" \
  '{users:[{name:"alice", token:$at, ids:$ai}, {name:"bob", token:$bt, ids:$bi}], body:$body, requests:400}' >"$WORK/expected.json"
log "verification pass (Alice and Bob interleaved, both servers)"
vrc=0
node bench/verify.mjs "$WORK/expected.json" "chumbo=$EDGE_URL" "reference=$REF_URL" >"$WORK/verify.txt" 2>&1 || vrc=$?
cat "$WORK/verify.txt" >&2
jq -Rsc --argjson rc "$vrc" '{kind:"verify", rc:$rc, text:.}' "$WORK/verify.txt" >>"$RESULTS"

# wrk_run SERVER URL CLIENTS SECONDS OUT: one wrk run, CPU time per process tree over it.
wrk_run() {
  local edge="$EDGE_PID"
  audit_settle
  case "$1" in chumbo_traced) edge="$TRACED_PID" ;; chumbo_traced_json) edge="$TRACED_JSON_PID" ;;
    chumbo_sampled) edge="$SAMPLED_PID" ;; esac
  MCP_TOKEN="$ALICE_TOKEN" MCP_BODY="$CALL_PAGE" MCP_EXPECT='"Acme project' MCP_FORBID=Globex \
    python3 bench/report.py cpu "$5.cpu.json" 0 postgres="$(PM_PID)" edge="$edge" reference="$REF_PID" -- \
    wrk -t "$(( $3 < 2 ? $3 : 2 ))" -c "$3" -d "${4}s" --timeout 30s -s bench/wrk/mcp.lua "$2" >"$5" 2>&1 || true
  grep -q '^RESULT ' "$5" || { cat "$5" >&2; die "wrk $1 c=$3 failed"; }
}
# At each concurrency: a warm-up of each server, then E2E_ROUNDS rounds of chumbo, the reference and
# the tool's query alone (pgbench as a login role whose session is already `authenticated` with
# Alice's claims: one round trip, no JSON, no HTTP).
RAW_OPTIONS="-c role=authenticated -c request.jwt.claims=$ALICE_CLAIMS"
server_url() {
  case "$1" in chumbo) echo "$EDGE_URL" ;; chumbo_traced) echo "$TRACED_URL" ;; chumbo_sampled) echo "$SAMPLED_URL" ;;
    chumbo_traced_json) echo "$TRACED_JSON_URL" ;;
    *) echo "$REF_URL" ;; esac
}
SERVERS=(chumbo chumbo_traced chumbo_traced_json chumbo_sampled reference)
for c in $E2E_CLIENTS; do
  secs=$(( (E2E_SECS + E2E_ROUNDS - 1) / E2E_ROUNDS ))
  for s in "${SERVERS[@]}"; do
    url="$(server_url "$s")"
    log "wrk $s c=$c warm-up (2 s)"
    wrk_run "$s" "${url/localhost/127.0.0.1}" "$c" 2 "$WORK/wrk-warmup-$s-c$c.txt"
  done
  for r in $(seq "$E2E_ROUNDS"); do
    # Each round starts one server later: no side always runs right after the same other one.
    for i in "${!SERVERS[@]}"; do
      s="${SERVERS[$(( (i + r - 1) % ${#SERVERS[@]} ))]}"
      url="$(server_url "$s")"
      log "wrk $s c=$c round $r (${secs}s)"
      wrk_run "$s" "${url/localhost/127.0.0.1}" "$c" "$secs" "$WORK/wrk-$s-c$c-r$r.txt"
    done
    PGB_OPTIONS="$RAW_OPTIONS" pgb_round raw_call_page "$DB10" $P/raw_call_page.sql "$c" "$secs" 0 "$r"
  done
  for s in "${SERVERS[@]}"; do
    python3 bench/report.py e2e "$WORK/wrk-$s-c$c-r"*.txt |
      jq -c --arg server "$s" --argjson c "$c" '. + {kind:"e2e", server:$server, c:$c}' >>"$RESULTS"
    grep -h '^BADSAMPLE' "$WORK/wrk-$s-c$c-r"*.txt | head -1 |
      jq -Rc --arg server "$s" --argjson c "$c" '{kind:"badsample", server:$server, c:$c, text:.}' >>"$RESULTS" || true
  done
  files=(); for r in $(seq "$E2E_ROUNDS"); do files+=("$WORK/pgb-raw_call_page-c$c-r$r"); done
  python3 bench/report.py pgbench "$WARMUP" warm "${files[@]}" |
    jq -c --argjson c "$c" '. + {kind:"pgbench", name:"raw_call_page", c:$c}' >>"$RESULTS"
  rm -f "$WORK/pgb-raw_call_page-c$c-r"*.[0-9]*
done
if [[ -n "$PERF" ]]; then
  log "perf: end to end at concurrency 8"
  profile e2e_chumbo_c8 8 env MCP_TOKEN="$ALICE_TOKEN" MCP_BODY="$CALL_PAGE" MCP_EXPECT=x MCP_FORBID=y \
    wrk -t 2 -c 8 -d 12s -s bench/wrk/mcp.lua "${EDGE_URL/localhost/127.0.0.1}"
  profile e2e_reference_c8 8 env MCP_TOKEN="$ALICE_TOKEN" MCP_BODY="$CALL_PAGE" MCP_EXPECT=x MCP_FORBID=y \
    wrk -t 2 -c 8 -d 12s -s bench/wrk/mcp.lua "$REF_URL"
fi

# Debug assertions leave core::…::precondition_check (UB checks) in the binary; release builds do not.
build_kind() {
  local n; n="$( (nm -C "$("$PG_CONFIG" --pkglibdir)/chumbo.so" 2>/dev/null || true) | grep -c precondition_check || true)"
  if [[ "${n:-0}" -gt 0 ]]; then echo "DEBUG build (debug assertions on: $n core::…::precondition_check symbols)"
  else echo "release build (no debug-assertion symbols)"; fi
}

# --- the report -----------------------------------------------------------------------------------
jq -n \
  --arg started "$STARTED" --arg finished "$(date -u +%FT%TZ)" --arg elapsed "$((SECONDS - T0))" \
  --arg command "make bench (bench/run.sh)" \
  --arg env "BENCH_SECONDS=$SECS BENCH_ROUNDS=$ROUNDS BENCH_E2E_SECONDS=$E2E_SECS BENCH_E2E_ROUNDS=$E2E_ROUNDS BENCH_WARMUP=$WARMUP BENCH_CLIENTS=\"$CLIENTS\" BENCH_E2E_CLIENTS=\"$E2E_CLIENTS\" BENCH_PAGE_ROWS=$PAGE_ROWS BENCH_DB_POOL=$DB_POOL BENCH_EXTRA=$EXTRA BENCH_TRACE_RATIO=$TRACE_RATIO" \
  --arg trace_ratio "$TRACE_RATIO" \
  --arg nproc "$(nproc)" --arg cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" \
  --arg mem "$(free -h | awk '/^Mem:/ {print $2}')" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
  --arg kernel "$(uname -r)" \
  --arg pg "$(q1 postgres 'select version()')" \
  --arg chumbo "$(q1 "$DB10" "select extversion from pg_extension where extname = 'chumbo'")" \
  --arg build "$(build_kind)" \
  --arg audit_queue "$(q1 "$DB10" 'select chumbo.audit_queue_stats()')" \
  --arg so "$(so_id)" --arg so_start "$SO_START" \
  --arg commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql supabase || echo ' (dirty)')" \
  --arg node "$(node --version)" --arg deno "$(deno --version | head -1)" --arg wrk "$(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)" \
  --arg sdk "$(jq -r '.packages["node_modules/@modelcontextprotocol/sdk"].version' bench/reference/package-lock.json)" \
  --arg perf "$([[ -n "$PERF" ]] && echo yes || echo no)" \
  --arg db_pool "$DB_POOL" \
  '$ARGS.named' >"$WORK/meta.json"
# 5. Durable tasks (bench/tasks.mjs): a task's latency against the same call answered directly,
#    and the drain of BENCH_TASK_DRAIN (1,000) queued tasks while another client is served.
log "tasks: latency against the direct call, drain of queued tasks"
node bench/tasks.mjs "postgres://postgres@127.0.0.1:$PORT/$DB10" \
  "postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PORT/$DB10" "$WORK/tasks.json" >/dev/null
jq -c . "$WORK/tasks.json" >>"$RESULTS"
python3 bench/report.py render "$RESULTS" "$WORK/meta.json" "$OUT"
log "wrote ${OUT#"$ROOT"/} ($((SECONDS - T0)) s)"
