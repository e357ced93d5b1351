// chumbo's HTTP edge: a Supabase Edge Function (Deno) in front of the chumbo extension.
//
// It is deliberately small and stateless. It terminates HTTP, serves OAuth protected-resource
// metadata (RFC 9728), answers CORS preflights, rejects bad Origin/Host (403), oversized bodies
// (413) and bodies that do not arrive in time (408), and forwards every POST as ONE SQL call,
// `chumbo.http_parts(request, body)`, over a small connection pool (bodies pass through as text:
// the edge never parses or re-serializes a body it only forwards); when the client goes away the
// SQL call is cancelled. All protocol decisions (token verification, 401/403 challenges, JSON-RPC
// errors, status codes) are made by the extension inside Postgres; the edge only frames the
// answer: SSE when the database returned events (log/progress notifications), JSON otherwise.
// The one long-lived thing it holds is a `subscriptions/listen` stream (MCP 2026-07-28): the
// database acknowledges it (`listen` in its answer), and the edge keeps the SSE response open.
// A NOTIFY on channel `chumbo_capabilities` (ONE shared LISTEN connection) is only a hint, since
// any role may NOTIFY: on one, the edge re-sends each stream's own listen request through
// chumbo.http and passes on list-changed notifications only when the database's capability
// version moved; a refused re-check (token expired, role revoked) ends the stream, and so does the
// re-check at the token's expiry. At most `max_streams` streams per principal (429 beyond).
//
// Configuration (environment):
//   DATABASE_URL                  login role chumbo_edge (rights from `select chumbo.grant_edge('chumbo_edge')`)
//   CHUMBO_PUBLIC_URL             the canonical MCP URL clients connect to (the token audience),
//                                 e.g. https://<ref>.supabase.co/functions/v1/mcp
//   CHUMBO_AUTHORIZATION_SERVERS  comma-separated issuer URLs (default: ${SUPABASE_URL}/auth/v1)
//   CHUMBO_SCOPES_SUPPORTED       comma-separated scopes advertised in the metadata (optional)
//   CHUMBO_RESOURCE_METADATA_URL  where 401 challenges point (default: the function-local
//                                 ${CHUMBO_PUBLIC_URL}/.well-known/oauth-protected-resource,
//                                 the one form that is reachable behind the Supabase gateway)
//   CHUMBO_ALLOWED_HOSTS          comma-separated Host names (default: localhost, 127.0.0.1, [::1]
//                                 and the host of CHUMBO_PUBLIC_URL; "*" disables the check)
//   CHUMBO_ALLOWED_ORIGINS        comma-separated origins (scheme://host[:port]) browsers may call
//                                 from, besides the origin of CHUMBO_PUBLIC_URL; "*" allows every
//                                 origin. Compared exactly: another port or scheme is another origin.
//   CHUMBO_MAX_BODY_BYTES         request body limit (default 4 MiB)
//   CHUMBO_BODY_TIMEOUT_MS        the whole body must arrive within this time after the headers
//                                 (default 10000), else 408. (Deno.serve has no header-read timeout;
//                                 see README.md.)
//   CHUMBO_MODE                   "direct" (default): SQL over DATABASE_URL.
//                                 "postgrest": POST to ${SUPABASE_URL}/rest/v1/rpc/mcp with the
//                                 caller's Authorization and SUPABASE_ANON_KEY as apikey
//                                 (chumbo.mcp reads claims and headers from PostgREST's GUCs).
//   CHUMBO_JWKS_URL               the issuer's JWKS (default ${SUPABASE_URL}/auth/v1/.well-known/jwks.json
//                                 when SUPABASE_URL is set): the edge carries it to the database with
//                                 chumbo.set_jwks() on the first request, hourly, and when a token names
//                                 a key id it has not seen (at most every CHUMBO_JWKS_MIN_REFRESH_MS,
//                                 default 30000). Direct mode only; needs
//                                 `select chumbo.grant_edge('chumbo_edge', jwks_courier => true)`.
//   CHUMBO_DB_POOL                pool size (default 8)
//   CHUMBO_DB_PREPARE             "false" behind a transaction pooler without prepared-statement
//                                 support (pgbouncer < 1.21); default true
//   CHUMBO_LISTEN_DATABASE_URL    connection for the one LISTEN session (default DATABASE_URL); set it to a
//                                 session-mode port when DATABASE_URL goes through a transaction pooler
//   CHUMBO_KEEPALIVE_MS           SSE comment keep-alive interval on listen streams (default 15000)
//   CHUMBO_CLIENT_IP_HEADER       take the client address passed to the database (anonymous rate
//                                 limits) from this header's first entry, e.g. x-forwarded-for,
//                                 when a trusted proxy sets it; default: the socket's peer address
//   CHUMBO_CONSENT_PAGE           "on": serve the OAuth consent page at ${CHUMBO_PUBLIC_URL}/consent
//                                 (consent.ts; needs SUPABASE_URL and SUPABASE_ANON_KEY; see README.md)
//   CHUMBO_CONSENT_APP_NAME       the name the consent page shows (default: the host of CHUMBO_PUBLIC_URL)
//   CHUMBO_LISTEN, CHUMBO_PORT    standalone only (scripts/edge.sh): comma-separated addresses to
//                                 bind, port. Unset under the Supabase runtime, which owns the socket.
import postgres from "postgres";

