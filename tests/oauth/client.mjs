// What the OAuth end-to-end tests share on the client's side: the user (a cookie-keeping user
// agent that fills in the authorization server's login and consent forms), the client
// application's loopback redirect_uri, an in-memory OAuthClientProvider for the official
// TypeScript MCP client, a fetch that records every exchange, and raw calls to the MCP endpoint.
import assert from "node:assert/strict";
import http from "node:http";
import crypto from "node:crypto";
import { extractWWWAuthenticateParams } from "@modelcontextprotocol/sdk/client/auth.js";

export const jwtPart = (t, i) => JSON.parse(Buffer.from(t.split(".")[i], "base64url").toString());

// --- every HTTP exchange the client makes (the fetch handed to the SDK) ------------------------
/** A fetch for the SDK that records each exchange in `log` (error bodies except the MCP endpoint's). */
export function loggingFetch(mcpUrl) {
  const log = [];
  async function fetchAndLog(input, init = {}) {
    const url = String(input instanceof Request ? input.url : input);
    const method = init.method ?? (input instanceof Request ? input.method : "GET");
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    const body = typeof init.body === "string"
      ? init.body
      : init.body instanceof URLSearchParams
      ? init.body.toString()
      : undefined;
    const res = await fetch(input, init);
    const error = res.status >= 400 && url !== mcpUrl ? await res.clone().text() : undefined;
    log.push({
      method,
      url,
      authorization: headers.get("authorization"),
      body,
      status: res.status,
      wwwAuthenticate: res.headers.get("www-authenticate"),
      error,
    });
    if (process.env.OAUTH_DEBUG) console.error("CLIENT", method, url, res.status, error ?? "");
    return res;
  }
  return { fetch: fetchAndLog, log };
}

// --- the user: a browser that keeps cookies and signs Alice in -----------------------------------
export class UserAgent {
  cookies = new Map(); // name -> value (one origin: the authorization server)
  pages = []; // what the user saw: [{url, prompt}]
  constructor(login, password) {
    this.login = login;
    this.password = password;
  }

  _store(res) {
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i).trim(), value = pair.slice(i + 1).trim();
      const expires = attrs.map((a) => a.trim()).find((a) => /^expires=/i.test(a));
      if (!value || (expires && new Date(expires.slice(8)) < new Date())) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  async _request(url, init = {}) {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const res = await fetch(url, { ...init, headers, redirect: "manual" });
    this._store(res);
    return res;
  }
  /** Open the authorization URL, sign in and consent, follow redirects until the client's redirect URI. */
  async authorize(authorizationUrl, redirectUri) {
    let url = String(authorizationUrl), init = {};
    for (let hop = 0; hop < 20; hop++) {
      if (url.startsWith(redirectUri)) {
        const res = await fetch(url); // the redirect reaches the client's local redirect_uri
        assert.equal(res.status, 200, await res.text());
        return new URL(url);
      }
      const res = await this._request(url, init);
      if (process.env.OAUTH_DEBUG) {
        console.error("UA", init.method ?? "GET", url, res.status, res.headers.get("location") ?? "");
      }
      init = {};
      if (res.status >= 300 && res.status < 400) {
        url = new URL(res.headers.get("location"), url).href;
        continue;
      }
      const text = await res.text();
      assert.equal(res.status, 200, `${url}: ${res.status} ${text}`);
      const prompt = /data-prompt="([^"]+)"/.exec(text)?.[1];
      const action = /<form method="post" action="([^"]+)"/.exec(text)?.[1];
      assert.ok(prompt && action, `an interaction page: ${text}`);
      this.pages.push({ url, prompt });
      const form = prompt === "login"
        ? new URLSearchParams({ login: this.login, password: this.password })
        : new URLSearchParams();
      url = new URL(action.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(n)), url).href;
      init = {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
      };
    }
    throw new Error("too many redirects");
  }
}

// --- the client application's local redirect_uri (loopback, like a desktop MCP client) -----------
export async function startRedirectListener() {
  const received = [];
  const server = http.createServer((req, res) => {
    received.push(new URL(req.url, "http://127.0.0.1"));
    res.writeHead(200, { "content-type": "text/plain" }).end("Signed in. You can close this window.");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/callback`,
    received,
    close: () => new Promise((r) => server.close(r)),
  };
}

// --- the OAuthClientProvider: in-memory state, redirect handled by the user agent ----------------
export class InMemoryOAuthProvider {
  constructor(redirectUrl, userAgent) {
    this._redirectUrl = redirectUrl;
    this.userAgent = userAgent;
    this.savedTokens = [];
    this.authorizationCode = undefined;
  }
  get redirectUrl() {
    return this._redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: "chumbo OAuth end-to-end test",
      application_type: "native",
      redirect_uris: [this._redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return (this._state = crypto.randomBytes(16).toString("base64url"));
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
    this.savedTokens.push(tokens);
  }
  saveCodeVerifier(v) {
    this._verifier = v;
  }
  codeVerifier() {
    return this._verifier;
  }
  // Discovery results survive the redirect (finishAuth does not discover again).
  discoveryState() {
    return this._discovery;
  }
  saveDiscoveryState(state) {
    this._discovery = state;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "client") this._client = undefined;
    if (scope === "all" || scope === "tokens") this._tokens = undefined;
    if (scope === "all" || scope === "verifier") this._verifier = undefined;
    if (scope === "all" || scope === "discovery") this._discovery = undefined;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.lastAuthorizationUrl = new URL(authorizationUrl);
    const back = await this.userAgent.authorize(authorizationUrl, this._redirectUrl);
    assert.equal(back.searchParams.get("error"), null, back.href);
    assert.equal(back.searchParams.get("state"), this._state, "state comes back unchanged");
    this.redirectBack = back;
    this.authorizationCode = back.searchParams.get("code");
  }
}

/** A raw POST to the MCP endpoint with a bearer token (the HTTP-level view the SDK hides). */
export function rawCall(mcpUrl, token, body = { jsonrpc: "2.0", id: 1, method: "tools/list" }) {
  return fetch(mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });
}

export async function assertInvalidToken(mcpUrl, token, what, reason) {
  const res = await rawCall(mcpUrl, token);
  const text = await res.text();
  assert.equal(res.status, 401, `${what}: ${res.status} ${text}`);
  const challenge = res.headers.get("www-authenticate") ?? "";
  if (process.env.OAUTH_DEBUG) console.error("CHALLENGE", what, res.status, challenge, text);
  assert.match(challenge, /^Bearer /, challenge);
  assert.match(challenge, /error="invalid_token"/, challenge);
  assert.match(challenge, /resource_metadata="[^"]+"/, challenge);
  const { resourceMetadataUrl, error } = extractWWWAuthenticateParams(res);
  assert.equal(error, "invalid_token");
  // The refusal is for the reason under test (when the server says why).
  const description = /error_description="([^"]*)"/.exec(challenge)?.[1];
  if (description !== undefined) assert.match(description, reason, challenge);
  assert.equal((await (await fetch(resourceMetadataUrl)).json()).resource, mcpUrl);
}
