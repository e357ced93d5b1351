// Shared setup for the TypeScript end-to-end tests: environment written by tests/e2e/run.sh and
// a connect() helper around the official SDK client (@modelcontextprotocol/sdk 1.32.2).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawnSync } from "node:child_process";
import assert from "node:assert/strict";

/** The environment variable NAME, which tests/e2e/run.sh sets: a test never skips when it is missing. */
export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run the suite through tests/e2e/run.sh)`);
  return v;
}

export const MCP_URL = need("MCP_URL");
export const TOKENS = {
  alice: need("ALICE_TOKEN"),
  bob: need("BOB_TOKEN"),
  carol: process.env.CAROL_TOKEN,
  expired: need("EXPIRED_TOKEN"),
  forged: need("FORGED_TOKEN"),
  wrongAudience: need("WRONG_AUD_TOKEN"),
};

// The example app's seed (supabase/seed.sql): every name of an organization carries its name.
export const USERS = {
  alice: {
    org: "Acme",
    other: "Globex",
    project: "a1000000-0000-4000-8000-000000000001",
    otherProject: "b1000000-0000-4000-8000-000000000001",
  },
  bob: {
    org: "Globex",
    other: "Acme",
    project: "b1000000-0000-4000-8000-000000000001",
    otherProject: "a1000000-0000-4000-8000-000000000001",
  },
};

export async function connect(token, url = MCP_URL) {
  const client = new Client({ name: "chumbo-e2e-ts", version: "1.0.0" });
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/** A plain POST to the MCP endpoint (for the HTTP-level checks the SDK hides). */
export function post(body, { token, headers = {}, method = "POST", duplex } = {}) {
  return fetch(MCP_URL, {
    method,
    duplex, // "half" for a body given as a stream (sent chunked)
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: method !== "POST"
      ? undefined
      : typeof body === "string" || ArrayBuffer.isView(body) || body instanceof ReadableStream
      ? body
      : JSON.stringify(body),
  });
}

/** Edges with a configuration of their own run here. */
export const AUX_PORT = Number(process.env.E2E_AUX_EDGE_PORT ?? 54368);
const ROOT = new URL("../../../", import.meta.url).pathname;

/** An edge of its own on AUX_PORT (scripts/edge.sh), with extra environment. */
export function auxEdge(env) {
  const run = (cmd) => {
    const r = spawnSync("bash", [`${ROOT}scripts/edge.sh`, cmd], {
      env: {
        ...process.env,
        CHUMBO_EDGE_ID: "e2e-edge-aux",
        CHUMBO_PORT: String(AUX_PORT),
        CHUMBO_PUBLIC_URL: "",
        EDGE_DATABASE_URL: need("E2E_EDGE_DATABASE_URL"),
        ...env,
      },
      encoding: "utf8",
    });
    assert.equal(r.status, 0, `edge.sh ${cmd}: ${r.stderr}`);
  };
  run("start");
  return { url: env.CHUMBO_PUBLIC_URL || `http://localhost:${AUX_PORT}/functions/v1/mcp`, stop: () => run("stop") };
}
