// Routing on a replicated database (docs/scaling.md): the write pool on the primary, a read pool on
// a hot standby, both aimed by the pg_auto_failover monitor when there is one. Off (no
// CHUMBO_STANDBY_DATABASE_URL, no CHUMBO_MONITOR_URL): every call (callDatabase) goes through
// db.ts's callHttp, as on a single server.
//
// A request the standby may serve (not a batch, not subscriptions/listen, not tasks/*, not one with
// a requestState, not a tool the standby already sent back) takes three steps: on the primary, in
// one transaction, chumbo.http_admit (authentication, in-flight slot, rate limit: counted once, on
// the primary, before the read), then on the standby chumbo.http_replica with the admission ticket
// (read-only; the audit rows come back), then chumbo.http_audit on the primary and COMMIT. The
// standby answering 421 `chumbo-route: needs-primary` (the call must write) rolls the admission
// back and the request runs on the primary as usual. Every request has a deadline
// (CHUMBO_DB_DEADLINE_MS) whatever the driver does: a connection still busy then is ended, never
// reused. On a lost connection, 25006, 57P01 or 57P03, the topology is refreshed and the request
// retried, but only when that cannot run a write twice: a read, a request that was never sent, or
// one with an idempotency key.
import postgres from "postgres";
import { env } from "./config.ts";
import {
  aimPrimary,
  callerKey,
  callHttp,
  type HttpRequest,
  type HttpResult,
  openClient,
  Pool,
  pool as writePool,
  PoolBusy,
  survives,
} from "./db.ts";

type Sql = ReturnType<typeof postgres>;

const STANDBY_URL = env("CHUMBO_STANDBY_DATABASE_URL");
const MONITOR_URL = env("CHUMBO_MONITOR_URL");
const DATABASE_URL = env("DATABASE_URL") ?? "";
/** No request waits longer than this for the database, retries included (then 503): the call
 * timeout (chumbo's call_timeout_ms, 30 s by default, which the database enforces itself) plus a
 * few seconds, so only a connection the driver stranded ever meets it. */
const DEADLINE_MS = Number(env("CHUMBO_DB_DEADLINE_MS") ?? 35_000);
/** No new attempt starts later than this after the request arrived (a primary that does not come
 * back answers 503 then, not at the deadline); a listen stream ends after its re-checks got no
 * answer for this long (listen.ts). */
export const RETRY_WINDOW_MS = Number(env("CHUMBO_DB_RETRY_MS") ?? 20_000);
const RETRY_PAUSE_MS = 200;
export const ROUTING = Boolean(STANDBY_URL || MONITOR_URL);

/** Where the read pool's connections go: a standby's host and port ({}: CHUMBO_STANDBY_DATABASE_URL
 * as it is), or null while no standby is usable (every request then goes to the primary). */
let standby: { host?: string; port?: number; target_session_attrs?: string } | null = STANDBY_URL && !MONITOR_URL
  ? {}
  : null;
let generation = 0;
const readPool = ROUTING
  ? new Pool(() => openClient(STANDBY_URL ?? DATABASE_URL, standby ?? {}), Number(env("CHUMBO_DB_READ_POOL") ?? 8))
  : null;

/** Served counts, for tests and docs/scaling.md (`GET …/mcp/.well-known/chumbo-routing` is not served;
 * the edge logs them at exit and the HA suite reads chumbo's audit instead). */
export const served = { standby: 0, primary: 0, retried: 0 };

// ---- the monitor -------------------------------------------------------------------------------
type Node = { host: string; port: number; state: string; goal: string };
let monitor: Sql | null = null;
let lastTopology = "";

/** Asks the monitor who is primary and who is a usable standby; aims the pools. A change of
 * primary evicts every connection of both pools. */
