// The edge's consent page (CHUMBO_CONSENT_PAGE=on) in headless Chromium, against a local stand-in
// for Supabase Auth (supabase-auth-standin.mjs: Supabase Auth cannot run here). run.sh starts two
// edges: CONSENT_EDGE_URL with the page on (SUPABASE_URL = the stand-in), CONSENT_OFF_URL without.
// Chromium (Debian's /usr/bin/chromium) is driven over the DevTools protocol by puppeteer-core.
// Screenshots go to CONSENT_OUT. No sleeps: every wait is for a page state or a navigation.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import puppeteer from "puppeteer-core";
import { startSupabaseAuthStandin } from "./supabase-auth-standin.mjs";

const EDGE = process.env.CONSENT_EDGE_URL; // e.g. http://localhost:PORT/functions/v1/mcp
const OFF = process.env.CONSENT_OFF_URL;
const BAD = process.env.CONSENT_BAD_URL; // CHUMBO_CONSENT_PAGE=on without SUPABASE_ANON_KEY
const AUTH_PORT = Number(process.env.CONSENT_AUTH_PORT);
const ANON_KEY = process.env.CONSENT_ANON_KEY;
const APP_NAME = process.env.CONSENT_APP_NAME;
const OUT = process.env.CONSENT_OUT;
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const EDGE_ORIGIN = new URL(EDGE).origin;

const ALICE = { id: "aaaaaaaa-0000-4000-8000-000000000001", email: "alice@acme.example", password: "wonderland" };
const BOB = { id: "bbbbbbbb-0000-4000-8000-000000000002", email: "bob@globex.example", password: "builder" };
// Client names are chosen by whoever registers the client (DCR is open): markup must stay text.
const CLAUDE = {
  id: "11111111-1111-4111-8111-111111111111",
  name: "Claude <b>Desktop</b>",
  uri: "https://claude.example",
};
const OTHER = { id: "22222222-2222-4222-8222-222222222222", name: "Other Client", uri: "https://other.example" };

let auth, browser, callback;
before(async () => {
  fs.mkdirSync(OUT, { recursive: true });
  callback = `http://127.0.0.1:${AUTH_PORT}/callback`;
  auth = await startSupabaseAuthStandin({
    port: AUTH_PORT,
    siteUrl: EDGE_ORIGIN,
    authorizationPath: `${new URL(EDGE).pathname}/consent`,
    anonKey: ANON_KEY,
    users: [ALICE, BOB],
    clients: [CLAUDE, OTHER].map((c) => ({ ...c, redirect_uris: [callback] })),
  });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // root in a container: no sandbox; loopback only: no proxy, no background traffic
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--no-proxy-server",
      "--disable-background-networking",
      "--disable-component-update",
    ],
  });
});
after(async () => {
  await browser?.close();
  await auth?.close();
});

/** Start an authorization the way an MCP client does: the browser opens /oauth/authorize. */
async function authorize(page, client, scope, state) {
  const q = new URLSearchParams({
    client_id: client.id,
    redirect_uri: callback,
    response_type: "code",
    scope,
    state,
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", // RFC 7636 appendix B
    code_challenge_method: "S256",
  });
  const before = new Set(auth.authorizations.keys());
  await page.goto(`${auth.url}/auth/v1/oauth/authorize?${q}`);
  const [id] = [...auth.authorizations.keys()].filter((k) => !before.has(k));
  assert.ok(id, "the stand-in created an authorization request");
  return id;
}

