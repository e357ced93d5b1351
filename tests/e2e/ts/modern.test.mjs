// MCP 2026-07-28 through the edge with the official TypeScript v2 client
// (@modelcontextprotocol/client 2.4.0, versionNegotiation auto), and subscriptions/listen: a
// capability change in the database (COMMENT via psql) reaches an open listen stream as
// notifications/tools/list_changed tagged with the subscription id, and kinds the subscriber did
// not ask for never do.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Client, StreamableHTTPClientTransport, SUBSCRIPTION_ID_META_KEY } from "@modelcontextprotocol/client";
import { MCP_URL, need, TOKENS, USERS } from "./common.mjs";
import { openListen as listenStream } from "../../lib/listen.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // owner connection to the e2e database (tests/e2e/run.sh)
const KEEPALIVE_MS = Number(need("E2E_KEEPALIVE_MS")); // the edge's CHUMBO_KEEPALIVE_MS
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

async function connectModern(token) {
  const client = new Client({ name: "chumbo-e2e-ts-v2", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** A capability change as an app developer makes it: COMMENT on a tool (same text, so nothing else changes). */
function touchListProjects() {
  const r = spawnSync("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", DB_URL], {
    input: "select format('comment on function mcp.list_projects is %L', " +
      "obj_description('mcp.list_projects'::regproc, 'pg_proc')) \\gexec\n",
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ROOT = new URL("../../../", import.meta.url).pathname;

describe("TypeScript client 2.4.0, versionNegotiation auto", () => {
  let client;
  before(async () => (client = await connectModern(TOKENS.alice)));
  after(async () => await client?.close());

  test("negotiates 2026-07-28 and calls tools as Alice", async () => {
    assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
    assert.equal(client.getProtocolEra(), "modern");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "list_projects"), JSON.stringify(tools.map((t) => t.name)));
    const res = await client.callTool({ name: "list_projects", arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    const rows = res.structuredContent.rows;
    assert.equal(rows.length, 3);
    for (const r of rows) assert.ok(r.name.startsWith(USERS.alice.org), r.name);
    assert.ok(!JSON.stringify(res).includes(USERS.alice.other));
  });

  test("listen: a COMMENT in the database arrives as tools/list_changed", async () => {
    const seen = [];
    client.setNotificationHandler("notifications/tools/list_changed", (n) => void seen.push(n));
    const sub = await client.listen({ toolsListChanged: true });
    try {
      assert.equal(sub.honoredFilter.toolsListChanged, true);
      touchListProjects();
      for (let i = 0; i < 50 && !seen.length; i++) await sleep(100);
      assert.equal(seen.length, 1, `one tools/list_changed, got ${JSON.stringify(seen)}`);
      assert.ok(seen[0].params?._meta?.[SUBSCRIPTION_ID_META_KEY] !== undefined, JSON.stringify(seen[0]));
    } finally {
      await sub.close();
    }
    assert.equal(await sub.closed, "local");
  });
});

describe("subscriptions/listen on the wire", () => {
  test("ack first, then only the kinds asked for, tagged with the listen id; keep-alive comments", async () => {
    const s = await listenStream(MCP_URL, TOKENS.alice, {
      id: "listen-e2e",
      notifications: { toolsListChanged: true },
      meta: META,
    });
    assert.equal(s.status, 200);
    assert.match(s.res.headers.get("content-type"), /text\/event-stream/);
    const messages = s.messages;
    const readFor = (ms, until = () => false) => s.until(until, ms);
    try {
      await readFor(5000, () => messages().length >= 1);
      const [ack] = messages();
      assert.equal(ack.method, "notifications/subscriptions/acknowledged");
      assert.deepEqual(ack.params.notifications, { toolsListChanged: true });
      assert.equal(ack.params._meta[SUBSCRIPTION_ID_META_KEY], "listen-e2e");

      touchListProjects();
      await readFor(5000, () => messages().some((m) => m.method === "notifications/tools/list_changed"));
      // A barrier, not a pause: the edge enqueues one re-check's frames in one synchronous loop and
      // its keep-alives from a timer, so a keep-alive after the frame means nothing else came with it.
      const settled = () => s.text.lastIndexOf(": keepalive") > s.text.lastIndexOf("list_changed");
      await readFor(KEEPALIVE_MS * 2 + 1000, settled);
      assert.ok(settled(), "no keep-alive after the list_changed frame");
      const after = messages().slice(1);
      const tools = after.filter((m) => m.method === "notifications/tools/list_changed");
      assert.equal(tools.length, 1, JSON.stringify(after));
      assert.equal(tools[0].params._meta[SUBSCRIPTION_ID_META_KEY], "listen-e2e");
      const others = after.filter((m) => m.method !== "notifications/tools/list_changed");
      assert.deepEqual(others, [], "prompts/resources list_changed were not asked for");
      assert.match(s.text, /^: keepalive$/m); // (the barrier above waited for one)
    } finally {
      await s.close();
    }
  });
});

describe("edge shutdown", () => {
  test("SIGTERM ends an open listen stream with its result: the client sees a graceful close", async () => {
    const port = process.env.E2E_SHUTDOWN_PORT ?? "54366";
    const url = `http://localhost:${port}/functions/v1/mcp`;
    const env = {
      ...process.env,
      CHUMBO_EDGE_ID: "e2e-edge-shutdown",
      CHUMBO_PORT: port,
      // the tokens' audience is MCP_URL (the database checks aud against the edge's public URL)
      CHUMBO_PUBLIC_URL: MCP_URL,
      EDGE_DATABASE_URL: process.env.E2E_EDGE_DATABASE_URL,
    };
    const edge = (cmd) => {
      const r = spawnSync("bash", [`${ROOT}scripts/edge.sh`, cmd], { env, encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
    };
    edge("start");
    let client;
    try {
      client = new Client({ name: "chumbo-e2e-shutdown", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${TOKENS.alice}` } },
        }),
      );
      const sub = await client.listen({ toolsListChanged: true });
      edge("stop");
      const how = await Promise.race([sub.closed, sleep(5000).then(() => "timeout")]);
      assert.equal(how, "graceful");
    } finally {
      await client?.close().catch(() => {});
      edge("stop");
    }
  });
});