export async function refresh(): Promise<void> {
  if (!MONITOR_URL) {
    if (ROUTING) readPool?.evict(), writePool?.evict();
    return;
  }
  monitor ??= postgres(MONITOR_URL, { max: 1, connect_timeout: 3, idle_timeout: 60, onnotice: () => {} });
  let nodes: Node[];
  try {
    nodes = await withDeadline(
      monitor<Node[]>`select nodehost as host, nodeport as port, reportedstate::text as state,
                              goalstate::text as goal
                         from pgautofailover.node order by nodeid`,
      3_000,
    );
  } catch (e) {
    console.error("chumbo-edge: the monitor did not answer:", (e as Error).message);
    return;
  }
  const primary = nodes.find((n) => n.state === "primary" && n.goal === "primary") ??
    nodes.find((n) => n.goal === "primary" || n.goal === "wait_primary");
  const secondary = nodes.find((n) => n.state === "secondary" && n.goal === "secondary");
  const topology = `${primary?.host}:${primary?.port} ${secondary?.host}:${secondary?.port}`;
  if (topology === lastTopology) return;
  lastTopology = topology;
  generation++;
  // Primary connections only ever to a server that is primary (target_session_attrs), aimed at the
  // one the monitor names; until it names one, at every node (the first primary wins).
  aimPrimary(
    primary
      ? { host: primary.host, port: primary.port, target_session_attrs: "primary" }
      : { host: nodes.map((n) => n.host), port: nodes.map((n) => n.port), target_session_attrs: "primary" },
  );
  // Only to a server in hot standby (a promoted one refuses the connection: the read goes to the primary).
  standby = secondary ? { host: secondary.host, port: secondary.port, target_session_attrs: "standby" } : null;
  writePool?.evict();
  readPool?.evict();
  console.log(`chumbo-edge: topology ${topology} (generation ${generation})`);
}

/** Follows the monitor: its `state` notifications (each transition), and a poll every second
 * (a notification missed while the monitor connection was down). */
export async function followMonitor(): Promise<void> {
  if (!MONITOR_URL) return;
  await refresh();
  const listener = postgres(MONITOR_URL, { max: 1, connect_timeout: 3, onnotice: () => {} });
  listener.listen("state", () => void refresh()).catch((e) =>
    console.error("chumbo-edge: LISTEN state on the monitor failed:", (e as Error).message)
  );
  setInterval(() => void refresh(), Number(env("CHUMBO_MONITOR_POLL_MS") ?? 1000));
}

// ---- one request -------------------------------------------------------------------------------
/** What the edge can tell about a request from its body, without trusting it for anything but routing. */
type Shape = { standbyMay: boolean; read: boolean; idempotent: boolean; tool?: string };
/** Tools a standby sent back (they write), and tools it served (they read). */
const writesTools = new Set<string>();
const readTools = new Set<string>();
/** Methods that only read: retried after a lost connection like any read. */
const READ_METHODS = new Set([
  "initialize",
  "ping",
  "server/discover",
  "tools/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "skills/list",
  "skills/get",
  "tasks/get",
]);

function shape(body: string): Shape {
  let msg: {
    method?: unknown;
    params?: { name?: unknown; arguments?: unknown; _meta?: unknown; requestState?: unknown };
  };
  try {
    msg = JSON.parse(body);
  } catch {
    return { standbyMay: false, read: true, idempotent: false };
  }
  if (Array.isArray(msg) || typeof msg !== "object" || msg === null) {
    return { standbyMay: false, read: false, idempotent: false };
  }
  const method = typeof msg.method === "string" ? msg.method : "";
  const tool = method === "tools/call" && typeof msg.params?.name === "string" ? msg.params.name : undefined;
  const idempotent = /idempotency/i.test(JSON.stringify(msg.params?._meta ?? {})) ||
    /"idempotency_key"|"idempotencyKey"/.test(body);
  // What a standby always sends back (421) goes to the primary at once: subscriptions/listen,
  // tasks/* (tasks live and change on the primary), and an input round's answer (its requestState
  // nonce is spent on the primary: src/call/steps.rs, needs_no_write). Not an idempotency key: a
  // read-only tool ignores it, and any other tool is sent back once and then remembered.
  const standbyMay = method !== "subscriptions/listen" && !method.startsWith("tasks/") &&
    msg.params?.requestState === undefined && !(tool && writesTools.has(tool));
  const read = READ_METHODS.has(method) || (tool !== undefined && readTools.has(tool));
  return { standbyMay, read, idempotent, tool };
}

