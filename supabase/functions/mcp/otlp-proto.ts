// OTLP/HTTP protobuf for spans: the ExportTraceServiceRequest the official serializer
// (`ProtobufTraceSerializer` of @opentelemetry/otlp-transformer) writes, byte for byte, with one
// pass over the spans and no allocation per span. The official one measures the whole batch first
// and then writes it, and turns every trace and span id into a new Uint8Array in both passes; in
// Deno a small typed array costs ~290 ns (it is not kept on the V8 heap), so its ~4–6 µs a span
// were half of what an exported request costs the edge (bench/analysis.md, issue 30).
// tests/traces/otlp_proto_test.ts holds this to the official serializer's bytes for every kind of
// span and attribute; tests/traces decodes what the edge exports with the official schema.
//
// Field numbers and wire types: opentelemetry-proto, opentelemetry/proto/trace/v1/trace.proto and
// common/v1/common.proto (ExportTraceServiceRequest.resource_spans = 1, ...).
import type { Attributes, AttributeValue, HrTime, Link, SpanContext } from "@opentelemetry/api";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace";

const LEN = 2, VARINT = 0, I64 = 1, I32 = 5;
/** Span.flags: the W3C trace flags, and whether the parent was remote (trace.proto, SpanFlags). */
const HAS_IS_REMOTE = 0x100, IS_REMOTE = 0x200;
const TWO_32 = 4294967296;

/** A growing buffer. A length-delimited field reserves one byte for its length and moves its
 * content when the length needs more (copyWithin: once per message of 128 bytes or more). */
class Writer {
  buf: Uint8Array<ArrayBuffer>;
  pos = 0;

  constructor(size: number) {
    this.buf = new Uint8Array(size);
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.buf.subarray(0, this.pos));
    this.buf = bigger;
  }

  /** Begins a length-delimited field; returns where its length goes, for `close`. */
  open(field: number): number {
    this.tag(field, LEN);
    this.room(1);
    return this.pos++;
  }

  close(at: number): void {
    const length = this.pos - at - 1;
    let extra = 0;
    for (let v = length >>> 7; v > 0; v >>>= 7) extra++;
    if (extra > 0) {
      this.room(extra);
      this.buf.copyWithin(at + 1 + extra, at + 1, this.pos);
      this.pos += extra;
    }
    let v = length, p = at;
    while (v > 127) {
      this.buf[p++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[p] = v;
  }

  tag(field: number, wire: number): void {
    this.uint32((field << 3) | wire);
  }

  uint32(value: number): void {
    this.room(5);
    let v = value >>> 0;
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** An integer as a 64-bit varint (two's complement when negative: ten bytes). */
  int64(value: number): void {
    if (value >= 0 && value < TWO_32) return this.uint32(value);
    let low: number, high: number;
    const abs = Math.abs(value);
    low = abs >>> 0;
    high = Math.floor(abs / TWO_32) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    this.room(10);
    while (high > 0 || low > 127) {
      this.buf[this.pos++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.buf[this.pos++] = low;
  }

  fixed32(value: number): void {
    this.room(4);
    const b = this.buf;
    b[this.pos++] = value & 255;
    b[this.pos++] = (value >>> 8) & 255;
    b[this.pos++] = (value >>> 16) & 255;
    b[this.pos++] = (value >>> 24) & 255;
  }

  /** An HrTime ([seconds, nanoseconds]) as fixed64 nanoseconds since the epoch. Seconds times 1e9
   * is past 2^53, so the product is taken in two halves of the seconds, each exact as a double. */
  time(t: HrTime): void {
    const high16 = Math.floor(t[0] / 65536), low16 = t[0] % 65536;
    const a = high16 * 1e9; // to be shifted left 16 bits
    const b = low16 * 1e9 + t[1];
    const low = (a % 65536) * 65536 + (b % TWO_32);
    const high = Math.floor(a / 65536) + Math.floor(b / TWO_32) + Math.floor(low / TWO_32);
    this.fixed32(low % TWO_32);
    this.fixed32(high % TWO_32);
  }

  double(value: number): void {
    this.room(8);
    SCRATCH_F64[0] = value;
    this.buf.set(SCRATCH_BYTES, this.pos);
    this.pos += 8;
  }

  /** Hex digits (an id) as the bytes they spell. */
  hex(field: number, hex: string): void {
    const n = hex.length >>> 1;
    this.tag(field, LEN);
    this.uint32(n);
    this.room(n);
    for (let i = 0; i < n; i++) {
      this.buf[this.pos++] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1));
    }
  }

  string(field: number, s: string): void {
    this.tag(field, LEN);
    const length = utf8Length(s);
    this.uint32(length);
    this.room(length);
    if (length === s.length) {
      for (let i = 0; i < length; i++) this.buf[this.pos++] = s.charCodeAt(i);
    } else {
      this.pos += UTF8.encodeInto(s, this.buf.subarray(this.pos)).written;
    }
  }

  bytes(field: number, bytes: Uint8Array): void {
    this.tag(field, LEN);
    this.uint32(bytes.length);
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }
}

const UTF8 = new TextEncoder();
const SCRATCH_F64 = new Float64Array(1);
const SCRATCH_BYTES = new Uint8Array(SCRATCH_F64.buffer); // little-endian on every platform Deno runs on

const nibble = (c: number) => (c <= 57 ? c - 48 : c >= 97 ? c - 87 : c - 55);

/** UTF-8 length of a JavaScript string, as TextEncoder writes it (a lone surrogate: 3 bytes). */
function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // the pair's two units become four bytes
      i++;
    } else n += 2;
  }
  return n;
}

