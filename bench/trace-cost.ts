// The edge's CPU per traced request, without HTTP or a database: one JSON-RPC message with five
// phases, as chumbo.http_parts' `spans` column reports it, run through supabase/functions/mcp/trace.ts
// with the real OpenTelemetry SDK exporting (bench/analysis.md, "Issue 30, session 17"):
//   node bench/otlp-sink.mjs 55899 &
//   OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:55899 [OTEL_EXPORTER_OTLP_PROTOCOL=http/json] \
//     deno run -A --config supabase/functions/mcp/deno.json bench/trace-cost.ts [REQUESTS] [off]
// Prints the process's CPU time (/proc/self/stat) per request over the second half of the run
// (the first warms up); `off` runs the same loop without tracing, its overhead to subtract.
const trace = await import("../supabase/functions/mcp/trace.ts");

const spans = JSON.stringify({
  total_us: 900,
  spans: [{ name: "authenticate", start_us: 3, end_us: 120 }],
  messages: [{
    method: "tools/call",
    target: "list_projects",
    request_id: 1,
    protocol_version: "2025-11-25",
    trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
    parent_id: null,
    trace_flags: null,
    outcome: "ok",
    start_us: 121,
    end_us: 880,
    spans: [
      { name: "policy", start_us: 131, end_us: 140 },
      { name: "execute", start_us: 141, end_us: 700 },
      { name: "render", start_us: 701, end_us: 800 },
      { name: "audit", start_us: 801, end_us: 870 },
    ],
  }],
});
const req = new Request("http://127.0.0.1/functions/v1/mcp", { method: "POST" });
const request = { method: "POST", path: "/functions/v1/mcp", headers: { "content-type": "application/json" } };
const N = Number(Deno.args[0] ?? 40000);
const off = Deno.args[1] === "off";

/** CPU time of this process so far, in µs (utime + stime, 100 ticks a second). */
function cpu(): number {
  const fields = Deno.readTextFileSync("/proc/self/stat").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

async function run(n: number) {
  for (let i = 0; i < n; i++) {
    if (!off) {
      const http = trace.begin(req, "/functions/v1/mcp");
      trace.traced(request, http);
      trace.exportSpans({ status: 200, spans: { text: spans, sentAt: Date.now() } }, http);
      trace.end(http, 200);
    }
    // Yield now and then, as a server does between requests: the batch processor's timers run.
    if (i % 8 === 0) await new Promise((r) => setTimeout(r, 0));
  }
}

await run(N);
const before = cpu();
await run(N);
await new Promise((r) => setTimeout(r, 300));
console.log(`${off ? "off" : "traced"}: ${((cpu() - before) / N).toFixed(1)} µs CPU per request`);
Deno.exit(0);
