// deno-lint-ignore-file require-await -- oidc-provider's hooks and adapter methods return promises
// A local stand-in for Supabase Auth's OAuth 2.1 server (Supabase Auth itself cannot run here):
// the same real authorization server as as.mjs (oidc-provider), shaped like Supabase Auth as
// /work/shared/docs/supabase-oauth-notes.md (from supabase/auth's source) describes it, for what
// an MCP client and chumbo see:
//   - the project URL http://localhost:PORT (the preset's supabase_url); the issuer is
//     <project>/auth/v1 and every endpoint lives under it: /oauth/authorize, /oauth/token,
//     /oauth/clients/register (open dynamic client registration, client_id a UUID), /oauth/userinfo
//     and /.well-known/jwks.json (public ES256 key with kid)
//   - its metadata where Supabase serves it: /.well-known/oauth-authorization-server/auth/v1
//     (RFC 8414, path inserted; what the MCP SDK tries first) and /auth/v1/.well-known/openid-configuration
//   - PKCE required (S256), scopes openid profile email phone offline_access (none asked: email)
//   - access tokens shaped like Supabase's session JWTs: header {alg ES256, kid, typ JWT}; claims
//     iss, sub, aud "authenticated" (whatever `resource` the client sent: Supabase does not bind
//     the audience, RFC 8707), exp, iat, email, phone, app_metadata, user_metadata, role
//     "authenticated", aal "aal1", amr [{method "oauth_provider/authorization_code", timestamp}],
//     session_id (a new session per code exchange), is_anonymous false, client_id (the registered
//     client) and scope. No jti and no user_id (Supabase's source sets neither; the docs'
//     example shows user_id).
//   - the app's own sign-in, POST /auth/v1/token?grant_type=password {email, password}: a session
//     token from the same issuer and key, same aud and role, but no client_id (amr "password").
//     That is the token chumbo's require_client_id refuses.
// Not modelled: Supabase's consent flow (authorization_id, /oauth/authorizations/{id}): the user
// signs in and consents on as.mjs's interaction pages (at /interaction/:uid, like the Site URL's
// consent page outside /auth/v1); GoTrue-shaped error bodies; the RFC 9207 `iss` response
// parameter, which oidc-provider sends and Supabase does not.
//
// Standalone: node supabase-as.mjs [PORT]   (prints the project URL, issuer and JWKS)
import http from "node:http";
import crypto from "node:crypto";
import Provider from "oidc-provider";
import { ACCOUNTS, interactionHandler } from "./as.mjs";

const AUTH = "/auth/v1";
const SCOPES = ["openid", "profile", "email", "phone", "offline_access"];

const b64url = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

function readBody(req) {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}

