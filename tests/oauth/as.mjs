// deno-lint-ignore-file require-await -- oidc-provider's hooks and adapter methods return promises
// A real OAuth 2.1 authorization server for the OAuth end-to-end test: the `oidc-provider`
// package (pinned in package.json), configured the way an MCP deployment needs it:
//   - dynamic client registration (RFC 7591), open, public clients (token_endpoint_auth_method none)
//   - authorization code + PKCE (S256, required for every client) and refresh_token grants
//   - resource indicators (RFC 8707): a token requested for a resource is a JWT access token
//     (RFC 9068, ES256) whose `aud` is that resource, with `sub` = the account id and the extra
//     claim `role: "authenticated"` (what Supabase puts in its tokens and chumbo maps to a role)
//   - three accounts: alice (accountId aaaaaaaa-0000-4000-8000-000000000001, Acme in the example app),
//     bob (bbbbbbbb-0000-4000-8000-000000000002, Globex) and carol (cccccccc-0000-4000-8000-000000000003, a member of nothing)
//   - its own tiny login/consent pages at /interaction/:uid (HTML forms; the test's "user" submits
//     them), no devInteractions.
// The access-token lifetime can be changed at run time (`setAccessTokenTTL`), and the tokens it
// issues can be backdated (`backdateAccessTokens(seconds)`: iat and exp that many seconds in the
// past, as if issued then), so the test gets an expired token from the real token endpoint
// without waiting for one to expire.
//
// Standalone: node as.mjs [PORT]   (prints the issuer and the JWKS, serves until killed)
import http from "node:http";
import crypto from "node:crypto";
import Provider from "oidc-provider";

export const ACCOUNTS = {
  alice: {
    accountId: "aaaaaaaa-0000-4000-8000-000000000001",
    password: "wonderland",
    name: "Alice",
    email: "alice@acme.example",
  },
  bob: {
    accountId: "bbbbbbbb-0000-4000-8000-000000000002",
    password: "builder",
    name: "Bob",
    email: "bob@globex.example",
  },
  // A member of nothing in the example app: authenticated, but RLS shows her no rows.
  carol: {
    accountId: "cccccccc-0000-4000-8000-000000000003",
    password: "nowhere",
    name: "Carol",
    email: "carol@example.test",
  },
};

const html = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, uid, prompt, inner) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${html(title)}</title></head>
<body data-prompt="${html(prompt)}"><h1>${html(title)}</h1>
<form method="post" action="/interaction/${html(uid)}/${
    html(prompt)
  }">${inner}<button type="submit">Continue</button></form>
