// chumbo doctor: checks a deployed MCP server from the outside, the way an MCP client meets it.
//
//   deno run -A scripts/remote-doctor.ts <MCP URL> [--token <access token>] [--json]
//   make doctor URL=<MCP URL> [TOKEN=<access token>]          (the token may also come from MCP_TOKEN)
//
// Each check prints PASS/FAIL/SKIP and, when it does not pass, the next step to take:
//   challenge          an unauthenticated POST gets 401 with WWW-Authenticate: Bearer resource_metadata="…"
//   resource-metadata  RFC 9728 metadata at the challenge's URL, the function-local and the path-inserted
//                      well-known URL names `resource` = the MCP URL (a 404 at a URL the challenge does
//                      not point to is fine: clients follow the challenge)
//   as-metadata        the authorization server's RFC 8414 or OpenID discovery metadata, with its issuer
//                      equal to the advertised one and PKCE S256
//   registration       the authorization server offers dynamic client registration (registration_endpoint)
//   jwks               its jwks_uri answers with keys, among them the token's kid
//   token-verified, token-issuer, token-audience, token-expiry
//                      what the DATABASE says about the token: an authenticated `initialize` through the
//                      edge, and, when refused, the error_description chumbo puts in the 401 challenge
//   tools-list         an authenticated tools/list answers with at least one tool
//   rls-rows           the list_/search_ tools callable without arguments do not all return 0 rows
//                      (rows: a set, a JSON array, or an object whose one member is an array)
//                      (authenticated but seeing nothing: usually RLS policies that do not match the user)
// Exit code: 0 every check passed, 1 a check failed, 3 none failed but some were skipped (no token),
// 2 usage. No dependencies: fetch only, nothing is written anywhere.

type Status = "PASS" | "FAIL" | "SKIP";
type Check = { id: string; status: Status; detail: string; next?: string };
type Json = Record<string, unknown>;

const PROTOCOL_VERSION = "2025-11-25";
const TIMEOUT_MS = 15000; // per HTTP request: a silent host fails its check instead of hanging the run
const TOKEN_CHECKS = ["token-verified", "token-issuer", "token-audience", "token-expiry"];
const RELOGIN = "sign in again (or refresh) to get a new token";

const checks: Check[] = [];
const result = (id: string, status: Status, detail: string, next?: string) =>
  checks.push({ id, status, detail, ...(next ? { next } : {}) });
const pass = (id: string, detail: string) => result(id, "PASS", detail);
const fail = (id: string, detail: string, next: string) => result(id, "FAIL", detail, next);
const skip = (id: string, detail: string, next?: string) => result(id, "SKIP", detail, next);

// ---- arguments ---------------------------------------------------------------------------------
function usage(msg: string): never {
  console.error(
    `${msg}\nusage: remote-doctor.ts <MCP URL> [--token <access token>] [--json]   (token also from MCP_TOKEN)`,
  );
  Deno.exit(2);
}
let rawUrl: string | undefined, token = Deno.env.get("MCP_TOKEN") || undefined, asJson = false;
for (let i = 0; i < Deno.args.length; i++) {
  const a = Deno.args[i];
  if (a === "--json") asJson = true;
  else if (a === "--token") token = Deno.args[++i] || usage("--token needs a value");
  else if (a.startsWith("--token=")) token = a.slice(8) || undefined;
  else if (!a.startsWith("--") && !rawUrl) rawUrl = a;
  else usage(`unexpected argument ${a}`);
}
if (!rawUrl) usage("the MCP URL is missing");
let mcp: URL;
try {
  mcp = new URL(rawUrl);
} catch {
  usage(`not a URL: ${rawUrl}`);
}
mcp.hash = "";
const MCP_URL = mcp.href.replace(/\/+$/, "");
const path = new URL(MCP_URL).pathname.replace(/\/+$/, "");

// ---- HTTP helpers ----------------------------------------------------------------------------------
async function get(url: string): Promise<{ status: number; json?: Json; error?: string }> {
  try {
    const r = await fetch(url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(TIMEOUT_MS) });
    const text = await r.text();
    try {
      return { status: r.status, json: JSON.parse(text) };
    } catch {
      return { status: r.status };
    }
  } catch (e) {
    return { status: 0, error: String((e as Error)?.message ?? e) };
  }
}

