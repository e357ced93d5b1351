// The database call: the one SQL call per request, `chumbo.http_parts(request, body)`, over a small
// postgres.js pool (or, in postgrest mode, the same request through PostgREST), and what the edge
// answers when the database ended a call that ran out of time. Every protocol decision is made in
// there; this file only carries the request in and the answer out, and cancels a call whose client
// went away.
import postgres from "postgres";
import { env, MODE, PRM_URL, PUBLIC_URL, SUPABASE_URL } from "./config.ts";

type Sql = ReturnType<typeof postgres>;

/** Waiting for a free connection longer than this answers 503 with Retry-After (CHUMBO_DB_WAIT_MS). */
const WAIT_MS = Number(env("CHUMBO_DB_WAIT_MS") ?? 30_000);

/** No connection came free within WAIT_MS: every one is running a call. */
export class PoolBusy extends Error {}

/** The edge's connections: CHUMBO_DB_POOL clients of one connection each, every one lent to one call
 * at a time. Not postgres.js's own pool and its reserve(): in 3.4.9 (pinned) a connection that
 * closed under a call keeps that call's error and fails the next call given to it, and a caller
 * waiting for a connection is never answered when the connection it is handed is the one a FATAL
 * just closed (a hard-stopped call, src/postgres/deadline.rs): the edge hung, a request at a time, until
 * its pool was gone. Here a client whose connection died is ended and replaced by a new one, and
 * callers wait in the edge's own queue, for a bounded time.
 *
 * The queue is fair between callers (callerKey): a connection that comes free goes to the waiting
 * caller who holds the fewest connections now, the longest waiting among them. First come, first
 * served would let a caller with many slow calls queued (each bounded by the database, and at most
 * max_in_flight of them running per principal) keep everyone else waiting behind them until
 * CHUMBO_DB_WAIT_MS and a 503; this way another caller gets the next connection that comes free. */
export class Pool {
  #all = new Set<Sql>();
  /** Clients opened before the last evict(): replaced when given back (route.ts, a failover). */
  #stale = new WeakSet<Sql>();
  #idle: Sql[] = [];
  #waiting: { key: string; give: (client: Sql) => void }[] = [];
  /** Whom each lent client serves, and how many clients each caller holds (no entry: none). */
  #lentTo = new Map<Sql, string>();
  #holding = new Map<string, number>();

  constructor(private readonly open: () => Sql, size: number) {
    for (let i = 0; i < size; i++) this.#idle.push(this.#add());
  }

