// Dev access tokens for the example app, signed by a local ES256 test key.
//
//   deno run -A scripts/mint-token.ts alice|bob|carol [--ttl=SECONDS] [--expired] [--wrong-key]
//                                                     [--aud=URL] [--iss=URL] [--scope="a b"]
//   deno run -A scripts/mint-token.ts jwks       the public JWKS (what the database must trust)
//   deno run -A scripts/mint-token.ts settings   the chumbo.configure() settings for bearer mode
//
// The key is created once and kept in .chumbo/dev-jwk.json (git-ignored). Tokens look like
// Supabase Auth's: sub = user id, role = authenticated, plus iss, aud (the MCP URL = the resource
// the edge passes to the database), iat, nbf, exp. --wrong-key signs with a fresh key that has
// the same kid (a forged token); --expired gives a token that expired two minutes ago.
import { exportJWK, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";

const root = new URL("..", import.meta.url).pathname;
const KEY_FILE = `${root}.chumbo/dev-jwk.json`;
const ISSUER = Deno.env.get("CHUMBO_DEV_ISSUER") ?? "https://chumbo-dev-issuer.invalid";
const AUDIENCE = Deno.env.get("CHUMBO_PUBLIC_URL") ?? Deno.env.get("MCP_URL") ??
  `http://localhost:${Deno.env.get("CHUMBO_PORT") ?? 54321}/functions/v1/mcp`;
const USERS: Record<string, { sub: string; email: string }> = {
  alice: { sub: "aaaaaaaa-0000-4000-8000-000000000001", email: "alice@acme.test" },
  bob: { sub: "bbbbbbbb-0000-4000-8000-000000000002", email: "bob@globex.test" },
  carol: { sub: "cccccccc-0000-4000-8000-000000000003", email: "carol@example.test" },
};

async function newKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  return {
    ...(await exportJWK(privateKey)),
    kid: `chumbo-dev-${crypto.randomUUID().slice(0, 8)}`,
    alg: "ES256",
    use: "sig",
  };
}

async function devKey(): Promise<JWK> {
  try {
    return JSON.parse(await Deno.readTextFile(KEY_FILE));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  await Deno.mkdir(`${root}.chumbo`, { recursive: true });
  const jwk = await newKey();
  try {
    await Deno.writeTextFile(KEY_FILE, JSON.stringify(jwk, null, 2) + "\n", { createNew: true, mode: 0o600 });
    return jwk;
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists) return JSON.parse(await Deno.readTextFile(KEY_FILE)); // lost a race
    throw e;
  }
}

function publicJwks(jwk: JWK) {
  const { d: _private, ...pub } = jwk;
  return { keys: [pub] };
}

async function mint(user: string, opts: Record<string, string | boolean>): Promise<string> {
  const u = USERS[user];
  if (!u) throw new Error(`unknown user ${user} (alice, bob, carol)`);
  let jwk = await devKey();
  if (opts["wrong-key"]) jwk = { ...(await newKey()), kid: jwk.kid };
  const now = Math.floor(Date.now() / 1000);
  const ttl = Number(opts.ttl ?? 24 * 3600);
  const [iat, exp] = opts.expired ? [now - 3600, now - 120] : [now, now + ttl];
  const claims: Record<string, unknown> = { role: "authenticated", email: u.email, aal: "aal1" };
  if (typeof opts.scope === "string") claims.scope = opts.scope;
  return await new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: jwk.kid, typ: "JWT" })
    .setIssuer(String(opts.iss ?? ISSUER))
    .setAudience(String(opts.aud ?? AUDIENCE))
    .setSubject(u.sub)
    .setIssuedAt(iat)
    .setNotBefore(iat)
    .setExpirationTime(exp)
    .sign(await importJWK(jwk, "ES256"));
}

const [cmd, ...rest] = Deno.args;
const opts: Record<string, string | boolean> = {};
for (const a of rest) {
  const m = a.match(/^--([^=]+)(?:=(.*))?$/);
  if (!m) throw new Error(`bad argument ${a}`);
  opts[m[1]] = m[2] ?? true;
}
if (cmd === "jwks") {
  console.log(JSON.stringify(publicJwks(await devKey())));
} else if (cmd === "settings") {
  console.log(JSON.stringify({ auth_mode: "bearer", jwt_issuers: [ISSUER], jwks: publicJwks(await devKey()) }));
} else if (cmd && USERS[cmd]) {
  console.log(await mint(cmd, opts));
} else {
  console.error(
    "usage: mint-token.ts alice|bob|carol [--ttl=S] [--expired] [--wrong-key] [--aud=URL] | jwks | settings",
  );
  Deno.exit(2);
}