const env = (name: string) => Deno.env.get(name)?.trim() || undefined;
const list = (v?: string) => (v ?? "").split(",").map((s) => s.trim()).filter(Boolean);

const PORT = Number(env("CHUMBO_PORT") ?? 54321);
const SUPABASE_URL = env("SUPABASE_URL")?.replace(/\/+$/, "");
const PUBLIC_URL = (env("CHUMBO_PUBLIC_URL") ?? `http://localhost:${PORT}/functions/v1/mcp`).replace(/\/+$/, "");
const PUBLIC = new URL(PUBLIC_URL);
const PRM_URL = env("CHUMBO_RESOURCE_METADATA_URL") ?? `${PUBLIC_URL}/.well-known/oauth-protected-resource`;
const AUTH_SERVERS = list(env("CHUMBO_AUTHORIZATION_SERVERS") ?? (SUPABASE_URL && `${SUPABASE_URL}/auth/v1`));
const SCOPES = list(env("CHUMBO_SCOPES_SUPPORTED"));
const ALLOWED_HOSTS = new Set(
  list(env("CHUMBO_ALLOWED_HOSTS") ?? `localhost,127.0.0.1,[::1],${PUBLIC.hostname}`).map((h) => h.toLowerCase()),
);
/** An origin in its serialized form (lowercase scheme and host, default port dropped), or null. */
function canonicalOrigin(origin: string): string | null {
  try {
    const o = new URL(origin).origin;
    return o === "null" ? null : o;
  } catch {
    return null;
  }
}
const ANY_ORIGIN = list(env("CHUMBO_ALLOWED_ORIGINS")).includes("*");
const ALLOWED_ORIGINS = new Set([PUBLIC.origin, ...list(env("CHUMBO_ALLOWED_ORIGINS")).map(canonicalOrigin)]);
const MAX_BODY = Number(env("CHUMBO_MAX_BODY_BYTES") ?? 4 * 1024 * 1024);
const BODY_TIMEOUT_MS = Number(env("CHUMBO_BODY_TIMEOUT_MS") ?? 10000);
const MODE = env("CHUMBO_MODE") ?? "direct";
const KEEPALIVE_MS = Number(env("CHUMBO_KEEPALIVE_MS") ?? 15000);
const CLIENT_IP_HEADER = env("CHUMBO_CLIENT_IP_HEADER")?.toLowerCase();
// The consent page is loaded only when turned on; if it cannot be (configuration, a runtime
// without text imports), its URLs answer 503 and the MCP endpoint is unaffected.
const CONSENT = env("CHUMBO_CONSENT_PAGE") === "on"
  ? import("./consent.ts")
    .then((m) =>
      m.consentPage({
        supabaseUrl: SUPABASE_URL,
        anonKey: env("SUPABASE_ANON_KEY"),
        appName: env("CHUMBO_CONSENT_APP_NAME") ?? PUBLIC.host,
      })
    )
    .catch((e) => {
      console.error("chumbo-edge: the consent page is off:", e);
      return null;
    })
  : null;

// The function answers at /functions/v1/mcp (local dev, the URL clients use) and at /mcp (what
// the Supabase gateway hands the function after stripping /functions/v1).
const MCP_PATHS = new Set([PUBLIC.pathname, "/functions/v1/mcp", "/mcp"]);
// Protected-resource metadata names ONE resource, CHUMBO_PUBLIC_URL. RFC 9728 §3.3: metadata
// fetched from a well-known URL must name the resource that URL was derived from, so the
// path-inserted form exists only for the public URL's path, and the root form only when the MCP
// URL is the origin itself. The function-local form (…/mcp/.well-known/…) is what 401 challenges
// point to (resource_metadata), the one the Supabase gateway routes to the function.
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
const PRM_PATHS = new Set([
  PUBLIC.pathname === "/" ? WELL_KNOWN : WELL_KNOWN + PUBLIC.pathname,
  ...[...MCP_PATHS].map((p) => p.replace(/\/$/, "") + WELL_KNOWN),
]);

const ALLOW_HEADERS = [
  "authorization",
  "content-type",
  "accept",
  "mcp-protocol-version",
  "mcp-method",
  "mcp-name",
  "last-event-id",
];
// (Mcp-Param-* request headers are allowed by prefix, see preflight.)
const EXPOSE_HEADERS = "www-authenticate, mcp-protocol-version";

