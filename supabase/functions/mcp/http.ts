// HTTP framing: Host/Origin checks, CORS, the request body (size limit and time bound), the
// request path, and the answer as JSON or SSE. The database decides what the answer says; this file
// only decides how it goes over HTTP.
import {
  ALLOWED_HOSTS,
  ALLOWED_ORIGINS,
  ANY_ORIGIN,
  BODY_TIMEOUT_MS,
  canonicalOrigin,
  CLIENT_IP_HEADER,
  list,
  MAX_BODY,
  MCP_PATHS,
} from "./config.ts";
import { type HttpResult, utf8 } from "./db.ts";

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

export function json(status: number, body: unknown, headers: HeadersInit = {}) {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify(body), { status, headers: h });
}
export const rpcError = (status: number, message: string, code = -32000) =>
  json(status, { jsonrpc: "2.0", id: null, error: { code, message } });

// The verdict per Host value (a URL parse each is the costly part); bounded, since clients choose it.
const hostVerdicts = new Map<string, boolean>();
export function hostAllowed(req: Request): boolean {
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
export function originAllowed(origin: string | null): boolean {
  if (origin === null) return true; // not a browser: DNS rebinding needs one
  if (ANY_ORIGIN) return true;
  const o = canonicalOrigin(origin);
  return o !== null && ALLOWED_ORIGINS.has(o);
}

export function cors(origin: string | null, h = new Headers()): Headers {
  if (origin) {
    h.set("access-control-allow-origin", origin);
    h.append("vary", "origin");
    h.set("access-control-expose-headers", EXPOSE_HEADERS);
  }
  return h;
}

export function preflight(req: Request, origin: string | null): Response {
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

/** `p`, or "timeout" once the body has taken BODY_TIMEOUT_MS. */
function inTime<T>(p: Promise<T>): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"timeout">((r) => (timer = setTimeout(r, BODY_TIMEOUT_MS, "timeout")));
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}
// JSON between systems is UTF-8 (RFC 8259 §8.1). A lenient decoder would pass a body in another
// encoding (Latin-1, say) on with U+FFFD for each byte it cannot read: the tool would get other text
// than the client sent. Such a body is refused instead (post, in index.ts).
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
function asText(bytes: Uint8Array): string | Unread {
  try {
    const text = strictUtf8.decode(bytes);
    // jsonb cannot hold U+0000, and JSON text never contains a raw NUL.
    return text.includes("\0") ? NOT_TEXT : text;
  } catch {
    return NOT_TEXT;
  }
}

/** Why a body was not read (an object: a body may be any text, "timeout" too). */
export type Unread = { unread: "too large" | "timeout" | "not text" };
const TOO_LARGE: Unread = { unread: "too large" }, TIMEOUT: Unread = { unread: "timeout" };
const NOT_TEXT: Unread = { unread: "not text" };

/** The body as text, or why not: beyond the limit, not complete in time, or not UTF-8 text that
 * PostgreSQL can hold. */
export async function readBody(req: Request): Promise<string | Unread> {
  const length = req.headers.get("content-length");
  if (Number(length ?? 0) > MAX_BODY) return TOO_LARGE;
  if (length !== null && !req.headers.has("transfer-encoding")) {
    // The server hands over at most content-length bytes (HTTP framing), so the limit holds
    // without counting; arrayBuffer() takes a body that is already buffered without a stream. A
    // stalled one is left behind: the server closes it with the response, which settles it.
    const bytes = req.arrayBuffer();
    bytes.catch(() => {});
    const read = await inTime(bytes);
    return read === "timeout" ? TIMEOUT : asText(new Uint8Array(read));
  }
  const reader = req.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await inTime(reader.read());
      if (next === "timeout") return TIMEOUT;
      if (next.done) break;
      size += next.value.length;
      if (size > MAX_BODY) return TOO_LARGE;
      chunks.push(next.value);
    }
  } finally {
    reader.cancel().catch(() => {}); // a no-op after the end; else stop reading
  }
  if (chunks.length === 1) return asText(chunks[0]);
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) all.set(c, (at += c.length) - c.length);
  return asText(all);
}

export const frame = (m: unknown) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
export function sseHeaders(h: Headers): Headers {
  h.set("content-type", "text/event-stream");
  h.set("cache-control", "no-cache");
  h.set("x-accel-buffering", "no");
  return h;
}

export function respond(result: HttpResult, origin: string | null): Response {
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
export function clientAddress(req: Request, info?: Deno.ServeHandlerInfo): string | undefined {
  if (CLIENT_IP_HEADER) {
    const v = req.headers.get(CLIENT_IP_HEADER)?.split(",")[0]?.trim();
    if (v) return v;
  }
  const addr = info?.remoteAddr as Deno.NetAddr | undefined;
  return addr?.hostname;
}

/** The request's path without trailing slashes. The hot case, the exact MCP path with no query,
 * is sliced off the URL; anything else goes through the URL parser (dot segments, escapes). */
export function requestPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const raw = start > 0 ? url.slice(start) : "";
  if (MCP_PATHS.has(raw) && (raw === "/" || !raw.endsWith("/"))) return raw;
  return new URL(url).pathname.replace(/\/+$/, "") || "/";
}
