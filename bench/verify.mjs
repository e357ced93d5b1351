// Correctness pass for the end-to-end benchmark: the same tools/call as the load, for Alice and
// Bob alternately, against each server; every response must hold exactly the caller's rows (the
// ids the database owner sees for the caller's organization, in the tool's order) in
// structuredContent, in one page, and the text content names them and no other user's.
//   node bench/verify.mjs EXPECTED.json NAME=URL [NAME=URL ...]
// EXPECTED.json: {"users": [{"name", "token", "ids": [...]}], "body": {...}, "requests": N}
// Prints one line per server and user; exits 1 on any mismatch.
import { readFileSync } from "node:fs";

const [expectedFile, ...servers] = process.argv.slice(2);
const { users, body, requests } = JSON.parse(readFileSync(expectedFile, "utf8"));
let failed = false;
const others = (user) => users.filter((u) => u !== user).flatMap((u) => u.ids);

async function once(url, user) {
  const r = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
      authorization: `Bearer ${user.token}`,
    },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status !== 200) return `HTTP ${r.status}: ${text.slice(0, 120)}`;
  const msg = JSON.parse(text);
  const result = msg.result;
  if (!result || result.isError) return `not a result: ${text.slice(0, 120)}`;
  const structured = result.structuredContent?.rows?.map((r) => r.id);
  if (result.structuredContent?.next_cursor) return "paged: the call does not fit one page";
  if (JSON.stringify(structured) !== JSON.stringify(user.ids)) {
    return `structuredContent rows differ (${structured?.length} rows)`;
  }
  // The text is each server's own rendering (chumbo: a Markdown table or JSON lines; the
  // reference: JSON): it must name every row of the caller and none of anyone else's.
  const shown = result.content?.[0]?.text ?? "";
  if (!user.ids.every((id) => shown.includes(id))) return "text content lacks some of the caller's rows";
  if (others(user).some((id) => shown.includes(id))) return "text content holds another user's rows";
  return null;
}

for (const spec of servers) {
  const [name, url] = spec.split(/=(.*)/s);
  for (const user of users) {
    let ok = 0, first = null;
    // Interleave the users: Alice and Bob requests in flight at the same time.
    const jobs = [];
    for (let i = 0; i < requests; i++) {
      const u = i % 2 ? users.find((x) => x !== user) : user;
      jobs.push(once(url, u).then((err) => ({ u, err }), (e) => ({ u, err: String(e) })));
    }
    for (const { u, err } of await Promise.all(jobs)) {
      if (u !== user) continue;
      if (err === null) ok++;
      else first ??= err;
    }
    const n = Math.ceil(requests / 2);
    if (ok !== n) failed = true;
    console.log(
      `VERIFY ${name} ${user.name} ${ok}/${n} responses hold exactly the caller's ${user.ids.length} rows${
        first ? ` (first failure: ${first})` : ""
      }`,
    );
  }
}
process.exit(failed ? 1 : 0);
