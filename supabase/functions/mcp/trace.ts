// Spans out (docs/observability.md), loaded only when tracing is on (config.ts, TRACING: an OTLP
// endpoint is configured). Per request the edge makes an HTTP server span (its parent: the client's
// `traceparent` header, when valid) and, per JSON-RPC message, an MCP server span by the OTel MCP
// semantic conventions, with the phases the extension timed inside PostgreSQL (http_parts' `spans`
// column) as its children. What goes into a span is what the database reported as facts (method,
// tool or prompt name, id, protocol version, outcome) and times: never arguments, results,
// headers, tokens or rows. And the conventions' metrics: each message's duration, and each
// subscriptions/listen stream's as a session.
import {
  type Attributes,
  createTraceState,
  ROOT_CONTEXT,
  SamplingDecision,
  type SpanContext,
  SpanKind,
  trace,
  TraceFlags,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { clock, type HttpRequest, type HttpResult } from "./db.ts";
import type { StreamWatch } from "./listen.ts";
import { firstChars, meter, spans } from "./otel.ts";
import type { SpanRecord } from "./otlp-proto.ts";

export { flush } from "./otel.ts";
/** The bucket boundaries the MCP conventions ask of their duration histograms, in seconds. */
const BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
/** The MCP semantic conventions' server metric: each message's time in the database, in seconds,
 * by method, tool or prompt, protocol version and error type (recorded whether or not the message's
 * trace is sampled), exported every OTEL_METRIC_EXPORT_INTERVAL ms. */
const duration = meter.createHistogram("mcp.server.operation.duration", {
  unit: "s",
  description: "Duration of an MCP request as the server handled it",
  advice: { explicitBucketBoundaries: BUCKETS },
});
/** The conventions' session metric. This edge is stateless: its one long-lived exchange with a
 * client is a subscriptions/listen stream, so that is the session measured, from the
 * acknowledgement to its end. */
const sessionDuration = meter.createHistogram("mcp.server.session.duration", {
  unit: "s",
  description: "Duration of an MCP session (a subscriptions/listen stream) as the server held it",
  advice: { explicitBucketBoundaries: BUCKETS },
});
/** Streams open now (no convention names one; chumbo's own namespace). */
const openStreams = meter.createUpDownCounter("chumbo.edge.listen.streams", {
  unit: "{stream}",
  description: "subscriptions/listen streams the edge holds open",
});

/** A phase timed by the extension, in microseconds since it began handling the request. */
type Phase = { name: string; start_us: number; end_us: number };
/** One JSON-RPC message as the database saw it (src/trace_context.rs, MessageFacts). */
type Message = Phase & {
  method: string;
  target?: string | null;
  request_id?: string | number | null;
  protocol_version?: string;
  trace_id: string;
  parent_id?: string | null;
  trace_flags?: number | null; // the parent's, from its traceparent (bit 0: sampled)
  trace_state?: string; // the parent's tracestate, when it came with one the database found valid
  outcome: string;
  // What the capability opted in to have recorded (its audit opt-in; src/api/recorded.rs), for a
  // sampled message only: a resource URI, a tool's arguments as JSON text (each cut to 4,096 bytes).
  resource_uri?: string;
  tool_arguments?: string;
  spans?: Phase[]; // absent when the message's trace is not sampled
};
type Spans = { total_us: number; spans: Phase[]; messages: Message[] };

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
/** Every phase span's attributes (one object: the exporter only reads them). */
const PHASE: Attributes = { "db.system.name": "postgresql" };

const propagator = new W3CTraceContextPropagator();
const HEADERS = { get: (h: Headers, key: string) => h.get(key) ?? undefined, keys: (h: Headers) => [...h.keys()] };

/** The HTTP server span of an MCP request, from `begin` to `end`: its context (what the database
 * and the MCP spans take as parent), when it began, and its attributes so far. */
export type HttpSpan = {
  context: SpanContext;
  parent?: SpanContext;
  name: string;
  start: number;
  attributes: Attributes;
};

/** The HTTP server span of an MCP request, begun when the request is taken: a child of the
 * client's span when its `traceparent` header is valid (W3C rules; an invalid one is ignored),
 * else the root of a new trace, sampled as OTEL_TRACES_SAMPLER says, as the SDK's tracer would
 * start it (a new span id; the parent's trace id and tracestate, else a new trace id; the
 * sampler's decision, attributes and tracestate). */
export function begin(req: Request, route: string): HttpSpan {
  const start = clock();
  const context = propagator.extract(ROOT_CONTEXT, req.headers, HEADERS);
  const parent = trace.getSpanContext(context);
  const traceId = parent?.traceId ?? spans.ids.generateTraceId();
  const name = `POST ${route}`;
  const attributes: Attributes = { "http.request.method": "POST", "http.route": route, "url.path": route };
  const sampling = spans.sampler.shouldSample(context, traceId, name, SpanKind.SERVER, attributes, NONE);
  const sampled = sampling.decision === SamplingDecision.RECORD_AND_SAMPLED;
  if (sampled && sampling.attributes) Object.assign(attributes, sampling.attributes);
  return {
    context: {
      traceId,
      spanId: spans.ids.generateSpanId(),
      traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      traceState: sampling.traceState ?? parent?.traceState,
    },
    parent,
    name,
    start,
    attributes,
  };
}

/** The HTTP span ends with the response's status; a server error (5xx) is the span's error. */
export function end(http: HttpSpan, status: number): void {
  const own = http.context;
  if (!(own.traceFlags & TraceFlags.SAMPLED)) return;
  http.attributes["http.response.status_code"] = status;
  if (status >= 500) http.attributes["error.type"] = String(status);
  spans.export({
    name: http.name,
    kind: SpanKind.SERVER,
    traceId: own.traceId,
    spanId: own.spanId,
    flags: own.traceFlags,
    traceState: own.traceState?.serialize() || undefined,
    parentId: http.parent?.spanId,
    parentRemote: http.parent?.isRemote,
    start: http.start,
    end: clock(),
    attributes: http.attributes,
    error: status >= 500,
  });
}

/** The request as the database takes it when traced: it asks for the `spans` column, and carries
 * the HTTP span as its traceparent header, so that the database's trace id (its audit row, its
 * error messages) is the exported trace's, and its flags are the sampler's decision (the database
 * times phases only for a sampled trace). A `params._meta.traceparent` in the body still wins
 * there. */
export function traced(request: HttpRequest, http: HttpSpan): HttpRequest {
  const own = http.context;
  const headers = { ...(request.headers as Record<string, string>) };
  headers.traceparent = `00-${own.traceId}-${own.spanId}-${own.traceFlags & 1 ? "01" : "00"}`;
  return { ...request, headers, trace: true };
}

/** Export the spans the database timed for this request, under the HTTP span or in the trace a
 * message's `_meta.traceparent` named, and record each message's duration. Never throws: tracing
 * must not fail a call. */
export function exportSpans(result: HttpResult, http: HttpSpan): void {
  if (!result.spans) return;
  try {
    const { text, sentAt } = result.spans;
    const { spans: requestPhases, messages } = readSpans(text);
    if (!messages?.length) {
      // Refused before any method (400, 401, 403, 413, 429...): no MCP operation to describe.
      if (result.status >= 400) http.attributes["error.type"] = String(result.status);
      return;
    }
    const own = http.context;
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i];
      duration.record((m.end_us - m.start_us) / 1e6, attributes(m, false));
      // Not sampled (the parent's flags: the edge's sampler for the HTTP span, or the caller's
      // `_meta.traceparent`): nothing of this message is recorded, and the database timed no phase.
      if (!m.spans || (m.trace_flags != null && (m.trace_flags & 1) === 0)) continue;
      // The MCP span's parent: the client's span its `_meta.traceparent` named (the HTTP span is
      // then linked), else the HTTP span. Sampled as the tracer would sample a span started there.
      const remote = remoteParent(own, m);
      const parent = remote ?? own;
      const name = spanName(m);
      const attrs = attributes(m, true);
      const sampling = spans.sampler.shouldSample(
        trace.setSpanContext(ROOT_CONTEXT, parent),
        parent.traceId,
        name,
        SpanKind.SERVER,
        attrs,
        remote ? [{ context: own }] : NONE,
      );
      if (sampling.decision !== SamplingDecision.RECORD_AND_SAMPLED) continue;
      Object.assign(attrs, sampling.attributes);
      const mcp: SpanRecord = {
        name,
        kind: SpanKind.SERVER,
        traceId: parent.traceId,
        spanId: spans.ids.generateSpanId(),
        flags: TraceFlags.SAMPLED,
        traceState: (sampling.traceState ?? parent.traceState)?.serialize() || undefined,
        parentId: parent.spanId,
        parentRemote: remote !== undefined,
        start: 0,
        end: 0,
        attributes: attrs,
        link: remote
          ? { traceId: own.traceId, spanId: own.spanId, flags: own.traceFlags, traceState: own.traceState?.serialize() }
          : undefined,
        error: errorType(m.outcome) !== undefined,
      };
      // The request's own phases (authenticate) go under the first message. The extension's clock
      // starts when it begins handling the call; the edge's timestamp of the moment it sent the
      // query is the closest anchor it has (network time goes before, not after).
      const before = i === 0 && requestPhases?.length ? requestPhases : undefined;
      let start = m.start_us, end = m.end_us;
      if (before) {
        for (const c of before) if (c.start_us < start) start = c.start_us;
        end = phases(before, sentAt, mcp, end);
      }
      end = phases(m.spans, sentAt, mcp, end);
      mcp.start = sentAt + start / 1000;
      mcp.end = sentAt + end / 1000;
      spans.export(mcp);
    }
  } catch (e) {
    console.error("chumbo-edge: spans not exported:", (e as Error)?.message);
  }
}

