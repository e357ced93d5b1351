// The edge's spans as it keeps them until they are exported (SpanRecord: finished, plain data), and
// OTLP/HTTP protobuf of a batch of them: the ExportTraceServiceRequest the official serializer
// (`ProtobufTraceSerializer` of @opentelemetry/otlp-transformer) writes for the same spans as
// ReadableSpans (`readable`), byte for byte, in one pass and with no allocation per span. The
// official one measures the whole batch first and then writes it, and turns every trace and span id
// into a new Uint8Array in both passes; in Deno a small typed array costs ~290 ns (it is not kept on
// the V8 heap), so its ~4–6 µs a span were half of what an exported request costs the edge
// (bench/analysis.md, issue 30). A record is not an SDK span either: no span object, no closure, no
// HrTime arrays per span, which is what the SDK's objects cost on top of the bytes.
// tests/traces/otlp_proto_test.ts holds this to the official serializer's bytes for every kind of
// span and attribute; tests/traces decodes what the edge exports with the official schema.
//
// Field numbers and wire types: opentelemetry-proto, opentelemetry/proto/trace/v1/trace.proto and
// common/v1/common.proto (ExportTraceServiceRequest.resource_spans = 1, ...).
import {
  type Attributes,
  type AttributeValue,
  createTraceState,
  type SpanKind,
  SpanStatusCode,
} from "@opentelemetry/api";
import { hrTimeDuration, millisToHrTime } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";

/** A finished span, as the edge queues it for export. Ids are lowercase hex; times are ms since
 * the epoch (the edge's `clock()`, or the database's µs anchored at it). */
export interface SpanRecord {
  name: string;
  kind: SpanKind;
  traceId: string;
  spanId: string;
  /** The W3C trace flags (bit 0: sampled). */
  flags: number;
  /** The span's tracestate, serialized; absent when it has none. */
  traceState?: string;
  parentId?: string;
  /** Whether the parent came from another process (a client's traceparent). */
  parentRemote?: boolean;
  start: number;
  end: number;
  attributes: Attributes;
  /** A span this one is linked to (the HTTP span, when a message named another parent). */
  link?: { traceId: string; spanId: string; flags: number; traceState?: string };
  /** How many attributes and links the span limits (otel.ts) left out; absent: none. */
  droppedAttributes?: number;
  droppedLinks?: number;
  error: boolean;
}

/** Where a batch's spans come from: the one resource and instrumentation scope of the edge. */
export type Origin = { resource: Resource; scope: { name: string; version?: string } };

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
    const buf = this.buf;
    let v = value >>> 0, p = this.pos;
    while (v > 127) {
      buf[p++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[p++] = v;
    this.pos = p;
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
    const b = this.buf, p = this.pos;
    b[p] = value & 255;
    b[p + 1] = (value >>> 8) & 255;
    b[p + 2] = (value >>> 16) & 255;
    b[p + 3] = (value >>> 24) & 255;
    this.pos = p + 4;
  }

  /** Milliseconds since the epoch (not negative) as fixed64 nanoseconds, split into seconds and
   * nanoseconds as the SDK's `millisToHrTime` splits them (so the bytes are those of the same span
   * as a ReadableSpan): `Math.trunc(ms / 1e3)` and `Math.round(ms % 1e3 * 1e6)`. No double
   * remainder on the way (V8 calls out to fmod for one): `ms - seconds * 1e3` is that remainder
   * exactly. The division cannot round up to the next whole second (below one, the exact quotient
   * is at least ulp(ms) / 1000 short of it, more than half an ulp of the quotient), and the
   * difference of two doubles within a factor of two of each other is exact. The low 32 bits of the
   * nanoseconds are exact by `Math.imul`; the high 32 are the rest divided by 2^32, whose rounding
   * error (256 at most, the ulp of the product) is far below 2^31. */
  time(ms: number): void {
    const seconds = Math.trunc(ms / 1e3);
    const nanos = Math.round((ms - seconds * 1e3) * 1e6);
    const low = (Math.imul(seconds, 1e9) + nanos) >>> 0;
    this.fixed32(low);
    this.fixed32(Math.round((seconds * 1e9 - low + nanos) / TWO_32));
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
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < 2 * n; i += 2) {
      buf[p++] = (NIBBLE[hex.charCodeAt(i) & 127] << 4) | NIBBLE[hex.charCodeAt(i + 1) & 127];
    }
    this.pos = p;
  }

  /** A string as UTF-8. Written as ASCII (one byte a character, its length known) until a
   * character is not; then again from the start, measured first. */
  string(field: number, s: string): void {
    this.tag(field, LEN);
    const start = this.pos, n = s.length;
    this.uint32(n);
    this.room(n);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.pos = start;
        const length = utf8Length(s);
        this.uint32(length);
        this.room(length);
        this.pos += UTF8.encodeInto(s, this.buf.subarray(this.pos)).written;
        return;
      }
      buf[p++] = c;
    }
    this.pos = p;
  }
}

const UTF8 = new TextEncoder();
const SCRATCH_F64 = new Float64Array(1);
const SCRATCH_BYTES = new Uint8Array(SCRATCH_F64.buffer); // little-endian on every platform Deno runs on

