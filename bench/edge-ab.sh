#!/usr/bin/env bash
# A/B of two edge builds end to end, interleaved on one cluster (the edge's own work; not make bench):
#   bench/edge-ab.sh A_REF [B_REF]   git refs of supabase/functions/mcp (B default: the work tree)
# Each side runs as its own `scripts/edge.sh` instance (its V8 flags included) against the same
# database, tokens and tool call as bench/run.sh section 2; at each concurrency the sides alternate
# in EDGEAB_ROUNDS rounds of EDGEAB_SECONDS, and the CPU time per request of the edge and of
# PostgreSQL comes from /proc (bench/report.py cpu). Prints one line per side and concurrency.
# Environment: EDGEAB_PG_PORT (55801), EDGEAB_A_PORT (55811), EDGEAB_B_PORT (55812), EDGEAB_CLIENTS
# ("8 32"), EDGEAB_ROUNDS (3), EDGEAB_SECONDS (10), EDGEAB_A_FLAGS / EDGEAB_B_FLAGS (CHUMBO_EDGE_V8_FLAGS
# per side, default: what each side's scripts/edge.sh sets), EDGEAB_A_ENV / EDGEAB_B_ENV (more
# environment for a side, "VAR=VALUE ...", e.g. OTEL_TRACES_SAMPLER=always_off), EDGEAB_A_OTLP /
# EDGEAB_B_OTLP (1: the side exports traces and metrics, http/protobuf, to a sink on
# EDGEAB_SINK_PORT (55813) that takes and drops them, as bench/run.sh's traced edge does).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
cd "$ROOT"

A_REF="${1:?usage: $0 A_REF [B_REF]}"
B_REF="${2:-}"
PORT="${EDGEAB_PG_PORT:-55801}"
CLIENTS="${EDGEAB_CLIENTS:-8 32}"
ROUNDS="${EDGEAB_ROUNDS:-3}"
SECS="${EDGEAB_SECONDS:-10}"
DIR="$BASE/edgeab"
WORK="$STATE/edgeab"
DB=chumbo_bench
CALL_PAGE='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{"status":"archived"}}}'
rm -rf "$WORK"; mkdir -p "$WORK"

