// The edge's consent page (CHUMBO_CONSENT_PAGE=on) in headless Chromium, against a local stand-in
// for Supabase Auth (supabase-auth-standin.mjs: Supabase Auth cannot run here). run.sh starts two
// edges: CONSENT_EDGE_URL with the page on (SUPABASE_URL = the stand-in), CONSENT_OFF_URL without.
// Chromium (Debian's /usr/bin/chromium) is driven over the DevTools protocol by puppeteer-core.
// Screenshots go to CONSENT_OUT. No sleeps: every wait is for a page state or a navigation.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
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

// ---- Login CSRF, cross-site decisions, framing -------------------------------------------------
// By default supabase-js takes a session from the page's URL (`#access_token=…&refresh_token=…` or
// the same in the query string) and stores it: a link carrying the attacker's own tokens would sign
// the victim in as the attacker, persistently, and the victim would then approve their own MCP
// client for the attacker's account. The page must never take a session from its URL.

/** A real session of `who` from the stand-in: the attacker signs in to their own account anywhere. */
async function sessionOf(who) {
  const r = await fetch(`${auth.url}/auth/v1/token?grant_type=password`, {
    method: "POST",
    headers: { apikey: ANON_KEY, "content-type": "application/json" },
    body: JSON.stringify({ email: who.email, password: who.password }),
  });
  assert.equal(r.status, 200);
  const s = await r.json();
  // What supabase-js checks before it stores a session found in a URL: the stand-in takes them as who's.
  const u = await fetch(`${auth.url}/auth/v1/user`, {
    headers: { apikey: ANON_KEY, authorization: `Bearer ${s.access_token}` },
  });
  assert.equal(u.status, 200);
  assert.equal((await u.json()).id, who.id);
  return s;
}

/** A pending authorization request, as an MCP client's /oauth/authorize leaves it (no browser). */
async function pendingAuthorization(client, scope, state) {
  const q = new URLSearchParams({
    client_id: client.id,
    redirect_uri: callback,
    response_type: "code",
    scope,
    state,
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  });
  const r = await fetch(`${auth.url}/auth/v1/oauth/authorize?${q}`, { redirect: "manual" });
  assert.equal(r.status, 302);
  return new URL(r.headers.get("location")).searchParams.get("authorization_id");
}

/** An attacker's site, cross-site from the edge (127.0.0.1 vs localhost): a blank page to act from. */
async function startAttackerSite() {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>attacker</title><p>totally harmless</p>");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () => new Promise((r) => (server.close(r), server.closeAllConnections()));
  return { url: `http://127.0.0.1:${server.address().port}`, close };
}

/** The state the page settles in (anything but "loading"). */
async function settled(page) {
  await page.waitForSelector('body:not([data-state="loading"])');
  return page.$eval("body", (b) => b.dataset.state);
}

/** Everything this origin keeps in the browser: localStorage, sessionStorage, cookies. */
async function browserStorage(page) {
  const web = await page.evaluate(() => ({
    local: { ...localStorage },
    session: { ...sessionStorage },
    cookie: document.cookie,
  }));
  const cdp = await page.createCDPSession();
  const { cookies } = await cdp.send("Network.getCookies", { urls: [EDGE_ORIGIN, auth.url] });
  await cdp.detach();
  return { ...web, cookies };
}

/** The attacker's tokens are nowhere: no request used them, nothing stored holds them or any session. */
function assertNotSignedIn(stored, attacker, requestsSince, what) {
  const all = JSON.stringify(stored);
  assert.ok(!all.includes(attacker.access_token), `${what}: the attacker's access token is not stored`);
  assert.ok(!all.includes(attacker.refresh_token), `${what}: the attacker's refresh token is not stored`);
  const keys = [...Object.keys(stored.local), ...Object.keys(stored.session), ...stored.cookies.map((c) => c.name)];
  assert.deepEqual(keys.filter((k) => /auth-token|code-verifier/.test(k)), [], `${what}: no session stored`);
  assert.deepEqual(
    auth.requests.slice(requestsSince).filter((r) =>
      r.headers.authorization === `Bearer ${attacker.access_token}` ||
      (r.path === "/auth/v1/token" && !r.search.includes("grant_type=password"))
    ).map((r) => `${r.method} ${r.path}${r.search}`),
    [],
    `${what}: the attacker's token was never used, no code or refresh token was exchanged`,
  );
}

/** The hidden Approve button, clicked anyway (by script): without a session nothing is posted. */
async function forceApprove(page, id) {
  await page.$eval("#approve", (b) => b.click());
  await pageState(page, "error");
  assert.match(await text(page, "#error"), /session missing/i);
  assert.equal(calls("POST", `/auth/v1/oauth/authorizations/${id}/consent`).length, 0, "no decision posted");
}

