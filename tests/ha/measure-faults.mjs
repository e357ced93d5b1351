// What each failure costs writers, measured (docs/scaling.md), on a `CHUMBO_HA=1 make run` stack:
// a compare-and-set writer per user through the edge; then (1) only the standby down (its keeper
// and postmaster SIGKILLed), (2) it comes back, (3) the primary node lost (keeper and postmaster
// SIGKILLed, not restarted until the monitor has failed over). Prints the longest stretch without
// an acknowledged write after each fault.
//   set -a; . .chumbo/dev.env; set +a; node tests/ha/measure-faults.mjs HA_DIR PIDS_FILE
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
const [DIR, PIDS] = process.argv.slice(2);
const URL_ = process.env.MCP_URL;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function tool(token, args) {
  const t = Date.now();
  try {
    const r = await fetch(URL_, {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "preference", arguments: args },
      }),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: r.status, body: await r.json().catch(() => null), ms: Date.now() - t };
  } catch {
    return { status: 0, body: null, ms: Date.now() - t };
  }
}
const acks = [];
let stop = false, slowest = 0;
async function writer(token, who) {
  let rev = 0, n = 0;
  while (!stop) {
    const r = await tool(token, { name: "timezone", value: `${who}-${n++}`, expected_revision: rev });
    slowest = Math.max(slowest, r.ms);
    const res = r.body?.result;
    if (r.status === 200 && res && !res.isError) {
      rev = Number(res.structuredContent.revision);
      acks.push(Date.now());
    } else {
      const rd = await tool(token, { name: "timezone" });
      if (rd.body?.result?.structuredContent) rev = Number(rd.body.result.structuredContent.revision ?? 0);
      await sleep(100);
    }
  }
}
const monitor = (q) =>
  spawnSync("psql", ["-X", "-At", process.env.MONITOR_URL, "-c", q], { encoding: "utf8" }).stdout.trim();
const nodeOf = (state) => monitor(`select nodename from pgautofailover.node where reportedstate = '${state}' limit 1`);
// the keeper service itself (scripts/ha.sh records it; found by its command line as a fallback)
const keeperPid = (node) =>
  Number(
    spawnSync("pgrep", ["-n", "-f", "-x", `pg_autoctl run --pgdata ${DIR}/${node}`], { encoding: "utf8" }).stdout
      .trim() ||
      readFileSync(PIDS, "utf8").split("\n").find((l) => l.endsWith(` ${node}`)).split(" ")[0],
  );
const postmaster = (node) => Number(readFileSync(`${DIR}/${node}/postmaster.pid`, "utf8").split("\n")[0]);
const kill = (pid) => {
  try {
    process.kill(pid, "SIGKILL");
  } catch { /* gone */ }
};
// the whole node: the keeper's process group (its services and the postgres it started)
const killNode = (node) => {
  const keeper = keeperPid(node);
  const pgid = Number(spawnSync("ps", ["-o", "pgid=", "-p", String(keeper)], { encoding: "utf8" }).stdout.trim());
  const pm = postmaster(node);
  if (pgid > 1) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch { /* gone */ }
  }
  kill(keeper);
  kill(pm);
};
const ONLY = process.argv[4]; // "node-loss": only step 3; "standby-down": only step 1
const gapAfter = (t, until) => {
  let last = t, gap = 0;
  for (const a of acks.filter((a) => a > t && a <= until)) {
    gap = Math.max(gap, a - last);
    last = a;
  }
  return last === t ? Infinity : gap;
};
const running = [writer(process.env.ALICE_TOKEN, "alice"), writer(process.env.BOB_TOKEN, "bob")];
await sleep(2000);
const out = [];
let node, t;
if (ONLY !== "node-loss") {
  // 1. only the standby down
  node = nodeOf("secondary");
  t = Date.now();
  killNode(node);
  await sleep(40_000);
  out.push({
    fault: `standby ${node} down (its keeper's process group SIGKILLed)`,
    longestWithoutAckMs: gapAfter(t, Date.now()),
  });
  console.log(JSON.stringify(out.at(-1)));
  // 2. bring it back (the caller restarts its keeper)
  console.log(`restart ${node} now`);
  if (ONLY !== "standby-down") await sleep(40_000);
}
if (ONLY === "standby-down") {
  stop = true;
  await Promise.all(running);
  console.log(JSON.stringify({ acks: acks.length, slowestRequestMs: slowest, faults: out }));
  process.exit(0);
}
// 3. the primary node lost
node = nodeOf("primary");
t = Date.now();
killNode(node);
await sleep(75_000);
out.push({
  fault: `primary ${node} lost (its keeper's process group SIGKILLed)`,
  longestWithoutAckMs: gapAfter(t, Date.now()),
});
console.log(JSON.stringify(out.at(-1)));
stop = true;
await Promise.all(running);
console.log(JSON.stringify({ acks: acks.length, slowestRequestMs: slowest, faults: out }));