SINK_PORT="${EDGEAB_SINK_PORT:-55813}"
SINK_PID=
as_pg() { (cd "$DIR" && env -u RUST_BACKTRACE runuser -u postgres -- "$@"); }
cleanup() {
  if [[ -n "$SINK_PID" ]]; then kill "$SINK_PID" 2>/dev/null || true; fi
  for s in a b; do
    CHUMBO_EDGE_ID=edgeab-$s "$WORK/$s/scripts/edge.sh" stop >/dev/null 2>&1 || true
  done
  if [[ -f "$DIR/data/PG_VERSION" ]]; then as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

# Each side: a copy of scripts/ and supabase/functions/mcp at its ref (edge.sh runs from its copy).
side() { # NAME REF
  local d="$WORK/$1"
  mkdir -p "$d"
  if [[ -n "$2" ]]; then
    git archive "$2" scripts supabase/functions/mcp | tar -x -C "$d"
  else
    cp -a scripts "$d/"; mkdir -p "$d/supabase/functions"; cp -a supabase/functions/mcp "$d/supabase/functions/"
  fi
  ln -sfn "$ROOT/tools" "$d/tools"
}
side a "$A_REF"
side b "$B_REF"

log "edge A/B cluster on 127.0.0.1:$PORT ($DIR)"
mkdir -p "$DIR" && chown postgres: "$BASE" "$DIR" && chmod 700 "$DIR"
if [[ -f "$DIR/data/PG_VERSION" ]]; then as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null 2>&1 || true; fi
rm -rf "$DIR/data"
as_pg "$PG_BIN/initdb" -D "$DIR/data" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories=$DIR -c max_connections=60" start >/dev/null
q() { psql_at "$PORT" "$@"; }
"$ROOT/scripts/load-db.sh" "$PORT" "$DB" app --edge
q "$DB" -v page_rows=50 -f bench/sql/data.sql
EDGE_PW="$(cat "$STATE/edge-password")"
DBURL="postgres://chumbo_edge:$EDGE_PW@127.0.0.1:$PORT/$DB"
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$PORT/$DB"
q "$DB" -At -c "select chumbo.configure('{\"max_in_flight\": 64}') is not null" >/dev/null
PM_PID="$(head -1 "$DIR/data/postmaster.pid")"

if [[ -n "${EDGEAB_A_OTLP:-}${EDGEAB_B_OTLP:-}" ]]; then
  node bench/otlp-sink.mjs "$SINK_PORT" &
  SINK_PID=$!
fi
declare -A URL PID
for s in a b; do
  p="${EDGEAB_A_PORT:-55811}"; [[ $s == b ]] && p="${EDGEAB_B_PORT:-55812}"
  flags_var="EDGEAB_${s^^}_FLAGS" env_var="EDGEAB_${s^^}_ENV" otlp_var="EDGEAB_${s^^}_OTLP"
  side_env=()
  if [[ -n "${!otlp_var:-}" ]]; then
    side_env+=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)
  fi
  # After the OTLP defaults, so that a side's own variables win (e.g. OTEL_EXPORTER_OTLP_PROTOCOL).
  # shellcheck disable=SC2206  # "VAR=VALUE ..." splits into words on purpose
  side_env+=(${!env_var:-})
  URL[$s]="http://127.0.0.1:$p/functions/v1/mcp"
  # One audience for both sides' tokens: CHUMBO_PUBLIC_URL is the same string on both.
  env ${!flags_var+CHUMBO_EDGE_V8_FLAGS="${!flags_var}"} "${side_env[@]}" CHUMBO_EDGE_ID=edgeab-$s CHUMBO_PORT="$p" \
    CHUMBO_PUBLIC_URL="http://localhost/functions/v1/mcp" EDGE_DATABASE_URL="$DBURL" \
    "$WORK/$s/scripts/edge.sh" start >/dev/null
  PID[$s]="$(cat "$WORK/$s/.chumbo/edgeab-$s.pid")"
done
TOKEN="$(CHUMBO_PUBLIC_URL="http://localhost/functions/v1/mcp" deno run -A scripts/mint-token.ts alice)"

run() { # SIDE CLIENTS SECONDS OUT
  MCP_TOKEN="$TOKEN" MCP_BODY="$CALL_PAGE" MCP_EXPECT='"Acme project' MCP_FORBID=Globex \
    python3 bench/report.py cpu "$4.cpu.json" 0 postgres="$PM_PID" edge="${PID[$1]}" edge_js="${PID[$1]}:main" -- \
    wrk -t "$(($2 < 2 ? $2 : 2))" -c "$2" -d "${3}s" --timeout 30s -s bench/wrk/mcp.lua "${URL[$1]}" >"$4" 2>&1 || true
  grep -q '^RESULT .* bad=0$' "$4" || { cat "$4" >&2; die "wrk side $1 c=$2: failed or bad responses"; }
}
for c in $CLIENTS; do
  for s in a b; do run "$s" "$c" 3 "$WORK/warm-$s-c$c.txt"; done
  for r in $(seq "$ROUNDS"); do
    for s in a b; do log "side $s c=$c round $r"; run "$s" "$c" "$SECS" "$WORK/wrk-$s-c$c-r$r.txt"; done
  done
  for s in a b; do
    python3 bench/report.py e2e "$WORK/wrk-$s-c$c-r"*.txt |
      jq -c --arg side "$s" --argjson c "$c" '{side:$side, c:$c, rps:(.rps|round), p50_ms:(.p50_us/1000), p99_ms:(.p99_us/1000), cpu_us:(.cpu_us|map_values(round))}'
  done
done