test("login CSRF: a link with an attacker's session in its #fragment does not sign in; the victim's own approval stays theirs", async (t) => {
  const bob = await sessionOf(BOB); // the attacker
  const bobsRequest = await pendingAuthorization(OTHER, "email", "s-attacker"); // his own client's request
  const attacker = await startAttackerSite();
  t.after(attacker.close);
  const context = await browser.createBrowserContext(); // the victim's browser, signed out
  t.after(() => context.close());
  const page = await context.newPage();
  const link = `${EDGE}/consent?authorization_id=${bobsRequest}#` +
    new URLSearchParams({
      access_token: bob.access_token,
      expires_in: "3600",
      refresh_token: bob.refresh_token,
      token_type: "bearer",
      type: "magiclink",
    });
  const since = auth.requests.length;
  // The victim follows the link on the attacker's site (a cross-site top-level navigation).
  await page.goto(`${attacker.url}/`);
  await Promise.all([page.waitForNavigation(), page.evaluate((u) => location.assign(u), link)]);
  assert.equal(await settled(page), "sign-in", "the page asks to sign in: the URL's tokens were not taken");
  assert.equal(page.url(), `${EDGE}/consent?authorization_id=${bobsRequest}`, "the tokens left the address bar");
  assert.equal(await page.$eval("#request", (e) => e.hidden), true, "no request, no Approve button");
  assert.equal(calls("GET", `/auth/v1/oauth/authorizations/${bobsRequest}`).length, 0, "no details read");
  assertNotSignedIn(await browserStorage(page), bob, since, "fragment");
  await shot(page, "consent-login-csrf.png");
  await forceApprove(page, bobsRequest);
  assert.equal(auth.authorizations.get(bobsRequest).status, "pending");
  assert.equal(auth.authorizations.get(bobsRequest).user_id, null);

  // Later the victim connects their own MCP client: the page asks them to sign in (nothing
  // persisted), shows their account, and the code is issued for them, not the attacker. (`phone`:
  // a scope Alice has not granted this client yet, so Supabase asks instead of auto-approving.)
  const id = await authorize(page, CLAUDE, "openid phone", "s-victim");
  assert.equal(await settled(page), "sign-in", "still signed out: the link left no session behind");
  await page.type("#email", ALICE.email);
  await page.type("#password", ALICE.password);
  await page.click("#sign-in button[type=submit]");
  await pageState(page, "request");
  assert.equal(await text(page, "#user-email"), ALICE.email);
  await Promise.all([page.waitForNavigation(), page.click("#approve")]);
  assert.equal(auth.authorizations.get(id).status, "approved");
  assert.equal(auth.authorizations.get(id).user_id, ALICE.id, "approved for the victim's own account");
  assertNotSignedIn({ local: {}, session: {}, cookies: [] }, bob, since, "the whole flow");
});

test("login CSRF: tokens or a PKCE code in the query string do not sign in either", async (t) => {
  const bob = await sessionOf(BOB);
  const id = await pendingAuthorization(OTHER, "email", "s-query");
  const links = {
    "query tokens": new URLSearchParams({
      authorization_id: id,
      access_token: bob.access_token,
      expires_in: "3600",
      refresh_token: bob.refresh_token,
      token_type: "bearer",
    }),
    "query tokens before the id, and a fragment too": new URLSearchParams({
      access_token: bob.access_token,
      refresh_token: bob.refresh_token,
      expires_in: "3600",
      token_type: "bearer",
      authorization_id: id,
    }) + `#access_token=${bob.access_token}&expires_in=3600&refresh_token=${bob.refresh_token}&token_type=bearer`,
    "PKCE-style code": new URLSearchParams({ authorization_id: id, code: crypto.randomUUID() }),
  };
  for (const [what, query] of Object.entries(links)) {
    const context = await browser.createBrowserContext();
    t.after(() => context.close());
    const page = await context.newPage();
    const since = auth.requests.length;
    await page.goto(`${EDGE}/consent?${query}`);
    assert.equal(await settled(page), "sign-in", `${what}: the page asks to sign in`);
    assert.equal(page.url(), `${EDGE}/consent?authorization_id=${id}`, `${what}: only authorization_id is left`);
    assert.equal(await page.$eval("#request", (e) => e.hidden), true, `${what}: no Approve button`);
    assertNotSignedIn(await browserStorage(page), bob, since, what);
    await forceApprove(page, id);
  }
  assert.equal(auth.authorizations.get(id).status, "pending");
  assert.equal(auth.authorizations.get(id).user_id, null, "never read, so never bound to anyone");
});