const NONE: never[] = [];

/** The `spans` column. A request id beyond 2^53 read as a JavaScript number is another number, so
 * then the text is read again keeping that id's digits (a reviver on every request would cost
 * every traced request; such ids are rare). */
function readSpans(text: string): Spans {
  const read = JSON.parse(text) as Spans;
  const unsafe = (m: Message) => typeof m.request_id === "number" && !Number.isSafeInteger(m.request_id);
  if (!read.messages?.some(unsafe)) return read;
  return JSON.parse(
    text,
    (key: string, value: unknown, context?: { source?: string }) =>
      key === "request_id" && typeof value === "number" && context?.source ? context.source : value,
  ) as Spans;
}

/** The phases as finished children of the MCP span `parent`, each carrying its parent's
 * tracestate (as a span the tracer starts); returns the latest end (the parent's end covers them). */
function phases(list: Phase[], sentAt: number, parent: SpanRecord, end: number): number {
  for (const c of list) {
    spans.export({
      name: `chumbo ${c.name}`,
      kind: SpanKind.INTERNAL,
      traceId: parent.traceId,
      spanId: spans.ids.generateSpanId(),
      flags: TraceFlags.SAMPLED,
      traceState: parent.traceState,
      parentId: parent.spanId,
      start: sentAt + c.start_us / 1000,
      end: sentAt + c.end_us / 1000,
      attributes: PHASE,
      error: false,
    });
    if (c.end_us > end) end = c.end_us;
  }
  return end;
}

