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
//   CHUMBO_DB_WAIT_MS             how long a request waits for a free pool connection before the edge
//                                 answers 503 with Retry-After (default 30000)
//   CHUMBO_DB_PREPARE             "false" behind a transaction pooler without prepared-statement
//                                 support (pgbouncer < 1.21); default true
//   CHUMBO_MONITOR_URL            a replicated database (route.ts, docs/scaling.md): the pg_auto_failover
//                                 monitor; reads go to the standby it names, writes to the primary
//   CHUMBO_STANDBY_DATABASE_URL   or a fixed read replica (no monitor); neither: one server, as before
//   CHUMBO_DB_READ_POOL           read pool size (default 8)
//   CHUMBO_DB_DEADLINE_MS         no request waits longer for the database (default 35000, routed only)
//   CHUMBO_DB_RETRY_MS            no retry starts later than this after the request (default 20000);
//                                 a listen stream whose re-checks get no answer this long ends
//   CHUMBO_MONITOR_POLL_MS        how often the monitor is asked besides its notifications (default 1000)
//   CHUMBO_DB_CONNECT_TIMEOUT_S   connect timeout of a database connection (default 10)
//   CHUMBO_LISTEN_DATABASE_URL    connection for the one LISTEN session (default DATABASE_URL); set it to a
//                                 session-mode port when DATABASE_URL goes through a transaction pooler
//   CHUMBO_KEEPALIVE_MS           SSE comment keep-alive interval on listen streams (default 15000)
//   CHUMBO_CLIENT_IP_HEADER       take the client address passed to the database (anonymous rate
//                                 limits) from this header's first entry, e.g. x-forwarded-for,
//                                 when a trusted proxy sets it; default: the socket's peer address
//   CHUMBO_CONSENT_PAGE           "on": serve the OAuth consent page at ${CHUMBO_PUBLIC_URL}/consent
//                                 (consent.ts; needs SUPABASE_URL and SUPABASE_ANON_KEY; see README.md)
//   CHUMBO_CONSENT_APP_NAME       the name the consent page shows (default: the host of CHUMBO_PUBLIC_URL)
//   OTEL_EXPORTER_OTLP_ENDPOINT   (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _METRICS_ENDPOINT) set: tracing on,
//                                 by the OpenTelemetry JS SDK in the edge (otel.ts reads the other OTEL_*
//                                 variables: protocol, headers, service name, sampler, batch delay;
//                                 OTEL_SDK_DISABLED=true keeps it off). Decided at start: each request then
//                                 exports an HTTP server span and an MCP server span per message with the
//                                 phases the database timed (trace.ts, docs/observability.md). Off,
//                                 nothing of it is loaded or run.
//   CHUMBO_LISTEN, CHUMBO_PORT    standalone only (scripts/edge.sh): comma-separated addresses to
//                                 bind, port. Unset under the Supabase runtime, which owns the socket.
//
// The code, by concern: index.ts (this file: the request pipeline and the server), config.ts (the
// environment above), http.ts (HTTP framing: Host/Origin, CORS, body, JSON or SSE), auth.ts
// (protected-resource metadata, the JWKS courier), db.ts (the chumbo.http_parts call, postgrest
// mode), route.ts (reads on a standby, writes on the primary, failover), listen.ts (subscriptions/listen streams), consent.ts (the optional consent page), trace.ts
// (spans and metrics out, with OpenTelemetry on) and otel.ts (the OpenTelemetry SDK, configured).
import {
  BODY_TIMEOUT_MS,
  env,
  list,
  MAX_BODY,
  MCP_PATHS,
  MODE,
  PORT,
  PRM_PATHS,
  PUBLIC,
  PUBLIC_URL,
  SUPABASE_URL,
  TRACING,
} from "./config.ts";
import { protectedResourceMetadata, refreshJwks } from "./auth.ts";
import { forwardPostgrest, hardStopped, httpRequest, PoolBusy, timeoutAnswer } from "./db.ts";
import { callDatabase, followMonitor, OutcomeUnknown, ROUTING } from "./route.ts";
import {
  clientAddress,
  cors,
  hostAllowed,
  json,
  originAllowed,
  preflight,
  readBody,
  requestPath,
  respond,
  rpcError,
} from "./http.ts";
import { ensureListening, hints, isListen, listenStream } from "./listen.ts";
import type { HttpSpan } from "./trace.ts";

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