type RpcAnswer = { status: number; challenge: string; body?: Json; error?: string };
let rpcId = 0;
let negotiated = PROTOCOL_VERSION;
/** One JSON-RPC request to the MCP URL; the answer may come as JSON or as an SSE stream. */
async function rpc(method: string, params: Json, bearer?: string): Promise<RpcAnswer> {
  const id = ++rpcId;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": negotiated,
  };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  try {
    const r = await fetch(MCP_URL, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const text = await r.text();
    const challenge = r.headers.get("www-authenticate") ?? "";
    let body: Json | undefined;
    const frames = (r.headers.get("content-type") ?? "").includes("text/event-stream")
      ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5))
      : [text];
    for (const f of frames) {
      try {
        const m = JSON.parse(f);
        if (m?.id === id) body = m;
      } catch { /* not JSON */ }
    }
    return { status: r.status, challenge, body };
  } catch (e) {
    return { status: 0, challenge: "", error: String((e as Error)?.message ?? e) };
  }
}
const param = (challenge: string, name: string) => new RegExp(`${name}="([^"]*)"`).exec(challenge)?.[1];
const rpcMessage = (a: RpcAnswer) =>
  a.error ?? ((a.body?.error as Json | undefined)?.message as string | undefined) ?? `HTTP ${a.status}`;

function jwtPart(t: string, i: number): Json | undefined {
  try {
    const s = t.split(".")[i].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0))));
  } catch {
    return undefined;
  }
}

/** What a failed request to the MCP URL itself says about the deployment. */
function unreachableNext(a: RpcAnswer): string {
  if (a.status === 0) return `nothing answers at ${MCP_URL} (${a.error}): check the URL and that the edge is running`;
  if (a.status === 404) {
    return `nothing serves MCP at ${MCP_URL}: the URL ends in /functions/v1/mcp and the function is deployed (supabase functions deploy mcp)`;
  }
  if (a.status === 403) {
    return `the edge refused this Host or Origin: add the host to CHUMBO_ALLOWED_HOSTS (${rpcMessage(a)})`;
  }
  if (a.status >= 500) {
    return `the edge could not reach the database (${rpcMessage(a)}): check the edge's DATABASE_URL and its log`;
  }
  return `unexpected answer ${a.status} (${rpcMessage(a)})`;
}

// ---- 1. the 401 challenge ----------------------------------------------------------------------------
const initParams = {
  protocolVersion: PROTOCOL_VERSION,
  capabilities: {},
  clientInfo: { name: "chumbo-doctor", version: "1" },
};
const anon = await rpc("initialize", initParams);
const challengeUrl = param(anon.challenge, "resource_metadata");
if (anon.status === 401 && /^Bearer\b/i.test(anon.challenge) && challengeUrl) {
  pass("challenge", `401, WWW-Authenticate: ${anon.challenge}`);
} else if (anon.status === 401) {
  fail(
    "challenge",
    `401 without a Bearer challenge naming resource_metadata (WWW-Authenticate: ${anon.challenge || "none"})`,
    /^ApiKey/i.test(anon.challenge)
      ? `auth_mode is "api-key": for OAuth clients run select chumbo.configure('{"auth_mode": "oauth"}')`
      : "clients find the authorization server through resource_metadata in the challenge: serve MCP through chumbo's edge (it passes the metadata URL to the database), not through another proxy",
  );
} else if (anon.status === 200) {
  fail(
    "challenge",
    "the server answered without asking for a token",
    `auth_mode is "public": for OAuth clients run select chumbo.configure('{"auth_mode": "oauth"}')`,
  );
} else {
  fail("challenge", `no 401 challenge: HTTP ${anon.status} (${rpcMessage(anon)})`, unreachableNext(anon));
}

