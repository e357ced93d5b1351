#!/usr/bin/env bash
# The official MCP conformance suite, alpha with the 2026-07-28 scenarios
# (@modelcontextprotocol/conformance@0.2.0-alpha.12), against chumbo through the real edge, in
# public mode:   tests/conformance-2026/run.sh   (make test calls it with PGHOST/PGPORT)
#
# 1. Node 22 from tools/node/ and the suite, pinned in tests/conformance-2026/package-lock.json.
# 2. Database chumbo_conformance_2026 on the cluster at PGPORT (default: the test cluster's port,
#    started and stopped here when nothing runs there): scripts/load-db.sh's conformance profile (legacy fixtures,
#    auth_mode public, chumbo_edge), plus tests/conformance/fixtures-2026.sql when that profile
#    did not load it already.
# 3. An edge (CHUMBO_EDGE_ID=edge-conformance-2026) on CHUMBO_CONFORMANCE_2026_PORT (a free port unless set).
# 4. `--requirements 2026-07-28`: every scored scenario must pass; failing checks of the scenarios
#    the suite runs without scoring must be listed (by check, with the reason) in
#    tests/conformance/expected-failures.yml. Then `--requirements 2025-11-25` against the same
#    build and the same per-check baseline. tests/conformance/check-baseline.cjs decides; every
#    scenario must also reach its floor of successful checks in tests/conformance-2026/min-successes.yml
#    (tests/conformance/floors.cjs), so a scenario that ran nothing fails.
#    Results in .chumbo/conformance-2026/{2026-07-28,2025-11-25}/.
# 5. The sep-2640-skills-* scenarios (the skills extension), each run by name: every check passes,
#    and each reaches its floor of sep-2640 successes (run "skills" in min-successes.yml).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, tools/ on PATH

SUITE_VERSION=0.2.0-alpha.12
DB=chumbo_conformance_2026
PGPORT="${PGPORT:-$TEST_PORT}"
pick_port CHUMBO_CONFORMANCE_2026_PORT; EDGE_PORT="$CHUMBO_CONFORMANCE_2026_PORT"   # free one unless set
MCP_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"   # host must be localhost (dns-rebinding-protection)
OUT="$STATE/conformance-2026"
BASELINE="$ROOT/tests/conformance/expected-failures.yml"   # per check, runs 2026-07-28 and 2025-11-25
FLOORS="$HERE/min-successes.yml"                             # per scenario: successful checks, at least

# 1.
need_node22   # Node 22 at $NODE (scripts/lib.sh)
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"
if [[ "$("$NODE" -p "require('$SUITE/package.json').version" 2>/dev/null)" != "$SUITE_VERSION" ]]; then
  log "npm ci in tests/conformance-2026/ (@modelcontextprotocol/conformance@$SUITE_VERSION)"
  (cd "$HERE" && PATH="$(dirname "$NODE"):${PATH#"$ROOT/tools/node_modules/.bin:$ROOT/tools/node/node_modules/.bin:"}" \
     npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
fi

# 2.
EDGE_ID=edge-conformance-2026                             # .chumbo/edge-conformance-2026.{pid,log}
started_cluster=
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  CHUMBO_EDGE_ID="$EDGE_ID" "$ROOT/scripts/edge.sh" stop || true
  [[ -z "$started_cluster" ]] || CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" stop || true
}
trap cleanup EXIT
if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5; then
  # Run on its own (not from make test): start the test cluster, and stop it again at the end.
  [[ "$PGPORT" == "$TEST_PORT" ]] || die "no PostgreSQL on 127.0.0.1:$PGPORT (set PGPORT to a running cluster)"
  CHUMBO_CLUSTER='test' "$ROOT/scripts/cluster.sh" start
  started_cluster=1
fi
[[ -f "$PG_SHAREDIR/extension/chumbo.control" ]] || die "extension chumbo is not installed (scripts/install.sh)"
"$ROOT/scripts/load-db.sh" "$PGPORT" "$DB" conformance --edge
if [[ "$(psql_at "$PGPORT" "$DB" -At -c "select to_regprocedure('mcp.test_x_mcp_header(text)') is null")" == t ]]; then
  log "load tests/conformance/fixtures-2026.sql"
  psql_at "$PGPORT" "$DB" -q -f "$ROOT/tests/conformance/fixtures-2026.sql"
