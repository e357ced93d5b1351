// OpenTelemetry as the standard OTEL_* variables configure it (docs/observability.md), loaded only
// when tracing is on (config.ts, TRACING). It runs in the edge's own thread: a finished span is a
// record appended to a queue (SpanExport), and a batch leaves over OTLP/HTTP every
// OTEL_BSP_SCHEDULE_DELAY ms (or at OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans), so neither a slow nor a
// missing receiver holds up an answer. The SDK gives the sampler, the ids, the resource and the
// metrics (its MeterProvider and OTLP metric exporters). Deno's built-in
// OpenTelemetry (OTEL_DENO) is not used: it exports from a thread of its own, which each ended
// span wakes, and it adds an HTTP span of its own to every request; both cost more than the
// whole budget for tracing (bench/analysis.md, issue 30).
//
// Read here (the SDK packages no longer read them themselves): OTEL_SERVICE_NAME (default
// chumbo-edge), OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_*,
// the span limits (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, each
// before its OTEL_ATTRIBUTE_* default, and OTEL_SPAN_LINK_COUNT_LIMIT),
// OTEL_METRIC_EXPORT_INTERVAL / _TIMEOUT, OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER (otlp or
// none), OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]PROTOCOL (http/protobuf, the default, or http/json),
// and for traces the endpoint, headers, timeout and compression (SpanExport below); the metric
// exporters read their own. (OTEL_SDK_DISABLED is config.ts's.)
import type { Attributes, Meter } from "@opentelemetry/api";
import { getNumberFromEnv, getStringFromEnv } from "@opentelemetry/core";
import {
  detectResources,
  resourceAttributesEnvDetector,
  resourceFromAttributes,
  serviceNameEnvDetector,
} from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { encodeSpans, type Origin, readable, type SpanRecord } from "./otlp-proto.ts";
import { OTLPMetricExporter as ProtobufMetrics } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPMetricExporter as JsonMetrics } from "@opentelemetry/exporter-metrics-otlp-http";

const env = (name: string) => getStringFromEnv(name);
const SCOPE = "chumbo-edge";

const resource = resourceFromAttributes({ "service.name": SCOPE }).merge(
  detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] }),
);

/** A positive number (milliseconds, a size) from the environment, else the default. */
const positive = (name: string, otherwise: number) => {
  const n = getNumberFromEnv(name);
  return n !== undefined && n > 0 ? n : otherwise;
};

function protocol(signal: "TRACES" | "METRICS"): "http/protobuf" | "http/json" {
  const p = env(`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`) ?? env("OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf";
  if (p === "http/protobuf" || p === "http/json") return p;
  console.error(`chumbo-edge: OTLP protocol ${JSON.stringify(p)} is not supported here; using http/protobuf`);
  return "http/protobuf";
}

/** OTEL_TRACES_SAMPLER by the SDK specification's names; default parentbased_always_on. */
function sampler(): Sampler {
  const name = env("OTEL_TRACES_SAMPLER") ?? "parentbased_always_on";
  const arg = getNumberFromEnv("OTEL_TRACES_SAMPLER_ARG");
  const ratio = () => new TraceIdRatioBasedSampler(arg === undefined || arg < 0 || arg > 1 ? 1 : arg);
  switch (name) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return ratio();
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: ratio() });
    default:
      if (name !== "parentbased_always_on") {
        console.error(
          `chumbo-edge: OTEL_TRACES_SAMPLER ${JSON.stringify(name)} is unknown; using parentbased_always_on`,
        );
      }
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The spans' way out: a queue of finished records, sent in batches as the SDK's batch span
 * processor sends them (OTEL_BSP_*: a batch leaves every OTEL_BSP_SCHEDULE_DELAY ms, default 5000,
 * or as soon as OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans, default 512, are waiting; at most
 * OTEL_BSP_MAX_QUEUE_SIZE, default 2048, wait, and the rest are dropped; one export at a time), as
 * OTLP/HTTP: protobuf by otlp-proto.ts (the official serializer's bytes, at a fraction of its cost
 * in Deno), JSON by the official serializer, POSTed with `fetch`. Neither the SDK's tracer nor its
 * batch processor is used: the edge's spans are records it fills itself (trace.ts), which cost a
 * fraction of an SDK span each, and the OTLP trace exporter packages send through Node's `http`
 * module, which under Deno's Node compatibility layer cost ~50 µs of the edge's CPU per traced
 * request (bench/analysis.md, issue 30). Configured as the OTLP exporter specification says:
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces;
 * headers, timeout (default 10 s, and at most OTEL_BSP_EXPORT_TIMEOUT, default 30 s) and
 * compression (gzip or none), the signal's variable before the general one. A failed export is
 * dropped (the queue moves on) and logged, at most once a minute: tracing never holds up an answer. */
