// A local stand-in for Supabase Auth's OAuth 2.1 server, for the consent-page test ONLY.
// Supabase Auth (GoTrue + its gateway) cannot run on this machine, so this implements exactly the
// endpoints the consent page's supabase-js calls hit, as supabase/auth bc32168e
// (internal/api/oauthserver/authorize.go, api.go, auth.go, errors.go) and
// /work/shared/docs/supabase-oauth-notes.md §3 describe them, under /auth/v1:
//
//   GET  /oauth/authorize                         validates client_id + exact redirect_uri (400 JSON
//                                                 otherwise), PKCE, scopes; 302 to
//                                                 {siteUrl}{authorizationPath}?authorization_id=<32 alnum>
//   POST /token?grant_type=password               the user's session (signInWithPassword); a JWT (HS256)
//   GET  /user                                    Bearer → the user (what supabase-js calls to take a
//                                                 session from a URL: the login-CSRF tests need it)
//   GET  /oauth/authorizations/{id}               Bearer required (401 no_authorization, 403 bad_jwt);
//                                                 Origin must be the Site URL's or allow-listed (400);
//                                                 unknown/expired/other user's → 404
//                                                 oauth_authorization_not_found; not pending → 400
//                                                 validation_failed; the first call binds the request
//                                                 to the user; → details, or {redirect_url} when an
//                                                 earlier consent covers the scopes (auto-approve)
//   POST /oauth/authorizations/{id}/consent       {"action":"approve"|"deny"} → 200 {redirect_url}:
//                                                 redirect_uri?code=…&state=… or
//                                                 ?error=access_denied&error_description=…&state=…
//
// plus what the gateway in front of it does: CORS (preflights answered for any origin) and the
// `apikey` check (401 without the project's key). Errors are {code, message} (API version
// 2024-01-01, echoed in X-Supabase-Api-Version, as supabase-js sends it). Not implemented: token
// exchange, refresh, DCR, sign-out, expiry (the 10-minute TTL is never reached in the test).
//
// Outside /auth/v1 it serves GET /callback, standing in for the MCP client's redirect URI.
// Every request is recorded in `requests` ({method, path, search, headers, body}) for the test.
import http from "node:http";
import crypto from "node:crypto";

const b64url = (b) => Buffer.from(b).toString("base64url");
const SCOPES = new Set(["openid", "profile", "email", "phone", "offline_access"]);