/** A hex digit's value by its character code (either case). */
const NIBBLE = new Uint8Array(128);
for (let d = 0; d < 16; d++) {
  NIBBLE[d.toString(16).charCodeAt(0)] = d;
  NIBBLE[d.toString(16).toUpperCase().charCodeAt(0)] = d;
}

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

/** AnyValue (common.proto) of an attribute value: string 1, bool 2, int 3, double 4, array 5. */
function anyValue(w: Writer, value: AttributeValue | null | undefined): void {
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
  if (Array.isArray(value)) {
    const list = w.open(5);
    for (const item of value) {
      const at = w.open(1);
      anyValue(w, item);
      w.close(at);
    }
    w.close(list);
  }
  // null and undefined (array members the SDK keeps): an empty AnyValue, as the official writes.
}

/** Repeated KeyValue {key 1, value 2} in field `field`. */
function keyValues(w: Writer, field: number, attributes: Attributes): void {
  for (const key in attributes) {
    if (!Object.hasOwn(attributes, key)) continue;
    const kv = w.open(field);
    w.string(1, key);
    const v = w.open(2);
    anyValue(w, attributes[key]);
    w.close(v);
    w.close(kv);
  }
}

const flags = (traceFlags: number, remote: boolean | undefined) =>
  (traceFlags & 255) | HAS_IS_REMOTE | (remote ? IS_REMOTE : 0);

/** Span (trace.proto) in ScopeSpans.spans (2). Counts of dropped attributes, events and links are
 * written even when 0, as the official serializer writes them. */
function span(w: Writer, s: SpanRecord): void {
  const at = w.open(2);
  w.hex(1, s.traceId);
  w.hex(2, s.spanId);
  if (s.traceState) w.string(3, s.traceState);
  if (s.parentId) w.hex(4, s.parentId);
  w.string(5, s.name);
  w.tag(6, VARINT);
  w.uint32(s.kind + 1); // the API's kinds start at INTERNAL = 0, the protocol's at UNSPECIFIED = 0
  w.tag(7, I64);
  w.time(s.start);
  w.tag(8, I64);
  w.time(s.end);
  keyValues(w, 9, s.attributes);
  w.tag(10, VARINT);
  w.uint32(s.droppedAttributes ?? 0);
  w.tag(12, VARINT);
  w.uint32(0);
  if (s.link) {
    const l = w.open(13);
    w.hex(1, s.link.traceId);
    w.hex(2, s.link.spanId);
    if (s.link.traceState) w.string(3, s.link.traceState);
    w.tag(5, VARINT);
    w.uint32(0);
    w.tag(6, I32);
    w.fixed32(flags(s.link.flags, false));
    w.close(l);
  }
  w.tag(14, VARINT);
  w.uint32(s.droppedLinks ?? 0);
  const status = w.open(15);
  w.tag(3, VARINT);
  w.uint32(s.error ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
  w.close(status);
  w.tag(16, I32);
  w.fixed32(flags(s.flags, s.parentId ? s.parentRemote : undefined));
  w.close(at);
}

/** The ExportTraceServiceRequest of `spans`: one ResourceSpans with one ScopeSpans. */
export function encodeSpans(spans: readonly SpanRecord[], { resource, scope }: Origin): Uint8Array<ArrayBuffer> {
  const w = new Writer(lastSize);
  if (spans.length > 0) {
    const rs = w.open(1);
    const r = w.open(1);
    keyValues(w, 1, resource.attributes);
    w.tag(2, VARINT);
    w.uint32(0);
    w.close(r);
    const ss = w.open(2);
    const sc = w.open(1);
    w.string(1, scope.name);
    if (scope.version) w.string(2, scope.version);
    w.close(sc);
    for (const s of spans) span(w, s);
    w.close(ss);
    if (resource.schemaUrl) w.string(3, resource.schemaUrl);
    w.close(rs);
  }
  lastSize = Math.max(1024, w.buf.length);
  return w.buf.subarray(0, w.pos);
}

/** The last batch's buffer size: the next batch is sized alike, so it rarely grows. */
let lastSize = 64 * 1024;

/** The record as the SDK's ReadableSpan: what the official serializers take (http/json, and the
 * tests' reference for the protobuf bytes). */
export function readable(s: SpanRecord, { resource, scope }: Origin): ReadableSpan {
  const context = { traceId: s.traceId, spanId: s.spanId, traceFlags: s.flags, traceState: state(s.traceState) };
  const startTime = millisToHrTime(s.start), endTime = millisToHrTime(s.end);
  return {
    name: s.name,
    kind: s.kind,
    spanContext: () => context,
    parentSpanContext: s.parentId
      ? { traceId: s.traceId, spanId: s.parentId, traceFlags: s.flags, isRemote: s.parentRemote }
      : undefined,
    startTime,
    endTime,
    duration: hrTimeDuration(startTime, endTime),
    ended: true,
    status: { code: s.error ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
    attributes: s.attributes,
    links: s.link
      ? [{
        context: {
          traceId: s.link.traceId,
          spanId: s.link.spanId,
          traceFlags: s.link.flags,
          traceState: state(s.link.traceState),
        },
      }]
      : [],
    events: [],
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: s.droppedAttributes ?? 0,
    droppedEventsCount: 0,
    droppedLinksCount: s.droppedLinks ?? 0,
  };
}

const state = (serialized?: string) => serialized ? createTraceState(serialized) : undefined;