// ---- 2. protected-resource metadata (RFC 9728) ----------------------------------------------------------
const wellKnownPrm = "/.well-known/oauth-protected-resource";
const prmUrls: { url: string; form: string }[] = [];
if (challengeUrl) prmUrls.push({ url: challengeUrl, form: "challenge's resource_metadata" });
prmUrls.push({ url: MCP_URL + wellKnownPrm, form: "function-local" });
prmUrls.push({ url: new URL(wellKnownPrm + (path === "" ? "" : path), MCP_URL).href, form: "path-inserted" });
// Clients fetch the challenge's URL (or, without one, the well-known forms): that one must answer.
const primaryUrl = challengeUrl ?? prmUrls[0].url;
const prmNotes: string[] = [];
const prmProblems: string[] = [];
const wrongResource: Record<string, string[]> = {}; // resource named -> the forms naming it
let prm: Json | undefined, fallback: Json | undefined;
for (const { url, form } of prmUrls.filter((u, i) => prmUrls.findIndex((v) => v.url === u.url) === i)) {
  const r = await get(url);
  if (r.status !== 200 || !r.json) {
    const what = r.status ? `HTTP ${r.status}` : r.error;
    if (url === primaryUrl) prmProblems.push(`${form} ${url}: ${what}`);
    else prmNotes.push(`${form} ${url}: ${what} (not used: clients follow the challenge)`);
    continue;
  }
  if (r.json.resource !== MCP_URL) {
    const named = JSON.stringify(r.json.resource);
    (wrongResource[named] ??= []).push(form);
  } else prmNotes.push(`${form} ${url}: resource ok`);
  if (url === primaryUrl) prm = r.json;
  else fallback ??= r.json;
}
for (const [named, forms] of Object.entries(wrongResource)) {
  prmProblems.push(`resource ${named} (at the ${forms.join(", ")} URL${forms.length > 1 ? "s" : ""})`);
}
const prmSeen = prm ?? fallback;
const authServers = Array.isArray(prmSeen?.authorization_servers) ? (prmSeen!.authorization_servers as string[]) : [];
if (!prm) {
  fail(
    "resource-metadata",
    prmProblems.join("; "),
    `the edge serves it at ${
      MCP_URL + wellKnownPrm
    }; check that this URL reaches the edge (for Supabase: supabase functions deploy mcp, verify_jwt = false)`,
  );
} else if (prmProblems.length) {
  fail(
    "resource-metadata",
    `${prmProblems.join("; ")}, not the MCP URL ${JSON.stringify(MCP_URL)}`,
    `set the edge's CHUMBO_PUBLIC_URL to exactly the URL clients connect to (${MCP_URL}): clients refuse metadata for another resource (RFC 9728 §3.3)`,
  );
} else if (!authServers.length) {
  fail(
    "resource-metadata",
    "the metadata lists no authorization_servers",
    "set the edge's CHUMBO_AUTHORIZATION_SERVERS to your issuer (on Supabase https://<ref>.supabase.co/auth/v1, the default when SUPABASE_URL is set)",
  );
} else {
  pass(
    "resource-metadata",
    `resource ${MCP_URL}, authorization_servers ${authServers.join(", ")}; ${prmNotes.join("; ")}`,
  );
}

// ---- 3. authorization server metadata (RFC 8414 / OpenID discovery) -----------------------------------
let asMeta: Json | undefined;
const issuer = authServers[0];
if (!issuer) {
  skip("as-metadata", "no authorization server to look at (resource-metadata)");
} else if (!URL.canParse(issuer)) {
  fail(
    "as-metadata",
    `the metadata's authorization server ${JSON.stringify(issuer)} is not a URL`,
    "set the edge's CHUMBO_AUTHORIZATION_SERVERS to your issuer URL (on Supabase https://<ref>.supabase.co/auth/v1)",
  );
} else {
  const u = new URL(issuer);
  const p = u.pathname.replace(/\/+$/, "");
  // The order the MCP TypeScript SDK tries them in.
  const urls = p
    ? [
      `${u.origin}/.well-known/oauth-authorization-server${p}`,
      `${u.origin}/.well-known/openid-configuration${p}`,
      `${u.origin}${p}/.well-known/openid-configuration`,
    ]
    : [`${u.origin}/.well-known/oauth-authorization-server`, `${u.origin}/.well-known/openid-configuration`];
  const tried: string[] = [];
  let found: { url: string; json: Json } | undefined;
  for (const url of urls) {
    const r = await get(url);
    tried.push(`${url}: ${r.status ? `HTTP ${r.status}` : r.error}`);
    if (r.status === 200 && r.json) {
      found = { url, json: r.json };
      break;
    }
  }
  const pkce = found?.json.code_challenge_methods_supported;
  if (!found) {
    fail(
      "as-metadata",
      `no authorization server metadata for ${issuer} (${tried.join("; ")})`,
      `CHUMBO_AUTHORIZATION_SERVERS must be your authorization server's issuer URL; on Supabase that is https://<ref>.supabase.co/auth/v1 with the OAuth 2.1 server turned on (Authentication → OAuth Server)`,
    );
  } else if (String(found.json.issuer ?? "").replace(/\/+$/, "") !== issuer.replace(/\/+$/, "")) {
    fail(
      "as-metadata",
      `${found.url} names issuer ${JSON.stringify(found.json.issuer)}, not ${issuer}`,
      `set CHUMBO_AUTHORIZATION_SERVERS to the issuer exactly as the metadata names it (${found.json.issuer})`,
    );
  } else if (!Array.isArray(pkce) || !pkce.includes("S256")) {
    fail(
      "as-metadata",
      `${found.url}: code_challenge_methods_supported ${JSON.stringify(pkce)} lacks S256`,
      "MCP clients require PKCE with S256: turn it on at the authorization server",
    );
  } else {
    asMeta = found.json;
    pass("as-metadata", `${found.url}: issuer ${issuer}, PKCE S256`);
  }
}

