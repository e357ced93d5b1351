// 2,000 interleaved Alice/Bob tool calls through the edge, 32 in flight, over the edge's shared
// connection pool: no response may contain a row of the other organization. tests/e2e/run.sh
// runs this file twice: edge -> Postgres, and edge -> pgbouncer (transaction pooling) -> Postgres.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { connect, TOKENS, USERS } from "./common.mjs";

const TOTAL = Number(process.env.E2E_CALLS ?? 2000);
const IN_FLIGHT = Number(process.env.E2E_IN_FLIGHT ?? 32);
const LABEL = process.env.E2E_LABEL ?? "edge -> postgres";

const clients = {};
before(async () => {
  for (const user of Object.keys(USERS)) clients[user] = await connect(TOKENS[user]);
});
after(async () => {
  for (const c of Object.values(clients)) await c.close();
});

// Call i: Alice on even, Bob on odd; a mix of a table function, a search and a write that RLS
// must refuse (it raises inside the tool, which exercises the subtransaction path).
function call(i) {
  const user = i % 2 === 0 ? "alice" : "bob";
  const { other, otherProject } = USERS[user];
  switch (Math.floor(i / 2) % 4) {
    case 0:
    case 1:
      return { user, other, kind: "list", req: { name: "list_projects", arguments: {} } };
    case 2:
      return { user, other, kind: "search", req: { name: "search_documents", arguments: { query: "confidential" } } };
    default:
      return {
        user,
        other,
        kind: "rename",
        req: { name: "rename_project", arguments: { project_id: otherProject, name: "pwned" } },
      };
  }
}

test(`${TOTAL} interleaved Alice/Bob tools/call, ${IN_FLIGHT} in flight (${LABEL})`, async () => {
  const failures = [];
  const leaks = [];
  const counts = { list: 0, search: 0, rename: 0 };
  let next = 0;
  const t0 = Date.now();
  async function worker() {
    while (next < TOTAL) {
      const i = next++;
      const { user, other, kind, req } = call(i);
      try {
        const res = await clients[user].callTool(req);
        const text = JSON.stringify(res);
        if (text.includes(other)) leaks.push({ i, user, kind, text: text.slice(0, 300) });
        const org = USERS[user].org;
        if (kind === "list") {
          const rows = res.structuredContent?.rows ?? [];
          if (res.isError || rows.length !== 3 || rows.some((r) => !r.name.startsWith(org))) {
            failures.push({ i, user, kind, text });
          }
        } else if (kind === "search") {
          const rows = res.structuredContent?.rows ?? [];
          if (res.isError || rows.length !== 3 || rows.some((r) => !r.project.startsWith(org))) {
            failures.push({ i, user, kind, text });
          }
        } else if (!res.isError || !/project not found/.test(res.content?.[0]?.text)) {
          failures.push({ i, user, kind, text });
        }
        counts[kind]++;
      } catch (e) {
        failures.push({ i, user, kind, error: String(e) });
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const secs = (Date.now() - t0) / 1000;
  console.log(
    `# ${LABEL}: ${TOTAL} calls in ${secs.toFixed(1)} s (${(TOTAL / secs).toFixed(0)}/s), ${JSON.stringify(counts)}`,
  );
  assert.deepEqual(leaks, [], `rows of the other organization leaked: ${JSON.stringify(leaks.slice(0, 3))}`);
  // One line per kind of failure (first seen), so a CI page that shows only a few lines still says why.
  const kinds = [...new Map(failures.map((f) => [`${f.kind} ${(f.error ?? f.text).slice(0, 160)}`, f])).keys()];
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} failed calls: ${kinds.slice(0, 3).join(" | ")}`);
  assert.equal(counts.list + counts.search + counts.rename, TOTAL);
});