// Tracing is decided once: off, no request pays for it (not even the import).
const TRACE = TRACING ? await import("./trace.ts") : null;

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
  if (!TRACE) return await post(req, path, origin, info);
  const http = TRACE.begin(req, path);
  let status = 500; // what Deno.serve answers when the handler throws
  try {
    const response = await post(req, path, origin, info, http);
    status = response.status;
    return response;
  } finally {
    TRACE.end(http, status);
  }
}

/** An MCP message (a POST to the MCP URL): its body read, then answered by the database. */
async function post(
  req: Request,
  path: string,
  origin: string | null,
  info?: Deno.ServeHandlerInfo,
  http?: HttpSpan,
): Promise<Response> {
  const body = await readBody(req);
  if (typeof body !== "string") {
    if (body.unread === "too large") return rpcError(413, `Request body larger than ${MAX_BODY} bytes`);
    if (body.unread === "not text") return rpcError(400, "Parse error: the body is not JSON text in UTF-8", -32700);
    // Connection: close asks the client to go; Deno.serve gives a handler no way to drop the
    // socket itself (README.md, Slow clients). Nothing is held for this request any more.
    const r = rpcError(408, `Request body not received within ${BODY_TIMEOUT_MS} ms`);
    r.headers.set("connection", "close");
    return r;
  }
  try {
    if (MODE === "postgrest") return respond(await forwardPostgrest(req, body), origin);
    await refreshJwks(req.headers.get("authorization"));
    const request = httpRequest(req, path, body, clientAddress(req, info));
    if (isListen(body)) await ensureListening(); // before the acknowledgement: no change after it may be missed
    const hintsBefore = hints;
    // Traced, a copy of the request asks for spans: a listen stream's re-checks are not traced.
    const traced = http ? TRACE!.traced(request, http) : request;
    // On a replicated database (route.ts) the request is routed and retried; else one call.
    const result = await callDatabase(traced, () => req.signal);
    if (http) TRACE!.exportSpans(result, http);
    if (result.listen) {
      return listenStream(result, request, hintsBefore, origin, TRACE ? () => TRACE.session(request) : undefined);
    }
    return respond(result, origin);
  } catch (e) {
    if (req.signal.aborted) {
      console.error(`chumbo-edge: the client went away; its SQL call was cancelled (${(e as Error)?.message})`);
      return new Response(null, { status: 499 });
    }
    if (e instanceof OutcomeUnknown) {
      // Only a call that may write and was lost with its connection (or outlived the deadline):
      // the client decides whether to retry (with an idempotency key, safely).
      const r = rpcError(503, `Service unavailable: ${e.message}; the call may or may not have run`, -32603);
      r.headers.set("retry-after", "1");
      return r;
    }
    if (e instanceof PoolBusy) {
      // Nothing ran: every connection is busy with a call (each bounded by the database).
      const r = rpcError(503, `Service busy, retry shortly (${e.message})`, -32603);
      r.headers.set("retry-after", "1");
      return r;
    }
    // A hard stop's FATAL names the request's trace (src/postgres/deadline.rs): the answer and this
    // line carry it, as the database's log line does. Anything else gets an id of the edge's own.
    const trace = (hardStopped(e) && (e as Error).message.match(/\(trace id ([0-9a-f]{32})\)/)?.[1]) ||
      crypto.randomUUID();
    console.error(`chumbo-edge ${trace}:`, e);
    if (hardStopped(e)) return respond(timeoutAnswer(body, trace), origin);
    return rpcError(503, `Service unavailable (trace ${trace})`, -32603);
  }
}

// Routing (route.ts): follow the pg_auto_failover monitor, when there is one, from the start.
if (ROUTING && MODE === "direct") {
  followMonitor().catch((e) => console.error("chumbo-edge: the monitor:", (e as Error).message));
}

const listen = list(env("CHUMBO_LISTEN"));
if (listen.length) {
  // Standalone (scripts/edge.sh stops it with SIGTERM): the spans still queued leave first.
  if (TRACE) Deno.addSignalListener("SIGTERM", () => TRACE.flush().finally(() => Deno.exit(0)));
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