const sql = MODE === "direct"
  ? postgres(env("DATABASE_URL") ?? "", {
    max: Number(env("CHUMBO_DB_POOL") ?? 8),
    prepare: env("CHUMBO_DB_PREPARE") !== "false",
    idle_timeout: 60,
    connect_timeout: 10,
    connection: { application_name: "chumbo-edge" },
  })
  : null;

// JWKS courier: the database verifies tokens, the edge only keeps its copy of the keys current.
// The kid is read from the (unverified) token header just to notice a rotated key early.
const JWKS_URL = env("CHUMBO_JWKS_URL") ?? (SUPABASE_URL && `${SUPABASE_URL}/auth/v1/.well-known/jwks.json`);
const JWKS_MIN_REFRESH_MS = Number(env("CHUMBO_JWKS_MIN_REFRESH_MS") ?? 30000);
let jwks = { kids: new Set<string>(), at: 0, pending: null as Promise<void> | null };

function tokenKid(authorization: string | null): string | null {
  const m = authorization?.match(/^Bearer\s+([\w-]+)\./i);
  try {
    return m ? JSON.parse(atob(m[1].replace(/-/g, "+").replace(/_/g, "/"))).kid ?? null : null;
  } catch {
    return null;
  }
}

async function refreshJwks(authorization: string | null) {
  if (!JWKS_URL || !sql) return;
  const age = Date.now() - jwks.at;
  if (age < JWKS_MIN_REFRESH_MS && age < 3600_000) return; // before reading the kid: the hot path
  const kid = tokenKid(authorization);
  if (age < 3600_000 && (kid === null || jwks.kids.has(kid))) return;
  jwks.pending ??= (async () => {
    try {
      const set = await (await fetch(JWKS_URL)).json();
      await sql`select chumbo.set_jwks(${sql.json(set)}::jsonb)`;
      jwks = { kids: new Set(set.keys.map((k: { kid?: string }) => k.kid)), at: Date.now(), pending: null };
    } catch (e) {
      // Never fatal: the request goes on, and the database judges the token with the keys it has.
      const refused = (e as { code?: string })?.code === "42501";
      console.error(
        refused
          ? "chumbo-edge: the database refused chumbo.set_jwks (grant it: select chumbo.grant_edge('<edge role>', jwks_courier => true))"
          : `chumbo-edge: JWKS refresh from ${JWKS_URL} failed:`,
        refused ? "" : e,
      );
      jwks = { ...jwks, at: Date.now(), pending: null };
    }
  })();
  await jwks.pending;
}

function json(status: number, body: unknown, headers: HeadersInit = {}) {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: h });
}
const rpcError = (status: number, message: string, code = -32000) =>
  json(status, { jsonrpc: "2.0", id: null, error: { code, message } });

// The verdict per Host value (a URL parse each is the costly part); bounded, since clients choose it.
const hostVerdicts = new Map<string, boolean>();
function hostAllowed(req: Request): boolean {
  if (ALLOWED_HOSTS.has("*")) return true;
  const host = req.headers.get("host");
  if (!host) return true; // HTTP/1.0 or an in-process call: nothing to rebind
  let ok = hostVerdicts.get(host);
  if (ok === undefined) {
    try {
      ok = ALLOWED_HOSTS.has(new URL(`http://${host}`).hostname.toLowerCase());
    } catch {
      ok = false;
    }
    if (hostVerdicts.size >= 256) hostVerdicts.clear();
    hostVerdicts.set(host, ok);
  }
  return ok;
}

/** Exact origin match (scheme, host and port): a page on another port of the same host is
 * another origin, and may be anything. "null" and other opaque origins never match a list. */
function originAllowed(origin: string | null): boolean {
  if (origin === null) return true; // not a browser: DNS rebinding needs one
  if (ANY_ORIGIN) return true;
  const o = canonicalOrigin(origin);
  return o !== null && ALLOWED_ORIGINS.has(o);
}

function cors(origin: string | null, h = new Headers()): Headers {
  if (origin) {
    h.set("access-control-allow-origin", origin);
    h.append("vary", "origin");
    h.set("access-control-expose-headers", EXPOSE_HEADERS);
  }
  return h;
}

function preflight(req: Request, origin: string | null): Response {
  const asked = list(req.headers.get("access-control-request-headers") ?? "").map((s) => s.toLowerCase());
  const h = cors(origin);
  h.set("access-control-allow-methods", "POST, GET, DELETE, OPTIONS");
  h.set(
    "access-control-allow-headers",
    asked.filter((a) => ALLOW_HEADERS.includes(a) || a.startsWith("mcp-param-")).join(", ") || ALLOW_HEADERS.join(", "),
  );
  h.set("access-control-max-age", "86400");
  return new Response(null, { status: 204, headers: h });
}

