// The Supabase-shaped OAuth flow end to end: chumbo configured with the Supabase preset only
// (chumbo.configure({"supabase_url": …})), the edge deployed the Supabase way (SUPABASE_URL set,
// so it advertises <url>/auth/v1 and carries <url>/auth/v1/.well-known/jwks.json to the database),
// the official TypeScript MCP client (@modelcontextprotocol/sdk 1.32.2) with its OAuth client
// provider (discovery, dynamic client registration, PKCE, token), and a local stand-in for
// Supabase Auth's OAuth 2.1 server (./supabase-as.mjs: oidc-provider shaped like Supabase Auth;
// not Supabase Auth itself). Alice sees Acme's rows, Bob Globex's; the app's own session token
// (same issuer, key and audience, no client_id) is refused.
//
// Environment (run.sh sets it):
//   SUPABASE_MCP_URL           the MCP endpoint of the edge started with SUPABASE_URL=http://localhost:SUPABASE_AS_PORT
//   SUPABASE_AS_PORT           port of the stand-in (its project URL is http://localhost:PORT)
//   SUPABASE_DATABASE_URL      superuser connection to the database behind that edge
//   OAUTH_DEBUG=1              print the user agent's and the client's HTTP exchanges and the AS's errors
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ACCOUNTS } from "./as.mjs";
import { startSupabaseAuth } from "./supabase-as.mjs";
import {
  assertInvalidToken,
  InMemoryOAuthProvider,
  jwtPart,
  loggingFetch,
  rawCall,
  startRedirectListener,
  UserAgent,
} from "./client.mjs";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run the suite through tests/oauth/run.sh)`);
  return v;
}
const MCP_URL = need("SUPABASE_MCP_URL");
const AS_PORT = Number(need("SUPABASE_AS_PORT"));
const DATABASE_URL = need("SUPABASE_DATABASE_URL");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
// Every claim of a Supabase Auth OAuth access token (supabase/auth internal/tokens; no jti, no user_id).
const SUPABASE_CLAIMS = [
  "aal",
  "amr",
  "app_metadata",
  "aud",
  "client_id",
  "email",
  "exp",
  "iat",
  "is_anonymous",
  "iss",
  "phone",
  "role",
  "scope",
  "session_id",
  "sub",
  "user_metadata",
].sort();

function sql(query, vars = {}) {
  const args = ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", DATABASE_URL];
  for (const [k, v] of Object.entries(vars)) args.push("-v", `${k}=${v}`);
  return execFileSync("psql", args, { input: query, encoding: "utf8", stdio: ["pipe", "pipe", "inherit"] }).trim();
}

function projectNames(res) {
  assert.ok(!res.isError, JSON.stringify(res));
  return res.structuredContent.rows.map((r) => r.name).sort();
}

/** One MCP client application for one user: its own registration, the user's sign-in, a token. */
async function signIn(who, redirect) {
  const userAgent = new UserAgent(who, ACCOUNTS[who].password);
  const provider = new InMemoryOAuthProvider(redirect.url, userAgent);
  const { fetch, log } = loggingFetch(MCP_URL);
  const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch });
  const c = new Client({ name: `chumbo-supabase-test-${who}`, version: "1.0.0" });
  await assert.rejects(c.connect(first), (e) => e instanceof UnauthorizedError, "connect stops at the redirect");
  assert.ok(provider.authorizationCode, "the user agent brought back a code");
  await first.finishAuth(provider.authorizationCode);
  await c.close().catch(() => {});
  const client = new Client({ name: `chumbo-supabase-test-${who}`, version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch }));
  return { provider, userAgent, log, client };
}

describe("Supabase-shaped OAuth 2.1: the preset, the edge's Supabase defaults and the SDK's OAuth client", () => {
  let as, redirect, alice;
  const clients = [];

  before(async () => {
    as = await startSupabaseAuth({ port: AS_PORT });
    redirect = await startRedirectListener();
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await redirect?.close();
    await as?.close();
  });

  test("the preset alone: issuer, audience, JWKS URL (where the server publishes it), client_id required", async () => {
    const effective = JSON.parse(
      sql("select chumbo.configure(jsonb_build_object('supabase_url', :'url'));\n", { url: as.projectUrl }),
    );
    assert.equal(effective.auth_mode, "oauth");
    assert.deepEqual(effective.jwt_issuers, [as.issuer]);
    assert.deepEqual(effective.jwt_audience, ["authenticated"]);
    assert.equal(effective.require_client_id, true);
    assert.equal(effective.jwks, null, "no keys yet: the edge's courier brings them");
    // Supabase's two metadata documents (the RFC 8414 one is what the SDK finds first) point to
    // the JWKS the preset names.
    for (
      const url of [
        `${as.projectUrl}/.well-known/oauth-authorization-server/auth/v1`,
        `${as.issuer}/.well-known/openid-configuration`,
      ]
    ) {
      const meta = await (await fetch(url)).json();
      assert.equal(meta.issuer, as.issuer, url);
      assert.equal(meta.jwks_uri, effective.jwks_url, url);
      assert.equal(meta.authorization_endpoint, `${as.issuer}/oauth/authorize`, url);
      assert.equal(meta.token_endpoint, `${as.issuer}/oauth/token`, url);
      assert.equal(meta.registration_endpoint, `${as.issuer}/oauth/clients/register`, url);
      assert.deepEqual(meta.code_challenge_methods_supported, ["S256"], url);
    }
  });

  test("Alice: 401, discovery, registration, PKCE, a Supabase-shaped token; list_projects shows Acme only", async () => {
    alice = await signIn("alice", redirect);
    clients.push(alice.client);
    const { provider, userAgent, log } = alice;
    const [r401, rPrm, rAsMeta, rReg, rToken] = log;

    // The edge with SUPABASE_URL advertises Supabase Auth, and no scopes (Supabase rejects custom ones).
    assert.deepEqual([r401.method, r401.url, r401.status, r401.authorization], ["POST", MCP_URL, 401, null]);
    const prmUrl = /resource_metadata="([^"]+)"/.exec(r401.wwwAuthenticate)?.[1];
    assert.deepEqual([rPrm.method, rPrm.url, rPrm.status], ["GET", prmUrl, 200]);
    const prm = await (await fetch(prmUrl)).json();
    assert.equal(prm.resource, MCP_URL);
    assert.deepEqual(prm.authorization_servers, [as.issuer]);
    assert.equal(prm.scopes_supported, undefined);

    // Discovery at the RFC 8414 path-inserted URL, registration at /auth/v1/oauth/clients/register.
    assert.deepEqual([rAsMeta.method, rAsMeta.url, rAsMeta.status], [
      "GET",
      `${as.projectUrl}/.well-known/oauth-authorization-server/auth/v1`,
      200,
    ]);
    assert.deepEqual([rReg.method, rReg.url, rReg.status], ["POST", `${as.issuer}/oauth/clients/register`, 201]);
    const info = provider.clientInformation();
    assert.match(info.client_id, UUID);
    assert.equal(info.token_endpoint_auth_method, "none");

    // The authorization request: S256 PKCE; the SDK sends its resource, which Supabase ignores.
    const authz = provider.lastAuthorizationUrl;
    assert.equal(authz.origin + authz.pathname, `${as.issuer}/oauth/authorize`);
    assert.equal(authz.searchParams.get("client_id"), info.client_id);
    assert.equal(authz.searchParams.get("code_challenge_method"), "S256");
    assert.match(authz.searchParams.get("code_challenge"), /^[A-Za-z0-9_-]{43}$/);
    assert.equal(authz.searchParams.get("resource"), MCP_URL);
    assert.deepEqual(userAgent.pages.map((p) => p.prompt), ["login", "consent"], "Alice signed in and consented");

    assert.deepEqual([rToken.method, rToken.url, rToken.status], ["POST", `${as.issuer}/oauth/token`, 200]);
    const form = new URLSearchParams(rToken.body);
    assert.equal(form.get("grant_type"), "authorization_code");
    assert.equal(form.get("code_verifier"), provider.codeVerifier());

    // The token, as Supabase Auth issues it: aud "authenticated" although the client asked for
    // the MCP URL, client_id = this registration, role authenticated, and nothing else.
    const token = provider.tokens().access_token;
    const header = jwtPart(token, 0), claims = jwtPart(token, 1);
    assert.deepEqual(header, { alg: "ES256", kid: as.publicJwks.keys[0].kid, typ: "JWT" });
    assert.deepEqual(Object.keys(claims).sort(), SUPABASE_CLAIMS);
    assert.equal(claims.iss, as.issuer);
    assert.equal(claims.aud, "authenticated");
    assert.equal(claims.sub, ACCOUNTS.alice.accountId);
    assert.equal(claims.role, "authenticated");
    assert.equal(claims.client_id, info.client_id);
    assert.equal(claims.email, ACCOUNTS.alice.email);
    assert.equal(claims.aal, "aal1");
    assert.equal(claims.amr[0].method, "oauth_provider/authorization_code");
    assert.match(claims.session_id, UUID);
    assert.equal(claims.scope, "email", "no scope asked: Supabase grants email");

    // With it, through the edge: Acme's projects only.
    assert.deepEqual(projectNames(await alice.client.callTool({ name: "list_projects", arguments: {} })), [
      "Acme Anvil",
      "Acme Old Catapult",
      "Acme Rocket",
    ]);
    const last = log.at(-1);
    assert.deepEqual([last.url, last.status, last.authorization], [MCP_URL, 200, `Bearer ${token}`]);

    // The keys the database verified it with came from the preset's JWKS URL, carried by the edge.
    assert.deepEqual(JSON.parse(sql("select value->'jwks' from chumbo.settings;\n")), as.publicJwks);
  });

  test("Bob, another client application: list_projects shows Globex only", async () => {
    assert.ok(alice, "Alice's client (the test before) is connected");
    const bob = await signIn("bob", redirect);
    clients.push(bob.client);
    const claims = jwtPart(bob.provider.tokens().access_token, 1);
    assert.equal(claims.sub, ACCOUNTS.bob.accountId);
    assert.equal(claims.aud, "authenticated");
    assert.equal(claims.client_id, bob.provider.clientInformation().client_id);
    assert.notEqual(claims.client_id, alice.provider.clientInformation().client_id);
    assert.deepEqual(projectNames(await bob.client.callTool({ name: "list_projects", arguments: {} })), [
      "Globex Doomsday Device",
      "Globex Retired Laser",
      "Globex Secret Plan",
    ]);
    // Alice, still connected, still sees only Acme.
    assert.deepEqual(projectNames(await alice.client.callTool({ name: "list_projects", arguments: {} })), [
      "Acme Anvil",
      "Acme Old Catapult",
      "Acme Rocket",
    ]);
  });

  test("the app's own session token (same issuer, key, aud and role; no client_id): 401 invalid_token", async () => {
    const res = await fetch(`${as.issuer}/token?grant_type=password`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: ACCOUNTS.alice.email, password: ACCOUNTS.alice.password }),
    });
    assert.equal(res.status, 200);
    const session = (await res.json()).access_token;
    const header = jwtPart(session, 0), claims = jwtPart(session, 1);
    // Everything chumbo checks besides client_id is what an MCP client's token has.
    assert.equal(header.kid, as.publicJwks.keys[0].kid);
    assert.deepEqual([claims.iss, claims.aud, claims.sub, claims.role], [
      as.issuer,
      "authenticated",
      ACCOUNTS.alice.accountId,
      "authenticated",
    ]);
    assert.ok(claims.exp > Date.now() / 1000, "not expired");
    assert.equal(claims.client_id, undefined);
    await assertInvalidToken(MCP_URL, session, "the app's session token", /client_id/);
    // ... and refused for that reason (assertInvalidToken checks a description only when given).
    const refused = await rawCall(MCP_URL, session);
    await refused.body?.cancel();
    assert.match(refused.headers.get("www-authenticate"), /error_description="[^"]*client_id/);
  });
});
