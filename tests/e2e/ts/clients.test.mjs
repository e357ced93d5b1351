// The official TypeScript MCP client against the real stack: edge -> chumbo -> example app.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { connect, MCP_URL, post, TOKENS, USERS } from "./common.mjs";

for (const [user, { org, other, project, otherProject }] of Object.entries(USERS)) {
  describe(`as ${user} (${org})`, () => {
    let client;
    before(async () => (client = await connect(TOKENS[user])));
    after(async () => await client?.close());

    test("tools/list shows the app's tools", async () => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const n of ["list_projects", "search_documents", "rename_project", "create_document"]) {
        assert.ok(names.includes(n), `${n} in ${names}`);
      }
      const lp = tools.find((t) => t.name === "list_projects");
      assert.equal(lp.inputSchema.type, "object");
      assert.deepEqual(lp.inputSchema.properties.status.enum, ["active", "archived"]);
      assert.equal(lp.annotations?.readOnlyHint, true);
    });

    test("tools/call list_projects returns only the own organization's projects", async () => {
      const res = await client.callTool({ name: "list_projects", arguments: {} });
      assert.ok(!res.isError, JSON.stringify(res));
      const rows = res.structuredContent.rows;
      assert.equal(rows.length, 3);
      for (const r of rows) assert.ok(r.name.startsWith(org), r.name);
      assert.ok(!JSON.stringify(res).includes(other), `no ${other} in ${JSON.stringify(res)}`);
      const active = await client.callTool({ name: "list_projects", arguments: { status: "active" } });
      assert.equal(active.structuredContent.rows.length, 2);
    });

    test("tools/call into another organization's row fails like a missing row", async () => {
      const res = await client.callTool({
        name: "rename_project",
        arguments: { project_id: otherProject, name: "pwned" },
      });
      assert.equal(res.isError, true);
      assert.match(res.content[0].text, /project not found/);
    });

    test("resources/read of an own project through the template", async () => {
      const { resourceTemplates } = await client.listResourceTemplates();
      assert.ok(
        resourceTemplates.some((t) => t.uriTemplate === "app://projects/{id}"),
        JSON.stringify(resourceTemplates),
      );
      const uri = `app://projects/${project}`;
      const { contents } = await client.readResource({ uri });
      assert.equal(contents.length, 1);
      assert.equal(contents[0].uri, uri);
      const p = JSON.parse(contents[0].text);
      assert.equal(p.organization, org);
      assert.ok(p.name.startsWith(org));
      assert.ok(p.documents.length > 0);
    });

    test("resources/read of the other organization's project is not found (-32002)", async () => {
      // SDK 1.32 speaks the legacy era: "resource not found" is -32002 there; neither an internal
      // error nor a permission error that would confirm the project exists.
      await assert.rejects(client.readResource({ uri: `app://projects/${otherProject}` }), (e) => {
        assert.ok(e instanceof McpError, String(e));
        assert.equal(e.code, -32002, e.message);
        assert.ok(!String(e.message).includes(other), e.message);
        assert.ok(!JSON.stringify(e.data ?? null).includes(other), JSON.stringify(e.data));
        return true;
      });
    });

    test("prompts/get renders with the own organization's data only", async () => {
      const { prompts } = await client.listPrompts();
      const names = prompts.map((p) => p.name);
      assert.ok(names.includes("summarize_project") && names.includes("status_report"), names.join());
      const report = await client.getPrompt({ name: "status_report", arguments: { status: "active" } });
      const text = report.messages.map((m) => m.content.text ?? "").join("\n");
      assert.ok(text.includes(org), text);
      assert.ok(!JSON.stringify(report).includes(other), JSON.stringify(report));
      const summary = await client.getPrompt({ name: "summarize_project", arguments: { project_id: project } });
      assert.ok(summary.messages.length >= 1);
      assert.ok(JSON.stringify(summary).includes(`${org} confidential`));
      assert.ok(!JSON.stringify(summary).includes(other));
    });
  });
}

