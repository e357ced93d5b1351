// The edge's span records and their protobuf (supabase/functions/mcp/otlp-proto.ts) against the
// official serializer (`ProtobufTraceSerializer`, @opentelemetry/otlp-transformer, pinned in the
// edge's deno.lock) given the same spans as the SDK's ReadableSpans (`readable`, which is also what
// the edge's http/json export hands the official JSON serializer): the same spans must give the
// same bytes. Every field a record can hold (kinds, attribute types, non-ASCII and long strings,
// remote and local parents, trace state, a link, error status, dropped counts), times from the
// epoch's start to past 2106 and where the nanoseconds' high half is easy to get wrong, batches
// large enough to grow the buffer, and a few thousand random records.
// tests/traces/run.sh runs it:
//   deno test --frozen --config supabase/functions/mcp/deno.json tests/traces/otlp_proto_test.ts
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { SpanKind } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { encodeSpans, type Origin, readable, type SpanRecord } from "../../supabase/functions/mcp/otlp-proto.ts";

const origin: Origin = {
  resource: resourceFromAttributes({ "service.name": "chumbo-edge", "deployment.environment": "tést" }),
  scope: { name: "chumbo-edge" },
};

function same(spans: SpanRecord[], from: Origin = origin) {
  const official = ProtobufTraceSerializer.serializeRequest(spans.map((s) => readable(s, from)))!;
  const ours = encodeSpans(spans, from);
  if (official.length !== ours.length) throw new Error(`length ${ours.length}, official ${official.length}`);
  for (let i = 0; i < ours.length; i++) {
    if (ours[i] !== official[i]) throw new Error(`byte ${i} of ${ours.length}: ${ours[i]}, official ${official[i]}`);
  }
}

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const record = (overrides: Partial<SpanRecord> = {}): SpanRecord => ({
  name: "tools/call list_projects",
  kind: SpanKind.SERVER,
  traceId: TRACE,
  spanId: "00f067aa0ba902b7",
  flags: 1,
  start: 1_764_000_000_123.456,
  end: 1_764_000_000_125.5,
  attributes: { "mcp.method.name": "tools/call" },
  error: false,
  ...overrides,
});

Deno.test("every field a record holds: the official serializer's bytes", () => {
  same([
    record({
      name: "POST /functions/v1/mcp",
      attributes: {
        "http.request.method": "POST",
        "http.response.status_code": 200,
        "ascii": "plain",
        "two-byte": "café",
        "three-byte": "日本語",
        "astral": "a 🐘 b",
        "lone surrogate": "x\ud800y",
        "ключ": "non-ASCII key",
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
        "undefined": undefined,
        "long": "x".repeat(200),
        "longer": "y".repeat(20000),
        "ascii then not": "z".repeat(300) + "é",
      },
    }),
    record({ parentId: "b7ad6b7169203331", parentRemote: true, traceState: "vendor=a,other=b" }),
    record({ parentId: "b7ad6b7169203331", parentRemote: false, flags: 0 }),
    record({
      parentId: "b7ad6b7169203331",
      parentRemote: true,
      link: { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "a3ce929d0e0e4736", flags: 1 },
    }),
    record({
      link: { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "a3ce929d0e0e4736", flags: 0, traceState: "k=v" },
      error: true,
    }),
    ...[SpanKind.INTERNAL, SpanKind.CLIENT, SpanKind.PRODUCER, SpanKind.CONSUMER].map((kind) =>
      record({
        kind,
        name: `phase ${kind}`,
        attributes: { "db.system.name": "postgresql" },
        parentId: "00f067aa0ba902b7",
      })
    ),
    record({ traceId: "ABCDEF0123456789abcdef0123456789", spanId: "0123456789ABCDEF", attributes: {} }),
    // What the span limits left out (otel.ts): counted, one past a one-byte varint.
    record({ droppedAttributes: 3, droppedLinks: 1 }),
    record({ droppedAttributes: 300 }),
  ]);
  same([record()]);
  same([]);
});

Deno.test("times: the epoch's start, near multiples of 2^32 nanoseconds, past 2^32 seconds", () => {
  const times = [
    0,
    0.000001,
    1.5,
    999.9999999,
    1999.9999999999998,
    1_764_000_000_000,
    1_764_000_000_999.9999,
    1_764_000_000_999.99999999,
    1717986922694.9673, // nanoseconds 11 short of a multiple of 2^32: the high half's rounding
    1717986935579.8691,
    4_294_967_295_999.999, // the last second before 2^32
    4_294_967_296_000.5,
    9_007_199_254_740.991, // 2^53 µs
    2 ** 53 / 1000 * 64,
  ];
  same(times.map((t) => record({ start: t, end: t })));
  same(times.map((t, i) => record({ start: times[0], end: t, name: `${i}` })));
});

Deno.test("batches large enough to grow the buffer, and lengths past one and two varint bytes", () => {
  const spans: SpanRecord[] = [];
  for (let i = 0; i < 3000; i++) {
    spans.push(record({ name: `span ${i}`, attributes: { i, "name": "n".repeat(i % 300) } }));
  }
  same(spans);
  same([record({ attributes: { "big": "b".repeat(70_000) } })]); // a three-byte length
});

Deno.test("the resource's schema URL and attributes, the scope's version", () => {
  same([record(), record()], {
    resource: resourceFromAttributes({ "k": "v", "n": 1 }, { schemaUrl: "https://opentelemetry.io/schemas/1.30.0" }),
    scope: { name: "chumbo-edge", version: "1.2.3" },
  });
});

Deno.test("random records: the official serializer's bytes", () => {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join("");
  const text = () => {
    const chars = ["a", "Z", "0", " ", "é", "日", "🐘", "\ud800", "\u0000", "/"];
    return Array.from({ length: Math.floor(Math.random() * 40) }, () => chars[Math.floor(Math.random() * chars.length)])
      .join("");
  };
  const value = () => {
    switch (Math.floor(Math.random() * 5)) {
      case 0:
        return text();
      case 1:
        return Math.floor((Math.random() - 0.5) * 2 ** (Math.random() * 62));
      case 2:
        return (Math.random() - 0.5) * 1e6;
      case 3:
        return Math.random() < 0.5;
      default:
        return [text(), text()];
    }
  };
  const spans: SpanRecord[] = [];
  for (let i = 0; i < 3000; i++) {
    const start = Math.random() * 5e12;
    const attributes: Record<string, unknown> = {};
    for (let a = Math.floor(Math.random() * 6); a > 0; a--) attributes[text()] = value();
    spans.push({
      name: text(),
      kind: Math.floor(Math.random() * 5),
      traceId: hex(32),
      spanId: hex(16),
      flags: Math.floor(Math.random() * 2),
      traceState: Math.random() < 0.2 ? "a=b,c=d" : undefined,
      parentId: Math.random() < 0.7 ? hex(16) : undefined,
      parentRemote: Math.random() < 0.5,
      start,
      end: start + Math.random() * 1e5,
      attributes: attributes as SpanRecord["attributes"],
      link: Math.random() < 0.2 ? { traceId: hex(32), spanId: hex(16), flags: 1 } : undefined,
      error: Math.random() < 0.3,
    });
  }
  same(spans);
});