export async function startSupabaseAuthStandin({
  port = 0,
  host = "127.0.0.1",
  siteUrl, // e.g. http://localhost:EDGE (the consent page is {siteUrl}{authorizationPath})
  authorizationPath, // e.g. /functions/v1/mcp/consent
  anonKey,
  users, // [{id, email, password}]
  clients, // [{id, name, uri, redirect_uris}]
  uriAllowList = [], // exact origins/URLs besides the Site URL (Supabase's "Redirect URLs")
}) {
  const secret = crypto.randomBytes(32);
  const authorizations = new Map(); // authorization_id -> record
  const consents = new Map(); // `${user}/${client}` -> Set of scopes
  const requests = [];
  const sessions = []; // {user, access_token, refresh_token} issued by the password grant
  // deno-lint-ignore prefer-const -- set once the server listens (port 0); read by the handlers below
  let base;

  const sign = (claims) => {
    const head = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
    const body = b64url(JSON.stringify(claims));
    const sig = crypto.createHmac("sha256", secret).update(`${head}.${body}`).digest("base64url");
    return `${head}.${body}.${sig}`;
  };
  const verify = (token) => {
    const [head, body, sig] = token.split(".");
    if (!sig) return null;
    const want = crypto.createHmac("sha256", secret).update(`${head}.${body}`).digest();
    const got = Buffer.from(sig, "base64url");
    if (got.length !== want.length || !crypto.timingSafeEqual(got, want)) return null;
    const claims = JSON.parse(Buffer.from(body, "base64url").toString());
    return claims.exp > Date.now() / 1000 ? claims : null;
  };

  function send(res, status, body, headers = {}) {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(body === undefined ? "" : JSON.stringify(body));
  }
  const apiError = (res, status, code, message) =>
    send(res, status, { code, message }, { "x-supabase-api-version": "2024-01-01", "x-sb-error-code": code });

  // utilities.IsRedirectURLValid: same scheme, host and port as the Site URL (any port on
  // localhost), a loopback IP, or an allow-listed entry.
  function originAllowed(origin) {
    if (!origin) return true; // "Empty Origin header is ok"
    let site, o;
    try {
      site = new URL(siteUrl);
      o = new URL(origin);
    } catch {
      return false;
    }
    if (
      site.hostname === o.hostname && site.protocol === o.protocol &&
      (site.port === o.port || o.hostname === "localhost")
    ) return true;
    if (o.hostname === "127.0.0.1" || o.hostname === "[::1]") return true;
    return uriAllowList.includes(origin);
  }

  function user(req, res) {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? "");
    if (!m) return apiError(res, 401, "no_authorization", "This endpoint requires a valid Bearer token"), null;
    const claims = verify(m[1]);
    if (!claims) return apiError(res, 403, "bad_jwt", "invalid JWT: unable to parse or verify signature"), null;
    return users.find((u) => u.id === claims.sub) ?? (apiError(res, 403, "bad_jwt", "user not found"), null);
  }

  function redirectWith(uri, params) {
    const u = new URL(uri);
    for (const [k, v] of Object.entries(params)) if (v) u.searchParams.set(k, v);
    u.searchParams.sort(); // Go's url.Values.Encode sorts by key
    return u.toString();
  }
  const success = (a) => redirectWith(a.redirect_uri, { code: a.code, state: a.state });

  function authorize(res, q) {
    const client = clients.find((c) => c.id === q.get("client_id"));
    if (!q.get("client_id")) return apiError(res, 400, "validation_failed", "client_id is required");
    if (!q.get("redirect_uri")) return apiError(res, 400, "validation_failed", "redirect_uri is required");
    if (!client) return apiError(res, 400, "oauth_client_not_found", "invalid client_id");
    const redirectUri = q.get("redirect_uri");
    if (!client.redirect_uris.includes(redirectUri)) {
      return apiError(res, 400, "validation_failed", "invalid redirect_uri");
    }
    const state = q.get("state") ?? "";
    const scope = q.get("scope") || "email";
    const bad = (q.get("response_type") ?? "code") !== "code"
      ? "only response_type=code is supported"
      : scope.split(" ").some((s) => !SCOPES.has(s))
      ? "invalid scope"
      : !/^[A-Za-z0-9._~-]{43,128}$/.test(q.get("code_challenge") ?? "")
      ? "code_challenge is required (43-128 characters)"
      : !["S256", "plain"].includes(q.get("code_challenge_method") ?? "")
      ? "code_challenge_method must be S256 or plain"
      : null;
    if (bad) {
      res.writeHead(302, {
        location: redirectWith(redirectUri, { error: "invalid_request", error_description: bad, state }),
      });
      return res.end();
    }
    const id = crypto.randomBytes(24).toString("base64").replace(/[^A-Za-z0-9]/g, "").slice(0, 32).padEnd(32, "a");
    authorizations.set(id, {
      id,
      client_id: client.id,
      redirect_uri: redirectUri,
      scope,
      state,
      status: "pending",
      user_id: null,
      code: null,
    });
    res.writeHead(302, { location: `${siteUrl.replace(/\/+$/, "")}${authorizationPath}?authorization_id=${id}` });
    res.end();
  }

  function approve(a, u) {
    a.status = "approved";
    a.code = crypto.randomUUID();
    const key = `${u.id}/${a.client_id}`;
    consents.set(key, new Set([...(consents.get(key) ?? []), ...a.scope.split(" ")]));
  }

  function details(req, res, id) {
    if (!originAllowed(req.headers.origin)) {
      return apiError(res, 400, "validation_failed", "unauthorized request origin");
    }
    const u = user(req, res);
    if (!u) return;
    const a = authorizations.get(id);
    if (!a) return apiError(res, 404, "oauth_authorization_not_found", "authorization not found");
    if (a.status !== "pending") {
      return apiError(res, 400, "validation_failed", "authorization request cannot be processed");
    }
    if (a.user_id === null) {
      a.user_id = u.id; // the first call binds the request to this user
      const granted = consents.get(`${u.id}/${a.client_id}`);
      if (granted && a.scope.split(" ").every((s) => granted.has(s))) {
        approve(a, u);
        return send(res, 200, { redirect_url: success(a) });
      }
    } else if (a.user_id !== u.id) {
      return apiError(res, 404, "oauth_authorization_not_found", "authorization not found");
    }
    const c = clients.find((c) => c.id === a.client_id);
    send(res, 200, {
      authorization_id: a.id,
      redirect_uri: a.redirect_uri,
      client: { id: c.id, name: c.name, uri: c.uri, logo_uri: c.logo_uri },
      user: { id: u.id, email: u.email },
      scope: a.scope,
    });
  }

  function consent(req, res, id, body) {
    if (!originAllowed(req.headers.origin)) {
      return apiError(res, 400, "validation_failed", "unauthorized request origin");
    }
    const u = user(req, res);
    if (!u) return;
    if (body === undefined) return apiError(res, 400, "bad_json", "invalid JSON body");
    if (body?.action !== "approve" && body?.action !== "deny") {
      return apiError(res, 400, "validation_failed", "action must be 'approve' or 'deny'");
    }
    const a = authorizations.get(id);
    if (!a) return apiError(res, 404, "oauth_authorization_not_found", "authorization not found");
    if (a.status !== "pending") {
      return apiError(res, 400, "validation_failed", "authorization request is no longer pending");
    }
    if (a.user_id !== u.id) return apiError(res, 404, "oauth_authorization_not_found", "authorization not found");
    if (body.action === "approve") {
      approve(a, u);
      return send(res, 200, { redirect_url: success(a) });
    }
    a.status = "denied";
    send(res, 200, {
      redirect_url: redirectWith(a.redirect_uri, {
        error: "access_denied",
        error_description: "User denied the request",
        state: a.state,
      }),
    });
  }

  function passwordGrant(res, body) {
    const u = users.find((u) => u.email === body?.email && u.password === body?.password);
    if (!u) return apiError(res, 400, "invalid_credentials", "Invalid login credentials");
    const now = Math.floor(Date.now() / 1000);
    const access_token = sign({
      iss: `${base}/auth/v1`,
      sub: u.id,
      aud: "authenticated",
      exp: now + 3600,
      iat: now,
      email: u.email,
      role: "authenticated",
      aal: "aal1",
      session_id: crypto.randomUUID(),
      is_anonymous: false,
    });
    const refresh_token = crypto.randomBytes(12).toString("hex");
    sessions.push({ user: u.id, access_token, refresh_token });
    send(res, 200, {
      access_token,
      token_type: "bearer",
      expires_in: 3600,
      expires_at: now + 3600,
      refresh_token,
      user: userJson(u),
    });
  }

  const userJson = (u) => ({
    id: u.id,
    aud: "authenticated",
    role: "authenticated",
    email: u.email,
    app_metadata: {},
    user_metadata: {},
  });

  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const url = new URL(req.url, base);
      let body;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch { /* stays undefined: not JSON */ }
      requests.push({
        method: req.method,
        path: url.pathname,
        search: url.search,
        headers: { ...req.headers },
        body: body ?? raw,
      });
      if (url.pathname === "/callback") { // the MCP client's redirect URI, not Supabase
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end("<!doctype html><title>MCP client callback</title><p>callback received</p>");
      }
      if (!url.pathname.startsWith("/auth/v1/")) return send(res, 404, { message: "no route" });
      const cors = { "access-control-allow-origin": "*" };
      for (const [k, v] of Object.entries(cors)) res.setHeader(k, v);
      if (req.method === "OPTIONS") {
        res.writeHead(204, {
          "access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
          "access-control-allow-headers": req.headers["access-control-request-headers"] ?? "",
          "access-control-max-age": "3600",
        });
        return res.end();
      }
      const path = url.pathname.slice("/auth/v1".length);
      if (path === "/oauth/authorize" && req.method === "GET") return authorize(res, url.searchParams);
      // The gateway: every other call needs the project's key.
      const key = req.headers.apikey ?? url.searchParams.get("apikey");
      if (!key) return send(res, 401, { message: "No API key found in request" });
      if (key !== anonKey) return send(res, 401, { message: "Invalid API key" });
      if (path === "/token" && req.method === "POST" && url.searchParams.get("grant_type") === "password") {
        return passwordGrant(res, body);
      }
      if (path === "/user" && req.method === "GET") {
        const u = user(req, res);
        return u && send(res, 200, userJson(u));
      }
      let m;
      if ((m = /^\/oauth\/authorizations\/([^/]+)$/.exec(path)) && req.method === "GET") return details(req, res, m[1]);
      if ((m = /^\/oauth\/authorizations\/([^/]+)\/consent$/.exec(path)) && req.method === "POST") {
        return consent(req, res, m[1], body);
      }
      apiError(res, 404, "not_found", "no such endpoint in the stand-in");
    });
  });
  await new Promise((resolve) => server.listen(port, host, resolve));
  base = `http://${host}:${server.address().port}`;
  return {
    url: base,
    requests,
    sessions,
    authorizations,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
