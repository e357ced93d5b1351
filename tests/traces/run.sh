#!/usr/bin/env bash
# Spans out (docs/observability.md), with a real OTLP receiver:   tests/traces/run.sh
# (make test calls it with PGHOST/PGPORT of the test cluster; alone: PGPORT = a running cluster
# with the installed chumbo, default $CHUMBO_TEST_PG_PORT.)
#   1. the Python venv (CHUMBO_VENV, default .chumbo/venv) with opentelemetry-proto, pinned in
#      tests/e2e/requirements.txt
#   2. database chumbo_traces (example app, login role chumbo_edge, dev bearer tokens)
#   3. receiver.py on $TRACES_OTLP_PORT: decodes OTLP/HTTP (protobuf and JSON) with the official
#      schema and writes every span it receives as a JSON line to .chumbo/traces/spans.jsonl
#   4. seven edges (scripts/edge.sh), on free ports unless set: $TRACES_EDGE_PORT exports
#      http/protobuf to the receiver, $TRACES_JSON_EDGE_PORT http/json, $TRACES_DOWN_EDGE_PORT
#      to $TRACES_CLOSED_PORT where nothing listens, $TRACES_OFF_EDGE_PORT has no OTEL_* at all,
#      $TRACES_SAMPLED_EDGE_PORT exports with a parent-based ratio sampler that samples no root,
#      $TRACES_FLUSH_EDGE_PORT batches for ten minutes (what it holds leaves when it stops),
#      $TRACES_LIMITS_EDGE_PORT exports http/protobuf under attribute and link count limits
#   5. node --test traces.test.mjs, then stops what it started
#   6. deno test otlp_proto_test.ts: the edge's protobuf serializer gives the official one's bytes;
#      span_export_test.ts: the edge's span queue keeps the batch span processor's rules
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/lib.sh"

PGPORT="${PGPORT:-$TEST_PORT}"
DB=chumbo_traces
VENV="${CHUMBO_VENV:-$STATE/venv}"
OUT="$STATE/traces"
EDGES=(traces-edge traces-json-edge traces-down-edge traces-off-edge traces-sampled-edge traces-flush-edge
       traces-limits-edge)
RECEIVER_PID=""
pick_port TRACES_OTLP_PORT; pick_port TRACES_CLOSED_PORT
pick_port TRACES_EDGE_PORT; pick_port TRACES_JSON_EDGE_PORT; pick_port TRACES_DOWN_EDGE_PORT; pick_port TRACES_OFF_EDGE_PORT
pick_port TRACES_SAMPLED_EDGE_PORT; pick_port TRACES_FLUSH_EDGE_PORT; pick_port TRACES_LIMITS_EDGE_PORT
log "traces: receiver on 127.0.0.1:$TRACES_OTLP_PORT (nothing on $TRACES_CLOSED_PORT); edges on $TRACES_EDGE_PORT (protobuf), $TRACES_JSON_EDGE_PORT (json), $TRACES_DOWN_EDGE_PORT (receiver down), $TRACES_OFF_EDGE_PORT (off), $TRACES_SAMPLED_EDGE_PORT (ratio sampler)"

cleanup() {
  for id in "${EDGES[@]}"; do CHUMBO_EDGE_ID="$id" "$ROOT/scripts/edge.sh" stop || true; done
  if [[ -n "$RECEIVER_PID" ]]; then kill "$RECEIVER_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

# No OTEL_* from the caller's shell: each edge below gets exactly the ones it is about.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^OTEL_' || true)

# 1.
if ! "$VENV/bin/python" -c 'import opentelemetry.proto.collector.trace.v1.trace_service_pb2' 2>/dev/null; then
  log "python venv $VENV"
  [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$ROOT/tests/e2e/requirements.txt"
fi

# 2.
pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5 \
  || die "no PostgreSQL on 127.0.0.1:$PGPORT (start one: CHUMBO_CLUSTER=test scripts/cluster.sh start, or set PGPORT)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" app --edge
"$ROOT/scripts/dev-auth.sh" "postgres://postgres@127.0.0.1:$PGPORT/$DB"
EDGE_DB_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$PGPORT/$DB"

# 3.
mkdir -p "$OUT"
: > "$OUT/spans.jsonl"
: > "$OUT/spans.jsonl.metrics.jsonl"
"$VENV/bin/python" "$HERE/receiver.py" "$TRACES_OTLP_PORT" "$OUT/spans.jsonl" 2> "$OUT/receiver.log" &
RECEIVER_PID=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$TRACES_OTLP_PORT") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/127.0.0.1/$TRACES_OTLP_PORT") 2>/dev/null || { cat "$OUT/receiver.log" >&2; die "the receiver did not start"; }

# 4. A short batch delay: spans reach the receiver within a fraction of a second.
edge() { # edge ID PORT [VAR=VALUE...]: start one, with its own dev token (the audience is its URL)
  local id="$1" port="$2"; shift 2
  env "$@" CHUMBO_EDGE_ID="$id" CHUMBO_PORT="$port" CHUMBO_PUBLIC_URL='' CHUMBO_DB_POOL=2 \
    EDGE_DATABASE_URL="$EDGE_DB_URL" "$ROOT/scripts/edge.sh" start >/dev/null
}
otlp=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$TRACES_OTLP_PORT" OTEL_BSP_SCHEDULE_DELAY=100
      OTEL_METRIC_EXPORT_INTERVAL=300)