function protectedResourceMetadata(): Response {
  const meta: Record<string, unknown> = {
    resource: PUBLIC_URL,
    authorization_servers: AUTH_SERVERS,
    bearer_methods_supported: ["header"],
  };
  if (SCOPES.length) meta.scopes_supported = SCOPES;
  return json(200, meta, { "access-control-allow-origin": "*", "cache-control": "public, max-age=300" });
}

const utf8 = new TextDecoder();
/** `p`, or "timeout" once the body has taken BODY_TIMEOUT_MS. */
function inTime<T>(p: Promise<T>): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((r) => (timer = setTimeout(r, BODY_TIMEOUT_MS, "timeout")));
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
/** The body as text; "too large" beyond the limit, "timeout" when it is not complete in time. */
async function readBody(req: Request): Promise<string | "too large" | "timeout"> {
  const length = req.headers.get("content-length");
  if (Number(length ?? 0) > MAX_BODY) return "too large";
  if (length !== null && !req.headers.has("transfer-encoding")) {
    // The server hands over at most content-length bytes (HTTP framing), so the limit holds
    // without counting; text() takes a body that is already buffered without a stream. A stalled
    // one is left behind: the server closes it with the response, which settles text().
    const text = req.text();
    text.catch(() => {});
    return await inTime(text);
  }
  const reader = req.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await inTime(reader.read());
      if (next === "timeout") return "timeout";
      if (next.done) break;
      size += next.value.length;
      if (size > MAX_BODY) return "too large";
      chunks.push(next.value);
    }
  } finally {
    reader.cancel().catch(() => {}); // a no-op after the end; else stop reading
  }
  if (chunks.length === 1) return utf8.decode(chunks[0]);
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) all.set(c, (at += c.length) - c.length);
  return utf8.decode(all);
}

// What the database says about an acknowledged listen request. principal, version, expires_at and
// max_streams come from newer chumbo builds; without them the edge falls back to forwarding every
// NOTIFY and no per-principal bound.
type Listen = {
  id: string | number;
  notifications: Record<string, boolean>;
  principal?: string; // opaque digest of who is listening
  version?: number; // the capability version this principal sees
  expires_at?: number | null; // unix seconds: the token's end, when the stream must be re-checked
  max_streams?: number; // open streams allowed per principal
};
type HttpResult = {
  status: number;
  headers?: Record<string, string>;
  body?: Uint8Array<ArrayBuffer> | null; // JSON text (UTF-8), forwarded as it is
  events?: unknown[];
  listen?: Listen;
};
type HttpRequest = { [k: string]: string | Record<string, string> | undefined };

/** The request as chumbo.http takes it. */
function httpRequest(req: Request, path: string, body: string, client?: string): HttpRequest {
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v)); // Headers already lowercases
  delete headers["cookie"]; // never needed, keep it out of the database
  return { method: req.method, path, headers, body, resource: PUBLIC_URL, resource_metadata: PRM_URL, client };
}

/** Send the cancel request for a query; resolves once the server closed the cancel connection,
 * which it does after it signalled the backend. query.cancel() drops that promise; the canceller
 * it calls (postgres.js 3.4.9, pinned in deno.lock) returns it. */
function cancelRequest(query: object): Promise<unknown> {
  const q = query as { canceller?: ((q: object) => Promise<unknown>) | null; cancel(): void };
  const canceller = q.canceller;
  if (typeof canceller !== "function") return Promise.resolve(q.cancel());
  q.canceller = null;
  return canceller(query).catch(() => {});
}

// Reading req.signal is not free: Deno then aborts it after every response, a DOMException each.
// So only a call still running after WATCH_MS reads it; a client that left before then is seen
// at once (the signal is already aborted when first read).
const WATCH_MS = 10;
/** How long a cancelled call's connection waits for its cancel request to be delivered. */
const CANCEL_WAIT_MS = 5_000;
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One chumbo.http_parts call, on a pool connection reserved for it. When the signal from `client()`
 * aborts (the HTTP client went away) while the call is in flight, it is cancelled (a protocol-level
 * cancel request, so it works through pgbouncer too). A cancel request names a backend, not a
 * query: sent after the call finished, or delivered after the connection moved on to the next call,
 * it would cancel that one. So the connection runs this call alone (no pipelining behind it), a cancel goes out only
 * before the answer arrived (a backend that is idle by then ignores it), and the connection returns
 * to the pool only once the cancel request was delivered. */