fi

# 3.
export CHUMBO_EDGE_ID="$EDGE_ID" CHUMBO_PORT="$EDGE_PORT" CHUMBO_PUBLIC_URL="$MCP_URL"
EDGE_DATABASE_URL="postgres://chumbo_edge:$(cat "$STATE/edge-password")@127.0.0.1:$PGPORT/$DB"
export EDGE_DATABASE_URL CHUMBO_EDGE_DATABASE_URL="$EDGE_DATABASE_URL"
"$ROOT/scripts/edge.sh" start >/dev/null
log "edge up: $MCP_URL (log: $STATE/$CHUMBO_EDGE_ID.log)"

# 4.
rm -rf "$OUT"; mkdir -p "$OUT"
status=0
run() { # run REVISION [--scored-only-strict]
  local rev="$1" rc=0
  mkdir -p "$OUT/$rev"
  log "conformance $SUITE_VERSION server --requirements $rev"
  "$NODE" "$SUITE/dist/index.js" server --url "$MCP_URL" --requirements "$rev" -o "$OUT/$rev" \
    > "$OUT/$rev/suite.log" 2>&1 || rc=$?
  log "suite --requirements $rev exited $rc (failing checks are scored below, not by the exit status)"
  "$NODE" "$ROOT/tests/conformance/check-baseline.cjs" "$OUT/$rev" "$rev" "$BASELINE" "$SUITE" --floors="$FLOORS" "${@:2}" \
    || { status=1; warn "conformance --requirements $rev failed (output: $OUT/$rev/suite.log)"; }
}
# Every scored 2026-07-28 scenario must pass outright; the scenarios the suite runs without
# scoring (extensions, pending) are held to the baseline like everything else.
run 2026-07-28 --scored-only-strict
run 2025-11-25

# 5. The skills extension (SEP-2640): the suite runs its scenarios only when named. The fixtures
#    serve chumbo's own skill to anon, so every check must pass; the only skips allowed are the
#    optional resources/directory/read checks (chumbo does not declare directoryRead).
for scenario in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
  dir="$OUT/skills/$scenario"; mkdir -p "$dir"
  "$NODE" "$SUITE/dist/index.js" server --url "$MCP_URL" --scenario "$scenario" -o "$dir" > "$dir/suite.log" 2>&1 || true
done
# shellcheck disable=SC2016  # a JavaScript program: its ${...} are JavaScript's, not the shell's
"$NODE" -e '
  const fs = require("fs"), path = require("path");
  const [out, floorsFile, suite, floors] = process.argv.slice(1);
  const YAML = require(require.resolve("yaml", { paths: [suite] }));
  const rows = [], problems = [];
  for (const scenario of fs.readdirSync(out).sort()) {
    const dir = path.join(out, scenario);
    const runs = fs.readdirSync(dir).filter(d => fs.existsSync(path.join(dir, d, "checks.json")));
    if (runs.length !== 1) { problems.push(`${scenario}: no results`); continue; }
    const checks = JSON.parse(fs.readFileSync(path.join(dir, runs[0], "checks.json"), "utf8"));
    const bad = checks.filter(c => !(c.status === "SUCCESS" || c.status === "INFO"
      || (c.status === "SKIPPED" && /directory/.test(c.id))));
    const ok = checks.filter(c => c.status === "SUCCESS" && c.id.startsWith("sep-2640-")).length;
    for (const c of bad) problems.push(`${scenario}: ${c.status} ${c.id}: ${c.errorMessage ?? ""}`);
    console.error(`[skills] ${scenario}: ${ok} sep-2640 checks passed, ${bad.length} not`);
    rows.push({ scenario, checks });
  }
  problems.push(...require(floors).checkFloors(floorsFile, "skills", rows, YAML,
    (cs) => cs.filter(c => c.status === "SUCCESS" && c.id.startsWith("sep-2640-")).length));
  for (const p of problems) console.error(`  ${p}`);
  process.exit(problems.length ? 1 : 0);
' "$OUT/skills" "$FLOORS" "$SUITE" "$ROOT/tests/conformance/floors.cjs" \
  || { status=1; warn "conformance: the skills scenarios failed (output: $OUT/skills)"; }

((status == 0)) || warn "edge log: $STATE/$CHUMBO_EDGE_ID.log"
exit "$status"
