// A node:test reporter that fails the run (exit status 1) when a test was skipped or marked todo
// without a reason, or when no test ran at all. Used next to the spec reporter by every suite's
// run.sh:
//
//   node --test --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter="$ROOT/tests/node-test-strict.mjs" --test-reporter-destination=stderr FILE...
//
// A skip must say why (`{ skip: "why" }`, `t.skip("why")`); a test that needs something the run
// does not provide (a database URL, a port) fails instead of skipping (see tests/README.md).
export default async function* strict(source) {
  const unexplained = [];
  let ran = 0;
  for await (const { type, data } of source) {
    if (type !== "test:pass" && type !== "test:fail") continue;
    const where = `${data.file ?? "?"}:${data.line ?? "?"} "${data.name}"`;
    for (const mark of ["skip", "todo"]) {
      const reason = data[mark];
      if (reason === true || (typeof reason === "string" && !reason.trim())) {
        unexplained.push(`${mark} without a reason: ${where}`);
      }
    }
    if (data.details?.type !== "suite" && data.skip === undefined && data.todo === undefined) ran++;
  }
  const problems = [...unexplained];
  if (ran === 0) problems.push("no test ran");
  if (problems.length) {
    process.exitCode = 1;
    yield `\nnode-test-strict: FAILED\n${problems.map((p) => `  - ${p}\n`).join("")}`;
  }
}
