// An OTLP/HTTP endpoint that takes every export and drops it (bench/run.sh's traced edge,
// bench/edge-ab.sh): what tracing costs the edge, apart from a collector's own work.
//   node bench/otlp-sink.mjs PORT
// On SIGTERM it prints what it took per path (posts, bytes), e.g. to see a sampler's effect.
import { createServer } from "node:http";

const took = new Map();
createServer((req, res) => {
  const t = took.get(req.url) ?? { posts: 0, bytes: 0 };
  took.set(req.url, t);
  t.posts++;
  req.on("data", (chunk) => (t.bytes += chunk.length));
  req.on("end", () => res.end());
}).listen(Number(process.argv[2]), "127.0.0.1");
process.on("SIGTERM", () => {
  for (const [path, t] of took) console.error(`otlp-sink: ${path} ${t.posts} posts, ${t.bytes} bytes`);
  process.exit(0);
});