const pageState = (page, state) => page.waitForSelector(`body[data-state="${state}"]`);
const text = (page, sel) => page.$eval(sel, (e) => e.textContent.trim());
const calls = (method, path) => auth.requests.filter((r) => r.method === method && r.path === path);
async function shot(page, name) {
  const file = path.join(OUT, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot: ${file}`);
}

test("off unless configured: an edge without CHUMBO_CONSENT_PAGE=on has no consent page", async () => {
  for (const p of ["/consent", "/consent/app.js", "/consent/supabase.js"]) {
    assert.equal((await fetch(`${OFF}${p}`)).status, 404, p);
    assert.equal((await fetch(`${EDGE}${p}`)).status, 200, p);
  }
});

test("turned on but misconfigured: the page answers 503, the MCP endpoint's metadata is still served", async () => {
  const r = await fetch(`${BAD}/consent?authorization_id=x`);
  assert.equal(r.status, 503);
  assert.match((await r.json()).error, /consent page is not available/);
  const prm = await fetch(`${BAD}/.well-known/oauth-protected-resource`);
  assert.equal(prm.status, 200);
  assert.equal((await prm.json()).resource, BAD);
});

test("the page refuses framing and caching, and runs only its own scripts", async () => {
  const r = await fetch(`${EDGE}/consent?authorization_id=x`);
  assert.match(r.headers.get("content-type"), /^text\/html/);
  const csp = r.headers.get("content-security-policy");
  assert.match(csp, /frame-ancestors 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, new RegExp(`connect-src http://127\\.0\\.0\\.1:${AUTH_PORT}(;|$)`));
  assert.equal(r.headers.get("x-frame-options"), "DENY");
  assert.equal(r.headers.get("cache-control"), "no-store");
  assert.equal(r.headers.get("referrer-policy"), "no-referrer");
  // the browser bundle is supabase-js's, served by the edge (no CDN)
  const js = await (await fetch(`${EDGE}/consent/supabase.js`)).text();
  assert.match(js, /^var supabase=/);
  assert.match(js, /oauth\/authorizations\/\$\{e\}\/consent/);
});

test("signed out: sign in, see app, client and scopes; approve posts approve and follows the redirect", async () => {
  const context = await browser.createBrowserContext(); // empty storage: no session yet
  const page = await context.newPage();
  const id = await authorize(page, CLAUDE, "openid email offline_access", "s-approve");
  await pageState(page, "sign-in");
  assert.equal(
    page.url(),
    `${EDGE}/consent?authorization_id=${id}`,
    "the stand-in sent the browser to the edge's page",
  );
  assert.equal(calls("GET", `/auth/v1/oauth/authorizations/${id}`).length, 0, "nothing sent without a session");
  await shot(page, "consent-sign-in.png");

  await page.type("#email", ALICE.email);
  await page.type("#password", "not-the-password");
  await page.click("#sign-in button[type=submit]");
  await page.waitForSelector("#sign-in-error:not([hidden])");
  assert.equal(await text(page, "#sign-in-error"), "Invalid login credentials");
  await page.$eval("#password", (e) => (e.value = ""));
  await page.type("#password", ALICE.password);
  await page.click("#sign-in button[type=submit]");
  await pageState(page, "request");

  assert.equal(await text(page, "#app-name"), APP_NAME);
  assert.equal(await text(page, "#client-name"), CLAUDE.name, "the client's name, markup shown as text");
  assert.equal(await page.$("#client-name b"), null, "no element from the client's name");
  assert.equal(await text(page, "#client-uri"), CLAUDE.uri);
  assert.equal(await text(page, "#user-email"), ALICE.email);
  assert.equal(await text(page, "#redirect-host"), `127.0.0.1:${AUTH_PORT}`);
  assert.deepEqual(await page.$$eval("#scopes li code", (l) => l.map((e) => e.textContent)), [
    "openid",
    "email",
    "offline_access",
  ]);
  await shot(page, "consent-request.png");

  const [details] = calls("GET", `/auth/v1/oauth/authorizations/${id}`);
  const session = auth.sessions.findLast((s) => s.user === ALICE.id);
  assert.equal(details.headers.authorization, `Bearer ${session.access_token}`, "the signed-in user's session");
  assert.equal(details.headers.apikey, ANON_KEY);
  assert.equal(details.headers["x-supabase-api-version"], "2024-01-01");
  assert.equal(details.headers.origin, EDGE_ORIGIN);

  await Promise.all([page.waitForNavigation(), page.click("#approve")]);
  const a = auth.authorizations.get(id);
  assert.equal(a.status, "approved");
  assert.equal(a.user_id, ALICE.id);
  assert.equal(page.url(), `${callback}?code=${a.code}&state=s-approve`, "followed the returned redirect");
  const posts = calls("POST", `/auth/v1/oauth/authorizations/${id}/consent`);
  assert.equal(posts.length, 1);
  assert.deepEqual(posts[0].body, { action: "approve" });
  assert.equal(posts[0].headers.authorization, `Bearer ${session.access_token}`);
  assert.equal(posts[0].headers.apikey, ANON_KEY);
  assert.equal(posts[0].headers.origin, EDGE_ORIGIN);
  assert.equal(
    calls("GET", `/auth/v1/oauth/authorizations/${id}`).length,
    1,
    "details read once (the GET changes state)",
  );

  // Signed in now (supabase-js keeps the session in this origin's storage): another client, deny.
  const id2 = await authorize(page, OTHER, "email", "s-deny");
  await pageState(page, "request");
  assert.equal(await text(page, "#client-name"), OTHER.name);
  assert.deepEqual(await page.$$eval("#scopes li code", (l) => l.map((e) => e.textContent)), ["email"]);
  await Promise.all([page.waitForNavigation(), page.click("#deny")]);
  assert.equal(auth.authorizations.get(id2).status, "denied");
  assert.equal(page.url(), `${callback}?error=access_denied&error_description=User+denied+the+request&state=s-deny`);
  const denies = calls("POST", `/auth/v1/oauth/authorizations/${id2}/consent`);
  assert.equal(denies.length, 1);
  assert.deepEqual(denies[0].body, { action: "deny" });
  assert.equal(denies[0].headers.authorization, `Bearer ${session.access_token}`);

  // Same client, scopes already granted: Supabase Auto-approves ({redirect_url} from the details
  // GET) and the page goes straight back without asking.
  const back = page.waitForResponse((r) => r.url().startsWith(`${callback}?`));
  const id3 = await authorize(page, CLAUDE, "openid email", "s-again");
  const response = await back;
  const a3 = auth.authorizations.get(id3);
  assert.equal(a3.status, "approved");
  assert.equal(response.url(), `${callback}?code=${a3.code}&state=s-again`, "followed the auto-approve redirect");
  assert.equal(calls("POST", `/auth/v1/oauth/authorizations/${id3}/consent`).length, 0, "no consent asked");
  await context.close();
});

