// Per-backend memory of the capability cache: one fresh session as the edge's login role, its
// backend's memory read before any chumbo call, after a ping, after the first tools/list, after a
// second one and after walking every page. chumbo's cache lives in the Rust heap (malloc), not in a PostgreSQL memory
// context, so the backend's RSS from /proc/<pid>/status (RssAnon = private heap, VmRSS = all,
// including touched shared buffers) is the measure; the sum of pg_backend_memory_contexts
// (catalog caches filled by reflecting the functions, among others) is shown next to it, and
// chumbo.cache_stats() (the cache's own bytes) when the installed build has it.
//   node bench/reference/memory.mjs DATABASE_URL CLAIMS_JSON      prints one JSON line
// Needs to run on the database's machine, as a user that may read /proc/<pid>/status.
import { readFileSync } from "node:fs";
import pg from "pg";

const [url, claims] = process.argv.slice(2);
const client = new pg.Client({ connectionString: url });
await client.connect();
const { rows: [{ pid }] } = await client.query("select pg_backend_pid() as pid");

async function sample() {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  const { rows: [{ ctx }] } = await client.query(
    "select coalesce(sum(total_bytes), 0)::bigint as ctx from pg_backend_memory_contexts",
  );
  return { vmrss_kb: kb("VmRSS"), rssanon_kb: kb("RssAnon"), contexts_kb: Math.round(Number(ctx) / 1024) };
}

async function list(cursor) {
  const body = { jsonrpc: "2.0", id: 1, method: "tools/list", ...(cursor ? { params: { cursor } } : {}) };
  const { rows: [{ r }] } = await client.query("select chumbo.handle($1::jsonb, $2::jsonb) as r", [
    JSON.stringify(body),
    claims,
  ]);
  if (!r?.result?.tools) throw new Error(`tools/list failed: ${JSON.stringify(r).slice(0, 200)}`);
  return r.result;
}

// Before any chumbo call (the extension not loaded in this backend yet), after the first call
// (a ping: the library loaded; it may fill the registry too), after the first tools/list.
await sample();
const before = await sample(); // the first sample() planned its own query
await client.query("select chumbo.handle($1::jsonb, $2::jsonb)", [
  JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
  claims,
]);
const afterPing = await sample();
const first = await list();
const afterFirst = await sample();
await list();
const afterSecond = await sample();
let tools = first.tools.length, cursor = first.nextCursor, pages = 1;
while (cursor) {
  const page = await list(cursor);
  tools += page.tools.length;
  cursor = page.nextCursor;
  pages++;
}
const afterAll = await sample();
// The cache's own bytes (a counting allocator), where this build has chumbo.cache_stats().
let cacheStats = null;
const { rows: [{ has }] } = await client.query("select to_regproc('chumbo.cache_stats') is not null as has");
if (has) {
  try {
    ({ rows: [{ cacheStats }] } = await client.query('select chumbo.cache_stats() as "cacheStats"'));
  } catch (e) {
    cacheStats = { error: String(e.message ?? e) };
  }
}
console.log(JSON.stringify({ pid, tools, pages, before, afterPing, afterFirst, afterSecond, afterAll, cacheStats }));
await client.end();