/** A subscriptions/listen stream the database acknowledged, as the conventions' session: counted
 * while open, its duration recorded when it ends, with `error.type` the JSON-RPC code when the
 * server ended it with an error (a refused re-check: an expired token, a revoked role). Its
 * protocol version is the request's MCP-Protocol-Version header, which the database checked
 * against the message (every header must agree with the body in that era). */
export function session(request: HttpRequest): StreamWatch {
  const a: Record<string, string> = { "network.transport": "tcp", "network.protocol.name": "http" };
  const version = (request.headers as Record<string, string>)["mcp-protocol-version"];
  if (version) a["mcp.protocol.version"] = version;
  const began = performance.now();
  openStreams.add(1, a);
  return {
    ended(errorCode) {
      openStreams.add(-1, a);
      const attrs = errorCode === undefined ? a : { ...a, "error.type": String(errorCode) };
      sessionDuration.record((performance.now() - began) / 1000, attrs);
    },
  };
}

/** `{mcp.method.name} {target}` with the tool or prompt name; a resource URI is left out (it can
 * carry a template's parameters, and makes names of unbounded cardinality). */
function spanName(m: Message): string {
  const target = named(m);
  return target ? `${m.method} ${target}` : m.method;
}
const named = (m: Message) => (m.method === "tools/call" || m.method === "prompts/get") && m.target || undefined;

