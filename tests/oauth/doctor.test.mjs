// The remote doctor (scripts/remote-doctor.ts) against a healthy stack and against the
// same stack broken one way at a time; each run must name exactly the check that broke, with its
// next step. Real parts throughout: oidc-provider as the authorization server (./as.mjs; tokens
// come from its token endpoint after a real sign-in with PKCE), the edge under Deno, chumbo in
// PostgreSQL, the doctor run as a user runs it (deno run -A remote-doctor.ts URL --json).
//
// Environment (run.sh sets it):
//   MCP_URL              the healthy edge (run.sh's oauth-edge), advertising http://localhost:OAUTH_AS_PORT
//   OAUTH_AS_PORT        where this test starts the authorization server
//   OAUTH_DATABASE_URL   superuser connection to the database behind the edges (chumbo.configure)
//   DOCTOR_EDGE_PORT     a second edge this test (re)starts with a broken configuration
//   EDGE_DATABASE_URL    that edge's login (chumbo_edge)
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  registerClient,
  startAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { ACCOUNTS, startAuthorizationServer } from "./as.mjs";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run the suite through tests/oauth/run.sh)`);
  return v;
}
const MCP_URL = need("MCP_URL");
const AS_PORT = Number(need("OAUTH_AS_PORT"));
const DATABASE_URL = need("OAUTH_DATABASE_URL");
const EDGE2_PORT = Number(need("DOCTOR_EDGE_PORT"));
const EDGE2_DATABASE_URL = need("EDGE_DATABASE_URL");
const EDGE2_URL = `http://localhost:${EDGE2_PORT}/functions/v1/mcp`;
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DOCTOR = `${ROOT}scripts/remote-doctor.ts`;
const OTHER_RESOURCE = "https://api.other.example/mcp";
const CHECKS = [
  "challenge",
  "resource-metadata",
  "as-metadata",
  "registration",
  "jwks",
  "token-verified",
  "token-issuer",
  "token-audience",
  "token-expiry",
  "tools-list",
  "rls-rows",
];

// ---- tokens from the real authorization server: register, sign in, consent, code + PKCE ----------
/** A browser that keeps the AS's cookies, signs `account` in and consents; stops at the redirect URI. */
async function userAgentAuthorize(authorizationUrl, redirectUri, account) {
  const cookies = new Map();
  let url = String(authorizationUrl), init = {};
  for (let hop = 0; hop < 20; hop++) {
    if (url.startsWith(redirectUri)) return new URL(url);
    const headers = new Headers(init.headers);
    if (cookies.size) headers.set("cookie", [...cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      const [name, value] = [pair.slice(0, i).trim(), pair.slice(i + 1).trim()];
      if (value) cookies.set(name, value);
      else cookies.delete(name);
    }
    init = {};
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get("location"), url).href;
      continue;
    }
    const text = await res.text();
    assert.equal(res.status, 200, `${url}: ${text}`);
    const prompt = /data-prompt="([^"]+)"/.exec(text)?.[1];
    const action = /<form method="post" action="([^"]+)"/.exec(text)?.[1];
    assert.ok(prompt && action, `an interaction page: ${text}`);
    const form = prompt === "login" ? { login: account, password: ACCOUNTS[account].password } : {};
    url = new URL(action.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(n)), url).href;
    init = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    };
  }
  throw new Error("too many redirects");
}

