// Issue 13 (4-5) through the real edge with the official clients, in both eras: SDK 1.32
// (legacy, 2025-11-25) and client 2.4 (2026-07-28). The example app's project_documents is
// projected by @mcp model_output (counts and titles: no document body reaches the client, in the
// text or in structuredContent); post_note is exactly-once by request_id or by the _meta key
// io.chumbo/idempotency-key (a retry gets the first answer, Bob's same key is his own, other
// arguments are refused, 16 parallel retries post once); run handles come back in _meta and are
// refused for another user.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { connect, MCP_URL, TOKENS, USERS } from "./common.mjs";

async function connectModern(token) {
  const client = new ModernClient({ name: "chumbo-e2e-once", version: "1.0.0" }, {
    versionNegotiation: { mode: "auto" },
  });
  await client.connect(
    new ModernTransport(new URL(MCP_URL), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const IDEM = "io.chumbo/idempotency-key";
const status = (res) => res?._meta?.["io.chumbo/idempotency"]?.status ?? (res?.isError ? "error" : "ran");

for (const era of ["legacy", "modern"]) {
  describe(`exactly once and projection, ${era} era`, () => {
    const clients = {};
    before(async () => {
      for (const who of ["alice", "bob"]) {
        clients[who] = era === "legacy" ? await connect(TOKENS[who]) : await connectModern(TOKENS[who]);
      }
      if (era === "modern") assert.equal(clients.alice.getNegotiatedProtocolVersion(), "2026-07-28");
    });
    after(async () => {
      for (const c of Object.values(clients)) await c.close();
    });

    test("projection: the model sees counts and titles, never the bodies (text and structuredContent alike)", async () => {
      const res = await clients.alice.callTool({
        name: "project_documents",
        arguments: { project_id: USERS.alice.project },
      });
      assert.ok(!res.isError, JSON.stringify(res));
      const s = res.structuredContent;
      assert.deepEqual(Object.keys(s).sort(), ["documents", "titles", "truncated"]);
      assert.equal(s.documents, s.titles.length);
      assert.ok(s.documents > 0, JSON.stringify(s));
      assert.deepEqual(JSON.parse(res.content[0].text), s);
      assert.ok(!JSON.stringify(res).includes('"body"'), JSON.stringify(res));
      // RLS applies to the tool and the projection: Bob sees nothing of Alice's project
      const bob = await clients.bob.callTool({
        name: "project_documents",
        arguments: { project_id: USERS.alice.project },
      });
      assert.equal(bob.structuredContent.documents, 0, JSON.stringify(bob));
      assert.ok(!JSON.stringify(bob).includes(USERS.alice.org), JSON.stringify(bob));
    });

    test("a retry with the same request_id is answered without posting again; other arguments are refused", async () => {
      const request_id = randomUUID();
      const args = { project_id: USERS.alice.project, text: `note ${era}`, request_id };
      const first = await clients.alice.callTool({ name: "post_note", arguments: args });
      assert.equal(status(first), "ran", JSON.stringify(first));
      const retry = await clients.alice.callTool({ name: "post_note", arguments: args });
      assert.equal(status(retry), "replayed", JSON.stringify(retry));
      assert.deepEqual(retry.structuredContent, first.structuredContent);
      await assert.rejects(
        clients.alice.callTool({ name: "post_note", arguments: { ...args, text: "something else" } }),
        (e) => e.code === -32602 && /other arguments/.test(e.message),
      );
      // Bob's same key is Bob's own operation, on his own project
      const bob = await clients.bob.callTool({
        name: "post_note",
        arguments: { ...args, project_id: USERS.bob.project },
      });
      assert.equal(status(bob), "ran", JSON.stringify(bob));
      assert.notEqual(bob.structuredContent.id, first.structuredContent.id);
    });

    test("the _meta key: 16 parallel retries post the note exactly once", async () => {
      const key = randomUUID();
      const call = () =>
        clients.alice.callTool({
          name: "post_note",
          arguments: { project_id: USERS.alice.project, text: `parallel ${era}` },
          _meta: { [IDEM]: key },
        })
          .then((r) => status(r), (e) => `failed: ${e.code ?? e.message}`);
      const outcomes = await Promise.all(Array.from({ length: 16 }, call));
      assert.equal(outcomes.filter((o) => o === "ran").length, 1, JSON.stringify(outcomes));
      for (const o of outcomes) assert.ok(["ran", "replayed", "in_progress"].includes(o), JSON.stringify(outcomes));
      const after = await clients.alice.callTool({
        name: "post_note",
        arguments: { project_id: USERS.alice.project, text: `parallel ${era}` },
        _meta: { [IDEM]: key },
      });
      assert.equal(status(after), "replayed", JSON.stringify(after));
    });

    test("run handles: issued in _meta, accepted for Alice, refused for Bob", async () => {
      const res = await clients.alice.callTool({
        name: "list_projects",
        arguments: {},
        _meta: { "io.chumbo/run": true },
      });
      const handle = res._meta?.["io.chumbo/run"];
      assert.match(handle ?? "", /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, JSON.stringify(res));
      const again = await clients.alice.callTool({
        name: "list_projects",
        arguments: {},
        _meta: { "io.chumbo/run": handle },
      });
      assert.ok(!again.isError, JSON.stringify(again));
      await assert.rejects(
        clients.bob.callTool({ name: "list_projects", arguments: {}, _meta: { "io.chumbo/run": handle } }),
        (e) => e.code === -32602 && /run handle/.test(e.message),
      );
    });
  });
}