test("cross-site: another site can neither frame the page nor post a decision; only the page's own button does", async (t) => {
  const attacker = await startAttackerSite();
  t.after(attacker.close);
  const context = await browser.createBrowserContext();
  t.after(() => context.close());
  const page = await context.newPage(); // the victim, signed in, looking at their own request
  // (a client and scope Alice has not approved before: no auto-approve)
  const id = await authorize(page, OTHER, "openid profile", "s-cross-site");
  await pageState(page, "sign-in");
  await page.type("#email", ALICE.email);
  await page.type("#password", ALICE.password);
  await page.click("#sign-in button[type=submit]");
  await pageState(page, "request");
  const consentPosts = () => calls("POST", `/auth/v1/oauth/authorizations/${id}/consent`);

  const evil = await context.newPage(); // same browser, same session, another tab on the attacker's site
  await evil.goto(`${attacker.url}/`);
  // 1. Framing (clickjacking): the browser refuses to render the page inside the attacker's page.
  const framed = await evil.evaluate(
    (src) =>
      new Promise((resolve) => {
        const f = document.createElement("iframe");
        f.src = src;
        f.onload = () => resolve(true);
        document.body.append(f);
      }),
    `${EDGE}/consent?authorization_id=${id}`,
  );
  assert.ok(framed);
  const frame = evil.frames().find((f) => f !== evil.mainFrame());
  assert.ok(frame, "the iframe exists");
  assert.equal(await frame.$("#approve").catch(() => null), null, "no Approve button inside the attacker's frame");
  assert.ok(!frame.url().startsWith(EDGE), `the frame shows no consent page (${frame.url()})`);

  // 2. A cross-site form posting a decision to the page: the edge takes no POST (405), nothing happens.
  const [formResponse] = await Promise.all([
    evil.waitForNavigation(),
    evil.evaluate((action) => {
      const form = document.createElement("form");
      form.method = "POST";
      form.action = action;
      const input = Object.assign(document.createElement("input"), { name: "action", value: "approve" });
      form.append(input);
      document.body.append(form);
      form.submit();
    }, `${EDGE}/consent?authorization_id=${id}`),
  ]);
  assert.equal(formResponse.status(), 405);
  await evil.goto(`${attacker.url}/`);

  // 3. Straight to Supabase Auth's consent endpoint from the attacker's origin: the apikey is public,
  // but the user's session is a bearer token in the page origin's storage, which the attacker cannot
  // read (Supabase Auth takes no cookie): it refuses the decision (401 no_authorization).
  const direct = await evil.evaluate(async ({ url, apikey }) => {
    const r = await fetch(url, {
      method: "POST",
      headers: { apikey, "content-type": "application/json" },
      body: JSON.stringify({ action: "approve" }),
    });
    return { status: r.status, body: await r.json(), storage: Object.keys(localStorage) };
  }, { url: `${auth.url}/auth/v1/oauth/authorizations/${id}/consent`, apikey: ANON_KEY });
  assert.equal(direct.status, 401);
  assert.equal(direct.body.code, "no_authorization");
  assert.deepEqual(direct.storage, [], "the attacker's origin sees no session");

  // 4. A link (GET) that says "approve": the page shows the request and waits for the user's click.
  await Promise.all([
    evil.waitForNavigation(),
    evil.evaluate((u) => location.assign(u), `${EDGE}/consent?authorization_id=${id}&action=approve&consent=approve`),
  ]);
  assert.equal(await settled(evil), "request");
  assert.equal(evil.url(), `${EDGE}/consent?authorization_id=${id}`);

  assert.equal(auth.authorizations.get(id).status, "pending", "no cross-site attempt decided anything");
  assert.deepEqual(consentPosts().map((r) => r.headers.authorization ?? null), [null], "only the bearer-less one");

  // The page's own button, for the signed-in user, does decide; no Referer leaks the page's URL.
  await page.bringToFront(); // the user goes back to their tab (a background tab gets no clicks here)
  await Promise.all([page.waitForNavigation(), page.click("#approve")]);
  assert.equal(auth.authorizations.get(id).status, "approved");
  assert.equal(auth.authorizations.get(id).user_id, ALICE.id);
  const mine = consentPosts().filter((r) => r.headers.authorization);
  assert.equal(mine.length, 1);
  assert.equal(mine[0].headers.origin, EDGE_ORIGIN);
  assert.equal(mine[0].headers.referer, undefined, "no Referer on the decision");
  const [back] = auth.requests.filter((r) => r.path === "/callback" && r.search.includes("state=s-cross-site"));
  assert.equal(back.headers.referer, undefined, "no Referer on the way back to the client");
});
