#!/usr/bin/env bash
# `make test` (and CI): every test suite, in this order, then a summary; non-zero on any failure.
#   0. lint              cargo fmt --check, cargo clippy -D warnings; deno fmt --check, deno lint (deno.json:
#                        the edge, scripts/*.ts, the JS tests), deno check (the edge, mint-token.ts);
#                        and every shell script through shellcheck (.shellcheckrc)
#      doc-refs          scripts/check-doc-refs.ts: the paths and test names the docs cite exist
#   1. cargo pgrx test   Rust unit tests + #[pg_test] (own temporary cluster as user postgres)
#   2. cargo pgrx install --release   AFTER 1, which leaves a debug pg_test build installed;
#      then `package`: make package, installed from the artifact into a private PostgreSQL copy
#   3. a fresh test cluster on 127.0.0.1:$CHUMBO_TEST_PG_PORT, stopped at the end
#      Every port (test cluster, edges, pgbouncer, test servers) is picked free at run time, below
#      the kernel's ephemeral range, and printed; a port set in the environment is used as is.
#   4. tests/regress/run.sh   SQL regression (pg_regress, bare database chumbo_regress), then
#      tests/regress/concurrency*.sh against the example app (database chumbo_concurrency), then
#      tests/isolation/run.sh (pg_isolation_regress, own database chumbo_isolation)
#   5. tests/readme/quickstart.sh, tests/readme/apps.sh, tests/e2e/run.sh, tests/conformance/run.sh, ...,
#      tests/apps/run.sh, tests/ha/run.sh (its own pg_auto_failover monitor + primary + standby on free
#      ports, ~10 s bring-up, ~35 s in all); a missing one FAILS (never "skipped"); they get PGHOST/PGPORT/PGUSER
#      and TEST_DATABASE_URL (superuser, database postgres) for the test cluster, and can
#      (re)create and load their own database with scripts/load-db.sh "$PGPORT" NAME [profile] --edge
#   6. the other PostgreSQL majors (lib.sh PG_OTHER_MAJORS, from PyPI wheels), each NN in turn
#      (tests/majors/run.sh): install-pgNN (release build into that major's own tree), then
#      regress-pgNN and isolation-pgNN on a fresh cluster of it. Everything above runs on $PG_MAJOR.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