/** An access token for `account` and `resource` from `as` (the authorization code flow an MCP client runs). */
async function signIn(as, account, resource) {
  const metadata = await discoverAuthorizationServerMetadata(as.issuer);
  const redirectUrl = "http://127.0.0.1:9/callback"; // never contacted: the user agent stops there
  const clientInformation = await registerClient(as.issuer, {
    metadata,
    clientMetadata: {
      client_name: "chumbo doctor test",
      application_type: "native",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
  });
  const { authorizationUrl, codeVerifier } = await startAuthorization(as.issuer, {
    metadata,
    clientInformation,
    redirectUrl,
    scope: "mcp",
    resource: new URL(resource),
  });
  const back = await userAgentAuthorize(authorizationUrl, redirectUrl, account);
  const tokens = await exchangeAuthorization(as.issuer, {
    metadata,
    clientInformation,
    authorizationCode: back.searchParams.get("code"),
    codeVerifier,
    redirectUri: redirectUrl,
    resource: new URL(resource),
  });
  return tokens.access_token;
}

// ---- the system under test -------------------------------------------------------------------------------
function configure(settings) {
  execFileSync("psql", [
    "-X",
    "-q",
    "-v",
    "ON_ERROR_STOP=1",
    "-v",
    `settings=${JSON.stringify(settings)}`,
    DATABASE_URL,
  ], {
    input: "select chumbo.configure(:'settings'::jsonb);\n",
    stdio: ["pipe", "ignore", "inherit"],
  });
}

/** (Re)start the second edge (scripts/edge.sh waits until it serves) with this authorization server. */
function startEdge2(authorizationServers) {
  execFileSync(`${ROOT}scripts/edge.sh`, ["start"], {
    env: {
      ...process.env,
      CHUMBO_EDGE_ID: "doctor-edge",
      CHUMBO_PORT: String(EDGE2_PORT),
      CHUMBO_PUBLIC_URL: EDGE2_URL,
      CHUMBO_AUTHORIZATION_SERVERS: authorizationServers,
      CHUMBO_SCOPES_SUPPORTED: "mcp",
      EDGE_DATABASE_URL: EDGE2_DATABASE_URL,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** Run the doctor as a user would (`deno run -A remote-doctor.ts URL --json`); the token in MCP_TOKEN, or
 * with `tokenArg` as --token. `make: true` runs `make doctor URL=… TOKEN=…` instead (human output). */
function runDoctor(url, { token, tokenArg = false, make = false } = {}) {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.MCP_TOKEN;
    const [cmd, args] = make
      ? ["make", ["-s", "-C", ROOT, "doctor", `URL=${url}`, ...(token ? [`TOKEN=${token}`] : [])]]
      : ["deno", ["run", "-A", DOCTOR, url, "--json", ...(token && tokenArg ? ["--token", token] : [])]];
    if (token && !make && !tokenArg) env.MCP_TOKEN = token;
    execFile(cmd, args, { env, maxBuffer: 1 << 22 }, (err, stdout, stderr) => {
      const code = err ? err.code : 0;
      assert.equal(typeof code, "number", `doctor did not exit normally: ${err} ${stderr}`);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * The doctor's verdict equals `expected` (check id -> PASS/FAIL/SKIP; unnamed checks PASS), its exit
 * code follows, and every failing check's next step matches `next[id]`.
 */
async function assertDoctor(url, { token, tokenArg, expected = {}, next = {} }) {
  const { code, stdout, stderr } = await runDoctor(url, { token, tokenArg });
  const report = JSON.parse(stdout);
  const got = Object.fromEntries(report.checks.map((c) => [c.id, c.status]));
  const want = Object.fromEntries(CHECKS.map((id) => [id, expected[id] ?? "PASS"]));
  assert.deepEqual(got, want, `${stdout}\n${stderr}`);
  const statuses = Object.values(want);
  assert.equal(code, statuses.includes("FAIL") ? 1 : statuses.includes("SKIP") ? 3 : 0, stdout);
  assert.equal(report.ok, code === 0);
  for (const c of report.checks) {
    if (c.status === "FAIL") {
      assert.ok(next[c.id], `no expectation for the next step of ${c.id}: ${c.next}`);
      assert.match(c.next, next[c.id], JSON.stringify(c));
    }
    if (c.status === "PASS") assert.equal(c.next, undefined);
  }
  return report;
}
const detail = (report, id) => report.checks.find((c) => c.id === id).detail;
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

describe("the remote doctor", () => {
  let as, jwks, alice, aliceEdge2, other, expired, carol;

  before(async () => {
    as = await startAuthorizationServer({ port: AS_PORT });
    jwks = as.publicJwks;
    configure({ auth_mode: "oauth", jwt_issuers: [as.issuer], jwks, jwt_audience: null });
    alice = await signIn(as, "alice", MCP_URL);
    aliceEdge2 = await signIn(as, "alice", EDGE2_URL);
    other = await signIn(as, "alice", OTHER_RESOURCE);
    carol = await signIn(as, "carol", MCP_URL);
    as.backdateAccessTokens(3600 + 600); // issued as if an hour and its lifetime ago: exp is in the past
    try {
      expired = await signIn(as, "alice", MCP_URL);
    } finally {
      as.backdateAccessTokens(0);
    }
  });

  after(async () => {
    await as?.close();
  });

  test("healthy: every check passes, exit 0", async () => {
    const report = await assertDoctor(MCP_URL, { token: alice });
    assert.match(detail(report, "tools-list"), /list_projects/);
    assert.match(detail(report, "rls-rows"), /list_projects: 3 rows/);
    assert.match(detail(report, "rls-rows"), /not called: search_documents \(needs query\)/);
    // The human form, through the make target.
    const { code, stdout } = await runDoctor(MCP_URL, { token: alice, make: true });
    assert.equal(code, 0, stdout);
    assert.match(stdout, new RegExp(`^chumbo doctor: ${escape(MCP_URL)}$`, "m"));
    for (const id of CHECKS) assert.match(stdout, new RegExp(`^PASS  ${id} `, "m"), stdout);
    assert.match(stdout, /^11 passed, 0 failed, 0 skipped$/m);
  });

  test("healthy without a token: discovery passes, the token checks are skipped (exit 3)", async () => {
    const skipped = ["token-verified", "token-issuer", "token-audience", "token-expiry", "tools-list", "rls-rows"];
    await assertDoctor(MCP_URL, { expected: Object.fromEntries(skipped.map((id) => [id, "SKIP"])) });
  });

  test("metadata naming another resource (CHUMBO_PUBLIC_URL is not the URL clients use)", async () => {
    // The same edge reached as 127.0.0.1: its metadata names http://localhost:…, another resource.
    const url = MCP_URL.replace("//localhost:", "//127.0.0.1:");
    const report = await assertDoctor(url, {
      token: alice,
      expected: { "resource-metadata": "FAIL" },
      next: {
        "resource-metadata": new RegExp(
          `^set the edge's CHUMBO_PUBLIC_URL to exactly the URL clients connect to \\(${escape(url)}\\)`,
        ),
      },
    });
    assert.equal(
      detail(report, "resource-metadata"),
      `resource "${MCP_URL}" (at the challenge's resource_metadata, function-local, path-inserted URLs), not the MCP URL "${url}"`,
    );
  });

  test("no authorization server metadata at the advertised issuer", async () => {
    startEdge2(`${as.issuer}/auth/v1`); // a wrong issuer URL: the real AS has no metadata there
    const report = await assertDoctor(EDGE2_URL, {
      token: aliceEdge2,
      expected: { "as-metadata": "FAIL", registration: "SKIP", jwks: "SKIP" },
      next: { "as-metadata": /^CHUMBO_AUTHORIZATION_SERVERS must be your authorization server's issuer URL/ },
    });
    assert.match(detail(report, "as-metadata"), /oauth-authorization-server\/auth\/v1: HTTP 404/);
  });

  test("an authorization server without dynamic client registration", async () => {
    const noDcr = await startAuthorizationServer({ port: 0, registration: false });
    try {
      startEdge2(noDcr.issuer);
      const skipped = ["token-verified", "token-issuer", "token-audience", "token-expiry", "tools-list", "rls-rows"];
      await assertDoctor(EDGE2_URL, {
        expected: { registration: "FAIL", ...Object.fromEntries(skipped.map((id) => [id, "SKIP"])) },
        next: { registration: /^turn on dynamic client registration at the authorization server/ },
      });
    } finally {
      await noDcr.close();
    }
  });

  const notJudged = (failing) =>
    Object.fromEntries(
      ["token-verified", "token-issuer", "token-audience", "token-expiry", "tools-list", "rls-rows"]
        .map((id) => [id, id === failing ? "FAIL" : "SKIP"]),
    );

  test("a token issued for another audience", async () => {
    const report = await assertDoctor(MCP_URL, {
      token: other,
      expected: notJudged("token-audience"),
      next: {
        "token-audience": new RegExp(
          `^the token must be issued for this server: the client asks for it with resource=${escape(MCP_URL)}`,
        ),
      },
    });
    assert.match(
      detail(report, "token-audience"),
      /was not issued for this server \(aud "https:\/\/api\.other\.example\/mcp"\)/,
    );
  });

  test("an expired token", async () => {
    const report = await assertDoctor(MCP_URL, {
      token: expired,
      expected: notJudged("token-expiry"),
      next: {
        "token-expiry":
          /^sign in again \(or refresh\) to get a new token; MCP clients refresh on this 401 by themselves$/,
      },
    });
    assert.match(detail(report, "token-expiry"), /the token has expired \(exp .* s ago/);
  });

  test("a token whose issuer the database does not trust", async () => {
    configure({ jwt_issuers: [`${as.issuer}/`] }); // the classic: a trailing slash
    try {
      await assertDoctor(MCP_URL, {
        token: alice,
        expected: notJudged("token-issuer"),
        next: {
          "token-issuer": new RegExp(
            `^add the token's issuer exactly as written \\("${escape(as.issuer)}"\\) to jwt_issuers`,
          ),
        },
      });
    } finally {
      configure({ jwt_issuers: [as.issuer] });
    }
  });

  test("authenticated, but every list-style tool returns 0 rows (Carol, a member of nothing)", async () => {
    const report = await assertDoctor(MCP_URL, {
      token: carol,
      tokenArg: true, // --token on the command line
      expected: { "rls-rows": "FAIL" },
      next: {
        "rls-rows": new RegExp(`^row-level security decides what a user sees: .*= "${ACCOUNTS.carol.accountId}"`),
      },
    });
    assert.match(
      detail(report, "rls-rows"),
      /every list-style tool returns 0 rows: list_notes: 0 rows, list_projects: 0 rows/,
    );
  });

  // Last: it replaces the authorization server's key.
  test("the JWKS no longer has the token's kid (the authorization server rotated its key)", async () => {
    const oldKid = JSON.parse(Buffer.from(alice.split(".")[0], "base64url")).kid;
    await as.close();
    as = await startAuthorizationServer({ port: AS_PORT }); // same issuer, a new signing key
    assert.notEqual(as.publicJwks.keys[0].kid, oldKid);
    // The database still trusts the old key as well, so it accepts the token: only the JWKS check fails.
    configure({ jwks: { keys: [...jwks.keys, ...as.publicJwks.keys] } });
    const report = await assertDoctor(MCP_URL, {
      token: alice,
      expected: { jwks: "FAIL" },
      next: { jwks: new RegExp(`^the token was not signed by ${escape(as.issuer)}'s current keys`) },
    });
    assert.match(detail(report, "jwks"), new RegExp(`the token's kid "${oldKid}" is not among the keys`));
  });
});
