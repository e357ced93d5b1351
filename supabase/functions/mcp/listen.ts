// subscriptions/listen (MCP 2026-07-28): the edge's one long-lived state. Each acknowledged listen
// request keeps its SSE response open; ONE shared LISTEN connection on `chumbo_capabilities` turns
// NOTIFYs (only hints: any role may NOTIFY) into re-checks of each stream's own request through the
// database, which decides whether the stream goes on and whether its capabilities changed.
import postgres from "postgres";
import { env, KEEPALIVE_MS } from "./config.ts";
import { closeDatabase, type HttpRequest, type HttpResult, type Listen, utf8 } from "./db.ts";
import { cors, frame, sseHeaders } from "./http.ts";
import { callDatabase, RETRY_WINDOW_MS } from "./route.ts";

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
  unanswered?: number; // when the re-checks began to get no answer from the database (Date.now())
  tasks?: Map<string, TaskWatch>; // notifications/tasks: the last status sent, per task id
};
type TaskWatch = { status?: string; checking?: Promise<void>; again?: boolean };
const subscribers = new Set<Subscriber>();
let listening: Promise<unknown> | null = null;
let fanout: ReturnType<typeof setTimeout> | undefined;
let lastRound = 0;
const RECHECK_SPACING_MS = 1000;
export let hints = 0; // NOTIFYs seen so far: a stream whose acknowledgement raced one is re-checked at once
let listenSql: ReturnType<typeof postgres> | undefined;
let listens = 0; // times the LISTEN was (re)established

/** One LISTEN connection for all streams, outside the pool (postgres.js reconnects and re-listens
 * on its own). */
export function ensureListening(): Promise<unknown> {
  const listener = listenSql ??= postgres(env("CHUMBO_LISTEN_DATABASE_URL") ?? env("DATABASE_URL") ?? "", {
    max: 1,
    connection: { application_name: "chumbo-edge-listen" },
  });
  listening ??= Promise.all([
    listener.listen("chumbo_capabilities", () => {
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
    }, () => {
      // (Re)listening. After a reconnect (the server restarted, a failover: DATABASE_URL with
      // target_session_attrs=primary finds the new primary) a NOTIFY may have been missed while no
      // one listened: every stream is re-checked, and its version tells whether anything changed.
      if (listens++ === 0) return;
      hints++;
      for (const s of subscribers) void recheck(s);
    }),
    listener.listen("chumbo_tasks", (taskId) => {
      // A task changed (or someone says so: any role may NOTIFY): each stream watching that id
      // asks tasks/get with its own credentials, and the database decides what it may see.
      for (const s of subscribers) if (watches(s, taskId)) void taskCheck(s, taskId);
    }),
  ]).catch((e) => {
    listening = null;
    throw e;
  });
  return listening;
}

/** Ask the database again with the stream's own request (same token, same body). Refused: the
 * stream ends with the database's error for the listen id. Accepted: list-changed notifications
 * go out only if the capability version moved. No answer at all (a restart, a failover, a network
 * fault) is not a refusal: asked again every second, and only once the database has not answered
 * for RETRY_WINDOW_MS does the stream end, or at once when its token's end has passed. Calls for one
 * stream never overlap. */
