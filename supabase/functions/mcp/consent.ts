// The optional OAuth consent page (CHUMBO_CONSENT_PAGE=on; README.md, "Consent page").
//
// Supabase Auth's OAuth 2.1 server sends the user to `Site URL + authorization path` with
// `?authorization_id=…` and leaves consent to the application. This module serves that page at
// …/mcp/consent: static HTML, the page's script (consent/app.js) and supabase-js's browser bundle
// (pinned in deno.json/deno.lock, served from here: no CDN). Everything else happens in the
// user's browser, with the user's own Supabase Auth session: supabase-js reads the authorization
// details from Supabase Auth and posts the decision there. The edge sees no token and keeps no
// state; it only hands out files.
import supabaseJs from "@supabase/supabase-js/dist/umd/supabase.js" with { type: "text" };
import appJs from "./consent/app.js" with { type: "text" };

export type ConsentOptions = {
  supabaseUrl?: string; // the project URL, e.g. https://<ref>.supabase.co
  anonKey?: string; // the publishable (anon) key: supabase-js sends it as `apikey`
  appName: string; // shown on the page: whose account the client asks for
};

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const CSS = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1c1e21}
main{max-width:30rem;margin:3rem auto;background:#fff;border-radius:12px;padding:2rem;box-shadow:0 1px 4px #0002}
h1{font-size:1.3rem;margin:0 0 1rem}h2{font-size:1rem;margin:1.2rem 0 .4rem}
ul{padding-left:1.2rem;margin:.2rem 0}li code{background:#eef;padding:0 .3rem;border-radius:4px}
dl{display:grid;grid-template-columns:auto 1fr;gap:.2rem 1rem;margin:.8rem 0}dt{color:#666}dd{margin:0;overflow-wrap:anywhere}
.note{color:#666;font-size:.9rem}.actions{display:flex;gap:1rem;justify-content:flex-end;margin-top:1.5rem}
button{font:inherit;padding:.5rem 1.2rem;border-radius:8px;border:1px solid #bbb;background:#fff;cursor:pointer}
button.primary{background:#1a7f37;border-color:#1a7f37;color:#fff}button:disabled{opacity:.5;cursor:default}
label{display:block;margin:.6rem 0}input{font:inherit;width:100%;box-sizing:border-box;padding:.4rem;border:1px solid #bbb;border-radius:6px}
#error,#sign-in-error{color:#b00020;font-weight:600}`;

/** A handler for the paths under …/mcp/consent: "" is the page, "/app.js" and "/supabase.js" its scripts. */
export async function consentPage(o: ConsentOptions): Promise<(req: Request, rest: string) => Response> {
  if (!o.supabaseUrl || !o.anonKey) {
    throw new Error("CHUMBO_CONSENT_PAGE=on needs SUPABASE_URL and SUPABASE_ANON_KEY");
  }
  const supabaseOrigin = new URL(o.supabaseUrl).origin;
  const styleHash = btoa(
    String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(CSS)))),
  );
  // JSON inside <script type="application/json">: `<` escaped, so no value can close the element.
  const config = JSON.stringify({ supabaseUrl: o.supabaseUrl, anonKey: o.anonKey, appName: o.appName })
    .replace(/</g, "\\u003c");
  // Relative script URLs: the browser sees …/functions/v1/mcp/consent, the function (behind the
  // Supabase gateway) sees /mcp/consent; "consent/app.js" is right for both.
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Connect to ${html(o.appName)}</title>
<style>${CSS}</style>
<script type="application/json" id="chumbo-consent-config">${config}</script>
<script src="consent/supabase.js" defer></script>
<script src="consent/app.js" defer></script>
</head><body data-state="loading"><main>
<h1>Connect to <span id="app-name">${html(o.appName)}</span></h1>
<p id="status" role="status">Loading…</p>
<form id="sign-in" hidden>
  <p>Sign in to ${html(o.appName)} to continue.</p>
  <label>Email <input id="email" type="email" autocomplete="username" required></label>
  <label>Password <input id="password" type="password" autocomplete="current-password" required></label>
  <p id="sign-in-error" role="alert" hidden></p>
  <div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<section id="request" hidden>
  <p><strong id="client-name"></strong> wants to use your ${html(o.appName)} account
    (<span id="user-email"></span>) through MCP: it can do what you can do with the tools you are allowed to use.</p>
  <dl><dt>Client website</dt><dd id="client-uri"></dd><dt>Returns to</dt><dd id="redirect-host"></dd></dl>
  <h2>Requested scopes</h2>
  <ul id="scopes"></ul>
  <p class="note">The client chose its own name. Approve only if you started this connection yourself.</p>
  <div class="actions"><button id="deny" type="button">Deny</button><button id="approve" class="primary" type="button">Approve</button></div>
</section>
<p id="error" role="alert" hidden></p>
</main></body></html>
`;
  const pageHeaders = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": [
      "default-src 'none'",
      "script-src 'self'",
      `style-src 'sha256-${styleHash}'`,
      `connect-src ${supabaseOrigin}`,
      "form-action 'none'",
      "frame-ancestors 'none'", // a consent button must never sit in someone else's frame
      "base-uri 'none'",
    ].join("; "),
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer", // the authorization_id stays out of Referer headers
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
  };
  const script = (body: string) =>
    new Response(body, {
      headers: {
        "content-type": "text/javascript; charset=utf-8",
        "x-content-type-options": "nosniff",
        "cache-control": "public, max-age=300",
      },
    });
  return (req, rest) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      // Nothing here changes state: the decision goes from the page's script straight to Supabase
      // Auth with the user's bearer token, so no cross-site form or link can post one through here.
      return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
    }
    const url = new URL(req.url);
    if (rest === "" && url.pathname.endsWith("/")) {
      // …/consent/ would break the relative script URLs: back to …/consent (a relative Location,
      // right behind the gateway too).
      return new Response(null, { status: 308, headers: { location: `../consent${url.search}` } });
    }
    if (rest === "") return new Response(req.method === "HEAD" ? null : page, { headers: pageHeaders });
    if (rest === "/app.js") return script(appJs);
    if (rest === "/supabase.js") return script(supabaseJs);
    return new Response("not found", { status: 404 });
  };
}