passed=() failed=() skipped=()
# Each suite's output is also kept in STAGE_LOGS/NAME.log, so the summary can end with the tail of
# every failing suite's (CI shows only the end of a run's output).
STAGE_LOGS="$BASE/test-logs"
rm -rf "$STAGE_LOGS" && mkdir -p "$STAGE_LOGS"
# stage NAME CMD...: run one suite, record the outcome, keep going.
stage() {
  local name="$1"; shift
  log "[$name] $*"
  local t0=$SECONDS
  # tee by process substitution, not a pipe: a daemon a suite leaves holding its stdout cannot hang us.
  if "$@" > >(tee "$STAGE_LOGS/$name.log") 2>&1; then passed+=("$name"); log "[$name] passed ($((SECONDS - t0))s)"
  else failed+=("$name"); warn "[$name] FAILED ($((SECONDS - t0))s)"; fi
}
summary() {
  cleanup                        # first, so the closing lines below are the last thing printed
  local s
  for s in ${failed[@]+"${failed[@]}"}; do
    [[ -s "$STAGE_LOGS/$s.log" ]] || continue
    echo
    echo "================ the end of $s's output ($STAGE_LOGS/$s.log) ================"
    tail -n 60 "$STAGE_LOGS/$s.log"
  done
  echo
  echo "================ make test summary ================"
  for s in ${passed[@]+"${passed[@]}"};   do echo "  ok      $s"; done
  for s in ${skipped[@]+"${skipped[@]}"}; do echo "  skipped $s"; done
  for s in ${failed[@]+"${failed[@]}"};   do echo "  FAILED  $s"; done
  echo "suites: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
  # Last, because a CI page may show only the final lines: why each failed suite failed, in short
  # (its first assertion and error lines), so a flake seen once can still be diagnosed.
  for s in ${failed[@]+"${failed[@]}"}; do
    [[ -s "$STAGE_LOGS/$s.log" ]] || continue
    echo "why $s failed (first lines):"
    grep -E 'AssertionError|Error:|error:|✖|FAILED|^not ok|ERROR' "$STAGE_LOGS/$s.log" | grep -v '^ℹ' \
      | awk '!seen[$0]++' | head -n 6 | cut -c1-240 | sed 's/^/    /' || true
  done
}
cleanup() { CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" stop || true; }
trap cleanup EXIT

"$ROOT/scripts/setup.sh"

# Ports: whatever the environment sets, else free ones (lib.sh pick_port), so a fresh machine or
# CI runner never depends on fixed ports inside the ephemeral range staying free.
PORT_VARS=(CHUMBO_TEST_PG_PORT E2E_PORT E2E_PGBOUNCER_PORT E2E_PGB_EDGE_PORT E2E_JWKS_PORT E2E_SHUTDOWN_PORT
           CHUMBO_CONFORMANCE_PORT CHUMBO_CONFORMANCE_2026_PORT OAUTH_EDGE_PORT OAUTH_AS_PORT
           DOCTOR_EDGE_PORT E2E_AUX_EDGE_PORT E2E_AUX_JWKS_PORT
           CONSENT_EDGE_PORT CONSENT_OFF_PORT CONSENT_BAD_PORT CONSENT_AUTH_PORT SUPABASE_EDGE_PORT SUPABASE_AS_PORT
           CHUMBO_PKG_PG_PORT AUDIT_QUEUE_PG_PORT TASKS_PG_PORT CHUMBO_MAJOR_PG_PORT
           TRACES_OTLP_PORT TRACES_CLOSED_PORT TRACES_EDGE_PORT TRACES_JSON_EDGE_PORT TRACES_DOWN_EDGE_PORT
           TRACES_OFF_EDGE_PORT HA_EDGE_PORT APPS_EDGE_PORT)
for v in "${PORT_VARS[@]}"; do pick_port "$v"; done
TEST_PORT="$CHUMBO_TEST_PG_PORT"
log "ports: $(for v in "${PORT_VARS[@]}"; do printf '%s=%s ' "$v" "${!v}"; done)"

# 1. --runas needs a --pgdata that postgres can create directories in (target/ is root's); one per
# checkout (BASE holds this checkout's hash), so two checkouts never share or wipe each other's.
PGRX_PGDATA="$BASE/pgrx-test"
mkdir -p "$PGRX_PGDATA" && chown postgres: "$BASE" "$PGRX_PGDATA"
lint() {
  local scripts=()
  mapfile -t scripts < <(find scripts tests bench -name node_modules -prune -o -name '*.sh' -print | sort)
  cargo fmt --check && cargo clippy --quiet --features "pg$PG_MAJOR" -- -D warnings \
    && deno fmt --check && deno lint \
    && (cd supabase/functions/mcp && deno check --frozen index.ts consent.ts) \
    && (cd scripts && deno check --frozen mint-token.ts check-doc-refs.ts remote-doctor.ts) \
    && shellcheck "${scripts[@]}" .ci/run
}
stage lint lint
# Every path docs/*.md, CONTRIBUTING.md and tests/README.md name exists; every test they cite by name too.
stage doc-refs deno run --allow-read scripts/check-doc-refs.ts
stage unit cargo pgrx test "pg$PG_MAJOR" --runas postgres --pgdata "$PGRX_PGDATA"

# 2. Without a working release install nothing below can run.
stage install "$ROOT/scripts/install.sh"
if [[ " ${failed[*]-} " == *" install "* ]]; then
  skipped+=(package regress isolation audit-queue tasks readme e2e conformance); summary; exit 1
fi
# The package built from the warm release build, installed into a private copy of PostgreSQL $PG_MAJOR
# from the artifact alone: the quickstart, and the upgrade from every kept release to current compared with a fresh
# install (tests/package/).
stage package bash -c "scripts/package.sh && tests/package/run.sh"

# 3.
if ! CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" fresh; then
  failed+=(test-cluster); skipped+=(regress isolation readme e2e conformance); summary; exit 1
fi
export PGHOST=127.0.0.1 PGPORT="$TEST_PORT" PGUSER=postgres CHUMBO_TEST_PG_PORT="$TEST_PORT"
export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$TEST_PORT/postgres"
export CHUMBO_VENV="$STATE/venv"

# 4. and 5.
stage regress "$ROOT/tests/regress/run.sh"
# Concurrency: real parallel sessions against the example app, in its own database (the
# regression database is bare: each SQL test builds its own fixture and rolls it back).
if "$ROOT/scripts/load-db.sh" "$TEST_PORT" chumbo_concurrency app; then
  for script in tests/regress/concurrency*.sh; do
    if [[ -f "$script" ]]; then stage "$(basename "$script" .sh)" env PGDATABASE=chumbo_concurrency bash "$script"
    else failed+=(concurrency); warn "[concurrency] FAILED: no tests/regress/concurrency*.sh"; fi
  done
else
  failed+=(concurrency-db)
fi
# Isolation specs (pg_isolation_regress): deterministic interleavings of concurrent sessions.
stage isolation "$ROOT/tests/isolation/run.sh"
# The audit queue needs shared_preload_libraries = 'chumbo': a cluster of its own.
stage audit-queue bash "$ROOT/tests/audit-queue/run.sh"
# Durable tasks' background workers, crashes and cancels: a preloaded cluster of its own too.
stage tasks bash "$ROOT/tests/tasks/run.sh"
# The README's MCP Apps block, run as written (a second README runner, so a stage of its own name).
if [[ -f tests/readme/apps.sh ]]; then stage readme-apps bash tests/readme/apps.sh
else failed+=(readme-apps); warn "[readme-apps] FAILED: tests/readme/apps.sh is missing"; fi
for suite in readme/quickstart.sh e2e/run.sh conformance/run.sh conformance-2026/run.sh oauth/run.sh consent/run.sh \
             traces/run.sh apps/run.sh ha/run.sh; do
  name="${suite%%/*}"
  # A missing runner is a failure, never a skip: a suite that does not run proves nothing.
  if [[ -f "tests/$suite" ]]; then stage "$name" bash "tests/$suite"
  else failed+=("$name"); warn "[$name] FAILED: tests/$suite is missing"; fi
done

# 6. The other majors, one cluster at a time on one port (each stage stops its own).
for m in ${PG_OTHER_MAJORS[@]+"${PG_OTHER_MAJORS[@]}"}; do
  stage "install-pg$m" tests/majors/run.sh "$m" install
  if [[ " ${failed[*]-} " == *" install-pg$m "* ]]; then skipped+=("regress-pg$m" "isolation-pg$m"); continue; fi
  stage "regress-pg$m" tests/majors/run.sh "$m" regress
  stage "isolation-pg$m" tests/majors/run.sh "$m" isolation
done

summary
((${#failed[@]} == 0))