describe("authentication", () => {
  async function assert401(token, { invalidToken }) {
    await assert.rejects(connect(token), (e) => {
      assert.ok(e instanceof StreamableHTTPError, `${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.code, 401);
      return true;
    });
    const res = await post({ jsonrpc: "2.0", id: 1, method: "ping" }, { token });
    assert.equal(res.status, 401);
    const challenge = res.headers.get("www-authenticate") ?? "";
    assert.match(challenge, /^Bearer /);
    const { resourceMetadataUrl, error } = extractWWWAuthenticateParams(res);
    assert.ok(resourceMetadataUrl, challenge);
    if (invalidToken) assert.equal(error, "invalid_token", challenge);
    // The challenge leads to this server's protected-resource metadata.
    const prm = await (await fetch(resourceMetadataUrl)).json();
    assert.equal(prm.resource, MCP_URL);
    assert.ok(prm.authorization_servers.length >= 1);
  }

  test("missing token: 401 with resource_metadata", () => assert401(undefined, { invalidToken: false }));
  test("expired token: 401 invalid_token", () => assert401(TOKENS.expired, { invalidToken: true }));
  test("token signed by another key: 401 invalid_token", () => assert401(TOKENS.forged, { invalidToken: true }));
  test("token for another audience: 401 invalid_token", () => assert401(TOKENS.wrongAudience, { invalidToken: true }));
});

describe("HTTP edge", () => {
  test("protected-resource metadata at the path-inserted and function-local URLs", async () => {
    const u = new URL(MCP_URL);
    for (
      const path of [
        `/.well-known/oauth-protected-resource${u.pathname}`,
        `${u.pathname}/.well-known/oauth-protected-resource`,
        `/mcp/.well-known/oauth-protected-resource`,
      ]
    ) {
      const res = await fetch(new URL(path, u));
      assert.equal(res.status, 200, path);
      const prm = await res.json();
      assert.equal(prm.resource, MCP_URL);
      assert.deepEqual(prm.bearer_methods_supported, ["header"]);
      assert.ok(Array.isArray(prm.authorization_servers) && prm.authorization_servers.length > 0);
    }
  });

  test("GET and DELETE: 405", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await post(null, { token: TOKENS.alice, method, headers: { accept: "text/event-stream" } });
      assert.equal(res.status, 405, method);
    }
  });

  test("notification: 202 with an empty body", async () => {
    const res = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { token: TOKENS.alice });
    assert.equal(res.status, 202);
    assert.equal(await res.text(), "");
  });

  test("foreign Origin: 403, allowed Origin gets CORS headers", async () => {
    const ping = { jsonrpc: "2.0", id: 7, method: "ping" };
    const bad = await post(ping, { token: TOKENS.alice, headers: { origin: "http://evil.example.com" } });
    assert.equal(bad.status, 403);
    const good = await post(ping, { token: TOKENS.alice, headers: { origin: "http://localhost:6274" } });
    assert.equal(good.status, 200);
    assert.equal(good.headers.get("access-control-allow-origin"), "http://localhost:6274");
    assert.equal((await good.json()).id, 7);
  });

  test("foreign Host: 403", async () => {
    // fetch() will not let us set Host; node:http will.
    const http = await import("node:http");
    const u = new URL(MCP_URL);
    const status = await new Promise((resolve, reject) => {
      const req = http.request({
        host: "127.0.0.1",
        port: u.port,
        path: u.pathname,
        method: "POST",
        headers: { host: "evil.example.com", "content-type": "application/json" },
      }, (r) => {
        r.resume();
        resolve(r.statusCode);
      });
      req.on("error", reject);
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }));
    });
    assert.equal(status, 403);
  });

  test("CORS preflight allows the MCP headers", async () => {
    const res = await fetch(MCP_URL, {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost:6274",
        "access-control-request-method": "POST",
        "access-control-request-headers":
          "authorization, content-type, mcp-protocol-version, mcp-method, mcp-name, mcp-param-region",
      },
    });
    assert.equal(res.status, 204);
    const allowed = res.headers.get("access-control-allow-headers");
    for (const h of ["authorization", "mcp-protocol-version", "mcp-method", "mcp-name", "mcp-param-region"]) {
      assert.ok(allowed.includes(h), `${h} in ${allowed}`);
    }
    assert.match(res.headers.get("access-control-expose-headers"), /www-authenticate/);
  });

  test("body over the size limit: 413", async () => {
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(5 * 1024 * 1024) } });
    const res = await post(big, { token: TOKENS.alice });
    assert.equal(res.status, 413);
  });

  test("malformed JSON reaches the database and comes back as a parse error", async () => {
    const res = await post("{not json", { token: TOKENS.alice });
    const body = await res.json();
    assert.equal(body.error?.code, -32700, JSON.stringify(body));
  });
});
