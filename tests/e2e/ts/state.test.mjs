// Durable state, per-tool rate limits and sandboxes through the real stack (edge -> chumbo ->
// example app, supabase/migrations/20260101000200_example_state.sql) with the official
// TypeScript client, as Alice and Bob: each sees only what their own sign-in stored or started.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { connect, need, TOKENS, USERS } from "./common.mjs";

// Owner connection to the e2e database (tests/e2e/run.sh): the rate-limit test reads and resets
// the limiter's counters with it.
const DB_URL = need("E2E_DATABASE_URL");
if (!DB_URL) throw new Error("E2E_DATABASE_URL is not set (run the suite through tests/e2e/run.sh)");
function sql(query) {
  const r = spawnSync("psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", DB_URL, "-c", query], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`);
  return r.stdout.trim();
}

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
    for (const n of ["preference", "export_project", "open_workspace"]) {
      assert.ok(names.includes(n), `${n} in ${names}`);
    }
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
  test("Alice's 4 calls in one window: exactly the first 3 pass, the 4th is refused with the retry time; Bob is not", async () => {
    const exportAsAlice = () => call("alice", "export_project", { project_id: USERS.alice.project });
    // The limiter counts in fixed one-minute windows of the database's clock. The owner clears
    // the tool's counters (so no earlier run has used this window up) and reads the database's
    // minute before the first call and after the last: when both are the same, all four calls
    // fell in one window. Four calls straddle a minute boundary at most once in a row.
    const minute = () => sql("select floor(extract(epoch from clock_timestamp()) / 60)::bigint");
    let results, first, last;
    for (let attempt = 1;; attempt++) {
      sql("delete from chumbo.rate_counters where bucket like 'tool:export_project:%'");
      first = minute();
      results = [];
      for (let i = 0; i < 4; i++) results.push(await exportAsAlice());
      last = minute();
      if (first === last) break;
      assert.ok(attempt < 2, `two runs in a row crossed a minute boundary (${first} -> ${last})`);
    }
    assert.deepEqual(results.map((r) => r.isError === true), [false, false, false, true], JSON.stringify(results));
    for (const r of results.slice(0, 3)) assert.match(r.content[0].text, new RegExp(`^# ${USERS.alice.org} `));
    assert.match(
      results[3].content[0].text,
      /^Rate limit of 3 calls per minute reached for export_project: retry in \d+ s/,
    );
    const retry = Number(/retry in (\d+) s/.exec(results[3].content[0].text)[1]);
    assert.ok(retry >= 1 && retry <= 60, `retry in ${retry} s`);
    // the counter holds exactly the 3 allowed calls (a refused one is not counted)
    assert.equal(
      sql("select string_agg(hits::text, ',') from chumbo.rate_counters where bucket like 'tool:export_project:%'"),
      "3",
    );
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