</body></html>`;
}

function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(new URLSearchParams(body)));
    req.on("error", reject);
  });
}

/**
 * The interaction pages at /interaction/:uid of `provider`: login (account + password), then
 * consent (grants what was asked). Returns a request handler (errors answer 500 with the stack).
 */
export function interactionHandler(provider) {
  return (req, res) =>
    interaction(provider, req, res).catch((e) => {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(String(e?.stack ?? e));
    });
}

async function interaction(provider, req, res) {
  const url = new URL(req.url, "http://localhost");
  const [, , uid, action] = url.pathname.split("/");
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error("interaction uid mismatch");
  const { prompt, params, session } = details;

  if (req.method === "GET") {
    const body = prompt.name === "login"
      ? page("Sign in", uid, "login", '<input name="login"><input name="password" type="password">')
      : page(`Allow ${params.client_id} to access ${[].concat(params.resource ?? []).join(", ")}?`, uid, "consent", "");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    return res.end(body);
  }
  if (req.method === "POST" && action === "login") {
    const form = await readForm(req);
    const acct = ACCOUNTS[form.get("login")];
    if (!acct || acct.password !== form.get("password")) {
      return provider.interactionFinished(req, res, { error: "access_denied", error_description: "wrong credentials" });
    }
    return provider.interactionFinished(req, res, { login: { accountId: acct.accountId } }, {
      mergeWithLastSubmission: false,
    });
  }
  if (req.method === "POST" && action === "consent") {
    await readForm(req);
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(" "));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    if (d.missingResourceScopes) {
      for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
        grant.addResourceScope(indicator, scopes.join(" "));
      }
    }
    // A resource asked for without scopes still has to be in the grant.
    for (const r of [].concat(params.resource ?? [])) grant.addResourceScope(r, "");
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  res.writeHead(405).end();
}

/**
 * Start the authorization server on 127.0.0.1:port with issuer http://localhost:port.
 * `resourceServers`: resource indicators it issues JWT access tokens for (any absolute http(s)
 * URL is accepted when `acceptAnyResource` is true, so the test can get a token for some other
 * API from the same server). `registration: false` turns dynamic client registration off.
 */
export async function startAuthorizationServer(
  { port = 0, host = "127.0.0.1", accessTokenTTL = 600, registration = true } = {},
) {
  let ttl = accessTokenTTL;
  let backdate = 0;
  const { privateKey } = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
  const signingKey = {
    ...privateKey.export({ format: "jwk" }),
    kid: `oauth-test-${crypto.randomUUID().slice(0, 8)}`,
    alg: "ES256",
    use: "sig",
  };

  const server = http.createServer();
  await new Promise((resolve) => server.listen(port, host, resolve));
  const issuer = `http://localhost:${server.address().port}`;

  const provider = new Provider(issuer, {
    jwks: { keys: [signingKey] },
    cookies: { keys: [crypto.randomBytes(32).toString("hex")] },
    async findAccount(_ctx, id) {
      const acct = Object.values(ACCOUNTS).find((a) => a.accountId === id);
      if (!acct) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, name: acct.name, email: acct.email }) };
    },
    claims: { openid: ["sub"], profile: ["name"], email: ["email"] },
    scopes: ["openid", "offline_access", "mcp"], // "mcp": the scope the MCP server's metadata advertises
    clientDefaults: {
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      id_token_signed_response_alg: "ES256", // the only key is an EC P-256 key
    },
    responseTypes: ["code"],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: registration }, // false: no dynamic client registration (the doctor test)
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          const u = new URL(resourceIndicator);
          if (u.protocol !== "http:" && u.protocol !== "https:") throw new Provider.errors.InvalidTarget();
          return {
            audience: resourceIndicator,
            scope: "mcp",
            accessTokenTTL: ttl,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
    },
    // Refresh tokens for every client registered with the refresh_token grant (no offline_access
    // scope needed: MCP clients are not OpenID relying parties).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
    // Claims for the resource server (chumbo): run the capability as role "authenticated".
    extraTokenClaims: async () => ({ role: "authenticated" }),
    rotateRefreshToken: true,
    formats: {
      customizers: {
        jwt: async (_ctx, _token, jwt) => {
          if (backdate) {
            jwt.payload.iat -= backdate;
            jwt.payload.exp -= backdate;
          }
        },
      },
    },
    ttl: {
      AccessToken: () => ttl,
      AuthorizationCode: 60,
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

  if (process.env.OAUTH_DEBUG) {
    for (const ev of ["grant.error", "authorization.error", "registration_create.error", "server_error"]) {
      provider.on(ev, (_ctx, err) => console.error(`AS ${ev}:`, err?.message, err?.error_detail ?? ""));
    }
  }
  const callback = provider.callback();
  const interaction = interactionHandler(provider);

  server.on("request", (req, res) => {
    if (req.url.startsWith("/interaction/")) {
      interaction(req, res);
    } else {
      callback(req, res);
    }
  });

  const publicJwks = {
    keys: [{
      kty: signingKey.kty,
      crv: signingKey.crv,
      x: signingKey.x,
      y: signingKey.y,
      kid: signingKey.kid,
      alg: "ES256",
      use: "sig",
    }],
  };

  return {
    issuer,
    provider,
    publicJwks,
    setAccessTokenTTL(seconds) {
      ttl = seconds;
    },
    backdateAccessTokens(seconds) {
      backdate = seconds;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const as = await startAuthorizationServer({ port: Number(process.argv[2] ?? 0) });
  console.log(`ISSUER=${as.issuer}`);
  console.log(`JWKS=${JSON.stringify(as.publicJwks)}`);
}