class SpanExport {
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly gzip: boolean;
  private readonly json = protocol("TRACES") === "http/json";
  private readonly delayMs = positive("OTEL_BSP_SCHEDULE_DELAY", 5000);
  private readonly maxQueue = positive("OTEL_BSP_MAX_QUEUE_SIZE", 2048);
  // The processor specification: a batch larger than the queue is the queue.
  private readonly maxBatch = Math.min(positive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), this.maxQueue);
  private queue: SpanRecord[] = [];
  private timer?: ReturnType<typeof setTimeout>;
  private exporting?: Promise<void>;
  private dropped = 0;
  private loggedAt = -Infinity;

  constructor(private readonly origin: Origin) {
    this.url = endpoint("TRACES")!;
    this.headers = {
      ...headerList(env("OTEL_EXPORTER_OTLP_HEADERS")),
      ...headerList(env("OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
      "content-type": this.json ? "application/json" : "application/x-protobuf",
    };
    this.timeoutMs = Math.min(
      positive("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", positive("OTEL_EXPORTER_OTLP_TIMEOUT", 10000)),
      positive("OTEL_BSP_EXPORT_TIMEOUT", 30000),
    );
    this.gzip = (env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") ?? env("OTEL_EXPORTER_OTLP_COMPRESSION")) === "gzip";
    if (this.gzip) this.headers["content-encoding"] = "gzip";
  }

  /** Queues a finished, sampled span. */
  add(span: SpanRecord): void {
    if (this.queue.length >= this.maxQueue) {
      this.dropped++;
      return;
    }
    this.queue.push(LIMITED ? bounded(span) : span);
    if (this.exporting) return; // the export in flight sends the next batch when it ends
    if (this.queue.length >= this.maxBatch) this.next();
    else this.wait();
  }

  /** The next batch leaves in OTEL_BSP_SCHEDULE_DELAY ms, if no earlier. */
  private wait(): void {
    if (this.timer !== undefined) return;
    const timer = setTimeout(() => this.next(), this.delayMs);
    // A batch waiting does not keep the edge running (a runtime without unrefTimer: it does).
    Deno.unrefTimer?.(timer);
    this.timer = timer;
  }

  /** Sends the next batch; when it is done, the one after it if it is full, else waits again. */
  private next(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.queue.length === 0) return;
    const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
    this.queue = batch === this.queue ? [] : this.queue.slice(this.maxBatch);
    const sent = this.send(batch).catch((e: Error) => {
      this.complain(`spans not exported to ${this.url}: ${e.message}`);
    });
    this.exporting = sent.finally(() => {
      this.exporting = undefined;
      if (this.queue.length >= this.maxBatch) this.next();
      else if (this.queue.length > 0) this.wait();
    });
    if (
      this.dropped > 0 && this.complain(`${this.dropped} spans dropped: the queue was full (OTEL_BSP_MAX_QUEUE_SIZE)`)
    ) {
      this.dropped = 0;
    }
  }

  /** Everything queued, sent now (the edge is stopping). */
  async flush(): Promise<void> {
    while (this.exporting || this.queue.length > 0) {
      if (!this.exporting) this.next();
      await this.exporting;
    }
  }

  /** Logs `message`, unless something was logged less than a minute ago; whether it was. */
  private complain(message: string): boolean {
    if (performance.now() - this.loggedAt < 60_000) return false;
    this.loggedAt = performance.now();
    console.error(`chumbo-edge: ${message}`);
    return true;
  }

  private async send(spans: SpanRecord[]): Promise<void> {
    const bytes = this.json
      ? JsonTraceSerializer.serializeRequest(spans.map((s) => readable(s, this.origin))) as
        | Uint8Array<ArrayBuffer>
        | undefined
      : encodeSpans(spans, this.origin);
    if (!bytes) throw new Error("the spans could not be serialized");
    const body = this.gzip ? new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip")) : bytes;
    const response = await fetch(this.url, {
      method: "POST",
      headers: this.headers,
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  }
}

/** A span limit of the SDK specification: the first of `names` set to a whole number ≥ 0. */
const limit = (...names: string[]) =>
  names.map((name) => getNumberFromEnv(name)).find((n) => n !== undefined && Number.isInteger(n) && n >= 0);

/** The span limits, each the span's own variable before the general one. None by default: the
 * specification's default counts (128) are far above what an edge span holds (at most nine
 * attributes and one link), and it sets no length; so nothing is done per span unless one is set.
 * A JSON-RPC id is the client's own text, as long as a request may be, and goes into the MCP span. */
const LIMITS = {
  valueLength: limit("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"),
  attributes: limit("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT"),
  links: limit("OTEL_SPAN_LINK_COUNT_LIMIT"),
};
const LIMITED = Object.values(LIMITS).some((n) => n !== undefined);

/** `span` within the limits, as the SDK's span would be: the attributes set first are kept (so
 * the HTTP status and error type, set when the span ends, are the first left out), the rest
 * counted as dropped; every string value longer than the length cut to that many characters
 * (code points: one outside the BMP is never split); the link dropped and counted when no link is
 * allowed. The same record when nothing is over, else a copy (a span's attributes may be shared). */
function bounded(span: SpanRecord): SpanRecord {
  let attributes = span.attributes, droppedAttributes = 0;
  if (LIMITS.attributes !== undefined) {
    const keys = Object.keys(attributes);
    if (keys.length > LIMITS.attributes) {
      attributes = Object.fromEntries(keys.slice(0, LIMITS.attributes).map((k) => [k, span.attributes[k]]));
      droppedAttributes = keys.length - LIMITS.attributes;
    }
  }
  if (LIMITS.valueLength !== undefined) attributes = cut(attributes, LIMITS.valueLength);
  const dropLink = span.link !== undefined && LIMITS.links === 0;
  if (attributes === span.attributes && !dropLink) return span;
  const out: SpanRecord = { ...span, attributes };
  if (droppedAttributes) out.droppedAttributes = droppedAttributes;
  if (dropLink) {
    out.link = undefined;
    out.droppedLinks = 1;
  }
  return out;
}

/** `attributes` with every string value longer than `max` characters cut to that many; the same
 * object when none is, else a copy. */
function cut(attributes: Attributes, max: number): Attributes {
  let out: Attributes | undefined;
  for (const key in attributes) {
    const value = attributes[key];
    if (typeof value !== "string") continue;
    const first = firstChars(value, max);
    if (first !== value) (out ??= { ...attributes })[key] = first;
  }
  return out ?? attributes;
}

/** The first `max` characters of `text` (code points: one outside the BMP is never split), or
 * `text` itself when it has no more. They lie within its first 2 × `max` UTF-16 units, so no
 * more of a long text is split into characters. */
export function firstChars(text: string, max: number): string {
  if (text.length <= max) return text;
  const chars = Array.from(text.slice(0, 2 * max));
  return chars.length > max || text.length > 2 * max ? chars.slice(0, max).join("") : text;
}

/** `key=value,key2=value2` with URL-encoded values (the OTLP exporter's headers variables). */
function headerList(raw?: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    try {
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      console.error("chumbo-edge: an OTLP header that is not URL-encoded was left out");
    }
  }
  return headers;
}

/** A signal's OTLP/HTTP URL by the exporter specification: its own endpoint as it is, else the
 * general one with the signal's path; none when neither is set. */
function endpoint(signal: "TRACES" | "METRICS"): string | undefined {
  const general = env("OTEL_EXPORTER_OTLP_ENDPOINT")?.replace(/\/+$/, "");
  return env(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`) ?? (general && `${general}/v1/${signal.toLowerCase()}`);
}

/** A signal is exported when it has an endpoint and its exporter is not `none`: an endpoint set
 * for metrics alone sends no spans anywhere, and the other way round. */
const exporting = (signal: "TRACES" | "METRICS") =>
  endpoint(signal) !== undefined && (env(`OTEL_${signal}_EXPORTER`) ?? "otlp") !== "none";

const origin: Origin = { resource, scope: { name: SCOPE } };
const spanExport = exporting("TRACES") ? new SpanExport(origin) : undefined;

/** What trace.ts makes spans with: the sampler OTEL_TRACES_SAMPLER names, the SDK's id generator,
 * and the queue of spans to export (none when traces are not exported: then nothing is queued). */
export const spans = {
  sampler: sampler(),
  ids: new RandomIdGenerator(),
  /** Queues a finished span for export; a span whose trace flags say not sampled is never given. */
  export(span: SpanRecord): void {
    spanExport?.add(span);
  },
};

const interval = positive("OTEL_METRIC_EXPORT_INTERVAL", 60000);

const meterProvider = new MeterProvider({
  resource,
  readers: exporting("METRICS")
    ? [
      new PeriodicExportingMetricReader({
        exporter: protocol("METRICS") === "http/json" ? new JsonMetrics() : new ProtobufMetrics(),
        exportIntervalMillis: interval,
        // The reader refuses a timeout longer than the interval.
        exportTimeoutMillis: Math.min(positive("OTEL_METRIC_EXPORT_TIMEOUT", 30000), interval),
      }),
    ]
    : [],
});

export const meter: Meter = meterProvider.getMeter(SCOPE);

/** What is still queued leaves before the process does (scripts/edge.sh stops the edge with
 * SIGTERM); at most a second is spent on it. */
export async function flush(): Promise<void> {
  const second = new Promise((resolve) => setTimeout(resolve, 1000));
  await Promise.race([Promise.allSettled([spanExport?.flush(), meterProvider.forceFlush()]), second]);
}