// ---- 4. dynamic client registration ------------------------------------------------------------------
if (!asMeta) skip("registration", "no authorization server metadata (as-metadata)");
else if (typeof asMeta.registration_endpoint === "string") {
  pass("registration", `registration_endpoint ${asMeta.registration_endpoint}`);
} else {
  fail(
    "registration",
    "the authorization server's metadata has no registration_endpoint",
    "turn on dynamic client registration at the authorization server (Supabase: Authentication → OAuth Server → allow dynamic client registration); without it MCP clients cannot register themselves",
  );
}

// ---- 5. the JWKS and the token's kid -------------------------------------------------------------------
const header = token ? jwtPart(token, 0) : undefined;
const claims = token ? jwtPart(token, 1) : undefined;
const kid = typeof header?.kid === "string" ? header.kid : undefined;
if (!asMeta) skip("jwks", "no authorization server metadata (as-metadata)");
else if (typeof asMeta.jwks_uri !== "string") {
  fail("jwks", "the metadata has no jwks_uri", "the authorization server must publish its signing keys (jwks_uri)");
} else {
  const r = await get(asMeta.jwks_uri);
  const keys = Array.isArray(r.json?.keys) ? (r.json!.keys as Json[]) : [];
  const kids = keys.map((k) => k.kid);
  if (r.status !== 200 || !keys.length) {
    fail(
      "jwks",
      `${asMeta.jwks_uri}: ${r.status ? `HTTP ${r.status}` : r.error}, ${keys.length} keys`,
      "the authorization server must publish its signing keys at jwks_uri",
    );
  } else if (!token) {
    pass("jwks", `${asMeta.jwks_uri}: key ids ${kids.join(", ")}; no token to compare`);
  } else if (!header || !claims) {
    fail(
      "jwks",
      "the token is not a JWT",
      "chumbo verifies JWT access tokens: pass the access token itself (three base64url parts)",
    );
  } else if (kid === undefined ? keys.length !== 1 : !kids.includes(kid)) {
    fail(
      "jwks",
      `the token's kid ${JSON.stringify(kid ?? null)} is not among the keys at ${asMeta.jwks_uri} (${kids.join(", ")})`,
      `the token was not signed by ${issuer}'s current keys (another issuer, or a rotated-out key): ${RELOGIN}, and keep the database's jwks equal to ${asMeta.jwks_uri} (chumbo.configure '{"jwks": …}' or the JWKS courier, CHUMBO_JWKS_URL)`,
    );
  } else {
    pass("jwks", `${asMeta.jwks_uri}: key ids ${kids.join(", ")}, the token's among them`);
  }
}

