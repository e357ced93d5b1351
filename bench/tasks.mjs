// `make bench`, durable tasks (issue 29): node bench/tasks.mjs OWNER_URL CALLER_URL OUT_JSON
//   1. latency: one client, the same tools/call answered directly and as a task (created, run by
//      a background worker, seen `completed` by tasks/get polled every millisecond), alternating in
//      rounds; median and p95 of each, and their ratio (goal: task <= 2x direct), for a 1-row tool
//      and for the same tool with 50 ms of work.
//   2. drain: 1,000 tasks queued with task_workers 0, then task_workers 2 and one wake: how fast
//      the workers drain them, while another client keeps calling the tool directly (its rate and
//      p95 during the drain against the same client alone just before).
// OWNER_URL: the owner (creates the bench tool, changes settings); CALLER_URL: the role that calls
// chumbo.handle (the bench's chumbo_edge). Results as JSON in OUT_JSON (bench/report.py renders them).
import pg from "./reference/node_modules/pg/lib/index.js";
import { writeFileSync } from "node:fs";

const [ownerUrl, callerUrl, out] = process.argv.slice(2);
const ALICE = { sub: "aaaaaaaa-0000-4000-8000-000000000001", role: "authenticated" };
const TASKS = "io.modelcontextprotocol/tasks";
const ROUNDS = Number(process.env.BENCH_TASK_ROUNDS ?? 4);
const PER_ROUND = Number(process.env.BENCH_TASK_CALLS ?? 50);
const DRAIN = Number(process.env.BENCH_TASK_DRAIN ?? 1000);

const request = (method, params, withTasks) => ({
  jsonrpc: "2.0",
  id: 1,
  method,
  params: {
    ...params,
    _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": withTasks ? { extensions: { [TASKS]: {} } } : {},
    },
  },
});
const CALL = { name: "bench_task_count", arguments: { status: "active" } };
// the same with 50 ms of work: what tasks are for
const SLOW = { name: "bench_task_slow", arguments: { status: "active" } };

async function connect(url) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}
const owner = await connect(ownerUrl);
const caller = await connect(callerUrl);
const other = await connect(callerUrl);
const handle = async (c, body) =>
  (await c.query("select chumbo.handle($1::jsonb, $2::jsonb) as r", [JSON.stringify(body), JSON.stringify(ALICE)]))
    .rows[0].r;
const configure = (settings) => owner.query("select chumbo.configure($1::jsonb)", [JSON.stringify(settings)]);

await owner.query(`
  create or replace function mcp.bench_task_count(status text) returns bigint language sql stable as $$
    select count(*) from public.projects p where p.status = bench_task_count.status $$;
  comment on function mcp.bench_task_count(text) is 'Counts projects (bench) @mcp {"task": "optional"}';
  create or replace function mcp.bench_task_slow(status text) returns bigint language sql stable as $$
    select count(*) from public.projects p, pg_sleep(0.05) where p.status = bench_task_slow.status $$;
  comment on function mcp.bench_task_slow(text) is 'Counts projects slowly (bench) @mcp {"task": "optional"}';
  grant execute on function mcp.bench_task_count(text), mcp.bench_task_slow(text) to authenticated;`);
await configure({ task_workers: 2, max_tasks_per_principal: DRAIN + 10 });

async function direct(c, call = CALL) {
  const t0 = performance.now();
  const r = await handle(c, request("tools/call", call, false));
  if (r.result?.content?.[0]?.text === undefined || r.result.isError) throw new Error(JSON.stringify(r));
  return performance.now() - t0;
}
async function asTask(call = CALL) {
  const t0 = performance.now();
  const created = await handle(caller, request("tools/call", call, true));
  const taskId = created.result?.taskId;
  if (!taskId) throw new Error(JSON.stringify(created));
  for (;;) {
    const t = await handle(caller, request("tasks/get", { taskId }, true));
    if (t.result?.status === "completed") return performance.now() - t0;
    if (t.result?.status !== "working") throw new Error(JSON.stringify(t));
    await new Promise((r) => setTimeout(r, 1));
  }
}
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

// 1. latency, alternating rounds (the first call of each kind warms up and is not counted)
await direct(caller);
await asTask();
const lat = { direct: [], task: [], directSlow: [], taskSlow: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < PER_ROUND; i++) lat.direct.push(await direct(caller));
  for (let i = 0; i < PER_ROUND; i++) lat.task.push(await asTask());
  for (let i = 0; i < PER_ROUND / 5; i++) lat.directSlow.push(await direct(caller, SLOW));
  for (let i = 0; i < PER_ROUND / 5; i++) lat.taskSlow.push(await asTask(SLOW));
}

// 2. drain
async function directFor(ms) {
  const times = [];
  const end = performance.now() + ms;
  while (performance.now() < end) times.push(await direct(other));
  return times;
}
const alone = await directFor(3000);
await configure({ task_workers: 0 });
await owner.query("delete from chumbo.tasks");
const tc0 = performance.now();
for (let i = 0; i < DRAIN; i++) await handle(caller, request("tools/call", CALL, true));
const createMs = performance.now() - tc0;
await configure({ task_workers: 2 });
let during = [];
const d0 = performance.now();
const loadDone = (async () => {
  while (true) {
    const batch = await directFor(250);
    during = during.concat(batch);
    const left = Number(
      (await owner.query("select count(*) from chumbo.tasks where status = 'working'")).rows[0].count,
    );
    if (left === 0) return;
    if (performance.now() - d0 > 300_000) throw new Error(`drain: ${left} tasks left after 300 s`);
  }
})();
// one poll wakes the workers (what a client polling its task does)
const any = (await owner.query("select id from chumbo.tasks limit 1")).rows[0].id;
await handle(caller, request("tasks/get", { taskId: any }, true));
await loadDone;
const drainMs = performance.now() - d0;
const completed = Number(
  (await owner.query("select count(*) from chumbo.tasks where status = 'completed'")).rows[0].count,
);

await configure({ task_workers: null, max_tasks_per_principal: null });
await owner.query("delete from chumbo.tasks; drop function mcp.bench_task_count(text), mcp.bench_task_slow(text)");
const result = {
  kind: "tasks",
  latency: {
    calls: lat.direct.length,
    direct_p50_ms: quantile(lat.direct, 0.5),
    direct_p95_ms: quantile(lat.direct, 0.95),
    task_p50_ms: quantile(lat.task, 0.5),
    task_p95_ms: quantile(lat.task, 0.95),
    slow_calls: lat.directSlow.length,
    slow_direct_p50_ms: quantile(lat.directSlow, 0.5),
    slow_task_p50_ms: quantile(lat.taskSlow, 0.5),
    slow_task_p95_ms: quantile(lat.taskSlow, 0.95),
  },
  drain: {
    tasks: DRAIN,
    completed,
    create_per_s: DRAIN / (createMs / 1000),
    drain_s: drainMs / 1000,
    drain_per_s: completed / (drainMs / 1000),
    other_alone_per_s: alone.length / 3,
    other_alone_p95_ms: quantile(alone, 0.95),
    other_during_per_s: during.length / (drainMs / 1000),
    other_during_p95_ms: quantile(during, 0.95),
  },
};
writeFileSync(out, JSON.stringify(result));
console.log(JSON.stringify(result, null, 1));
await Promise.all([owner.end(), caller.end(), other.end()]);