async function callHttp(request: HttpRequest, client?: () => AbortSignal): Promise<HttpResult> {
  // The body goes as its own text parameter and comes back as text: neither is escaped into a
  // JSON string, nor parsed into jsonb and printed again on the way.
  const { body, ...rest } = request;
  const text = typeof body === "string" ? body : null;
  const db = await sql!.reserve();
  // Raw columns: the body's bytes go from the socket to the response without becoming a string
  // (a ~30 kB string per call that V8 copies around and promotes into the old heap).
  const query = db`select status, headers, body, events, listen
                     from chumbo.http_parts(${JSON.stringify(rest)}, ${text})`.raw();
  let answered = false;
  let cancelled: Promise<unknown> | undefined;
  const cancel = () => {
    if (!answered) cancelled ??= cancelRequest(query);
  };
  let signal: AbortSignal | undefined;
  // Set before the query goes out (postgres.js sends it a microtask after the await below).
  const watch = client && setTimeout(() => {
    signal = client();
    if (signal.aborted) cancel();
    else signal.addEventListener("abort", cancel, { once: true });
  }, WATCH_MS);
  let alive = true;
  try {
    const [[status, headers, body, events, listen]] = await query;
    answered = true;
    return {
      status: Number(utf8.decode(status!)),
      headers: JSON.parse(utf8.decode(headers!)),
      // A view into the socket chunk the row arrived in, which nothing writes again (postgres.js
      // itself keeps chunks across reads): a copy only adds an external allocation, and with it
      // more V8 mark-compacts (bench/analysis.md). A plain Uint8Array, not postgres.js's Buffer:
      // Response copies it, and a Buffer's copy runs Node's Buffer constructor (species).
      body: body === null ? null : new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength),
      events: events === null ? undefined : JSON.parse(utf8.decode(events)),
      listen: listen === null ? undefined : JSON.parse(utf8.decode(listen)),
    };
  } catch (e) {
    answered = true;
    // Any other error (socket, FATAL) closed the connection: the pool reconnects it on its own,
    // and releasing it would put a dead connection back.
    const severity = (e as { severity?: string })?.severity;
    alive = e instanceof postgres.PostgresError && severity !== "FATAL" && severity !== "PANIC";
    throw e;
  } finally {
    clearTimeout(watch);
    signal?.removeEventListener("abort", cancel);
    // Bounded: a cancel connection that never closes must not hold the pool connection forever.
    if (alive && cancelled) void Promise.race([cancelled, delay(CANCEL_WAIT_MS)]).then(() => db.release());
    else if (alive) db.release();
  }
}

// Supabase-hosted alternative: PostgREST runs chumbo.mcp(body) as the role from the caller's JWT.
// No SSE framing in this mode (PostgREST returns only the function's value).
async function forwardPostgrest(req: Request, body: string): Promise<HttpResult> {
  const h = new Headers({
    "content-type": "application/json",
    accept: "application/json",
    "content-profile": "chumbo",
    prefer: "params=single-object",
  });
  const key = env("SUPABASE_ANON_KEY");
  if (key) h.set("apikey", key);
  req.headers.forEach((v, k) => {
    if (k === "authorization" || k.startsWith("mcp-")) h.set(k, v);
  });
  const r = await fetch(`${SUPABASE_URL}/rest/v1/rpc/mcp`, { method: "POST", headers: h, body });
  const text = new Uint8Array(await r.arrayBuffer());
  const out: Record<string, string> = {};
  for (const k of ["www-authenticate", "mcp-protocol-version"]) if (r.headers.has(k)) out[k] = r.headers.get(k)!;
  if (r.status === 401 && !out["www-authenticate"]) out["www-authenticate"] = `Bearer resource_metadata="${PRM_URL}"`;
  return { status: r.status, headers: out, body: text.length ? text : null };
}

const frame = (m: unknown) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
function sseHeaders(h: Headers): Headers {
  h.set("content-type", "text/event-stream");
  h.set("cache-control", "no-cache");
  h.set("x-accel-buffering", "no");
  return h;
}

// ---- subscriptions/listen: long-lived SSE streams, re-checked against the database ---------------
const LIST_CHANGED: Record<string, string> = {
  toolsListChanged: "notifications/tools/list_changed",
  promptsListChanged: "notifications/prompts/list_changed",
  resourcesListChanged: "notifications/resources/list_changed",
};
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const LISTEN_RETRY_AFTER_S = 30;
type Subscriber = {
  listen: Listen; // the database's latest word on this stream
  request: HttpRequest; // the original listen request, re-sent on every re-check
  send: (chunk: string) => void;
  end: (last?: unknown) => void;
  checking?: Promise<void>;
  again?: boolean;
  expiry?: ReturnType<typeof setTimeout>;
};
const subscribers = new Set<Subscriber>();
let listening: Promise<unknown> | null = null;
let fanout: ReturnType<typeof setTimeout> | undefined;
let lastRound = 0;
const RECHECK_SPACING_MS = 1000;
let hints = 0; // NOTIFYs seen so far: a stream whose acknowledgement raced one is re-checked at once
let listenSql: ReturnType<typeof postgres> | undefined;

