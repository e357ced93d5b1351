// The OpenTelemetry SDK as the standard OTEL_* variables configure it (docs/observability.md),
// loaded only when tracing is on (config.ts, TRACING). The official JS SDK runs
// in the edge's own thread: a span is an object appended to the batch processor's queue, and a
// batch leaves over OTLP/HTTP every OTEL_BSP_SCHEDULE_DELAY ms (or at OTEL_BSP_MAX_EXPORT_BATCH_SIZE
// spans), so neither a slow nor a missing receiver holds up an answer. Deno's built-in
// OpenTelemetry (OTEL_DENO) is not used: it exports from a thread of its own, which each ended
// span wakes, and it adds an HTTP span of its own to every request; both cost more than the
// whole budget for tracing (bench/analysis.md, issue 30).
//
// Read here (the SDK packages no longer read them themselves): OTEL_SERVICE_NAME (default
// chumbo-edge), OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, OTEL_BSP_*,
// OTEL_METRIC_EXPORT_INTERVAL / _TIMEOUT, OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER (otlp or
// none), OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]PROTOCOL (http/protobuf, the default, or http/json),
// and for traces the endpoint, headers, timeout and compression (SpanSender below); the metric
// exporters read their own. (OTEL_SDK_DISABLED is config.ts's.)
import type { Meter, Tracer } from "@opentelemetry/api";
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
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { serializeSpans } from "./otlp-proto.ts";
import { OTLPMetricExporter as ProtobufMetrics } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPMetricExporter as JsonMetrics } from "@opentelemetry/exporter-metrics-otlp-http";

const env = (name: string) => getStringFromEnv(name);
const SCOPE = "chumbo-edge";

const resource = resourceFromAttributes({ "service.name": SCOPE }).merge(
  detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] }),
);

/** A positive number of milliseconds from the environment, else the default. */
const millis = (name: string, otherwise: number) => {
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

/** The span exporter: OTLP/JSON by the official serializer (otlp-transformer), protobuf by
 * otlp-proto.ts (the official one's bytes, at a fraction of its cost in Deno), POSTed with
 * `fetch`. The OTLP trace exporter packages send through Node's `http` module, which under Deno's
 * Node compatibility layer cost ~50 µs of the edge's CPU per traced request (a batch of 512 spans
 * streamed chunk by chunk), more than all of tracing's budget (bench/analysis.md, issue 30).
 * Configured as the OTLP exporter specification says: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is,
 * else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; headers, timeout (default 10 s) and compression
 * (gzip or none), the signal's variable before the general one. A failed export is dropped (the
 * batch processor moves on) and logged, at most once a minute: tracing never holds up an answer. */
class SpanSender implements SpanExporter {
  private readonly url: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly gzip: boolean;
  private readonly json = protocol("TRACES") === "http/json";
  private loggedAt = -Infinity;

  constructor() {
    this.url = endpoint("TRACES")!;
    this.headers = {
      ...headerList(env("OTEL_EXPORTER_OTLP_HEADERS")),
      ...headerList(env("OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
      "content-type": this.json ? "application/json" : "application/x-protobuf",
    };
    this.timeoutMs = millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", millis("OTEL_EXPORTER_OTLP_TIMEOUT", 10000));
    this.gzip = (env("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION") ?? env("OTEL_EXPORTER_OTLP_COMPRESSION")) === "gzip";
    if (this.gzip) this.headers["content-encoding"] = "gzip";
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.send(spans).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: Error) => {
        if (performance.now() - this.loggedAt > 60_000) {
          this.loggedAt = performance.now();
          console.error(`chumbo-edge: spans not exported to ${this.url}: ${error.message}`);
        }
        done({ code: ExportResultCode.FAILED, error });
      },
    );
  }

  private async send(spans: ReadableSpan[]): Promise<void> {
    const bytes = this.json
      ? JsonTraceSerializer.serializeRequest(spans) as Uint8Array<ArrayBuffer> | undefined
      : serializeSpans(spans);
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

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
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

const traceSampler = sampler();
const spanProcessor = exporting("TRACES")
  ? new BatchSpanProcessor({
    exporter: new SpanSender(),
    scheduledDelayMillis: getNumberFromEnv("OTEL_BSP_SCHEDULE_DELAY"),
    maxQueueSize: getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE"),
    maxExportBatchSize: getNumberFromEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    exportTimeoutMillis: getNumberFromEnv("OTEL_BSP_EXPORT_TIMEOUT"),
  })
  : undefined;

const tracerProvider = new TracerProvider({
  resource,
  sampler: traceSampler,
  spanProcessors: spanProcessor ? [spanProcessor] : [],
});

/** Spans that were timed elsewhere and are finished when the edge learns of them: the database's
 * (trace.ts). They are not started and ended through the tracer, which would make a live SDK span
 * of each (~1.2 µs in Deno against ~0.2 µs for the finished record, bench/analysis.md, issue 30);
 * they are sampled by the same sampler, get ids from the same kind of generator, and join the same
 * batch as the tracer's spans, with the same resource. */
export const finished = {
  resource,
  scope: { name: SCOPE },
  sampler: traceSampler,
  ids: new RandomIdGenerator(),
  /** Queues a finished span for export (it is exported only when its trace flags say sampled). */
  export(span: ReadableSpan): void {
    spanProcessor?.onEnd(span);
  },
};

const interval = millis("OTEL_METRIC_EXPORT_INTERVAL", 60000);

const meterProvider = new MeterProvider({
  resource,
  readers: exporting("METRICS")
    ? [
      new PeriodicExportingMetricReader({
        exporter: protocol("METRICS") === "http/json" ? new JsonMetrics() : new ProtobufMetrics(),
        exportIntervalMillis: interval,
        // The reader refuses a timeout longer than the interval.
        exportTimeoutMillis: Math.min(millis("OTEL_METRIC_EXPORT_TIMEOUT", 30000), interval),
      }),
    ]
    : [],
});

export const tracer: Tracer = tracerProvider.getTracer(SCOPE);
export const meter: Meter = meterProvider.getMeter(SCOPE);

/** What is still queued leaves before the process does (scripts/edge.sh stops the edge with
 * SIGTERM); at most a second is spent on it. */
export async function flush(): Promise<void> {
  const second = new Promise((resolve) => setTimeout(resolve, 1000));
  await Promise.race([Promise.allSettled([tracerProvider.forceFlush(), meterProvider.forceFlush()]), second]);
}