/** AnyValue (common.proto): string 1, bool 2, int 3, double 4, array 5, kvlist 6, bytes 7. */
function anyValue(w: Writer, value: unknown): void {
  switch (typeof value) {
    case "string":
      return w.string(1, value);
    case "boolean":
      w.tag(2, VARINT);
      return w.uint32(value ? 1 : 0);
    case "number":
      if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
        w.tag(3, VARINT);
        return w.int64(value);
      }
      w.tag(4, I64);
      return w.double(value);
  }
  if (value instanceof Uint8Array) return w.bytes(7, value);
  if (Array.isArray(value)) {
    const list = w.open(5);
    for (const item of value) {
      const at = w.open(1);
      anyValue(w, item);
      w.close(at);
    }
    return w.close(list);
  }
  if (typeof value === "object" && value !== null) {
    const list = w.open(6);
    keyValues(w, 1, value as Record<string, unknown>);
    w.close(list);
  }
}

/** Repeated KeyValue {key 1, value 2} in field `field`. */
function keyValues(w: Writer, field: number, attributes: Attributes | Record<string, unknown>): void {
  for (const key in attributes) {
    if (!Object.hasOwn(attributes, key)) continue;
    const kv = w.open(field);
    w.string(1, key);
    const v = w.open(2);
    anyValue(w, (attributes as Record<string, AttributeValue | unknown>)[key]);
    w.close(v);
    w.close(kv);
  }
}

const flags = (traceFlags: number, remote: boolean | undefined) =>
  (traceFlags & 255) | HAS_IS_REMOTE | (remote ? IS_REMOTE : 0);

function event(w: Writer, e: TimedEvent): void {
  const at = w.open(11);
  w.tag(1, I64);
  w.time(e.time);
  w.string(2, e.name);
  if (e.attributes) keyValues(w, 3, e.attributes);
  w.tag(4, VARINT);
  w.uint32(e.droppedAttributesCount || 0);
  w.close(at);
}

function link(w: Writer, l: Link): void {
  const at = w.open(13);
  const c: SpanContext = l.context;
  w.hex(1, c.traceId);
  w.hex(2, c.spanId);
  const state = c.traceState?.serialize();
  if (state) w.string(3, state);
  if (l.attributes) keyValues(w, 4, l.attributes);
  w.tag(5, VARINT);
  w.uint32(l.droppedAttributesCount || 0);
  w.tag(6, I32);
  w.fixed32(flags(c.traceFlags, c.isRemote));
  w.close(at);
}

function span(w: Writer, s: ReadableSpan): void {
  const at = w.open(2);
  const c = s.spanContext();
  w.hex(1, c.traceId);
  w.hex(2, c.spanId);
  const state = c.traceState?.serialize();
  if (state) w.string(3, state);
  const parent = s.parentSpanContext;
  if (parent?.spanId) w.hex(4, parent.spanId);
  w.string(5, s.name);
  if (s.kind != null) {
    w.tag(6, VARINT);
    w.uint32(s.kind + 1); // the API's kinds start at INTERNAL = 0, the protocol's at UNSPECIFIED = 0
  }
  w.tag(7, I64);
  w.time(s.startTime);
  w.tag(8, I64);
  w.time(s.endTime);
  if (s.attributes) keyValues(w, 9, s.attributes);
  w.tag(10, VARINT);
  w.uint32(s.droppedAttributesCount);
  for (const e of s.events) event(w, e);
  w.tag(12, VARINT);
  w.uint32(s.droppedEventsCount);
  for (const l of s.links) link(w, l);
  w.tag(14, VARINT);
  w.uint32(s.droppedLinksCount);
  const status = w.open(15);
  if (s.status.message) w.string(2, s.status.message);
  w.tag(3, VARINT);
  w.uint32(s.status.code);
  w.close(status);
  w.tag(16, I32);
  w.fixed32(flags(c.traceFlags, parent?.isRemote));
  w.close(at);
}

type Resource = ReadableSpan["resource"];
type Scope = ReadableSpan["instrumentationScope"];

/** The ExportTraceServiceRequest of `spans`: one ResourceSpans per resource, one ScopeSpans per
 * instrumentation scope in it, in the order they first appear. */
export function serializeSpans(spans: ReadableSpan[]): Uint8Array<ArrayBuffer> {
  const byResource = new Map<Resource, Map<Scope, ReadableSpan[]>>();
  for (const s of spans) {
    let byScope = byResource.get(s.resource);
    if (!byScope) byResource.set(s.resource, byScope = new Map());
    const list = byScope.get(s.instrumentationScope);
    if (list) list.push(s);
    else byScope.set(s.instrumentationScope, [s]);
  }
  const w = new Writer(lastSize);
  for (const [resource, byScope] of byResource) {
    const rs = w.open(1);
    const r = w.open(1);
    if (resource.attributes) keyValues(w, 1, resource.attributes);
    w.tag(2, VARINT);
    w.uint32(0);
    w.close(r);
    for (const [scope, list] of byScope) {
      const ss = w.open(2);
      const sc = w.open(1);
      w.string(1, scope.name);
      if (scope.version) w.string(2, scope.version);
      const more = scope as Scope & { attributes?: Attributes; droppedAttributesCount?: number };
      if (more.attributes) keyValues(w, 3, more.attributes);
      if (more.droppedAttributesCount) {
        w.tag(4, VARINT);
        w.uint32(more.droppedAttributesCount);
      }
      w.close(sc);
      for (const s of list) span(w, s);
      if (scope.schemaUrl) w.string(3, scope.schemaUrl);
      w.close(ss);
    }
    if (resource.schemaUrl) w.string(3, resource.schemaUrl);
    w.close(rs);
  }
  lastSize = Math.max(1024, w.buf.length);
  return w.buf.subarray(0, w.pos);
}

/** The last batch's buffer size: the next batch is sized alike, so it rarely grows. */
let lastSize = 64 * 1024;