edge traces-edge "$TRACES_EDGE_PORT" "${otlp[@]}" OTEL_SERVICE_NAME=chumbo-traces-protobuf
# Also gzip-compressed, with a header of the exporter's own (a backend's API key, say), and an
# attribute value length limit (the span's own variable wins over the general one).
edge traces-json-edge "$TRACES_JSON_EDGE_PORT" "${otlp[@]}" OTEL_EXPORTER_OTLP_PROTOCOL=http/json \
  OTEL_SERVICE_NAME=chumbo-traces-json OTEL_EXPORTER_OTLP_COMPRESSION=gzip \
  OTEL_EXPORTER_OTLP_HEADERS=x-chumbo-test=json%20edge \
  OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT=24 OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=4
edge traces-down-edge "$TRACES_DOWN_EDGE_PORT" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$TRACES_CLOSED_PORT" \
  OTEL_BSP_SCHEDULE_DELAY=100 OTEL_SERVICE_NAME=chumbo-traces-down
edge traces-off-edge "$TRACES_OFF_EDGE_PORT"
edge traces-sampled-edge "$TRACES_SAMPLED_EDGE_PORT" "${otlp[@]}" OTEL_SERVICE_NAME=chumbo-traces-sampled \
  OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0
# Spans wait ten minutes in its batch: only its stop sends them.
edge traces-flush-edge "$TRACES_FLUSH_EDGE_PORT" "${otlp[@]}" OTEL_BSP_SCHEDULE_DELAY=600000 \
  OTEL_SERVICE_NAME=chumbo-traces-flush
# At most three attributes a span (the span's own variable wins over the general one), no link.
edge traces-limits-edge "$TRACES_LIMITS_EDGE_PORT" "${otlp[@]}" OTEL_SERVICE_NAME=chumbo-traces-limits \
  OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=3 OTEL_ATTRIBUTE_COUNT_LIMIT=100 OTEL_SPAN_LINK_COUNT_LIMIT=0

token() { CHUMBO_PUBLIC_URL="http://localhost:$1/functions/v1/mcp" deno run -A "$ROOT/scripts/mint-token.ts" alice; }
for v in TRACES_EDGE_PORT TRACES_JSON_EDGE_PORT TRACES_DOWN_EDGE_PORT TRACES_OFF_EDGE_PORT TRACES_SAMPLED_EDGE_PORT \
  TRACES_FLUSH_EDGE_PORT TRACES_LIMITS_EDGE_PORT; do
  export "${v%_PORT}_TOKEN=$(token "${!v}")"
done

# 5.
cd "$HERE"
status=0
TRACES_SPANS="$OUT/spans.jsonl" TRACES_PYTHON="$VENV/bin/python" TRACES_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$DB" \
  node "${NODE_TEST_ARGS[@]}" traces.test.mjs || status=$?
if ((status)); then
  warn "traces: FAILED (spans received: $OUT/spans.jsonl)"
  for id in "${EDGES[@]}"; do
    [[ -s "$STATE/$id.log" ]] && { echo "--- $STATE/$id.log (last 20 lines)"; tail -n 20 "$STATE/$id.log"; } >&2
  done
  [[ -s "$OUT/receiver.log" ]] && { echo "--- $OUT/receiver.log"; tail -n 20 "$OUT/receiver.log"; } >&2
  exit "$status"
fi
# 6.
deno test --frozen --config "$ROOT/supabase/functions/mcp/deno.json" --allow-env otlp_proto_test.ts
deno test --frozen --config "$ROOT/supabase/functions/mcp/deno.json" --allow-env --allow-net=127.0.0.1 span_export_test.ts
log "traces: passed"
