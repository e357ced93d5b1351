// Durable state, per-tool rate limits and sandboxes through the real stack (edge -> chumbo ->
// example app, supabase/migrations/20260101000200_example_state.sql) with the official
// TypeScript client, as Alice and Bob: each sees only what their own sign-in stored or started.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect, TOKENS, USERS } from "./common.mjs";

const run = `${process.pid}-${Date.now()}`; // values unique to this run: the database may be reused
const clients = {};
before(async () => {
  clients.alice = await connect(TOKENS.alice);
  clients.bob = await connect(TOKENS.bob);
});
after(async () => {
  await clients.alice?.close();
  await clients.bob?.close();
});

async function call(user, name, args = {}) {
  return await clients[user].callTool({ name, arguments: args });
}

test("the state, rate-limited and sandbox tools are listed", async () => {
  for (const user of ["alice", "bob"]) {
    const { tools } = await clients[user].listTools();
    const names = tools.map((t) => t.name);
    for (const n of ["preference", "export_project", "open_workspace"]) assert.ok(names.includes(n), `${n} in ${names}`);
    const pref = tools.find((t) => t.name === "preference");
    assert.deepEqual(pref.inputSchema.required, ["name"]);
    assert.ok(pref.inputSchema.properties.name.enum.includes("tone"));
  }
});

describe("durable state: a remembered preference", () => {
  test("Alice remembers a value and reads it back in a later request", async () => {
    const set = await call("alice", "preference", { name: "tone", value: `formal ${run}` });
    assert.ok(!set.isError, JSON.stringify(set));
    assert.equal(set.structuredContent.value, `formal ${run}`);
    assert.ok(set.structuredContent.revision >= 1);
    const got = await call("alice", "preference", { name: "tone" });
    assert.equal(got.structuredContent.value, `formal ${run}`);
    assert.equal(got.structuredContent.revision, set.structuredContent.revision);
  });

  test("Bob does not see Alice's value, and his own does not touch hers", async () => {
    const bobs = await call("bob", "preference", { name: "tone" });
    assert.ok(!bobs.isError, JSON.stringify(bobs));
    assert.notEqual(bobs.structuredContent.value, `formal ${run}`);
    assert.ok(!JSON.stringify(bobs).includes(run), JSON.stringify(bobs));
    const set = await call("bob", "preference", { name: "tone", value: `casual ${run}` });
    assert.equal(set.structuredContent.value, `casual ${run}`);
    const alices = await call("alice", "preference", { name: "tone" });
    assert.equal(alices.structuredContent.value, `formal ${run}`);
  });

  test("compare-and-set: a stale revision is refused with the current one", async () => {
    const { structuredContent: cur } = await call("alice", "preference", { name: "language" });
    const rev = cur.revision ?? 0;
    const ok = await call("alice", "preference", { name: "language", value: `pt ${run}`, expected_revision: rev });
    assert.ok(!ok.isError, JSON.stringify(ok));
    assert.equal(ok.structuredContent.revision, rev + 1);
    const stale = await call("alice", "preference", { name: "language", value: `en ${run}`, expected_revision: rev });
    assert.equal(stale.isError, true, JSON.stringify(stale));
    assert.match(stale.content[0].text, new RegExp(`changed meanwhile: it is now pt ${run} \\(revision ${rev + 1}\\)`));
    const after = await call("alice", "preference", { name: "language" });
    assert.equal(after.structuredContent.value, `pt ${run}`);
  });
});

describe("per-tool rate limit: export_project, 3 per minute per user", () => {
  test("Alice is refused with the retry time after 3 calls in a minute; Bob is not", async () => {
    // Stay inside one fixed one-minute window (the server's clock is this machine's).
    const sec = new Date().getSeconds();
    if (sec > 45) await new Promise((r) => setTimeout(r, (61 - sec) * 1000));
    const exportAsAlice = () => call("alice", "export_project", { project_id: USERS.alice.project });
    let results = [await exportAsAlice()];
    if (results[0].isError) {
      // an earlier run used up this minute: wait for the next window, as the error says
      const retry = Number(/retry in (\d+) s/.exec(results[0].content[0].text)?.[1] ?? 60);
      await new Promise((r) => setTimeout(r, (retry + 1) * 1000));
      results = [await exportAsAlice()];
    }
    for (let i = 1; i < 4; i++) results.push(await exportAsAlice());
    const ok = results.filter((r) => !r.isError);
    const refused = results.filter((r) => r.isError);
    assert.ok(ok.length >= 1 && ok.length <= 3, JSON.stringify(results));
    for (const r of ok) assert.match(r.content[0].text, new RegExp(`^# ${USERS.alice.org} `));
    assert.ok(refused.length >= 1, "the 4th call of the minute must be refused");
    assert.match(refused.at(-1).content[0].text, /Rate limit of 3 calls per minute reached for export_project: retry in \d+ s/);
    const bob = await call("bob", "export_project", { project_id: USERS.bob.project });
    assert.ok(!bob.isError, JSON.stringify(bob));
    assert.match(bob.content[0].text, new RegExp(`^# ${USERS.bob.org} `));
    assert.ok(!bob.content[0].text.includes(USERS.bob.other));
  });
});

describe("sandboxes: open_workspace", () => {
  test("Alice's second call reuses her running workspace", async () => {
    const first = await call("alice", "open_workspace", { project_id: USERS.alice.project });
    assert.ok(!first.isError, JSON.stringify(first));
    const second = await call("alice", "open_workspace", { project_id: USERS.alice.project });
    assert.equal(second.structuredContent.reused, true);
    assert.equal(second.structuredContent.sandbox_id, first.structuredContent.sandbox_id);
    assert.match(second.structuredContent.provider_sandbox_id, /^fakebox-/);
  });

  test("Bob gets his own workspace, and none for Alice's project", async () => {
    const alice = await call("alice", "open_workspace", { project_id: USERS.alice.project });
    const bob = await call("bob", "open_workspace", { project_id: USERS.bob.project });
    assert.ok(!bob.isError, JSON.stringify(bob));
    assert.notEqual(bob.structuredContent.sandbox_id, alice.structuredContent.sandbox_id);
    const again = await call("bob", "open_workspace", { project_id: USERS.bob.project });
    assert.equal(again.structuredContent.sandbox_id, bob.structuredContent.sandbox_id);
    const foreign = await call("bob", "open_workspace", { project_id: USERS.alice.project });
    assert.equal(foreign.isError, true);
    assert.match(foreign.content[0].text, /project not found/);
    assert.ok(!JSON.stringify(foreign).includes(alice.structuredContent.sandbox_id));
  });
});
