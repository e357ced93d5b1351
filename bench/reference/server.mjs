// The reference a Supabase builder would otherwise write: an MCP server on the official TypeScript
// SDK (stateless Streamable HTTP, JSON responses, a new server and transport per request), verifying
// the caller's ES256 JWT with jose and running the tool's query under the caller's role and claims
// through a pg pool. bench/run.sh starts it and measures it against the chumbo edge + extension.
//
// Environment:
//   DATABASE_URL   login role that may SET ROLE authenticated (the bench uses chumbo_edge)
//   JWKS_FILE      the public JWKS (scripts/mint-token.ts jwks)
//   JWT_ISSUER     accepted iss
//   JWT_AUDIENCE   accepted aud (the bench passes the chumbo edge's URL, so both get the same tokens)
//   PORT           default 54382 (binds 127.0.0.1)
//   DB_POOL        pool size (default 8, the chumbo edge's default)
import http from "node:http";
import { readFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createLocalJWKSet, jwtVerify } from "jose";
import pg from "pg";
import { z } from "zod";

const PORT = Number(process.env.PORT ?? 54382);
const JWKS = createLocalJWKSet(JSON.parse(readFileSync(process.env.JWKS_FILE, "utf8")));
const ISSUER = process.env.JWT_ISSUER;
const AUDIENCE = process.env.JWT_AUDIENCE;
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL ?? 8) });

// The same query as mcp.list_projects, run as the caller: claims + role local to one transaction.
async function asCaller(claims, text, values) {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query(
      "select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)",
      [JSON.stringify(claims)],
    );
    const { rows } = await client.query(text, values);
    await client.query("commit");
    return rows;
  } catch (e) {
    await client.query("rollback").catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

function newServer(claims) {
  const server = new McpServer({ name: "reference", version: "1.0.0" });
  server.registerTool("list_projects", {
    title: "List projects",
    description: "List the projects of your organizations, optionally only those with a given status.",
    inputSchema: { status: z.enum(["active", "archived"]).optional().describe("Only projects with this status.") },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, async ({ status }) => {
    const rows = await asCaller(
      claims,
      `select p.* from public.projects p
        where $1::text is null or p.status = $1
        order by p.name collate "C" limit 1000`,
      [status ?? null],
    );
    const structured = { rows };
    return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
  });
  return server;
}

function reject(res, status, message) {
  res.writeHead(status, {
    "content-type": "application/json",
    ...(status === 401 ? { "www-authenticate": 'Bearer error="invalid_token"' } : {}),
  });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message } }));
}

async function handle(req, res) {
  if (req.method !== "POST") return reject(res, 405, "Method not allowed");
  const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "");
  if (!m) return reject(res, 401, "Missing bearer token");
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(m[1], JWKS, { issuer: ISSUER, audience: AUDIENCE, algorithms: ["ES256"] }));
  } catch {
    return reject(res, 401, "Invalid token");
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return reject(res, 400, "Parse error");
  }
  const server = newServer(claims);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    // A client that goes away mid-request (wrk stopping) is not an error of the server.
    if (e?.code !== "ECONNRESET") console.error(e);
    if (!res.headersSent && !res.destroyed) reject(res, 500, "Internal error");
  });
}).listen(PORT, "127.0.0.1", () => console.log(`reference MCP server on http://127.0.0.1:${PORT}/mcp`));
