// Tool policies (issue 13) through the edge with the official clients: the example app's
// archive_project (execution predicate + approval) on the legacy era (SDK 1.32: confirmation
// token) and on 2026-07-28 (client 2.4: an elicitation answered by the client's handler);
// a visibility predicate and the scope resolver hiding and refusing a tool (created here through
// psql as the owner, removed at the end).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { connect, MCP_URL, need, post, TOKENS, USERS } from "./common.mjs";

const DB_URL = need("E2E_DATABASE_URL");
const ANVIL = "a1000000-0000-4000-8000-000000000002"; // Alice's (Acme), active in the seed

function sql(text) {
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", DB_URL], { input: text, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}
const statusOf = (id) => sql(`select status from public.projects where id = '${id}'`);
const reactivate = (id) => sql(`update public.projects set status = 'active' where id = '${id}'`);

async function connectModern(token, answer) {
  const client = new Client(
    { name: "chumbo-e2e-ts-v2", version: "1.0.0" },
    { versionNegotiation: { mode: "auto" }, capabilities: { elicitation: {} } },
  );
  client.setRequestHandler("elicitation/create", (request) => Promise.resolve(answer(request)));
  await client.connect(
    new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe("policies with the TypeScript clients", () => {
  before(() => {
    reactivate(ANVIL);
    sql(`
      create function private.is_globex_member() returns boolean language sql stable set search_path = '' as $$
        select exists (select from public.memberships m where m.user_id = auth.uid() and m.org_id = 'b0000000-0000-4000-8000-000000000000') $$;
      create function private.e2e_scopes() returns text[] language sql stable set search_path = '' as $$
        select case when auth.uid() = 'aaaaaaaa-0000-4000-8000-000000000001' then array['reports:read'] else '{}'::text[] end $$;
      grant execute on function private.is_globex_member(), private.e2e_scopes() to authenticated;
      create function mcp.globex_board() returns text language sql stable as $$ select 'globex board' $$;
      comment on function mcp.globex_board() is 'Globex only. @mcp {"visible": "private.is_globex_member"}';
      create function mcp.scoped_report() returns text language sql stable as $$ select 'scoped report' $$;
      comment on function mcp.scoped_report() is 'Needs reports:read. @mcp {"scopes": ["reports:read"]}';
      create function mcp.e2e_note(note text) returns text language sql as $$ select 'noted: ' || note $$;
      comment on function mcp.e2e_note(text) is 'Needs approval, nothing else. @mcp {"approval": true}';
      revoke execute on function mcp.globex_board(), mcp.scoped_report(), mcp.e2e_note(text) from public;
      grant execute on function mcp.globex_board(), mcp.scoped_report(), mcp.e2e_note(text) to authenticated;
      select chumbo.configure('{"scope_resolver": "private.e2e_scopes"}');`);
  });
  after(() => {
    sql(`
      select chumbo.configure('{"scope_resolver": null}');
      drop function mcp.globex_board(), mcp.scoped_report(), mcp.e2e_note(text), private.is_globex_member(), private.e2e_scopes();`);
    reactivate(ANVIL);
  });

  describe("legacy era (SDK 1.32): visibility, scope resolver, confirmation token", () => {
    const clients = {};
    before(async () => {
      clients.alice = await connect(TOKENS.alice);
      clients.bob = await connect(TOKENS.bob);
    });
    after(async () => {
      await clients.alice?.close();
      await clients.bob?.close();
    });

    test("visible and the scope resolver hide tools from lists and refuse calls as unknown", async () => {
      const names = async (c) => (await c.listTools()).tools.map((t) => t.name);
      const alice = await names(clients.alice);
      const bob = await names(clients.bob);
      assert.ok(!alice.includes("globex_board") && bob.includes("globex_board"), `${alice} / ${bob}`);
      assert.ok(alice.includes("scoped_report") && !bob.includes("scoped_report"), `${alice} / ${bob}`);
      await assert.rejects(clients.alice.callTool({ name: "globex_board", arguments: {} }), (e) => e.code === -32602);
      await assert.rejects(clients.bob.callTool({ name: "scoped_report", arguments: {} }), (e) => e.code === -32602);
      const ok = await clients.bob.callTool({ name: "globex_board", arguments: {} });
      assert.equal(ok.content[0].text, "globex board");
    });

    test("the execution predicate sees the arguments: Bob cannot archive Alice's project", async () => {
      const r = await clients.bob.callTool({ name: "archive_project", arguments: { project_id: ANVIL } });
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /^Not allowed: project not found/);
      assert.equal(statusOf(ANVIL), "active");
    });

    test("approval: token bound to Alice, the tool and the arguments, single use", async () => {
      const first = await clients.alice.callTool({ name: "archive_project", arguments: { project_id: ANVIL } });
      assert.equal(first.isError, true);
      assert.match(first.content[0].text, /^Not run yet: this call needs the user's confirmation/);
      assert.ok(first.content[0].text.includes(ANVIL));
      const token = first._meta["io.chumbo/confirmation"].token;
      assert.equal(statusOf(ANVIL), "active");

      const withToken = (t, id = ANVIL) => ({
        name: "archive_project",
        arguments: { project_id: id, _chumbo_confirm: t },
      });
      const tampered = await clients.alice.callTool(withToken("x" + token.slice(1)));
      assert.match(tampered.content[0].text, /token failed its integrity check/);
      const otherArgs = await clients.alice.callTool(withToken(token, USERS.alice.project));
      assert.match(otherArgs.content[0].text, /token was issued for another user, tool or arguments/);
      assert.equal(statusOf(ANVIL), "active");

      const approved = await clients.alice.callTool(withToken(token));
      assert.ok(!approved.isError, JSON.stringify(approved));
      assert.equal(approved.structuredContent.status, "archived");
      assert.equal(statusOf(ANVIL), "archived");

      reactivate(ANVIL);
      const replayed = await clients.alice.callTool(withToken(token));
      assert.match(replayed.content[0].text, /token was already used/);
      assert.equal(statusOf(ANVIL), "active");
    });
  });

  describe("2026-07-28 (client 2.4): the approval is an elicitation", () => {
    test("declined: not run; approved: runs; the prompt says what will run", async () => {
      const asked = [];
      let verdict = { action: "decline" };
      const client = await connectModern(TOKENS.alice, (request) => {
        asked.push(request.params.message);
        return verdict;
      });
      try {
        assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
        const declined = await client.callTool({ name: "archive_project", arguments: { project_id: ANVIL } });
        assert.equal(declined.isError, true);
        assert.match(declined.content[0].text, /^Not run: the user did not approve/);
        assert.equal(statusOf(ANVIL), "active");
        assert.match(asked[0], /^archive_project will run with these arguments:/);
        assert.ok(asked[0].includes(ANVIL));

        verdict = { action: "accept", content: { approve: true } };
        const approved = await client.callTool({ name: "archive_project", arguments: { project_id: ANVIL } });
        assert.ok(!approved.isError, JSON.stringify(approved));
        assert.equal(approved.structuredContent.status, "archived");
        assert.equal(statusOf(ANVIL), "archived");
      } finally {
        await client.close();
        reactivate(ANVIL);
      }
    });

    test("Alice's requestState replayed by Bob is refused (-32602)", async () => {
      const body = (extra) => ({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name: "e2e_note",
          arguments: { note: "hello" },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": { elicitation: {} },
            "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
          },
          ...extra,
        },
      });
      const headers = { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "e2e_note" };
      const first = await (await post(body({}), { token: TOKENS.alice, headers })).json();
      assert.equal(first.result?.resultType, "input_required", JSON.stringify(first));
      const replay = body({
        requestState: first.result.requestState,
        inputResponses: { "io.chumbo/approval": { action: "accept", content: { approve: true } } },
      });
      const r = await (await post(replay, { token: TOKENS.bob, headers })).json();
      assert.equal(r.error?.code, -32602, JSON.stringify(r));
      assert.match(r.error.message, /belongs to another caller/);
    });
  });
});