  #add(): Sql {
    const client = this.open(); // connects on its first query
    this.#all.add(client);
    return client;
  }

  #lend(client: Sql, key: string): Sql {
    this.#lentTo.set(client, key);
    this.#holding.set(key, (this.#holding.get(key) ?? 0) + 1);
    return client;
  }

  /** A client for one call of the caller `key`, alone on its connection until given back. */
  take(key: string): Promise<Sql> {
    // The most recently used first: its connection is warm, and the others may time out idle.
    // (A client is idle only while nobody waits.)
    const idle = this.#idle.pop();
    if (idle) return Promise.resolve(this.#lend(idle, key));
    return new Promise((resolve, reject) => {
      const waiter = {
        key,
        give: (client: Sql) => {
          clearTimeout(timer);
          resolve(this.#lend(client, key));
        },
      };
      const timer = setTimeout(() => {
        this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
        reject(new PoolBusy(`no database connection came free within ${WAIT_MS} ms`));
      }, WAIT_MS);
      this.#waiting.push(waiter);
    });
  }

  /** Ends every idle connection and marks the busy ones to be replaced when given back: after a
   * failover, none of them may be used again (they may point at a server that changed role). */
  evict() {
    for (const c of this.#all) this.#stale.add(c);
    const idle = this.#idle.splice(0);
    for (const c of idle) this.giveBack(c, false);
  }

  /** A client back from its call; `alive` false when its connection died, so it is replaced. */
  giveBack(client: Sql, alive: boolean) {
    const key = this.#lentTo.get(client);
    if (key !== undefined) {
      this.#lentTo.delete(client);
      const held = this.#holding.get(key)! - 1;
      if (held > 0) this.#holding.set(key, held);
      else this.#holding.delete(key);
    }
    if (!alive || this.#stale.has(client)) {
      this.#all.delete(client);
      client.end({ timeout: 0 }).catch(() => {});
      client = this.#add();
    }
    const next = this.#next();
    if (next) next.give(client);
    else this.#idle.push(client);
  }

  /** The waiter served next: its caller holds the fewest clients, and it came first among those. */
  #next() {
    let best = -1, fewest = Infinity;
    for (let i = 0; i < this.#waiting.length && fewest > 0; i++) {
      const held = this.#holding.get(this.#waiting[i].key) ?? 0;
      if (held < fewest) [best, fewest] = [i, held];
    }
    return best < 0 ? undefined : this.#waiting.splice(best, 1)[0];
  }

  end(): Promise<unknown> {
    return Promise.all([...this.#all].map((c) => c.end({ timeout: 1 }).catch(() => {})));
  }
}

/** The driver's own work on a connection (its first query's array-type lookup) is a promise no
 * caller holds; when the pool ends that connection mid-way (a client left while its new connection
 * was still starting), postgres.js rejects it with a connection error and nothing handles it, which
 * would stop the whole edge (Deno exits on an unhandled rejection): a burst of clients leaving
 * mid-call did, every time (tests/e2e, "a burst of clients leaving mid-call"). Those, and only
 * those, are logged instead; the pool has already replaced the connection. */
const TEARDOWN = new Set(["CONNECTION_DESTROYED", "CONNECTION_CLOSED", "CONNECTION_ENDED"]);
globalThis.addEventListener("unhandledrejection", (e) => {
  const code = (e.reason as { code?: unknown } | null)?.code;
  if (typeof code === "string" && TEARDOWN.has(code)) {
    e.preventDefault();
    console.error(`chumbo-edge: a connection ended during the driver's own work (${code})`);
  }
});

/** One connection's client for `url`; `where` (route.ts) overrides its host and port. */
export const openClient = (url: string, where: Record<string, unknown> = {}) =>
  postgres(url, {
    max: 1,
    prepare: env("CHUMBO_DB_PREPARE") !== "false",
    idle_timeout: 60,
    connect_timeout: Number(env("CHUMBO_DB_CONNECT_TIMEOUT_S") ?? 10),
    connection: { application_name: "chumbo-edge" },
    ...where,
  });

/** Where new primary connections go (route.ts sets it from the monitor); empty: DATABASE_URL's hosts. */
let target: Record<string, unknown> = {};
const primaryTarget = () => target;
/** The pool on DATABASE_URL: the primary (route.ts may re-aim it at the primary the monitor names). */
export const pool = MODE === "direct"
  ? new Pool(() => openClient(env("DATABASE_URL") ?? "", primaryTarget()), Number(env("CHUMBO_DB_POOL") ?? 8))
  : null;
export function aimPrimary(where: Record<string, unknown>) {
  target = where;
}

/** Whose request this is, for the pool's fair share: the credential it carries (a bearer token or
 * an API key, as sent: the database verifies it, and refuses a made-up one at once, so that holds a
 * connection for no time), else the client's address. */
export function callerKey(request: HttpRequest): string {
  const headers = request.headers as Record<string, string> | undefined;
  return headers?.["authorization"] ?? headers?.["x-api-key"] ?? `address ${request.client ?? ""}`;
}
/** The key of the edge's own calls (the JWKS courier). */
const EDGE_KEY = "edge";

/** Runs `work` on a connection of its own (direct mode only). A connection that died under it
 * (any error other than a PostgreSQL ERROR: a FATAL, a closed socket) is replaced. */
export async function withConnection<T>(work: (db: Sql) => Promise<T>): Promise<T> {
  const db = await pool!.take(EDGE_KEY);
  let alive = true;
  try {
    return await work(db);
  } catch (e) {
    alive = survives(e);
    throw e;
  } finally {
    pool!.giveBack(db, alive);
  }
}

/** Whether a connection is still usable after `e`: only a PostgreSQL ERROR leaves it open. */
export const survives = (e: unknown) =>
  e instanceof postgres.PostgresError && e.severity !== "FATAL" && e.severity !== "PANIC";

/** Edge shutdown. */
export const closeDatabase = () => pool?.end();

export const utf8 = new TextDecoder();

// What the database says about an acknowledged listen request. principal, version, expires_at and
// max_streams come from newer chumbo builds; without them the edge falls back to forwarding every
// NOTIFY and no per-principal bound.
export type Listen = {
  id: string | number;
  notifications: Record<string, boolean | string[]>; // list-changed flags; taskIds: the tasks watched
  principal?: string; // opaque digest of who is listening
  version?: number; // the capability version this principal sees
  expires_at?: number | null; // unix seconds: the token's end, when the stream must be re-checked
  max_streams?: number; // open streams allowed per principal
};
export type HttpResult = {
  status: number;
  headers?: Record<string, string>;
  body?: Uint8Array<ArrayBuffer> | null; // JSON text (UTF-8), forwarded as it is
  events?: unknown[];
  listen?: Listen;
  /** Traced requests only (trace.ts): the phases the database timed, JSON, and the edge's clock
   * (ms since the epoch) when it sent the query, which they are anchored at. */
  spans?: { text: string; sentAt: number };
};
/** The edge's clock for span times, in ms since the epoch: the monotonic clock from the process's
 * start. Every time in a span of the edge's comes from it (trace.ts): the SDK's own default
 * anchors a span at `Date.now()`, whole milliseconds, so a span it timed could end up to a
 * millisecond before the phases inside it. */
export const clock = () => performance.timeOrigin + performance.now();

/** `trace: true` (trace.ts) asks the database for the request's spans. */
export type HttpRequest = { [k: string]: string | Record<string, string> | boolean | undefined };

/** The request as chumbo.http takes it. */
export function httpRequest(req: Request, path: string, body: string, client?: string): HttpRequest {
  const headers: Record<string, string> = {};
  req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v)); // Headers already lowercases
  delete headers["cookie"]; // never needed, keep it out of the database
  return { method: req.method, path, headers, body, resource: PUBLIC_URL, resource_metadata: PRM_URL, client };
}

/** Send the cancel request for a query; resolves to true once the server closed the cancel
 * connection, which it does after it signalled the backend, and to false when the cancel
 * connection failed (whether the backend was signalled is then unknown). query.cancel() drops that
 * promise; the canceller it calls (postgres.js 3.4.9, pinned in deno.lock) returns it. */
function cancelRequest(query: object): Promise<boolean> {
  const q = query as { canceller?: ((q: object) => Promise<unknown>) | null; cancel(): void };
  const canceller = q.canceller;
  if (typeof canceller !== "function") return Promise.resolve((q.cancel(), false));
  q.canceller = null;
  return canceller(query).then(() => true, () => false);
}

// Reading req.signal is not free: Deno then aborts it after every response, a DOMException each.
// So only a call still running after WATCH_MS reads it; a client that left before then is seen
// at once (the signal is already aborted when first read).
const WATCH_MS = 10;

/** One chumbo.http_parts call, on a pool connection of its own. When the signal from `client()`
 * aborts (the HTTP client went away) while the call is in flight, it is cancelled (a protocol-level
 * cancel request, so it works through pgbouncer too). A cancel request names a backend, not a
 * query: sent after the call finished, or delivered after the connection moved on to the next call,
 * it would cancel that one. So the connection runs this call alone (its own client from the pool), a
 * cancel goes out only before the answer arrived, and a connection a cancel was sent for is replaced. */
export async function callHttp(
  request: HttpRequest,
  client?: () => AbortSignal,
  deadlineMs?: number,
): Promise<HttpResult> {
  // The body goes as its own text parameter and comes back as text: neither is escaped into a
  // JSON string, nor parsed into jsonb and printed again on the way.
  const { body, ...rest } = request;
  const text = typeof body === "string" ? body : null;
  const db = await pool!.take(callerKey(request));
  // Raw columns: the body's bytes go from the socket to the response without becoming a string
  // (a ~30 kB string per call that V8 copies around and promotes into the old heap).
  // Traced, a sixth column, `spans`; untraced, the query is the one it always was.
  const traced = rest.trace === true;
  const sentAt = traced ? clock() : 0;
  const query = traced
    ? db`select status, headers, body, events, listen, spans
           from chumbo.http_parts(${JSON.stringify(rest)}, ${text})`.raw()
    : db`select status, headers, body, events, listen
                     from chumbo.http_parts(${JSON.stringify(rest)}, ${text})`.raw();
  let answered = false;
  let cancelled: Promise<boolean> | undefined;
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
  // The routed edge's deadline (route.ts): a call still unanswered then is cancelled and its
  // connection ended, so a connection stranded by the driver can never hold the request.
  const hard = deadlineMs === undefined ? undefined : setTimeout(() => {
    cancel();
    db.end({ timeout: 0 }).catch(() => {});
  }, deadlineMs);
  try {
    const [[status, headers, body, events, listen, spans]] = await query;
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
      listen: listen === null ? undefined : JSON.parse(utf8.decode(listen), idsAsWritten),
      spans: spans == null ? undefined : { text: utf8.decode(spans), sentAt },
    };
  } catch (e) {
    answered = true;
    alive = survives(e);
    throw e;
  } finally {
    clearTimeout(watch);
    clearTimeout(hard);
    signal?.removeEventListener("abort", cancel);
    // A connection a cancel request was sent for is never used again (the pool replaces it): the
    // request may reach its backend after the call ended (its answer was already on the way), and
    // a backend cancelled between calls, or during the next one, answers that next call with an
    // error or desynchronises the protocol (a query answered with no row). A client that leaves
    // mid-call is rare; a fresh connection is cheap by comparison.
    pool!.giveBack(db, alive && !cancelled);
  }
}