function sendJson(res, status, body) {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

/** Start it on 127.0.0.1:port; the project URL is http://localhost:port. */
export async function startSupabaseAuth({ port = 0, host = "127.0.0.1", accessTokenTTL = 3600 } = {}) {
  const { privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = crypto.randomUUID();
  const signingKey = { ...privateKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" };

  const server = http.createServer();
  await new Promise((resolve) => server.listen(port, host, resolve));
  const projectUrl = `http://localhost:${server.address().port}`;
  const issuer = projectUrl + AUTH;

  const account = (id) => Object.values(ACCOUNTS).find((a) => a.accountId === id);
  /** The claims Supabase Auth puts in every session JWT of this user (GoTrue's AccessTokenClaims). */
  const userClaims = (acct, method, sessionId) => ({
    email: acct.email,
    phone: "",
    app_metadata: { provider: "email", providers: ["email"] },
    user_metadata: { name: acct.name },
    role: "authenticated",
    aal: "aal1",
    amr: [{ method, timestamp: Math.floor(Date.now() / 1000) }],
    session_id: sessionId,
    is_anonymous: false,
  });

  const provider = new Provider(issuer, {
    jwks: { keys: [signingKey] },
    cookies: { keys: [crypto.randomBytes(32).toString("hex")] },
    async findAccount(_ctx, id) {
      const acct = account(id);
      if (!acct) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, name: acct.name, email: acct.email }) };
    },
    routes: {
      authorization: "/oauth/authorize",
      token: "/oauth/token",
      registration: "/oauth/clients/register",
      userinfo: "/oauth/userinfo",
      jwks: "/.well-known/jwks.json",
    },
    claims: { openid: ["sub"], profile: ["name"], email: ["email"], phone: ["phone_number"] },
    scopes: SCOPES,
    clientAuthMethods: ["client_secret_basic", "client_secret_post", "none"],
    clientDefaults: {
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic", // Supabase: no method given -> confidential
      id_token_signed_response_alg: "ES256",
    },
    responseTypes: ["code"],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, idFactory: () => crypto.randomUUID() },
      rpInitiatedLogout: { enabled: false },
      // Supabase accepts `resource` and ignores it for the token: every access token is for
      // "authenticated". (oidc-provider issues JWT access tokens only for a resource server, so
      // every resource, and none, maps to one whose audience is "authenticated".)
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => issuer,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          const u = new URL(resourceIndicator);
          if (u.protocol !== "http:" && u.protocol !== "https:") throw new Provider.errors.InvalidTarget();
          return {
            audience: "authenticated",
            scope: SCOPES.join(" "),
            accessTokenTTL,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    // A new Supabase session per code exchange: one session_id per grant.
    extraTokenClaims: async (_ctx, token) => {
      const acct = account(token.accountId);
      return acct ? userClaims(acct, "oauth_provider/authorization_code", sessionOf(token.grantId)) : {};
    },
    formats: {
      customizers: {
        // Supabase's session JWT: typ JWT, no jti; the scope claim only when there is one.
        jwt: async (_ctx, _token, jwt) => {
          jwt.header = { typ: "JWT" };
          delete jwt.payload.jti;
          if (!jwt.payload.scope) delete jwt.payload.scope;
        },
      },
    },
    ttl: {
      AccessToken: () => accessTokenTTL,
      AuthorizationCode: 600,
      Grant: 3600,
      Interaction: 600,
      Session: 3600,
      RefreshToken: 3600,
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    renderError: async (ctx, out, error) => {
      ctx.type = "json";
      ctx.body = { ...out, detail: String(error?.message ?? error) };
    },
  });
  const sessions = new Map(); // grantId -> session_id
  const sessionOf = (grantId) => {
    if (!sessions.has(grantId)) sessions.set(grantId, crypto.randomUUID());
    return sessions.get(grantId);
  };

  if (process.env.OAUTH_DEBUG) {
    for (const ev of ["grant.error", "authorization.error", "registration_create.error", "server_error"]) {
      provider.on(ev, (_ctx, err) => console.error(`SUPABASE AS ${ev}:`, err?.message, err?.error_detail ?? ""));
    }
  }

  /** An ES256 JWT signed with the project's key (the app's own session tokens). */
  function sign(payload) {
    const input = `${b64url({ alg: "ES256", kid, typ: "JWT" })}.${b64url(payload)}`;
    const sig = crypto.sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" });
    return `${input}.${sig.toString("base64url")}`;
  }

  // GoTrue's password sign-in (what the app's own web client uses): a session without a client.
  async function passwordGrant(req, res) {
    let email, password;
    try {
      ({ email, password } = JSON.parse(await readBody(req)));
    } catch {
      return sendJson(res, 400, { code: 400, error_code: "bad_json", msg: "Could not parse request body as JSON" });
    }
    const acct = Object.values(ACCOUNTS).find((a) => a.email === email);
    if (!acct || acct.password !== password) {
      return sendJson(res, 400, { code: 400, error_code: "invalid_credentials", msg: "Invalid login credentials" });
    }
    const iat = Math.floor(Date.now() / 1000);
    const claims = {
      iss: issuer,
      sub: acct.accountId,
      aud: "authenticated",
      exp: iat + accessTokenTTL,
      iat,
      ...userClaims(acct, "password", crypto.randomUUID()),
    };
    const user = { id: acct.accountId, aud: "authenticated", role: "authenticated", email: acct.email };
    return sendJson(res, 200, {
      access_token: sign(claims),
      token_type: "bearer",
      expires_in: accessTokenTTL,
      expires_at: claims.exp,
      refresh_token: crypto.randomBytes(9).toString("base64url"),
      user,
    });
  }

  const callback = provider.callback();
  const interaction = interactionHandler(provider);
  /** Hand a request to oidc-provider as if mounted at /auth/v1 (how Express mounts it). */
  const mounted = (req, res, path) => {
    req.originalUrl = AUTH + path;
    req.url = path;
    return callback(req, res);
  };

  server.on("request", (req, res) => {
    const url = new URL(req.url, projectUrl);
    if (url.pathname === `/.well-known/oauth-authorization-server${AUTH}`) {
      // Supabase's RFC 8414 metadata: the same document as its OpenID configuration.
      return mounted(req, res, "/.well-known/openid-configuration");
    }
    if (
      url.pathname === `${AUTH}/token` && req.method === "POST" && url.searchParams.get("grant_type") === "password"
    ) {
      return passwordGrant(req, res).catch((e) => sendJson(res, 500, { code: 500, msg: String(e) }));
    }
    if (url.pathname === `${AUTH}/oauth/authorize` && !url.searchParams.has("scope")) {
      // Supabase: an authorization request without scope gets "email".
      url.searchParams.set("scope", "email");
      return mounted(req, res, url.pathname.slice(AUTH.length) + url.search);
    }
    if (url.pathname.startsWith(AUTH + "/")) return mounted(req, res, req.url.slice(AUTH.length));
    if (url.pathname.startsWith("/interaction/")) return interaction(req, res);
    sendJson(res, 404, { code: 404, error_code: "not_found", msg: "Not found" });
  });

  const publicJwks = {
    keys: [{
      kty: signingKey.kty,
      crv: signingKey.crv,
      x: signingKey.x,
      y: signingKey.y,
      kid,
      alg: "ES256",
      use: "sig",
    }],
  };

  return {
    projectUrl,
    issuer,
    provider,
    publicJwks,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const as = await startSupabaseAuth({ port: Number(process.argv[2] ?? 0) });
  console.log(`SUPABASE_URL=${as.projectUrl}`);
  console.log(`ISSUER=${as.issuer}`);
  console.log(`JWKS=${JSON.stringify(as.publicJwks)}`);
}
