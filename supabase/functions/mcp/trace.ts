// Spans out (docs/observability.md), loaded only when Deno's OpenTelemetry is on (OTEL_DENO=true,
// which scripts/edge.sh sets when an OTLP endpoint is configured). Deno itself exports the HTTP
// server span of each request and flushes in the background, so a receiver that is slow or down
// never holds up an answer. This file adds, per JSON-RPC message, an MCP server span by the OTel
// MCP semantic conventions, with the phases the extension timed inside PostgreSQL (http_parts'
// `spans` column) as its children. What goes into a span is what the database reported as facts
// (method, tool or prompt name, id, protocol version, outcome) and times: never arguments, results,
// headers, tokens or rows.
import { metrics, ROOT_CONTEXT, type SpanContext, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { HttpRequest, HttpResult } from "./db.ts";

const tracer = trace.getTracer("chumbo-edge");
/** The MCP semantic conventions' server metric: each message's time in the database, in seconds,
 * by method, tool or prompt, protocol version and error type (recorded whether or not the message's
 * trace is sampled). Deno exports it every OTEL_METRIC_EXPORT_INTERVAL ms. */
const duration = metrics.getMeter("chumbo-edge").createHistogram("mcp.server.operation.duration", {
  unit: "s",
  description: "Duration of an MCP request as the server handled it",
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
  outcome: string;
  spans: Phase[];
};
type Spans = { total_us: number; spans: Phase[]; messages: Message[] };

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/** The request as the database takes it when traced: it asks for the `spans` column, and carries
 * Deno's HTTP server span as its traceparent header, so that the database's trace id (its audit
 * row, its error messages) is the exported trace's. A `params._meta.traceparent` in the body still
 * wins there. */
export function traced(request: HttpRequest): HttpRequest {
  const http = trace.getActiveSpan()?.spanContext();
  if (!http || !trace.isSpanContextValid(http)) return { ...request, trace: true };
  const flags = (http.traceFlags & 0xff).toString(16).padStart(2, "0");
  const headers = { ...(request.headers as Record<string, string>) };
  headers.traceparent = `00-${http.traceId}-${http.spanId}-${flags}`;
  return { ...request, headers, trace: true };
}

/** Export the spans the database timed for this request, under Deno's HTTP span or in the trace a
 * message's `_meta.traceparent` named. Never throws: tracing must not fail a call. */
export function exportSpans(result: HttpResult): void {
  const http = trace.getActiveSpan();
  if (!result.spans) return;
  try {
    const { text, sentAt } = result.spans;
    const spans = JSON.parse(text) as Spans;
    // The extension's clock starts when it begins handling the call; the edge's timestamp of the
    // moment it sent the query is the closest anchor it has (network time goes before, not after).
    const at = (us: number) => sentAt + us / 1000;
    const own = http?.spanContext();
    const byHttp = http ? trace.setSpan(ROOT_CONTEXT, http) : ROOT_CONTEXT;
    if (!spans.messages?.length) {
      // Refused before any method (400, 401, 403, 413, 429...): no MCP operation to describe.
      if (result.status >= 400) http?.setAttribute("error.type", String(result.status));
      return;
    }
    spans.messages.forEach((m, i) => {
      duration.record((m.end_us - m.start_us) / 1e6, metricAttributes(m));
      // The caller's traceparent said "not sampled": nothing of this message is recorded (the
      // parent-based sampling the W3C flag asks for; Deno's own sampler records everything).
      if (m.trace_flags !== null && m.trace_flags !== undefined && (m.trace_flags & 1) === 0) return;
      // The request's own phases (registry, authenticate, ...) go under the first message.
      const children = i === 0 ? [...(spans.spans ?? []), ...m.spans] : m.spans;
      const start = Math.min(m.start_us, ...children.map((c) => c.start_us));
      const end = Math.max(m.end_us, ...children.map((c) => c.end_us));
      const remote = remoteParent(own, m);
      const span = tracer.startSpan(spanName(m), {
        kind: SpanKind.SERVER,
        startTime: at(start),
        attributes: attributes(m),
        links: remote && own ? [{ context: own }] : [],
      }, remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : byHttp);
      if (errorType(m.outcome) !== undefined) span.setStatus({ code: SpanStatusCode.ERROR });
      const inside = trace.setSpan(ROOT_CONTEXT, span);
      for (const c of children) {
        tracer.startSpan(`chumbo ${c.name}`, {
          kind: SpanKind.INTERNAL,
          startTime: at(c.start_us),
          attributes: { "db.system.name": "postgresql" },
        }, inside).end(at(c.end_us));
      }
      span.end(at(end));
    });
  } catch (e) {
    console.error("chumbo-edge: spans not exported:", (e as Error)?.message);
  }
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

/** The metric's attributes: the span's, without the per-request ones (request id). */
function metricAttributes(m: Message): Record<string, string> {
  const { "jsonrpc.request.id": _, "rpc.response.status_code": __, ...rest } = attributes(m);
  return rest;
}

function attributes(m: Message): Record<string, string> {
  const a: Record<string, string> = { "mcp.method.name": m.method, "network.transport": "tcp" };
  if (m.protocol_version) a["mcp.protocol.version"] = m.protocol_version;
  if (m.request_id !== null && m.request_id !== undefined) a["jsonrpc.request.id"] = String(m.request_id);
  const target = named(m);
  if (m.method === "tools/call") {
    a["gen_ai.operation.name"] = "execute_tool";
    if (target) a["gen_ai.tool.name"] = target;
  } else if (target) a["gen_ai.prompt.name"] = target;
  const error = errorType(m.outcome);
  if (error !== undefined) a["error.type"] = error;
  if (m.outcome.startsWith("error ")) a["rpc.response.status_code"] = error!;
  return a;
}

/** The client span a message's `_meta.traceparent` named, when the database's verdict is not
 * Deno's HTTP span (which the edge passed as the header): the MCP span's parent then, and the
 * HTTP span is linked, as the conventions ask of a context that came with the message. */
function remoteParent(own: SpanContext | undefined, m: Message): SpanContext | undefined {
  if (!TRACE_ID.test(m.trace_id) || !m.parent_id || !SPAN_ID.test(m.parent_id)) return undefined;
  if (own?.traceId === m.trace_id && own.spanId === m.parent_id) return undefined;
  return { traceId: m.trace_id, spanId: m.parent_id, traceFlags: m.trace_flags ?? 1, isRemote: true };
}
