// Scores one run of the official conformance suite against tests/conformance/expected-failures.yml,
// check by check (the suite's own --expected-failures works per scenario, which would hide every
// other check of a listed scenario):
//   node check-baseline.cjs OUT_DIR RUN BASELINE_YML SUITE_DIR [--scored-only-strict] [--floors=FILE] [--print-floors]
//     OUT_DIR   the suite's -o directory (one server-<scenario>-<timestamp>/checks.json each) and
//               its console output in OUT_DIR/*.log
//     RUN       the run's name in the baseline's `runs:` lists (0.1.16, 2025-11-25, 2026-07-28)
//     SUITE_DIR the suite's package directory (its `yaml` dependency parses the baseline)
//     --scored-only-strict   a failing check of a scored scenario fails even when listed (the
//               2026-07-28 run: every scored scenario must pass; only unscored ones may be listed)
//     --floors=FILE  each scenario's SUCCESS checks must reach its floor for RUN in FILE (floors.cjs)
//     --print-floors print this run's counts as a floors section (to update FILE)
// Fails (exit 1) on: any FAILURE/WARNING check not listed for this run (scored or not), any listed
// check that did not fail this run (stale: remove it), a scenario the suite reports but that left
// no results, a suite run that did not finish, or (with --floors) a scenario below its floor of
// successful checks, or one without a floor.
const fs = require("fs");
const path = require("path");

const [out, run, baselineFile, suiteDir, ...flags] = process.argv.slice(2);
const strictScored = flags.includes("--scored-only-strict");
const floorsFile = flags.find((f) => f.startsWith("--floors="))?.slice("--floors=".length);
const { checkFloors, printFloors } = require("./floors.cjs");
const YAML = require(require.resolve("yaml", { paths: [suiteDir] }));

const doc = YAML.parse(fs.readFileSync(baselineFile, "utf8")) ?? {};
const entries = (doc.expected ?? []).filter((e) => (e.runs ?? []).map(String).includes(run));
for (const e of doc.expected ?? []) {
  for (const k of ["scenario", "check", "status", "runs", "reason"]) {
    if (!e[k]) throw new Error(`${baselineFile}: an entry lacks "${k}": ${JSON.stringify(e)}`);
  }
}
const key = (scenario, check, status) => `${scenario} / ${check} / ${status}`;
const listed = new Map(entries.map((e) => [key(e.scenario, e.check, e.status), e]));

// The suite's console output: its per-scenario summary, and what it ran without scoring.
const logText = fs.readdirSync(out).filter((f) => f.endsWith(".log"))
  // deno-lint-ignore no-control-regex -- strips the suite's ANSI colour codes (ESC [ ... m)
  .map((f) => fs.readFileSync(path.join(out, f), "utf8")).join("\n").replace(/\x1b\[[0-9;]*m/g, "");
const notScored = new Map([...(logText.split(/^Not scored for/m)[1] ?? "").matchAll(/^\s+[✓✗] (\S+) \((\w+)\)/gm)]
  .map((m) => [m[1], m[2]]));
const summarized = new Set([...logText.matchAll(/^[✓✗] (\S+): \d+ passed, \d+ failed/gm)].map((m) => m[1]));

const rows = [];
for (const dir of fs.readdirSync(out).sort()) {
  const file = path.join(out, dir, "checks.json");
  if (!fs.existsSync(file)) continue;
  const scenario = dir.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
  rows.push({ scenario, checks: JSON.parse(fs.readFileSync(file, "utf8")) });
}

const problems = [];
if (!rows.length) problems.push(`no results in ${out}`);
if (!summarized.size) problems.push("the suite printed no per-scenario summary (did it finish?)");
for (const s of summarized) {
  if (!rows.some((r) => r.scenario === s)) {
    problems.push(`${s}: reported by the suite but left no checks.json (it failed to run)`);
  }
}

const seen = new Set();
const w = Math.max(...rows.map((r) => r.scenario.length), 8);
console.log(`\n[${run}] ${"scenario".padEnd(w)}  SUCCESS FAILURE WARNING  verdict`);
let ok = 0, expectedOnly = 0, bad = 0;
for (const { scenario, checks } of rows) {
  const n = (s) => checks.filter((c) => c.status === s).length;
  const scored = !notScored.has(scenario);
  const lines = [];
  let unexpected = 0, expected = 0;
  for (const c of checks.filter((c) => c.status === "FAILURE" || c.status === "WARNING")) {
    const k = key(scenario, c.id, c.status);
    const entry = listed.get(k);
    if (entry && !(strictScored && scored)) {
      seen.add(k);
      expected++;
      lines.push(`      expected ${c.status} ${c.id}: ${entry.reason.trim().split("\n")[0]}`);
    } else {
      unexpected++;
      problems.push(
        `${scenario}: ${c.status} ${c.id}${
          entry ? " (listed, but this run requires every scored scenario to pass)" : ""
        }: ${c.errorMessage ?? c.details?.message ?? ""}`,
      );
      lines.push(`      UNEXPECTED ${c.status} ${c.id}: ${c.errorMessage ?? c.details?.message ?? ""}`);
    }
  }
  const verdict = unexpected ? "FAILED" : expected ? "expected failures only" : "ok";
  if (unexpected) bad++;
  else if (expected) expectedOnly++;
  else ok++;
  const tag = scored ? "" : ` (not scored: ${notScored.get(scenario)})`;
  console.log(
    `[${run}] ${scenario.padEnd(w)}  ${String(n("SUCCESS")).padStart(7)} ${String(n("FAILURE")).padStart(7)} ${
      String(n("WARNING")).padStart(7)
    }  ${verdict}${tag}`,
  );
  for (const l of lines) console.log(l);
}
if (flags.includes("--print-floors")) printFloors(run, rows);
if (floorsFile) problems.push(...checkFloors(floorsFile, run, rows, YAML));
for (const [k] of listed) {
  if (!seen.has(k)) {
    problems.push(`stale baseline entry (it did not fail in this run; remove it or fix its run list): ${k}`);
  }
}
console.log(
  `[${run}] scenarios: ${rows.length} run (${notScored.size} not scored), ${ok} ok, ${expectedOnly} with expected failures only, ${bad} with unexpected failures; baseline entries for this run: ${listed.size}`,
);
if (problems.length) {
  console.log(`[${run}] FAILED:`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log(
  `[${run}] baseline check passed: every failing check is listed with its reason, and every listed one still fails${
    floorsFile ? "; every scenario reached its floor of successful checks" : ""
  }`,
);
