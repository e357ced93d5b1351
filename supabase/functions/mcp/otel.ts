// The OpenTelemetry SDK as the standard OTEL_* variables configure it (docs/observability.md),
// loaded only when tracing is on (`enabled` below, read by index.ts). The official JS SDK runs
// in the edge's own thread: a span is an object appended to the batch processor's queue, and a
// batch leaves over OTLP/HTTP every OTEL_BSP_SCHEDULE_DELAY ms (or at OTEL_BSP_MAX_EXPORT_BATCH_SIZE
// spans), so neither a slow nor a missing receiver holds up an answer. Deno's built-in
// OpenTelemetry (OTEL_DENO) is not used: it exports from a thread of its own, which each ended
// span wakes, and it adds an HTTP span of its own to every request; both cost more than the
// whole budget for tracing (bench/analysis.md, issue 30).
//
// Read here (the SDK packages no longer read them themselves): OTEL_SDK_DISABLED, OTEL_SERVICE_NAME
// (default chumbo-edge), OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG,
// OTEL_BSP_*, OTEL_METRIC_EXPORT_INTERVAL / _TIMEOUT, OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER
// (otlp or none) and OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]PROTOCOL (http/protobuf, the default, or
// http/json). The exporters read the endpoint, headers, timeout and compression variables.
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
  type Sampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { OTLPTraceExporter as ProtobufTraces } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonTraces } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPMetricExporter as ProtobufMetrics } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPMetricExporter as JsonMetrics } from "@opentelemetry/exporter-metrics-otlp-http";

const env = (name: string) => getStringFromEnv(name);
const SCOPE = "chumbo-edge";

const resource = resourceFromAttributes({ "service.name": SCOPE }).merge(
  detectResources({ detectors: [resourceAttributesEnvDetector, serviceNameEnvDetector] }),
);

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

const exporting = (signal: "TRACES" | "METRICS") => (env(`OTEL_${signal}_EXPORTER`) ?? "otlp") !== "none";

const tracerProvider = new TracerProvider({
  resource,
  sampler: sampler(),
  spanProcessors: exporting("TRACES")
    ? [
      new BatchSpanProcessor({
        exporter: protocol("TRACES") === "http/json" ? new JsonTraces() : new ProtobufTraces(),
        scheduledDelayMillis: getNumberFromEnv("OTEL_BSP_SCHEDULE_DELAY"),
        maxQueueSize: getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE"),
        maxExportBatchSize: getNumberFromEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        exportTimeoutMillis: getNumberFromEnv("OTEL_BSP_EXPORT_TIMEOUT"),
      }),
    ]
    : [],
});

/** A positive number of milliseconds from the environment, else the default. */
const millis = (name: string, otherwise: number) => {
  const n = getNumberFromEnv(name);
  return n !== undefined && n > 0 ? n : otherwise;
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
