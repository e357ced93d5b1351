// chumbo's HTTP edge: a Supabase Edge Function (Deno) in front of the chumbo extension.
//
// It is deliberately small and stateless. It terminates HTTP, serves OAuth protected-resource
// metadata (RFC 9728), answers CORS preflights, rejects bad Origin/Host (403) and oversized
// bodies (413), and forwards every POST as ONE SQL call, `select chumbo.http($1)`, over a small
// connection pool. All protocol decisions (token verification, 401/403 challenges, JSON-RPC
// errors, status codes) are made by the extension inside Postgres; the edge only frames the
// answer: SSE when the database returned events (log/progress notifications), JSON otherwise.
// The one long-lived thing it holds is a `subscriptions/listen` stream (MCP 2026-07-28): the
// database acknowledges it (`listen` in its answer), and the edge keeps the SSE response open,
// turning NOTIFYs on channel `chumbo_capabilities` (chumbo's DDL/COMMENT/GRANT event trigger) into
// the list-changed notifications the subscriber asked for, over ONE shared LISTEN connection.
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
//   CHUMBO_ALLOWED_ORIGINS        comma-separated origins browsers may call from (default: any
//                                 origin whose host is an allowed host; "*" allows every origin)
//   CHUMBO_MAX_BODY_BYTES         request body limit (default 4 MiB)
//   CHUMBO_MODE                   "direct" (default): SQL over DATABASE_URL.
//                                 "postgrest": POST to ${SUPABASE_URL}/rest/v1/rpc/mcp with the
//                                 caller's Authorization and SUPABASE_ANON_KEY as apikey
//                                 (chumbo.mcp reads claims and headers from PostgREST's GUCs).
//   CHUMBO_JWKS_URL               the issuer's JWKS (default ${SUPABASE_URL}/auth/v1/.well-known/jwks.json
//                                 when SUPABASE_URL is set): the edge carries it to the database with
//                                 chumbo.set_jwks() on the first request, hourly, and when a token names
//                                 a key id it has not seen (at most every 30 s). Direct mode only.
//   CHUMBO_DB_POOL                pool size (default 8)
//   CHUMBO_DB_PREPARE             "false" behind a transaction pooler without prepared-statement
//                                 support (pgbouncer < 1.21); default true
//   CHUMBO_LISTEN_DATABASE_URL    connection for the one LISTEN session (default DATABASE_URL); set it to a
//                                 session-mode port when DATABASE_URL goes through a transaction pooler
//   CHUMBO_KEEPALIVE_MS           SSE comment keep-alive interval on listen streams (default 15000)
//   CHUMBO_CLIENT_IP_HEADER       take the client address passed to the database (anonymous rate
//                                 limits) from this header's first entry, e.g. x-forwarded-for,
//                                 when a trusted proxy sets it; default: the socket's peer address
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
const ALLOWED_ORIGINS = env("CHUMBO_ALLOWED_ORIGINS") ? new Set(list(env("CHUMBO_ALLOWED_ORIGINS"))) : null;
const MAX_BODY = Number(env("CHUMBO_MAX_BODY_BYTES") ?? 4 * 1024 * 1024);
const MODE = env("CHUMBO_MODE") ?? "direct";
const KEEPALIVE_MS = Number(env("CHUMBO_KEEPALIVE_MS") ?? 15000);
const CLIENT_IP_HEADER = env("CHUMBO_CLIENT_IP_HEADER")?.toLowerCase();

