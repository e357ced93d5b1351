#!/usr/bin/env bash
# `make stop`: stop what `make run` started, by the pids it recorded in .chumbo/. Data is kept.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# The edge first (it holds connections to the cluster).
if [[ -x "$ROOT/scripts/edge.sh" ]]; then "$ROOT/scripts/edge.sh" stop || warn "scripts/edge.sh stop failed"; fi
if [[ -f "$STATE/edge.pid" ]]; then
  pid="$(cat "$STATE/edge.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    log "stop edge pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/edge.pid"
fi

CHUMBO_CLUSTER=dev "$ROOT/scripts/cluster.sh" stop
# CHUMBO_HA=1 make run's monitor and nodes (scripts/ha.sh), when they were started
if [[ -f "$STATE/ha-dev.pids" ]]; then CHUMBO_CLUSTER=dev "$ROOT/scripts/ha.sh" stop; fi