// Supabase-hosted alternative: PostgREST runs chumbo.mcp(body) as the role from the caller's JWT.
// No SSE framing in this mode (PostgREST returns only the function's value).
export async function forwardPostgrest(req: Request, body: string): Promise<HttpResult> {
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

/** The database ended the call's backend because the call went on past its time bound after being
 * cancelled (a tool that catches query_canceled; src/postgres/deadline.rs): FATAL with SQLSTATE 57014. Its
 * transaction was rolled back and its in-flight slot released; the pool replaces the connection. */
export const hardStopped = (e: unknown) =>
  e instanceof postgres.PostgresError && e.severity === "FATAL" && e.code === "57014";

/** A JSON.parse reviver that keeps a JSON-RPC id beyond 2^53 as the client wrote it (JSON.stringify
 * writes it back digit for digit): as a JavaScript number it would come back as another number,
 * which the client could not match to its request. The database takes any integer id. */
function idsAsWritten(key: string, value: unknown, context?: { source?: string }): unknown {
  if (key !== "id" || typeof value !== "number" || Number.isSafeInteger(value) || !context?.source) return value;
  return (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(context.source);
}

/** The answer the database gives a call that ran out of time, for a request whose backend could not
 * give it: a tool result with isError for tools/call, a JSON-RPC error for anything else. */
export function timeoutAnswer(body: string, trace: string): HttpResult {
  const text = `The call took too long and was cancelled (trace id ${trace})`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body, idsAsWritten);
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