// The function answers at /functions/v1/mcp (local dev, the URL clients use) and at /mcp (what
// the Supabase gateway hands the function after stripping /functions/v1).
const MCP_PATHS = new Set([PUBLIC.pathname, "/functions/v1/mcp", "/mcp"]);
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
const PRM_PATHS = new Set([WELL_KNOWN, ...[...MCP_PATHS].flatMap((p) => [WELL_KNOWN + p, p + WELL_KNOWN])]);

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
  const kid = tokenKid(authorization);
  const age = Date.now() - jwks.at;
  if (age < 3600_000 && (kid === null || jwks.kids.has(kid) || age < 30_000)) return;
  jwks.pending ??= (async () => {
    try {
      const set = await (await fetch(JWKS_URL)).json();
      await sql`select chumbo.set_jwks(${sql.json(set)}::jsonb)`;
      jwks = { kids: new Set(set.keys.map((k: { kid?: string }) => k.kid)), at: Date.now(), pending: null };
    } catch (e) {
      console.error(`chumbo-edge: JWKS refresh from ${JWKS_URL} failed:`, e);
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

function hostAllowed(req: Request): boolean {
  if (ALLOWED_HOSTS.has("*")) return true;
  const host = req.headers.get("host");
  if (!host) return true; // HTTP/1.0 or an in-process call: nothing to rebind
  try {
    return ALLOWED_HOSTS.has(new URL(`http://${host}`).hostname.toLowerCase());
  } catch {
    return false;
  }
}

function originAllowed(origin: string | null): boolean {
  if (origin === null) return true; // not a browser: DNS rebinding needs one
  if (origin === PUBLIC.origin) return true;
  if (ALLOWED_ORIGINS) return ALLOWED_ORIGINS.has("*") || ALLOWED_ORIGINS.has(origin);
  try {
    return ALLOWED_HOSTS.has("*") || ALLOWED_HOSTS.has(new URL(origin).hostname.toLowerCase());
  } catch {
    return false; // "null" and other opaque origins
  }
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

/** The body as text, or null when it is larger than the limit. */
async function readBody(req: Request): Promise<string | null> {
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body ?? []) {
    size += chunk.length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) all.set(c, (at += c.length) - c.length);
  return new TextDecoder().decode(all);
}

type Listen = { id: string | number; notifications: Record<string, boolean> };
type HttpResult = {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  events?: unknown[];
  listen?: Listen;
};

async function forwardDirect(req: Request, path: string, body: string, client?: string): Promise<HttpResult> {
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v)); // Headers already lowercases
  delete headers["cookie"]; // never needed, keep it out of the database
  const request = { method: req.method, path, headers, body, resource: PUBLIC_URL, resource_metadata: PRM_URL, client };
  // sql.json: postgres.js serializes the object once (a JSON string would become a jsonb string).
  const [row] = await sql!`select chumbo.http(${sql!.json(request)}::jsonb) as r`;
  return row.r as HttpResult;
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
  const text = await r.text();
  const out: Record<string, string> = {};
  for (const k of ["www-authenticate", "mcp-protocol-version"]) if (r.headers.has(k)) out[k] = r.headers.get(k)!;
  if (r.status === 401 && !out["www-authenticate"]) out["www-authenticate"] = `Bearer resource_metadata="${PRM_URL}"`;
  return { status: r.status, headers: out, body: text ? JSON.parse(text) : null };
}

const frame = (m: unknown) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
function sseHeaders(h: Headers): Headers {
  h.set("content-type", "text/event-stream");
  h.set("cache-control", "no-cache");
  h.set("x-accel-buffering", "no");
  return h;
}

// ---- subscriptions/listen: long-lived SSE streams fed by LISTEN chumbo_capabilities -------------
const LIST_CHANGED: Record<string, string> = {
  toolsListChanged: "notifications/tools/list_changed",
  promptsListChanged: "notifications/prompts/list_changed",
  resourcesListChanged: "notifications/resources/list_changed",
};
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
type Subscriber = { listen: Listen; send: (chunk: string) => void; end: (last?: unknown) => void };
const subscribers = new Set<Subscriber>();
let listening: Promise<unknown> | null = null;
let fanout: ReturnType<typeof setTimeout> | undefined;
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
    // One DDL transaction may NOTIFY several times (create, comment, grant): one round of
    // notifications per burst.
    fanout ??= setTimeout(() => {
      fanout = undefined;
      for (const s of subscribers) {
        for (const [flag, method] of Object.entries(LIST_CHANGED)) {
          if (s.listen.notifications[flag] !== true) continue;
          s.send(frame({ jsonrpc: "2.0", method, params: { _meta: { [SUBSCRIPTION_ID]: s.listen.id } } }));
        }
      }
    }, 25);
  }).catch((e) => {
    listening = null;
    throw e;
  });
  return listening;
}

async function listenStream(result: HttpResult, origin: string | null): Promise<Response> {
  await ensureListening(); // before the acknowledgement: no change after it may be missed
  const listen = result.listen!;
  const enc = new TextEncoder();
  let sub: Subscriber;
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(keepalive);
    subscribers.delete(sub);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let open = true;
      sub = {
        listen,
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
  const h = cors(origin, new Headers(result.headers ?? {}));
  if (result.events?.length) {
    sseHeaders(h);
    const stream = result.events.map(frame).join("") + (result.body == null ? "" : frame(result.body));
    return new Response(stream, { status: result.status, headers: h });
  }
  if (result.body == null) {
    h.delete("content-type");
    return new Response(null, { status: result.status, headers: h });
  }
  h.set("content-type", "application/json");
  return new Response(JSON.stringify(result.body), { status: result.status, headers: h });
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

export async function handler(req: Request, info?: Deno.ServeHandlerInfo): Promise<Response> {
  const url = new URL(req.url);
  const path = url.pathname.replace(/\/+$/, "") || "/";

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
  if (body === null) return rpcError(413, `Request body larger than ${MAX_BODY} bytes`);
  // jsonb cannot hold U+0000, and JSON text never contains a raw NUL: not JSON, answer as the server would.
  if (body.includes("\0")) return rpcError(400, "Parse error", -32700);
  try {
    if (MODE === "direct") await refreshJwks(req.headers.get("authorization"));
    const result = MODE === "postgrest"
      ? await forwardPostgrest(req, body)
      : await forwardDirect(req, path, body, clientAddress(req, info));
    if (result.listen && sql) return await listenStream(result, origin);
    return respond(result, origin);
  } catch (e) {
    const trace = crypto.randomUUID();
    console.error(`chumbo-edge ${trace}:`, e);
    return rpcError(503, `Service unavailable (trace ${trace})`, -32603);
  }
}

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