test("an unknown authorization_id shows a clear error", async () => {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.goto(`${EDGE}/consent?authorization_id=doesnotexist0000000000000000000000`);
  await pageState(page, "sign-in");
  await page.type("#email", BOB.email);
  await page.type("#password", BOB.password);
  await page.click("#sign-in button[type=submit]");
  await pageState(page, "error");
  assert.match(await text(page, "#error"), /authorization request is unknown or has expired/);
  assert.equal(await page.$eval("#request", (e) => e.hidden), true, "no approve button");
  const [r] = calls("GET", "/auth/v1/oauth/authorizations/doesnotexist0000000000000000000000");
  assert.ok(r, "asked Supabase Auth, which answered 404");
  await shot(page, "consent-unknown.png");

  // Bob may not see a request Alice's session already holds: Supabase answers 404 too.
  const alice = await browser.createBrowserContext();
  const ap = await alice.newPage();
  const id = await authorize(ap, OTHER, "email", "s-alice");
  await pageState(ap, "sign-in");
  await ap.type("#email", ALICE.email);
  await ap.type("#password", ALICE.password);
  await ap.click("#sign-in button[type=submit]");
  await pageState(ap, "request");
  await page.goto(`${EDGE}/consent?authorization_id=${id}`);
  await pageState(page, "error");
  assert.match(await text(page, "#error"), /unknown or has expired/);
  assert.equal(auth.authorizations.get(id).status, "pending");

  // No authorization_id at all: nothing is sent anywhere.
  const before = auth.requests.length;
  await page.goto(`${EDGE}/consent`);
  await pageState(page, "error");
  assert.match(await text(page, "#error"), /needs an authorization request/);
  assert.equal(auth.requests.length, before);
  await alice.close();
  await context.close();
});
