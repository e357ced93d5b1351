// OAuth 2.1 end to end: the official TypeScript MCP client (@modelcontextprotocol/sdk 1.32.2) and
// its OAuth support, against a real authorization server (oidc-provider, ./as.mjs, started here)
// and chumbo behind the edge (started by run.sh). The only scripted part is the "user": the login
// and consent forms of the authorization server are filled in by a small cookie-keeping user agent.
//
// Environment (run.sh sets it):
//   MCP_URL             the edge's MCP endpoint (CHUMBO_PUBLIC_URL; the token audience)
//   OAUTH_AS_PORT       port of the authorization server (the edge advertises http://localhost:PORT)
//   OAUTH_DATABASE_URL  superuser connection to the database behind the edge (to configure chumbo
//                       with the authorization server's issuer and JWKS)
//   OAUTH_DEBUG=1       print the user agent's and the client's HTTP exchanges and the AS's errors
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  auth,
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  startAuthorization,
  UnauthorizedError,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { ACCOUNTS, startAuthorizationServer } from "./as.mjs";
import {
  assertInvalidToken as assertInvalidTokenAt,
  InMemoryOAuthProvider,
  jwtPart,
  loggingFetch as loggingFetchFor,
  startRedirectListener,
  UserAgent,
} from "./client.mjs";

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run the suite through tests/oauth/run.sh)`);
  return v;
}
const MCP_URL = need("MCP_URL");
const AS_PORT = Number(need("OAUTH_AS_PORT"));
const DATABASE_URL = need("OAUTH_DATABASE_URL");
const OTHER_RESOURCE = "https://api.other.example/mcp";
// The expiry test uses a token whose exp lies this far in the past (far beyond any clock-skew
// leeway chumbo tolerates on exp; src/identity/auth.rs allows 30 s): the authorization server backdates it.
const EXPIRED_SINCE = 3600;
const ALICE = ACCOUNTS.alice.accountId;

const { fetch: loggingFetch, log: httpLog } = loggingFetchFor(MCP_URL);
const assertInvalidToken = (token, what, reason) => assertInvalidTokenAt(MCP_URL, token, what, reason);

function listProjectsAssertAcme(res) {
  assert.ok(!res.isError, JSON.stringify(res));
  const names = res.structuredContent.rows.map((r) => r.name).sort();
  assert.deepEqual(names, ["Acme Anvil", "Acme Old Catapult", "Acme Rocket"]);
  assert.ok(!JSON.stringify(res).includes("Globex"), JSON.stringify(res));
}

describe("OAuth 2.1: authorization code + PKCE + dynamic client registration", () => {
  let as, redirect, userAgent, provider, client, transport, asMetadata;

  before(async () => {
    as = await startAuthorizationServer({ port: AS_PORT, accessTokenTTL: 600 });
    // chumbo trusts this issuer and its JWKS, as published at jwks_uri.
    const oidc = await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json();
    const jwks = await (await fetch(oidc.jwks_uri)).json();
    assert.ok(jwks.keys.length >= 1 && jwks.keys.every((k) => !k.d), "public JWKS");
    const settings = JSON.stringify({ auth_mode: "oauth", jwt_issuers: [as.issuer], jwks });
    execFileSync("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", `settings=${settings}`, DATABASE_URL], {
      input: "select chumbo.configure(:'settings'::jsonb);\n",
      stdio: ["pipe", "ignore", "inherit"],
    });
    redirect = await startRedirectListener();
    userAgent = new UserAgent("alice", ACCOUNTS.alice.password);
    provider = new InMemoryOAuthProvider(redirect.url, userAgent);
  });

  after(async () => {
    await client?.close();
    await redirect?.close();
    await as?.close();
  });

  test("the first request gets 401; discovery, registration, authorization code + PKCE, token", async () => {
    const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch: loggingFetch });
    const c = new Client({ name: "chumbo-oauth-test", version: "1.0.0" });
    await assert.rejects(c.connect(first), (e) => e instanceof UnauthorizedError, "connect stops at the redirect");
    assert.ok(provider.authorizationCode, "the user agent brought back a code");
    await first.finishAuth(provider.authorizationCode);
    await c.close().catch(() => {});

    // 1. the unauthenticated POST: 401 with a challenge pointing to the protected-resource metadata
    const log = httpLog.map((e) => ({ ...e }));
    const [r401, rPrm, rAsMeta, rReg, rToken] = log;
    assert.equal(r401.method, "POST");
    assert.equal(r401.url, MCP_URL);
    assert.equal(r401.authorization, null);
    assert.equal(r401.status, 401);
    assert.match(r401.wwwAuthenticate, /^Bearer /);
    assert.doesNotMatch(r401.wwwAuthenticate, /error=/, "no token, no error code (RFC 6750 §3.1)");
    const prmUrl = /resource_metadata="([^"]+)"/.exec(r401.wwwAuthenticate)?.[1];
    assert.ok(prmUrl, r401.wwwAuthenticate);

    // 2. the PRM, fetched from the URL in the header
    assert.deepEqual([rPrm.method, rPrm.url, rPrm.status], ["GET", prmUrl, 200]);
    const prm = await (await fetch(prmUrl)).json();
    assert.equal(prm.resource, MCP_URL);
    assert.deepEqual(prm.authorization_servers, [as.issuer]);
    assert.deepEqual(prm.scopes_supported, ["mcp"]);

    // 3. the authorization server's metadata (RFC 8414 or OIDC discovery) under its issuer
    assert.equal(rAsMeta.method, "GET");
    assert.ok(
      [`${as.issuer}/.well-known/oauth-authorization-server`, `${as.issuer}/.well-known/openid-configuration`].includes(
        rAsMeta.url,
      ),
      rAsMeta.url,
    );
    assert.equal(rAsMeta.status, 200);
    asMetadata = await discoverAuthorizationServerMetadata(as.issuer);
    assert.equal(asMetadata.issuer, as.issuer);

    // 4. dynamic client registration: a public client
    assert.deepEqual([rReg.method, rReg.url, rReg.status], ["POST", asMetadata.registration_endpoint, 201]);
    const info = provider.clientInformation();
    assert.ok(info.client_id);
    assert.equal(info.client_secret, undefined);
    assert.equal(info.token_endpoint_auth_method, "none");

    // 5. the authorization request (in the user agent): code + S256 PKCE + resource indicator
    const authz = provider.lastAuthorizationUrl;
    assert.equal(authz.origin + authz.pathname, asMetadata.authorization_endpoint);
    assert.equal(authz.searchParams.get("response_type"), "code");
    assert.equal(authz.searchParams.get("client_id"), info.client_id);
    assert.equal(authz.searchParams.get("code_challenge_method"), "S256");
    assert.match(authz.searchParams.get("code_challenge"), /^[A-Za-z0-9_-]{43}$/);
    assert.equal(authz.searchParams.get("resource"), MCP_URL);
    assert.equal(authz.searchParams.get("scope"), "mcp", "the scope from the PRM's scopes_supported");
    assert.deepEqual(userAgent.pages.map((p) => p.prompt), ["login", "consent"], "Alice signed in and consented");
    assert.equal(provider.redirectBack.searchParams.get("iss"), as.issuer, "RFC 9207 iss in the redirect");
    assert.equal(redirect.received.length, 1, "the redirect reached the local redirect_uri");

    // 6. the token request: the code with its PKCE verifier, for this resource
    assert.deepEqual([rToken.method, rToken.url, rToken.status], ["POST", asMetadata.token_endpoint, 200]);
    const form = new URLSearchParams(rToken.body);
    assert.equal(form.get("grant_type"), "authorization_code");
    assert.equal(form.get("code"), provider.authorizationCode);
    assert.equal(form.get("code_verifier"), provider.codeVerifier());
    assert.equal(form.get("resource"), MCP_URL);
    assert.equal(form.get("client_id"), info.client_id);
    assert.equal(log.length, 5, JSON.stringify(log.slice(5)));

    // 7. the token: a JWT access token for this MCP server, for Alice, with a refresh token
    const tokens = provider.tokens();
    assert.equal(tokens.token_type.toLowerCase(), "bearer");
    assert.ok(tokens.refresh_token, "a refresh token");
    const header = jwtPart(tokens.access_token, 0), claims = jwtPart(tokens.access_token, 1);
    assert.equal(header.alg, "ES256");
    assert.equal(header.typ, "at+jwt");
    assert.equal(claims.iss, as.issuer);
    assert.equal(claims.aud, MCP_URL);
    assert.equal(claims.sub, ALICE);
    assert.equal(claims.role, "authenticated");
    assert.equal(claims.client_id, info.client_id);
    assert.equal(claims.scope, "mcp");
  });

  test("with the token: tools/list and tools/call list_projects as Alice see Acme only", async () => {
    httpLog.length = 0;
    transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider, fetch: loggingFetch });
    client = new Client({ name: "chumbo-oauth-test", version: "1.0.0" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "list_projects"), tools.map((t) => t.name).join());
    listProjectsAssertAcme(await client.callTool({ name: "list_projects", arguments: {} }));
    const posts = httpLog.filter((e) => e.method === "POST" && e.url === MCP_URL);
    assert.ok(posts.length >= 3);
    for (const e of posts) {
      assert.equal(e.authorization, `Bearer ${provider.tokens().access_token}`);
      assert.ok(e.status < 300, `${e.status} ${e.wwwAuthenticate}`);
    }
  });

  let spentRefreshToken;
  test("refresh: the SDK's refresh path yields a new token that works", async () => {
    const before = provider.tokens();
    httpLog.length = 0;
    assert.equal(await auth(provider, { serverUrl: new URL(MCP_URL), fetchFn: loggingFetch }), "AUTHORIZED");
    const refresh = httpLog.find((e) => e.url === asMetadata.token_endpoint);
    assert.ok(refresh, JSON.stringify(httpLog));
    assert.equal(refresh.status, 200);
    const form = new URLSearchParams(refresh.body);
    assert.equal(form.get("grant_type"), "refresh_token");
    assert.equal(form.get("refresh_token"), before.refresh_token);
    assert.equal(form.get("resource"), MCP_URL);

    const after = provider.tokens();
    assert.notEqual(after.access_token, before.access_token);
    assert.notEqual(after.refresh_token, before.refresh_token, "the refresh token was rotated");
    const claims = jwtPart(after.access_token, 1);
    assert.equal(claims.aud, MCP_URL);
    assert.equal(claims.sub, ALICE);
    assert.ok(claims.exp > Date.now() / 1000, JSON.stringify(claims));

    // the same client, now on the new token
    httpLog.length = 0;
    listProjectsAssertAcme(await client.callTool({ name: "list_projects", arguments: {} }));
    assert.equal(httpLog.at(-1).authorization, `Bearer ${after.access_token}`);
    spentRefreshToken = before.refresh_token;
  });

  test("a token the same authorization server issued for another resource: 401", async () => {
    // Alice authorizes the same client for some other API (RFC 8707 resource indicator).
    const info = provider.clientInformation();
    const { authorizationUrl, codeVerifier } = await startAuthorization(as.issuer, {
      metadata: asMetadata,
      clientInformation: info,
      redirectUrl: redirect.url,
      scope: "mcp",
      resource: new URL(OTHER_RESOURCE),
    });
    const back = await userAgent.authorize(authorizationUrl, redirect.url);
    const tokens = await exchangeAuthorization(as.issuer, {
      metadata: asMetadata,
      clientInformation: info,
      authorizationCode: back.searchParams.get("code"),
      codeVerifier,
      redirectUri: redirect.url,
      resource: new URL(OTHER_RESOURCE),
    });
    const claims = jwtPart(tokens.access_token, 1);
    assert.equal(claims.aud, OTHER_RESOURCE);
    assert.equal(claims.iss, as.issuer);
    assert.equal(claims.sub, ALICE);
    await assertInvalidToken(
      tokens.access_token,
      "token with aud=" + OTHER_RESOURCE,
      /aud|issued for|resource|server/i,
    );
  });

  test("an expired token: 401 invalid_token; the client refreshes on its own", async () => {
    // A refresh through the SDK whose new access token the authorization server issued as if
    // EXPIRED_SINCE + its lifetime ago: the same issuer, key, audience, subject and scope as the
    // working tokens before, only exp is in the past.
    as.backdateAccessTokens(EXPIRED_SINCE + 600);
    try {
      assert.equal(await auth(provider, { serverUrl: new URL(MCP_URL), fetchFn: loggingFetch }), "AUTHORIZED");
    } finally {
      as.backdateAccessTokens(0);
    }
    const expired = provider.tokens().access_token;
    const claims = jwtPart(expired, 1);
    assert.ok(claims.exp <= Date.now() / 1000 - EXPIRED_SINCE + 5, JSON.stringify(claims));
    assert.deepEqual([claims.iss, claims.aud, claims.sub, claims.scope], [as.issuer, MCP_URL, ALICE, "mcp"]);
    await assertInvalidToken(expired, "expired token", /expir/i);

    // The SDK client holds the expired token: its next call gets the 401, refreshes, retries.
    assert.equal(provider.tokens().access_token, expired);
    httpLog.length = 0;
    listProjectsAssertAcme(await client.callTool({ name: "list_projects", arguments: {} }));
    const seq = httpLog.map((e) => `${e.method} ${e.url === MCP_URL ? "mcp" : e.url} ${e.status}`);
    assert.equal(httpLog[0].status, 401, seq.join("\n"));
    assert.match(httpLog[0].wwwAuthenticate, /error="invalid_token"/);
    const refresh = httpLog.find((e) => e.url === asMetadata.token_endpoint);
    assert.equal(new URLSearchParams(refresh?.body).get("grant_type"), "refresh_token", seq.join("\n"));
    assert.equal(httpLog.at(-1).status, 200, seq.join("\n"));
    assert.notEqual(provider.tokens().access_token, expired);
  });

  // Last: reusing a rotated refresh token makes the authorization server revoke the whole grant.
  test("a spent refresh token is refused by the authorization server", async () => {
    const reuse = await fetch(asMetadata.token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: spentRefreshToken,
        client_id: provider.clientInformation().client_id,
      }),
    });
    assert.equal(reuse.status, 400);
    assert.equal((await reuse.json()).error, "invalid_grant");
  });

  test("the authorization server refuses an authorization request without PKCE", async () => {
    const u = new URL(asMetadata.authorization_endpoint);
    for (
      const [k, v] of Object.entries({
        response_type: "code",
        client_id: provider.clientInformation().client_id,
        redirect_uri: redirect.url,
        scope: "mcp",
        resource: MCP_URL,
      })
    ) {
      u.searchParams.set(k, v);
    }
    const res = await fetch(u, { redirect: "manual" });
    assert.equal(res.status, 303);
    const back = new URL(res.headers.get("location"));
    assert.equal(back.origin + back.pathname, redirect.url);
    assert.equal(back.searchParams.get("error"), "invalid_request");
    assert.match(back.searchParams.get("error_description"), /PKCE/);
  });
});