// ---- 6. the token, as the database judges it ------------------------------------------------------------
const show = (v: unknown) => JSON.stringify(v);
const expText = () => {
  const exp = Number(claims?.exp);
  if (!Number.isFinite(exp)) return "exp missing";
  const left = Math.round(exp - Date.now() / 1000);
  return `exp ${new Date(exp * 1000).toISOString()} (${left >= 0 ? `in ${left} s` : `${-left} s ago`})`;
};
let authed: RpcAnswer | undefined;
if (!token) {
  skip(
    "token-verified",
    "no token",
    "run again with --token <access token> (one your MCP client got, or make run's ALICE_TOKEN)",
  );
  for (const id of [...TOKEN_CHECKS.slice(1), "tools-list", "rls-rows"]) skip(id, "no token");
} else {
  authed = await rpc("initialize", initParams, token);
  if (authed.status === 200 && authed.body?.result) {
    const v = (authed.body.result as Json).protocolVersion;
    if (typeof v === "string") negotiated = v;
    pass(
      "token-verified",
      `the database accepted the token (signature, kid ${kid ?? "none"}, sub ${show(claims?.sub)})`,
    );
    pass("token-issuer", `iss ${show(claims?.iss)} is trusted`);
    pass("token-audience", `aud ${show(claims?.aud)} is accepted`);
    pass("token-expiry", expText());
  } else if (authed.status === 401) {
    const reason = param(authed.challenge, "error_description") ?? rpcMessage(authed);
    const aud = claims?.aud;
    const supabaseAud = aud === "authenticated" || (Array.isArray(aud) && aud.includes("authenticated"));
    let id = "token-verified", detail = `the database refused the token: ${reason}`, next: string;
    if (/issuer/i.test(reason)) {
      id = "token-issuer";
      detail = `the database refused the token: ${reason} (iss ${show(claims?.iss)})`;
      next = `add the token's issuer exactly as written (${
        show(claims?.iss)
      }) to jwt_issuers: select chumbo.configure('{"jwt_issuers": [${
        show(claims?.iss)
      }]}') (the list replaces the previous one)`;
    } else if (/issued for|audience/i.test(reason)) {
      id = "token-audience";
      detail = `the database refused the token: ${reason} (aud ${show(aud)})`;
      next = supabaseAud
        ? `Supabase Auth tokens carry aud "authenticated", not the MCP URL: add a custom access token hook that puts ${MCP_URL} in aud (keep "authenticated" in the list), or accept the project's audience with select chumbo.configure('{"jwt_audience": ["authenticated"]}')`
        : `the token must be issued for this server: the client asks for it with resource=${MCP_URL} (RFC 8707); if the server's public URL differs, set jwt_audience to it: select chumbo.configure('{"jwt_audience": ["${MCP_URL}"]}')`;
    } else if (/expired|not valid yet/i.test(reason)) {
      id = "token-expiry";
      detail = `the database refused the token: ${reason} (${expText()}, nbf ${show(claims?.nbf ?? null)})`;
      next = /expired/i.test(reason)
        ? `${RELOGIN}; MCP clients refresh on this 401 by themselves`
        : "the token's nbf lies in the future: check the clocks of the authorization server and the database";
    } else if (/signing key|signature|keys are configured/i.test(reason)) {
      next = `the database's jwks lacks the key that signed the token (kid ${show(kid ?? null)}): load ${
        asMeta?.jwks_uri ?? "the issuer's JWKS"
      } with select chumbo.configure('{"jwks": …}'), or let the edge carry it (CHUMBO_JWKS_URL and chumbo.grant_edge('chumbo_edge', jwks_courier => true))`;
    } else {
      next =
        "pass a JWT access token from the authorization server, for this MCP server (iss, sub, aud and exp are required)";
    }
    for (const c of TOKEN_CHECKS) {
      if (c === id) fail(c, detail, next);
      else skip(c, "not judged: the database refused the token for the reason above");
    }
  } else {
    for (const c of TOKEN_CHECKS) {
      skip(c, `no verdict: authenticated initialize got HTTP ${authed.status} (${rpcMessage(authed)})`);
    }
  }
}

