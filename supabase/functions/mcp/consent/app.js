// chumbo's consent page, in the user's browser (served by the edge; README.md, "Consent page").
// Supabase Auth redirected here with ?authorization_id=…; with the user's Supabase Auth session
// (supabase-js keeps it in this origin's localStorage; the form below signs in when there is none)
// it reads the request with auth.oauth.getAuthorizationDetails and posts the user's decision with
// approveAuthorization / denyAuthorization; supabase-js then follows the returned redirect_url back
// to the MCP client. Everything the client chose (its name, website, redirect) is shown as text only.
//
// Login CSRF: a session is never taken from the URL. By default supabase-js signs in with tokens it
// finds in the address (`#access_token=…&refresh_token=…`, the same in the query string, or a PKCE
// `?code=`) and stores that session; a link carrying an attacker's tokens would then make the victim
// approve their own MCP client for the attacker's account. So `detectSessionInUrl: false`, and
// everything but `authorization_id` is dropped from the address bar (and history) before the client
// is created. The only ways to a session are the form below or one already in this origin's storage.
/* global supabase */
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const cfg = JSON.parse($("chumbo-consent-config").textContent);
  const here = new URL(location.href);
  const id = here.searchParams.get("authorization_id");
  if (here.hash || [...here.searchParams.keys()].some((k) => k !== "authorization_id")) {
    const clean = new URL(here.pathname, here.origin);
    if (id !== null) clean.searchParams.set("authorization_id", id);
    history.replaceState(null, "", clean);
  }
  const auth = supabase.createClient(cfg.supabaseUrl, cfg.anonKey, { auth: { detectSessionInUrl: false } }).auth;

  const SCOPES = {
    openid: "Know who you are (your user id)",
    email: "Your email address",
    profile: "Your name and profile picture",
    phone: "Your phone number",
    offline_access: "Stay connected while you are away (refresh tokens)",
  };

  function state(name, message) {
    document.body.dataset.state = name;
    for (const s of ["sign-in", "request"]) $(s).hidden = s !== name;
    $("status").hidden = !message;
    $("status").textContent = message ?? "";
    $("error").hidden = true;
  }

  function fail(message) {
    state("error");
    $("error").textContent = message;
    $("error").hidden = false;
  }

  function explain(error) {
    if (error.status === 404 || error.code === "oauth_authorization_not_found") {
      return "This authorization request is unknown or has expired (or belongs to another account). " +
        "Start connecting again from your MCP client.";
    }
    if (error.code === "validation_failed") return `This authorization request cannot be processed: ${error.message}`;
    return `Something went wrong: ${error.message}`;
  }

  async function start() {
    if (!id || !/^[A-Za-z0-9_-]{1,128}$/.test(id)) {
      return fail("This page needs an authorization request. Start connecting again from your MCP client.");
    }
    const { data: { session } } = await auth.getSession();
    if (!session) return state("sign-in");
    state("loading", "Loading the request…");
    const { data, error } = await auth.oauth.getAuthorizationDetails(id);
    if (error) {
      if (error.status === 401 || error.status === 403) return state("sign-in"); // the session is no longer valid
      return fail(explain(error));
    }
    if (data.redirect_url) {
      // Auto-approved: this user already consented to these scopes for this client.
      state("redirecting", "You approved this client before. Returning to it…");
      return location.assign(data.redirect_url);
    }
    show(data);
  }

  function show(d) {
    $("client-name").textContent = d.client?.name || `An unnamed client (${d.client?.id ?? "no id"})`;
    $("user-email").textContent = d.user?.email || d.user?.id || "";
    $("client-uri").textContent = d.client?.uri || "(none given)";
    let host = d.redirect_uri;
    try {
      const u = new URL(d.redirect_uri);
      host = u.protocol === "http:" || u.protocol === "https:" ? u.host : `${u.protocol}//${u.host}`;
    } catch { /* shown as is */ }
    $("redirect-host").textContent = host;
    const list = $("scopes");
    list.replaceChildren();
    for (const scope of (d.scope || "").split(" ").filter(Boolean)) {
      const li = document.createElement("li");
      const code = document.createElement("code");
      code.textContent = scope;
      li.append(code, ` ${SCOPES[scope] ?? ""}`);
      list.append(li);
    }
    state("request");
  }

  async function decide(action) {
    $("approve").disabled = $("deny").disabled = true;
    const call = action === "approve" ? auth.oauth.approveAuthorization : auth.oauth.denyAuthorization;
    // supabase-js navigates to data.redirect_url itself (the code, or error=access_denied).
    const { error } = await call(id);
    if (error) return fail(explain(error));
    state("redirecting", "Returning to the client…");
  }

  $("approve").addEventListener("click", () => decide("approve"));
  $("deny").addEventListener("click", () => decide("deny"));
  $("sign-in").addEventListener("submit", async (e) => {
    e.preventDefault();
    const { error } = await auth.signInWithPassword({ email: $("email").value, password: $("password").value });
    if (error) {
      $("sign-in-error").textContent = error.message;
      $("sign-in-error").hidden = false;
      return;
    }
    $("sign-in-error").hidden = true;
    start().catch((e) => fail(`Something went wrong: ${e.message}`));
  });
  start().catch((e) => fail(`Something went wrong: ${e.message}`));
})();