function recheck(s: Subscriber): Promise<void> {
  if (s.checking) {
    s.again = true;
    return s.checking;
  }
  s.checking = (async () => {
    do {
      s.again = false;
      let result: HttpResult;
      const asked = Date.now();
      try {
        result = await callDatabase(s.request);
        s.unanswered = undefined;
      } catch (e) {
        s.unanswered ??= asked;
        if (!subscribers.has(s)) return;
        // Past its token's end (expires_at: exp plus the database's clock-skew leeway, the last
        // second it accepts the token) the stream waits for no answer: the database would refuse
        // it, and a stream never outlives its token on the strength of a database that cannot be asked.
        const expired = typeof s.listen.expires_at === "number" && Date.now() >= s.listen.expires_at * 1000;
        if (!expired && Date.now() - s.unanswered < RETRY_WINDOW_MS) {
          console.error(`chumbo-edge: a listen re-check got no answer, asking again in 1 s: ${(e as Error)?.message}`);
          recheckIn(s, 1);
          return;
        }
        const trace = crypto.randomUUID();
        console.error(`chumbo-edge ${trace}: listen re-check failed for ${Date.now() - s.unanswered} ms:`, e);
        const message = expired
          ? `Subscription ended: its token expired while the database did not answer (trace ${trace})`
          : `Service unavailable (trace ${trace})`;
        result = {
          status: 503,
          body: new TextEncoder().encode(JSON.stringify({ error: { code: -32603, message } })),
        };
      }
      if (!subscribers.has(s)) return;
      if (result.status === 429) {
        // Too many calls right now is not a refusal of the stream: ask again when told to.
        const after = Number(result.headers?.["retry-after"]);
        recheckIn(s, after > 0 ? Math.min(after, 60) : 1);
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

/** The stream's one timer (its token's expiry otherwise) set to re-check in `seconds`; a hint
 * meanwhile re-checks at once and sets the timer again. */
function recheckIn(s: Subscriber, seconds: number) {
  clearTimeout(s.expiry);
  s.expiry = setTimeout(() => void recheck(s), seconds * 1000);
}

function watches(s: Subscriber, taskId: string): boolean {
  const ids = s.listen.notifications.taskIds;
  return Array.isArray(ids) && ids.includes(taskId);
}

/** notifications/tasks for one watched task: tasks/get as the stream's caller (its request's
 * headers and `_meta`), sent on when the status moved. Checks
 * of one task on one stream never overlap. */
function taskCheck(s: Subscriber, taskId: string): Promise<void> {
  const tasks = s.tasks ??= new Map();
  const w = tasks.get(taskId) ?? {};
  tasks.set(taskId, w);
  if (w.checking) {
    w.again = true;
    return w.checking;
  }
  w.checking = (async () => {
    do {
      w.again = false;
      let meta: unknown;
      try {
        meta = JSON.parse(String(s.request.body)).params?._meta;
      } catch { /* the database refuses it below */ }
      const headers = {
        ...(s.request.headers as Record<string, string>),
        "mcp-method": "tasks/get",
        "mcp-name": taskId,
      };
      const body = JSON.stringify({ jsonrpc: "2.0", id: 0, method: "tasks/get", params: { taskId, _meta: meta } });
      let task: Record<string, unknown> | undefined;
      try {
        const result = await callDatabase({ ...s.request, headers, body });
        if (result.status === 200 && result.body) task = JSON.parse(utf8.decode(result.body)).result;
      } catch { /* a hint missed: the client still polls */ }
      if (!subscribers.has(s) || !task || typeof task.status !== "string" || task.status === w.status) continue;
      w.status = task.status;
      const { resultType: _r, _meta: _m, ...params } = task;
      s.send(frame({
        jsonrpc: "2.0",
        method: "notifications/tasks",
        params: { ...params, _meta: { [SUBSCRIPTION_ID]: s.listen.id } },
      }));
    } while (w.again);
  })().finally(() => (w.checking = undefined));
  return w.checking;
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

/** Told when a stream ends (trace.ts's session metrics, with OpenTelemetry on): the JSON-RPC error
 * code of its last message when the server ended it with an error. */
export type StreamWatch = { ended(errorCode?: number): void };

export function listenStream(
  result: HttpResult,
  request: HttpRequest,
  hintsBefore: number,
  origin: string | null,
  watch?: () => StreamWatch,
): Response {
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
  let watching: StreamWatch | undefined;
  const stop = (last?: unknown) => {
    clearInterval(keepalive);
    clearTimeout(sub.expiry);
    if (subscribers.delete(sub)) watching?.ended((last as { error?: { code?: number } })?.error?.code);
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
          stop(last);
          try {
            controller.close();
          } catch { /* already closed */ }
        },
      };
      for (const e of result.events ?? []) sub.send(frame(e)); // the acknowledgement first
      subscribers.add(sub);
      watching = watch?.();
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
  await Promise.all([closeDatabase(), listenSql?.end({ timeout: 1 }).catch(() => {})]);
  Deno.exit(0);
}
for (const sig of ["SIGTERM", "SIGINT"] as const) {
  try {
    Deno.addSignalListener(sig, shutdown);
  } catch { /* a runtime without signal listeners (hosted) */ }
}

/** Cheap pre-check (the database decides): may this body be a subscriptions/listen request? */
export const isListen = (body: string) => body.includes("subscriptions/listen");