// ---- 7. tools/list and 8. the RLS hint ------------------------------------------------------------------
type Tool = { name: string; inputSchema?: { required?: string[] } };
if (token && authed) {
  if (authed.status === 200) {
    const tools: Tool[] = [];
    let cursor: string | undefined, answer: RpcAnswer | undefined;
    for (let page = 0; page < 50; page++) {
      answer = await rpc("tools/list", cursor ? { cursor } : {}, token);
      const res = answer.body?.result as { tools?: Tool[]; nextCursor?: string } | undefined;
      if (answer.status !== 200 || !res) break;
      tools.push(...(res.tools ?? []));
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    if (!answer || answer.status !== 200 || !answer.body?.result) {
      fail(
        "tools-list",
        `tools/list failed: HTTP ${answer?.status} (${answer ? rpcMessage(answer) : "no answer"})`,
        answer?.status === 403
          ? "the token's role may not use this server: check allowed_roles and the token's role claim"
          : unreachableNext(answer!),
      );
      skip("rls-rows", "no tool list (tools-list)");
    } else if (!tools.length) {
      fail(
        "tools-list",
        "tools/list answered with no tools for this user",
        "grant execute on your mcp functions to the token's role (usually authenticated) and read select * from chumbo.doctor() as the owner",
      );
      skip("rls-rows", "no tools (tools-list)");
    } else {
      pass("tools-list", `${tools.length} tools: ${tools.map((t) => t.name).join(", ")}`);
      const listing = tools.filter((t) => /^(list|search)_/.test(t.name));
      const callable = listing.filter((t) => !(t.inputSchema?.required?.length));
      const skipped = listing.filter((t) => !callable.includes(t)).map((t) =>
        `${t.name} (needs ${t.inputSchema!.required!.join(", ")})`
      );
      if (!callable.length) {
        pass(
          "rls-rows",
          `nothing to try: no list_/search_ tool can be called without arguments${
            skipped.length ? `; not called: ${skipped.join(", ")}` : ""
          }`,
        );
      } else {
        const seen: string[] = [];
        let rows = 0, errors = 0;
        for (const t of callable) {
          const r = await rpc("tools/call", { name: t.name, arguments: {} }, token);
          const res = r.body?.result as Json | undefined;
          if (r.status !== 200 || !res || res.isError) {
            errors++;
            const text = ((res?.content as Json[] | undefined)?.[0]?.text as string | undefined) ?? rpcMessage(r);
            seen.push(`${t.name}: error (${text})`);
            continue;
          }
          const n = countRows(res);
          seen.push(`${t.name}: ${n === undefined ? "a result" : `${n} rows`}`);
          rows += n ?? 1;
        }
        const notCalled = skipped.length ? `; not called: ${skipped.join(", ")}` : "";
        if (rows > 0) pass("rls-rows", seen.join(", ") + notCalled);
        else if (errors === callable.length) {
          fail(
            "rls-rows",
            seen.join(", ") + notCalled,
            "every list-style tool failed: look its trace id up in the database log (chumbo trace <id>) and run the function by hand as the owner",
          );
        } else {
          fail(
            "rls-rows",
            `authenticated as sub ${show(claims?.sub)}, but every list-style tool returns 0 rows: ${
              seen.join(", ")
            }${notCalled}`,
            `row-level security decides what a user sees: check that your policies match this user's claims (auth.uid() / request.jwt.claims ->> 'sub' = ${
              show(claims?.sub)
            }, role ${show(claims?.role ?? null)}) and that the user has rows (memberships, owner columns)`,
          );
        }
      }
    }
  } else {
    skip("tools-list", "the token was not accepted (token checks above)");
    skip("rls-rows", "the token was not accepted (token checks above)");
  }
}

/** Rows in a tool result: chumbo's {"rows": [...]} for set-returning functions, a JSON array, or
 * an object whose one member is an array (`{"notes": [...]}`). */
function countRows(res: Json): number | undefined {
  const text = (res.content as Json[] | undefined)?.find((c) => c.type === "text")?.text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(text));
  } catch { /* not JSON */ }
  for (const v of [res.structuredContent, parsed]) {
    if (Array.isArray(v)) return v.length;
    if (v && typeof v === "object") {
      const members = Object.values(v as Json);
      const list = Array.isArray((v as Json).rows) ? (v as Json).rows : members.length === 1 ? members[0] : undefined;
      if (Array.isArray(list)) return list.length;
    }
  }
  return undefined;
}

// ---- report ------------------------------------------------------------------------------------------
const failed = checks.filter((c) => c.status === "FAIL").length;
const skipped = checks.filter((c) => c.status === "SKIP").length;
const code = failed ? 1 : skipped ? 3 : 0;
if (asJson) {
  console.log(JSON.stringify({ url: MCP_URL, ok: code === 0, checks }, null, 2));
} else {
  console.log(`chumbo doctor: ${MCP_URL}`);
  const width = Math.max(...checks.map((c) => c.id.length));
  for (const c of checks) {
    console.log(`${c.status}  ${c.id.padEnd(width)}  ${c.detail}`);
    if (c.next) console.log(`${" ".repeat(width + 8)}next: ${c.next}`);
  }
  console.log(`${checks.length - failed - skipped} passed, ${failed} failed, ${skipped} skipped`);
}
Deno.exit(code);