/** One LISTEN connection for all streams (postgres.js reconnects and re-listens on its own). */
function ensureListening(): Promise<unknown> {
  const listener = env("CHUMBO_LISTEN_DATABASE_URL")
    ? (listenSql ??= postgres(env("CHUMBO_LISTEN_DATABASE_URL")!, {
      max: 1,
      connection: { application_name: "chumbo-edge-listen" },
    }))
    : sql!;
  listening ??= listener.listen("chumbo_capabilities", () => {
    // Anyone may NOTIFY this channel: it is a hint to re-check, never a change by itself. One
    // DDL transaction may NOTIFY several times (create, comment, grant): one round per burst.
    // Rounds are at least RECHECK_SPACING_MS apart, so a flood of NOTIFYs costs at most one SQL
    // call per stream per interval.
    hints++;
    fanout ??= setTimeout(() => {
      fanout = undefined;
      lastRound = Date.now();
      // One principal's streams one after another (the database bounds calls in flight per
      // principal), different principals in parallel.
      const byPrincipal = Map.groupBy(subscribers, (s) => s.listen.principal);
      for (const group of byPrincipal.values()) {
        void (async () => {
          for (const s of group) await recheck(s);
        })();
      }
    }, Math.max(25, lastRound + RECHECK_SPACING_MS - Date.now()));
  }).catch((e) => {
    listening = null;
    throw e;
  });
  return listening;
}

/** Ask the database again with the stream's own request (same token, same body). Refused: the
 * stream ends with the database's error for the listen id. Accepted: list-changed notifications
 * go out only if the capability version moved. Calls for one stream never overlap. */
function recheck(s: Subscriber): Promise<void> {
  if (s.checking) {
    s.again = true;
    return s.checking;
  }
  s.checking = (async () => {
    do {
      s.again = false;
      let result: HttpResult;
      try {
        result = await callHttp(s.request);
      } catch (e) {
        const trace = crypto.randomUUID();
        console.error(`chumbo-edge ${trace}: listen re-check failed:`, e);
        result = {
          status: 503,
          body: new TextEncoder().encode(
            JSON.stringify({ error: { code: -32603, message: `Service unavailable (trace ${trace})` } }),
          ),
        };
      }
      if (!subscribers.has(s)) return;
      if (result.status === 429) {
        // Too many calls right now is not a refusal of the stream: ask again when told to.
        const after = Number(result.headers?.["retry-after"]);
        clearTimeout(s.expiry);
        s.expiry = setTimeout(() => void recheck(s), (after > 0 ? Math.min(after, 60) : 1) * 1000);
        return;
      }
      if (result.status !== 200 || !result.listen) {
        s.end(listenEnded(s.listen.id, result));
        return;
      }
      const before = s.listen.version;
      s.listen = { ...result.listen, id: s.listen.id };
      if (before === undefined || before !== result.listen.version) {
        for (const [flag, method] of Object.entries(LIST_CHANGED)) {
          if (s.listen.notifications[flag] !== true) continue;
          s.send(frame({ jsonrpc: "2.0", method, params: { _meta: { [SUBSCRIPTION_ID]: s.listen.id } } }));
        }
      }
      scheduleExpiry(s);
    } while (s.again);
  })().finally(() => (s.checking = undefined));
  return s.checking;
}

/** The final message of a stream the database no longer accepts: its JSON-RPC error for the
 * listen id when it gave one (401 for an expired token, 403, 429, ...), else a generic one. */
function listenEnded(id: string | number, result: HttpResult): unknown {
  let err: { code?: unknown; message?: unknown } | undefined;
  try {
    err = result.body == null ? undefined : JSON.parse(utf8.decode(result.body))?.error;
  } catch { /* not JSON: the generic message below */ }
  return {
    jsonrpc: "2.0",
    id,
    error: typeof err?.code === "number" && typeof err.message === "string"
      ? err
      : { code: -32603, message: `Subscription ended: the server no longer accepts it (HTTP ${result.status})` },
  };
}

/** At the token's expiry, re-check: the database refuses an expired token, and the stream ends.
 * (If it still accepts it, e.g. within a clock-skew leeway, look again a little later.) */
function scheduleExpiry(s: Subscriber) {
  clearTimeout(s.expiry);
  const at = s.listen.expires_at;
  if (typeof at !== "number") return;
  const wait = at * 1000 - Date.now();
  s.expiry = setTimeout(() => void recheck(s), wait > 0 ? Math.min(wait + 250, 2 ** 31 - 1) : 2000);
}

