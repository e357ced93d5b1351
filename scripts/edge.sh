#!/usr/bin/env bash
# Run the MCP edge (supabase/functions/mcp, Deno) in the background, outside the Supabase CLI.
#   scripts/edge.sh start    (re)start it; prints MCP_URL=...
#   scripts/edge.sh stop     stop it (by the recorded pid)
#   scripts/edge.sh status
#   scripts/edge.sh url      prints the MCP URL
# Environment:
#   EDGE_DATABASE_URL         connection as the login role chumbo_edge (else read from .chumbo/dev.env)
#   CHUMBO_PORT               port (default 54321); the edge binds 127.0.0.1 and ::1
#   CHUMBO_EDGE_ID            name of the pid/log files (default edge -> .chumbo/edge.pid, .chumbo/edge.log),
#                             so tests can run a second edge next to the dev one
#   CHUMBO_EDGE_V8_FLAGS      V8 flags for the edge (default below: a young generation large enough
#                             that a call's short-lived objects die young, and an old generation
#                             that starts at 128 MB; see bench/analysis.md).
#                             The Supabase runtime does not take V8 flags: there it runs with its own.
#   CHUMBO_PUBLIC_URL, CHUMBO_AUTHORIZATION_SERVERS, CHUMBO_ALLOWED_*, CHUMBO_DB_*, ...: passed through
#                             (see the header of supabase/functions/mcp/index.ts)
#   OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), e.g. http://localhost:4318:
#                             traces on: the edge exports, with the OpenTelemetry JS SDK, an HTTP span
#                             and MCP server spans with the database's phases per request, and the MCP
#                             metrics (docs/observability.md). The other OTEL_* variables pass through
#                             to it: OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or
#                             http/json), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME (default
#                             chumbo-edge), OTEL_TRACES_SAMPLER[_ARG], OTEL_BSP_SCHEDULE_DELAY, ...
#                             OTEL_SDK_DISABLED=true keeps it off. Unset: no tracing, and the edge's
#                             SQL is unchanged.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

PORT="${CHUMBO_PORT:-54321}"
ID="${CHUMBO_EDGE_ID:-edge}"
PIDFILE="$STATE/$ID.pid"
LOGFILE="$STATE/$ID.log"
FN="$ROOT/supabase/functions/mcp"
export CHUMBO_PORT="$PORT"
export CHUMBO_PUBLIC_URL="${CHUMBO_PUBLIC_URL:-http://localhost:$PORT/functions/v1/mcp}"
# A local bearer-token setup has no authorization server; advertise the dev issuer (scripts/mint-token.ts).
if [[ -z "${CHUMBO_AUTHORIZATION_SERVERS:-}" && -z "${SUPABASE_URL:-}" ]]; then
  export CHUMBO_AUTHORIZATION_SERVERS="${CHUMBO_DEV_ISSUER:-https://chumbo-dev-issuer.invalid}"
fi

# --initial-old-space-size: each answer's socket chunks and response copy are ArrayBuffers outside
# V8's heap (~40 kB a request); with the default limits they start a full mark-compact every ~500
# requests, whose pauses made the edge's p99 (bench/analysis.md, issue 32, session 21).
EDGE_V8_FLAGS="--max-semi-space-size=32,--initial-old-space-size=128"

stop() {
  if [[ -f "$PIDFILE" ]]; then
    local pid; pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$PIDFILE"
  fi
}

start() {
  stop
  EDGE_DATABASE_URL="${EDGE_DATABASE_URL:-${CHUMBO_EDGE_DATABASE_URL:-}}"
  if [[ -z "$EDGE_DATABASE_URL" && -f "$STATE/dev.env" ]]; then
    EDGE_DATABASE_URL="$(sed -n 's/^EDGE_DATABASE_URL=//p' "$STATE/dev.env" | tail -1)"
  fi
  [[ -n "${EDGE_DATABASE_URL:-}" ]] || die "edge.sh: set EDGE_DATABASE_URL (login role chumbo_edge)"
  command -v deno >/dev/null || die "edge.sh: deno not found (scripts/setup.sh installs it into tools/)"
  local listen=127.0.0.1 v8="${CHUMBO_EDGE_V8_FLAGS-$EDGE_V8_FLAGS}"
  [[ -e /proc/net/if_inet6 ]] && listen="127.0.0.1,::1"
  DATABASE_URL="$EDGE_DATABASE_URL" CHUMBO_LISTEN="$listen" \
    setsid nohup deno run --allow-env --allow-net --frozen --config "$FN/deno.json" ${v8:+"--v8-flags=$v8"} "$FN/index.ts" \
    >"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  for _ in $(seq 300); do   # 60 s: a cold Deno cache downloads postgres.js first
    # the function-local metadata URL: served whatever CHUMBO_PUBLIC_URL's path is
    if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/functions/v1/mcp/.well-known/oauth-protected-resource" 2>/dev/null; then
      echo "MCP_URL=$CHUMBO_PUBLIC_URL"
      return 0
    fi
    kill -0 "$(cat "$PIDFILE")" 2>/dev/null || break
    sleep 0.2
  done
  cat "$LOGFILE" >&2
  stop
  die "edge.sh: the edge did not come up on port $PORT (log above)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$CHUMBO_PUBLIC_URL" ;;
  status)
    if [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then echo "running (pid $(cat "$PIDFILE"))"
    else echo stopped; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status|url" >&2; exit 2 ;;
esac