class NeedsPrimary extends Error {}
class StandbyFailed extends Error {
  constructor(override readonly cause: unknown) {
    super(`the standby failed: ${(cause as Error)?.message}`);
  }
}
class Deadline extends Error {}
/** A request whose outcome the edge cannot know (a write lost with its connection, no key). */
export class OutcomeUnknown extends Error {}

function withDeadline<T>(p: Promise<T>, ms: number, onTimeout?: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => {
        onTimeout?.();
        reject(new Deadline(`no answer within ${ms} ms`));
      }, Math.max(1, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

const CONNECT_CODES = new Set(["ECONNREFUSED", "CONNECT_TIMEOUT", "ENOTFOUND", "EHOSTUNREACH", "57P03"]);
const LOST_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "ECONNRESET",
  "EPIPE",
  "57P01",
  "57P02",
  "25006",
]);
const codeOf = (e: unknown) => String((e as { code?: unknown })?.code ?? "");
/** The request never reached a server (it could not connect). */
const unsent = (e: unknown) => CONNECT_CODES.has(codeOf(e));
/** The connection (or the server's role) went away under it. */
const lost = (e: unknown) => LOST_CODES.has(codeOf(e)) || e instanceof Deadline;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every database call of the edge (a request, a listen stream's re-check): routed on a
 * replicated database, else db.ts's one call. */
export function callDatabase(request: HttpRequest, client?: () => AbortSignal): Promise<HttpResult> {
  return ROUTING ? callRouted(request, String(request.body), client) : callHttp(request, client);
}

/** One request, routed: the standby when it may serve it, the primary otherwise, retried as the
 * rules in the header allow, within DEADLINE_MS. */
async function callRouted(request: HttpRequest, body: string, client?: () => AbortSignal): Promise<HttpResult> {
  const start = Date.now();
  const end = start + DEADLINE_MS;
  const s = shape(body);
  const req = withTraceparent(request);
  let viaStandby = s.standbyMay && standby !== null;
  for (let attempt = 0;; attempt++) {
    const left = end - Date.now();
    if (left <= 0 || (attempt > 0 && Date.now() - start > RETRY_WINDOW_MS)) {
      throw new OutcomeUnknown(`no database answered within ${Date.now() - start} ms`);
    }
    try {
      if (viaStandby && standby !== null) {
        const r = await standbyCall(req, left);
        served.standby++;
        if (s.tool) readTools.add(s.tool);
        return r;
      }
      const r = await primaryCall(req, left, client);
      if (r.status === 421 && r.headers?.["chumbo-route"] === "needs-primary") {
        // The "primary" is a standby now (a failover): nothing ran. Find the primary and go again.
        throw Object.assign(new Error("the write pool reached a standby"), { code: "25006", unsentWrite: true });
      }
      served.primary++;
      return r;
    } catch (e) {
      if (e instanceof NeedsPrimary) {
        if (s.tool) writesTools.add(s.tool);
        viaStandby = false;
        continue;
      }
      if (e instanceof PoolBusy) throw e;
      if (e instanceof StandbyFailed) {
        // A read (the standby serves nothing else) and its admission rolled back: safe to retry,
        // on the primary while the standby is away.
        console.error(`chumbo-edge: ${e.message}; retrying on the primary`);
        viaStandby = false;
        served.retried++;
        void refresh();
        continue;
      }
      const safe = unsent(e) || s.read || s.idempotent || (e as { unsentWrite?: boolean }).unsentWrite === true;
      if ((lost(e) || unsent(e)) && safe) {
        served.retried++;
        await refresh();
        await pause(Math.min(RETRY_PAUSE_MS * (attempt + 1), 1_000));
        viaStandby = s.standbyMay && standby !== null;
        continue;
      }
      if (lost(e)) {
        void refresh();
        throw new OutcomeUnknown(
          `the database connection was lost during a call that may write (${codeOf(e) || (e as Error).message})`,
        );
      }
      throw e;
    }
  }
}

/** Both halves carry one trace id: the client's traceparent, else one made here. */
function withTraceparent(request: HttpRequest): HttpRequest {
  const headers = request.headers as Record<string, string>;
  if (headers?.["traceparent"]) return request;
  const hex = (n: number) =>
    [...crypto.getRandomValues(new Uint8Array(n))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return { ...request, headers: { ...headers, traceparent: `00-${hex(16)}-${hex(8)}-00` } };
}

/** The primary path: db.ts's callHttp, bounded. A call still running at the deadline is cancelled
 * and its connection is not used again (db.ts replaces a connection whose cancel is not known to
 * have been delivered). */
function primaryCall(request: HttpRequest, left: number, client?: () => AbortSignal): Promise<HttpResult> {
  return callHttp(request, client, left);
}

/** The read path: admission on the primary, the read on the standby, the audit rows on the primary. */
async function standbyCall(request: HttpRequest, left: number): Promise<HttpResult> {
  const { body, ...rest } = request;
  const text = typeof body === "string" ? body : null;
  const reqText = JSON.stringify(rest);
  const key = callerKey(request);
  const wc = await writePool!.take(key);
  let wAlive = true;
  let rc: Sql | undefined;
  let rAlive = true;
  const stop = () => {
    // the deadline: neither connection is used again
    wAlive = false;
    rAlive = false;
    wc.end({ timeout: 0 }).catch(() => {});
    rc?.end({ timeout: 0 }).catch(() => {});
  };
  try {
    return await withDeadline(
      wc.begin(async (tx) => {
        const [admitted] = await tx<{ status: number; headers: string; body: string | null; ticket: string | null }[]>`
          select status, headers, body, ticket from chumbo.http_admit(${reqText}, ${text})`;
        if (!admitted.ticket) {
          // refused (or a notification): the primary's answer, its audit row committed with it
          return answerOf(admitted.status, admitted.headers, admitted.body, null, null);
        }
        rc = await readPool!.take(key);
        let row: {
          status: number;
          headers: string;
          body: string | null;
          events: string | null;
          listen: string | null;
          audit: string | null;
        };
        try {
          [row] = await rc`select status, headers, body, events, listen, audit
                             from chumbo.http_replica(${reqText}, ${text}, ${admitted.ticket})`;
        } catch (e) {
          rAlive = survives(e);
          throw new StandbyFailed(e);
        }
        const headers = JSON.parse(row.headers);
        if (row.status === 421 && headers["chumbo-route"] === "needs-primary") throw new NeedsPrimary();
        if (row.audit) await tx`select chumbo.http_audit(${admitted.ticket}, ${row.audit})`;
        return answerOf(row.status, row.headers, row.body, row.events, row.listen);
      }),
      left,
      stop,
    );
  } catch (e) {
    if (e instanceof NeedsPrimary || e instanceof StandbyFailed) throw e;
    if (!(e instanceof Deadline)) wAlive = wAlive && survives(e);
    // The primary half failed: the admission (and with it the read's books) rolled back.
    throw e;
  } finally {
    writePool!.giveBack(wc, wAlive);
    if (rc) readPool!.giveBack(rc, rAlive);
  }
}

const encoder = new TextEncoder();
function answerOf(
  status: number,
  headers: string,
  body: string | null,
  events: string | null,
  listen: string | null,
): HttpResult {
  return {
    status: Number(status),
    headers: JSON.parse(headers),
    body: body === null ? null : encoder.encode(body) as Uint8Array<ArrayBuffer>,
    events: events === null ? undefined : JSON.parse(events),
    listen: listen === null ? undefined : JSON.parse(listen),
  };
}
