// Success floors: a conformance scenario that ran nothing must not pass. Counting failures against
// expected-failures.yml alone lets a scenario that checked nothing (or far fewer things than it
// used to) through, so each suite commits, per run and per scenario, the number of SUCCESS checks
// a real run gives (tests/conformance/min-successes.yml, tests/conformance-2026/min-successes.yml):
//
//   "0.1.16":                       # the run, as named in expected-failures.yml
//     tools-list: 1                 # at least 1 SUCCESS check
//     tools-call-sampling: {min: 0, reason: "its only check is an expected failure"}
//
// A run fails when a scenario has fewer SUCCESS checks than its floor, when a scenario that ran
// has no floor (a new scenario: add it with the count this run printed), when a scenario with a
// floor left no results, and when a floor is 0 without a reason. Floors are minimums: a fixed
// check raises a count without failing the run (raise the floor with it, `--print-floors`).
const fs = require("fs");

/** The floors of RUN in FILE: Map scenario -> {min, reason}. Throws on a malformed file. */
function loadFloors(file, run, YAML) {
  const doc = YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
  const section = doc[run];
  if (!section || typeof section !== "object") {
    throw new Error(`${file}: no floors for run "${run}"`);
  }
  const floors = new Map();
  for (const [scenario, v] of Object.entries(section)) {
    const min = typeof v === "number" ? v : v?.min;
    const reason = typeof v === "object" ? v?.reason : undefined;
    if (!Number.isInteger(min) || min < 0) {
      throw new Error(
        `${file}: ${run} / ${scenario}: the floor must be an integer >= 0`,
      );
    }
    if (min === 0 && !(typeof reason === "string" && reason.trim())) {
      throw new Error(
        `${file}: ${run} / ${scenario}: a floor of 0 needs a reason ({min: 0, reason: "..."})`,
      );
    }
    floors.set(scenario, { min, reason });
  }
  return floors;
}

/**
 * Checks ROWS ([{scenario, checks}]) of RUN against the floors in FILE. COUNT(checks) is the number
 * that must reach the floor (default: SUCCESS checks). Prints one summary line; returns problems.
 */
function checkFloors(
  file,
  run,
  rows,
  YAML,
  count = (checks) => checks.filter((c) => c.status === "SUCCESS").length,
) {
  const floors = loadFloors(file, run, YAML);
  const problems = [];
  let total = 0;
  const floorTotal = [...floors.values()].reduce((sum, f) => sum + f.min, 0);
  for (const { scenario, checks } of rows) {
    const n = count(checks);
    total += n;
    const floor = floors.get(scenario);
    if (!floor) {
      problems.push(
        `${scenario}: ${n} successful checks, but no floor in ${file} (a new scenario? add "${scenario}: ${n}" under "${run}")`,
      );
      continue;
    }
    if (n < floor.min) {
      problems.push(
        `${scenario}: ${n} successful checks, fewer than its floor of ${floor.min} (${file}): it ran less than it did`,
      );
    }
  }
  for (const [scenario] of floors) {
    if (!rows.some((r) => r.scenario === scenario)) {
      problems.push(
        `${scenario}: has a floor in ${file} but left no results in this run (it did not run)`,
      );
    }
  }
  console.log(
    `[${run}] successful checks: ${total}, floors: ${floorTotal} over ${floors.size} scenarios (${file})`,
  );
  return problems;
}

/** The current counts as a floors section to paste into FILE (`check-baseline.cjs ... --print-floors`). */
function printFloors(
  run,
  rows,
  count = (checks) => checks.filter((c) => c.status === "SUCCESS").length,
) {
  console.log(`"${run}":`);
  for (const { scenario, checks } of rows) {
    const n = count(checks);
    console.log(
      n ? `  ${scenario}: ${n}` : `  ${scenario}: {min: 0, reason: "TODO: why nothing succeeds"}`,
    );
  }
}

module.exports = { loadFloors, checkFloors, printFloors };
