// The edge's protobuf span serializer (supabase/functions/mcp/otlp-proto.ts) against the official
// one (`ProtobufTraceSerializer`, @opentelemetry/otlp-transformer, pinned in the edge's deno.lock):
// the same spans must give the same bytes. Spans made by the real SDK (every attribute type it
// keeps, events, links, status, remote and local parents, trace state), and spans as plain objects
// for what the SDK cannot make but a ReadableSpan may hold (kvlist and bytes values, several
// resources and scopes, schema URLs, lengths past one and two varint bytes, times far apart).
// tests/traces/run.sh runs it:
//   deno test --frozen --config supabase/functions/mcp/deno.json tests/traces/otlp_proto_test.ts
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { TraceState } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { serializeSpans } from "../../supabase/functions/mcp/otlp-proto.ts";

function same(spans: ReadableSpan[]) {
  const official = ProtobufTraceSerializer.serializeRequest(spans)!;
  const ours = serializeSpans(spans);
  if (official.length !== ours.length) throw new Error(`length ${ours.length}, official ${official.length}`);
  for (let i = 0; i < ours.length; i++) {
    if (ours[i] !== official[i]) throw new Error(`byte ${i} of ${ours.length}: ${ours[i]}, official ${official[i]}`);
  }
}

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": "chumbo-edge", "deployment.environment": "tést" }),
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
});
const tracer = provider.getTracer("chumbo-edge", "1.2.3");
const other = provider.getTracer("another-scope");

Deno.test("spans the SDK makes: the official serializer's bytes", () => {
  exporter.reset();
  const remote = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
    traceFlags: 1,
    isRemote: true,
    traceState: new TraceState("vendor=a,other=b"),
  });
  const http = tracer.startSpan("POST /functions/v1/mcp", {
    kind: SpanKind.SERVER,
    attributes: {
      "http.request.method": "POST",
      "http.response.status_code": 200,
      "ascii": "plain",
      "two-byte": "café",
      "three-byte": "日本語",
      "astral": "a 🐘 b",
      "lone surrogate": "x\ud800y",
      "true": true,
      "false": false,
      "zero": 0,
      "negative": -5,
      "past 32 bits": 2 ** 40 + 3,
      "negative past 32 bits": -(2 ** 40) - 3,
      "fraction": 0.25,
      "negative fraction": -1e-9,
      "strings": ["a", "é", ""],
      "numbers": [1, 2.5, -3],
      "booleans": [true, false],
      "with null": ["a", null, "b"],
      "long": "x".repeat(200),
      "longer": "y".repeat(20000),
    },
  }, remote);
  http.addEvent("something happened", { "count": 3 });
  http.addEvent("bare");
  const inside = trace.setSpan(ROOT_CONTEXT, http);
  const mcp = tracer.startSpan("tools/call list_projects", {
    kind: SpanKind.SERVER,
    links: [
      { context: http.spanContext() },
      { context: trace.getSpanContext(remote)!, attributes: { "link": "yes" } },
    ],
  }, inside);
  mcp.setStatus({ code: SpanStatusCode.ERROR, message: "it failed: ünïcode" });
  for (const kind of [SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER]) {
    tracer.startSpan(
      `phase ${kind}`,
      { kind, startTime: [1_700_000_000, 123_456_789] },
      trace.setSpan(ROOT_CONTEXT, mcp),
    )
      .end([1_700_000_001, 999_999_999]);
  }
  mcp.setStatus({ code: SpanStatusCode.OK });
  mcp.end();
  http.end();
  other.startSpan(
    "local parent",
    {},
    trace.setSpanContext(ROOT_CONTEXT, {
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      isRemote: false,
    }),
  ).end();
  const spans = exporter.getFinishedSpans();
  if (spans.length !== 7) throw new Error(`${spans.length} spans`);
  same(spans);
  same([spans[0]]);
  same([]);
});

Deno.test("batches large enough to grow the buffer, and their lengths", () => {
  exporter.reset();
  for (let i = 0; i < 3000; i++) {
    tracer.startSpan(`span ${i}`, { attributes: { i, "name": "n".repeat(i % 300) } }).end();
  }
  same(exporter.getFinishedSpans());
});

/** A ReadableSpan as a plain object: what the SDK's types allow beyond what its Span makes. */
function plain(overrides: Partial<ReadableSpan>): ReadableSpan {
  const base = {
    name: "plain",
    kind: SpanKind.INTERNAL,
    spanContext: () => ({ traceId: "ABCDEF0123456789abcdef0123456789", spanId: "0123456789ABCDEF", traceFlags: 1 }),
    parentSpanContext: undefined,
    startTime: [0, 0],
    endTime: [4294967295, 999999999],
    status: { code: SpanStatusCode.UNSET },
    attributes: {},
    links: [],
    events: [],
    duration: [0, 0],
    ended: true,
    resource: resourceFromAttributes({}),
    instrumentationScope: { name: "scope" },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
  return { ...base, ...overrides } as unknown as ReadableSpan;
}

Deno.test("what a ReadableSpan may hold beyond the SDK's spans", () => {
  // Resources as the serializers read them: their attributes and schema URL.
  const r1 = { attributes: { "k": "v" }, schemaUrl: "https://opentelemetry.io/schemas/1.30.0" };
  const r2 = { attributes: { nested: { a: 1, b: ["c", { d: true }] }, bytes: new Uint8Array([0, 255, 7]) } };
  const s1 = { name: "one", version: "2", schemaUrl: "https://example.com/schema" };
  const s2 = { name: "two", attributes: { "scope.attr": "x" }, droppedAttributesCount: 2 } as never;
  same([
    plain({ resource: r1 as never, instrumentationScope: s1 }),
    plain({ resource: r2 as never, instrumentationScope: s1, droppedAttributesCount: 3, droppedEventsCount: 4 }),
    plain({ resource: r1 as never, instrumentationScope: s2, droppedLinksCount: 200, kind: undefined as never }),
    plain({
      resource: r1 as never,
      instrumentationScope: s1,
      attributes: { "kv": { inner: "y" } as never, "b": new Uint8Array(300) as never, "undef": undefined },
      events: [{ name: "e", time: [1, 2], attributes: { x: 1 }, droppedAttributesCount: 5 }],
      links: [{
        context: { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 0 },
        droppedAttributesCount: 1,
      }],
      startTime: [1_764_000_000, 1],
      endTime: [1_764_000_000, 999_999_999],
      status: { code: SpanStatusCode.ERROR, message: "m".repeat(300) },
    }),
  ]);
});
