// The edge's span queue (`SpanExport` in supabase/functions/mcp/otel.ts) keeps the batch span
// processor's rules with the OTEL_BSP_* settings: a full batch leaves at once, without waiting for
// the schedule; one export at a time; beyond the queue's size spans are dropped, and that is
// logged; the next full batch leaves as soon as the export before it is done; what is left
// leaves when the edge stops (`flush`). A receiver on loopback that holds each post for 300 ms
// counts the spans of each (OTLP/JSON, so the test reads them without a decoder).
// tests/traces/run.sh runs it:
//   deno test --frozen --config supabase/functions/mcp/deno.json --allow-env --allow-net tests/traces/span_export_test.ts
import { SpanKind } from "@opentelemetry/api";
import type { SpanRecord } from "../../supabase/functions/mcp/otlp-proto.ts";

Deno.test("batches, the queue's bound, one export at a time, and the flush at the end", async () => {
  const posts: { at: number; names: string[] }[] = [];
  let inFlight = 0, mostInFlight = 0;
  const receiver = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    const body = await req.json();
    const spans = body.resourceSpans.flatMap((r: { scopeSpans: { spans: { name: string }[] }[] }) =>
      r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name))
    );
    posts.push({ at: performance.now(), names: spans });
    await new Promise((r) => setTimeout(r, 300));
    inFlight--;
    return new Response("{}");
  });
  Deno.env.set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", `http://127.0.0.1:${receiver.addr.port}/v1/traces`);
  Deno.env.set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json");
  Deno.env.set("OTEL_METRICS_EXPORTER", "none");
  Deno.env.set("OTEL_BSP_SCHEDULE_DELAY", "600000");
  Deno.env.set("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4");
  Deno.env.set("OTEL_BSP_MAX_QUEUE_SIZE", "6");
  const logged: string[] = [];
  const error = console.error;
  console.error = (...args: unknown[]) => logged.push(args.join(" "));
  try {
    const { spans, flush } = await import("../../supabase/functions/mcp/otel.ts");
    const span = (name: string): SpanRecord => ({
      name,
      kind: SpanKind.INTERNAL,
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: 1,
      start: Date.now(),
      end: Date.now(),
      attributes: {},
      error: false,
    });
    const began = performance.now();
    for (let i = 0; i < 4; i++) spans.export(span(`a${i}`));
    // A full batch does not wait for the ten-minute schedule.
    while (posts.length < 1) await new Promise((r) => setTimeout(r, 10));
    if (posts[0].at - began > 5000) throw new Error("the full batch waited");
    // While it is in flight: 6 wait, the other 4 are dropped.
    for (let i = 0; i < 10; i++) spans.export(span(`b${i}`));
    // The next full batch leaves when the first export is done; the last 2 wait for the schedule.
    while (posts.length < 2) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 500));
    if (posts.length !== 2) throw new Error(`${posts.length} posts before the flush`);
    await flush();
    const got = posts.map((p) => p.names.join(","));
    const want = ["a0,a1,a2,a3", "b0,b1,b2,b3", "b4,b5"];
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`posts ${JSON.stringify(got)}`);
    if (mostInFlight !== 1) throw new Error(`${mostInFlight} exports at once`);
    if (!logged.some((l) => l.includes("4 spans dropped"))) throw new Error(`logged: ${JSON.stringify(logged)}`);
  } finally {
    console.error = error;
    await receiver.shutdown();
  }
});