/** `error.type` by the conventions: the JSON-RPC code of an error, `tool_error` for a result with
 * isError, and the database's class otherwise (`internal`); none for a success (an answer, a round
 * asking for input, a task created). */
function errorType(outcome: string): string | undefined {
  if (outcome === "ok" || outcome === "input_required" || outcome === "task") return undefined;
  return outcome.startsWith("error ") ? outcome.slice("error ".length) : outcome;
}

/** The span's attributes; for the metric (`perRequest` false) without the per-request ones. */
function attributes(m: Message, perRequest: boolean): Record<string, string> {
  const a: Record<string, string> = { "mcp.method.name": m.method, "network.transport": "tcp" };
  if (m.protocol_version) a["mcp.protocol.version"] = m.protocol_version;
  if (perRequest && m.request_id != null) a["jsonrpc.request.id"] = clientText(String(m.request_id));
  const target = named(m);
  if (m.method === "tools/call") {
    a["gen_ai.operation.name"] = "execute_tool";
    if (target) a["gen_ai.tool.name"] = target;
  } else if (target) a["gen_ai.prompt.name"] = target;
  const error = errorType(m.outcome);
  if (error !== undefined) a["error.type"] = error;
  if (perRequest && m.outcome.startsWith("error ")) a["rpc.response.status_code"] = error!;
  if (perRequest && m.resource_uri !== undefined) a["mcp.resource.uri"] = clientText(m.resource_uri);
  // The conventions' opt-in attribute, as a JSON string (span attributes hold no objects).
  if (perRequest && m.tool_arguments !== undefined) a["gen_ai.tool.call.arguments"] = clientText(m.tool_arguments);
  return a;
}

/** The most characters of a client's own text (a request id, a URI, arguments) a span attribute
 * holds, whatever OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT says: a request may carry megabytes of
 * it, and 2,048 waiting spans (OTEL_BSP_MAX_QUEUE_SIZE) of that would hold gigabytes while a
 * collector is slow. */
const CLIENT_TEXT_LIMIT = 4096;
const clientText = (text: string) => firstChars(text, CLIENT_TEXT_LIMIT);

/** The client span a message's `_meta.traceparent` named, when the database's verdict is not
 * the HTTP span (which the edge passed as the header): the MCP span's parent then, and the
 * HTTP span is linked, as the conventions ask of a context that came with the message. */
function remoteParent(own: SpanContext, m: Message): SpanContext | undefined {
  if (!TRACE_ID.test(m.trace_id) || !m.parent_id || !SPAN_ID.test(m.parent_id)) return undefined;
  if (own.traceId === m.trace_id && own.spanId === m.parent_id) return undefined;
  return {
    traceId: m.trace_id,
    spanId: m.parent_id,
    traceFlags: m.trace_flags ?? 1,
    isRemote: true,
    traceState: m.trace_state ? createTraceState(m.trace_state) : undefined,
  };
}
