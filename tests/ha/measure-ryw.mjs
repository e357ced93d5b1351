// Read-your-writes, measured (docs/scaling.md): N times, rename a project through the edge (the
// primary), then read it through the edge (the standby); counts stale reads and times both.
// Usage (a stack from `CHUMBO_HA=1 make run`; set -a; . .chumbo/dev.env; set +a):
//   node tests/ha/measure-ryw.mjs [N]
const N = Number(process.argv[2] ?? 300);
const URL_ = process.env.MCP_URL, TOKEN = process.env.ALICE_TOKEN;
const ANVIL = "a1000000-0000-4000-8000-000000000002";
async function tool(name, args) {
  const t = performance.now();
  const r = await fetch(URL_, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  return { text: await r.text(), ms: performance.now() - t };
}
let stale = 0, writeMs = 0, readMs = 0;
for (let i = 0; i < N; i++) {
  const name = `Anvil ${i} ${Math.random().toString(16).slice(2, 6)}`;
  const w = await tool("rename_project", { project_id: ANVIL, name });
  const r = await tool("list_projects", {});
  writeMs += w.ms;
  readMs += r.ms;
  if (!r.text.includes(name)) stale++;
}
console.log(
  JSON.stringify({ n: N, stale, writeMsAvg: +(writeMs / N).toFixed(2), readMsAvg: +(readMs / N).toFixed(2) }),
);