function listenStream(result: HttpResult, request: HttpRequest, hintsBefore: number, origin: string | null): Response {
  const listen = result.listen!;
  // At most max_streams open streams per principal; the ones already open are not touched.
  if (listen.principal !== undefined && typeof listen.max_streams === "number") {
    let open = 0;
    for (const s of subscribers) if (s.listen.principal === listen.principal) open++;
    if (open >= listen.max_streams) {
      const h = cors(origin, new Headers({ "retry-after": String(LISTEN_RETRY_AFTER_S) }));
      h.set("content-type", "application/json");
      const error = {
        code: -32600,
        message: `Too many open subscriptions: at most ${listen.max_streams} listen streams per principal`,
      };
      return new Response(JSON.stringify({ jsonrpc: "2.0", id: listen.id, error }), { status: 429, headers: h });
    }
  }
  const enc = new TextEncoder();
  let sub: Subscriber;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(keepalive);
    clearTimeout(sub.expiry);
    subscribers.delete(sub);
  };
  // start() runs synchronously here: the stream counts against max_streams before any await.
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      sub = {
        listen,
        request,
        send(chunk) {
          if (!open) return;
          try {
            controller.enqueue(enc.encode(chunk));
          } catch {
            sub.end(); // the client went away
          }
        },
        end(last) {
          if (!open) return;
          if (last !== undefined) sub.send(frame(last));
          open = false;
          stop();
          try {
            controller.close();
          } catch { /* already closed */ }
        },
      };
      for (const e of result.events ?? []) sub.send(frame(e)); // the acknowledgement first
      subscribers.add(sub);
      keepalive = setInterval(() => sub.send(": keepalive\n\n"), KEEPALIVE_MS);
      scheduleExpiry(sub);
      if (hints !== hintsBefore) void recheck(sub);
    },
    cancel() {
      stop(); // the client disconnected
    },
  });
  return new Response(stream, {
    status: result.status,
    headers: sseHeaders(cors(origin, new Headers(result.headers ?? {}))),
  });
}

/** Edge shutdown: every listen stream ends with a normal result for the listen request. */
async function shutdown() {
  for (const s of [...subscribers]) {
    const id = s.listen.id;
    s.end({ jsonrpc: "2.0", id, result: { resultType: "complete", _meta: { [SUBSCRIPTION_ID]: id } } });
  }
  await new Promise((r) => setTimeout(r, 100)); // let the final frames flush
  await Promise.all([sql, listenSql].map((c) => c?.end({ timeout: 1 }).catch(() => {})));
  Deno.exit(0);
}
for (const sig of ["SIGTERM", "SIGINT"] as const) {
  try {
    Deno.addSignalListener(sig, shutdown);
  } catch { /* a runtime without signal listeners (hosted) */ }
}

function respond(result: HttpResult, origin: string | null): Response {
  if (origin === null && result.body != null && !result.events?.length) {
    // The common answer (JSON, not a browser): the database's headers (lowercase names) as they are.
    const headers = result.headers ?? {};
    headers["content-type"] = "application/json";
    return new Response(result.body, { status: result.status, headers });
  }
  const h = cors(origin, new Headers(result.headers ?? {}));
  if (result.events?.length) {
    sseHeaders(h);
    // An SSE data line must hold no line break: re-serialize (only streamed answers pay this).
    const last = result.body == null ? "" : frame(JSON.parse(utf8.decode(result.body)));
    return new Response(result.events.map(frame).join("") + last, { status: result.status, headers: h });
  }
  if (result.body == null) {
    h.delete("content-type");
    return new Response(null, { status: result.status, headers: h });
  }
  h.set("content-type", "application/json");
  return new Response(result.body, { status: result.status, headers: h });
}

/** The client's address, for the database's anonymous rate-limit buckets. */
function clientAddress(req: Request, info?: Deno.ServeHandlerInfo): string | undefined {
  if (CLIENT_IP_HEADER) {
    const v = req.headers.get(CLIENT_IP_HEADER)?.split(",")[0]?.trim();
    if (v) return v;
  }
  const addr = info?.remoteAddr as Deno.NetAddr | undefined;
  return addr?.hostname;
}

/** The request's path without trailing slashes. The hot case, the exact MCP path with no query,
 * is sliced off the URL; anything else goes through the URL parser (dot segments, escapes). */
function requestPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const raw = start > 0 ? url.slice(start) : "";
  if (MCP_PATHS.has(raw) && (raw === "/" || !raw.endsWith("/"))) return raw;
  return new URL(url).pathname.replace(/\/+$/, "") || "/";
}

