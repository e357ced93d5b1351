// Durable tasks through the real edge (MCP 2026-07-28, extension io.modelcontextprotocol/tasks),
// with the example app's build_project_report (supabase/migrations/20260101000400_example_tasks.sql):
// a task answers at once and runs as its creator under RLS; notifications/tasks arrive on a
// subscriptions/listen stream for the caller's own task ids only; another user's task id is an
// unknown one, on every method and on listen; a burst of 20 tasks from Alice never runs more than
// task_workers workers and Bob is answered meanwhile; tasks/cancel stops a running task.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { MCP_URL, need, TOKENS, USERS } from "./common.mjs";
import { openListen as listenStream } from "../../lib/listen.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // owner connection to the e2e database
const TASKS = "io.modelcontextprotocol/tasks";
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": { extensions: { [TASKS]: {} } },
  "io.modelcontextprotocol/clientInfo": {
    name: "chumbo-e2e-tasks",
    version: "1.0.0",
  },
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sql(text) {
  const r = spawnSync("psql", [
    "-X",
    "-q",
    "-At",
    "-v",
    "ON_ERROR_STOP=1",
    DB_URL,
  ], { input: text, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** One 2026-07-28 request as `user`: the HTTP status and the JSON-RPC body. */
async function rpc(user, method, params, { signal } = {}) {
  const name = params.name ?? params.taskId;
  const res = await fetch(MCP_URL, {
    method: "POST",
    signal,
    headers: {
      authorization: `Bearer ${TOKENS[user]}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method,
      params: { ...params, _meta: META },
    }),
  });
  return { status: res.status, body: await res.json() };
}
const exportTask = async (user, seconds) => {
  const { body } = await rpc(user, "tools/call", {
    name: "build_project_report",
    arguments: { project_id: USERS[user].project, seconds },
  });
  assert.equal(body.result?.resultType, "task", JSON.stringify(body));
  return body.result.taskId;
};
const get = async (user, taskId) => (await rpc(user, "tasks/get", { taskId })).body;
async function settled(user, taskId, ms = 20000) {
  const end = Date.now() + ms;
  for (;;) {
    const t = await get(user, taskId);
    if (
      ["completed", "failed", "cancelled"].includes(t.result?.status) ||
      Date.now() > end
    ) return t;
    await sleep(100);
  }
}

/** An open subscriptions/listen stream as `user` (tests/lib/listen.mjs): its messages so far, and readFor(ms, until). */
async function listen(user, notifications) {
  const s = await listenStream(MCP_URL, TOKENS[user], { id: `tasks-${user}`, notifications, meta: META });
  assert.equal(s.status, 200);
  return { messages: s.messages, readFor: (ms, until = () => false) => s.until(until, ms), close: s.close };
}

describe("tasks through the edge", () => {
  test("a task answers at once, runs as its creator, and notifications/tasks follow it", async () => {
    const started = Date.now();
    const id = await exportTask("alice", 1);
    assert.ok(
      Date.now() - started < 900,
      "the CreateTaskResult came before the slow part ran",
    );
    assert.match(id, /^[0-9a-f]{32}$/);
    const stream = await listen("alice", { taskIds: [id] });
    try {
      await stream.readFor(5000, () => stream.messages().length >= 1);
      const [ack] = stream.messages();
      assert.deepEqual(ack.params.notifications, { taskIds: [id] });
      const done = () =>
        stream.messages().some((m) => m.method === "notifications/tasks" && m.params.status === "completed");
      await stream.readFor(15000, done);
      const note = stream.messages().find((m) => m.method === "notifications/tasks" && m.params.status === "completed");
      assert.ok(note, JSON.stringify(stream.messages()));
      assert.equal(note.params.taskId, id);
      assert.equal(note.params._meta[SUBSCRIPTION_ID], "tasks-alice");
      assert.deepEqual(
        JSON.parse(note.params.result.content[0].text),
        note.params.result.structuredContent,
      );
    } finally {
      await stream.close();
    }
    const t = await get("alice", id);
    assert.equal(t.result.status, "completed");
    // RLS as Alice: her own project (Acme's), by the id she asked for
    const name = sql(`select name from public.projects where id = '${USERS.alice.project}'`);
    assert.match(name, /^Acme /);
    assert.equal(t.result.result.structuredContent.project, name, JSON.stringify(t));
  });

  test("Bob gets the unknown-id answer for Alice's task everywhere, and listen leaves it out", async () => {
    const id = await exportTask("alice", 0.2);
    for (const method of ["tasks/get", "tasks/update", "tasks/cancel"]) {
      const theirs = await rpc("bob", method, {
        taskId: id,
        inputResponses: {},
      });
      const unknown = await rpc("bob", method, {
        taskId: "0".repeat(32),
        inputResponses: {},
      });
      assert.equal(theirs.status, 400, method);
      assert.deepEqual(theirs.body.error, unknown.body.error, method);
      assert.equal(theirs.body.error.code, -32602, method);
    }
    const stream = await listen("bob", { taskIds: [id] });
    try {
      await stream.readFor(5000, () => stream.messages().length >= 1);
      assert.deepEqual(stream.messages()[0].params.notifications, {
        taskIds: [],
      });
    } finally {
      await stream.close();
    }
    assert.equal(
      (await settled("alice", id)).result.status,
      "completed",
      "Bob's cancel did nothing",
    );
  });

  test("a burst of 20 tasks from Alice: at most task_workers workers, Bob answered meanwhile", async () => {
    // one after another: at once, max_in_flight (4) would refuse most of the creating requests
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push(await exportTask("alice", 0.3));
    let most = 0;
    const bobTimes = [];
    for (let i = 0; i < 15; i++) {
      most = Math.max(
        most,
        Number(
          sql(
            "select count(*) from pg_stat_activity where backend_type = 'chumbo task'",
          ),
        ),
      );
      const t0 = Date.now();
      const { body } = await rpc("bob", "tools/call", {
        name: "list_projects",
        arguments: {},
      });
      assert.ok(!body.result.isError, JSON.stringify(body));
      bobTimes.push(Date.now() - t0);
      await sleep(100);
    }
    assert.ok(most >= 1 && most <= 2, `workers at once: ${most}`);
    assert.ok(
      Math.max(...bobTimes) < 2000,
      `Bob waited ${Math.max(...bobTimes)} ms`,
    );
    const outcomes = await Promise.all(
      ids.map((id) => settled("alice", id, 30000)),
    );
    assert.deepEqual(
      outcomes.map((t) => t.result.status),
      ids.map(() => "completed"),
    );
  });

  test("tasks/cancel stops a running task's statement and settles cancelled", async () => {
    const id = await exportTask("alice", 25);
    const runner = () => sql(`select runner_pid from chumbo.tasks where id = '${id}'`);
    for (let i = 0; i < 100 && !runner(); i++) await sleep(100);
    const pid = runner();
    // that worker, sleeping in this task's statement
    const runningSleep = () =>
      Number(sql(`select count(*) from pg_stat_activity where pid = ${pid} and wait_event = 'PgSleep'`));
    for (let i = 0; i < 100 && runningSleep() === 0; i++) await sleep(100);
    assert.equal(runningSleep(), 1, "the task is running");
    const ack = await rpc("alice", "tasks/cancel", { taskId: id });
    assert.equal(ack.body.result.resultType, "complete");
    const t0 = Date.now();
    while (runningSleep() > 0 && Date.now() - t0 < 5000) await sleep(100);
    assert.equal(runningSleep(), 0, "its statement stopped");
    assert.equal((await get("alice", id)).result.status, "cancelled");
  });
});