export async function handler(req: Request, info?: Deno.ServeHandlerInfo): Promise<Response> {
  const path = requestPath(req.url);

  if (PRM_PATHS.has(path)) {
    if (req.method === "GET" || req.method === "HEAD") return protectedResourceMetadata();
    if (req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": "*",
          "access-control-allow-methods": "GET, OPTIONS",
          "access-control-allow-headers": "mcp-protocol-version",
        },
      });
    }
    return new Response(null, { status: 405, headers: { allow: "GET, OPTIONS" } });
  }
  if (CONSENT) {
    const base = [...MCP_PATHS].map((p) => p.replace(/\/$/, ""))
      .find((p) => path === `${p}/consent` || path.startsWith(`${p}/consent/`));
    if (base !== undefined) {
      if (!hostAllowed(req)) return json(403, { error: "Forbidden: Host not allowed" });
      const page = await CONSENT;
      if (!page) return json(503, { error: "the consent page is not available (see the edge's log)" });
      return page(req, path.slice(base.length + "/consent".length));
    }
  }
  if (!MCP_PATHS.has(path)) return json(404, { error: "not found" });

  const origin = req.headers.get("origin");
  if (!hostAllowed(req)) return rpcError(403, "Forbidden: Host not allowed");
  if (!originAllowed(origin)) return rpcError(403, "Forbidden: Origin not allowed");
  if (req.method === "OPTIONS") return preflight(req, origin);
  // Stateless server: no standalone SSE stream (GET) and no session to end (DELETE).
  if (req.method !== "POST") {
    return new Response(null, { status: 405, headers: cors(origin, new Headers({ allow: "POST, OPTIONS" })) });
  }

  const body = await readBody(req);
  if (body === "too large") return rpcError(413, `Request body larger than ${MAX_BODY} bytes`);
  if (body === "timeout") {
    // Connection: close asks the client to go; Deno.serve gives a handler no way to drop the
    // socket itself (README.md, Slow clients). Nothing is held for this request any more.
    const r = rpcError(408, `Request body not received within ${BODY_TIMEOUT_MS} ms`);
    r.headers.set("connection", "close");
    return r;
  }
  // jsonb cannot hold U+0000, and JSON text never contains a raw NUL: not JSON, answer as the server would.
  if (body.includes("\0")) return rpcError(400, "Parse error", -32700);
  try {
    if (MODE === "postgrest") return respond(await forwardPostgrest(req, body), origin);
    await refreshJwks(req.headers.get("authorization"));
    const request = httpRequest(req, path, body, clientAddress(req, info));
    if (isListen(body)) await ensureListening(); // before the acknowledgement: no change after it may be missed
    const hintsBefore = hints;
    const result = await callHttp(request, () => req.signal);
    if (result.listen) return listenStream(result, request, hintsBefore, origin);
    return respond(result, origin);
  } catch (e) {
    if (req.signal.aborted) {
      console.error(`chumbo-edge: the client went away; its SQL call was cancelled (${(e as Error)?.message})`);
      return new Response(null, { status: 499 });
    }
    const trace = crypto.randomUUID();
    console.error(`chumbo-edge ${trace}:`, e);
    if (hardStopped(e)) return respond(timeoutAnswer(body, trace), origin);
    return rpcError(503, `Service unavailable (trace ${trace})`, -32603);
  }
}

/** The database ended the call's backend because the call went on past its time bound after being
 * cancelled (a tool that catches query_canceled; src/deadline.rs): FATAL with SQLSTATE 57014. Its
 * transaction was rolled back and its in-flight slot released; the pool replaces the connection. */
const hardStopped = (e: unknown) => e instanceof postgres.PostgresError && e.severity === "FATAL" && e.code === "57014";

/** The answer the database gives a call that ran out of time, for a request whose backend could not
 * give it: a tool result with isError for tools/call, a JSON-RPC error for anything else. */
function timeoutAnswer(body: string, trace: string): HttpResult {
  const text = `The call took too long and was cancelled (trace id ${trace})`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch { /* the database parsed it before running anything: not reached */ }
  const one = (m: unknown) => {
    const msg = (m ?? {}) as { id?: unknown; method?: unknown; params?: { _meta?: Record<string, unknown> } };
    if (msg.id === undefined) return undefined;
    if (msg.method !== "tools/call") return { jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: text } };
    const stateless = msg.params?._meta?.["io.modelcontextprotocol/protocolVersion"] !== undefined;
    const result = {
      content: [{ type: "text", text }],
      isError: true,
      ...(stateless ? { resultType: "complete" } : {}),
    };
    return { jsonrpc: "2.0", id: msg.id, result };
  };
  const answer = Array.isArray(parsed) ? parsed.map(one).filter((a) => a !== undefined) : one(parsed);
  return { status: 200, headers: {}, body: new TextEncoder().encode(JSON.stringify(answer ?? null)) };
}

/** Cheap pre-check (the database decides): may this body be a subscriptions/listen request? */
const isListen = (body: string) => body.includes("subscriptions/listen");

const listen = list(env("CHUMBO_LISTEN"));
if (listen.length) {
  for (const hostname of listen) {
    Deno.serve({
      hostname,
      port: PORT,
      onListen: ({ hostname, port }) =>
        console.log(`chumbo edge listening on ${hostname}:${port}, MCP_URL=${PUBLIC_URL}`),
    }, handler);
  }
} else {
  Deno.serve(handler);
}
