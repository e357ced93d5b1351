// Every MCP method chumbo serves, through the real edge, with the official TypeScript clients in
// both eras (SDK 1.32: legacy, 2025-11-25; client 2.4: 2026-07-28), as Alice and as Bob: each
// method must SUCCEED for a normal caller, with that caller's own data (RLS). A method that fails
// for every caller fails here. (The red-team finding this file answers: completion/complete
// resolved its completion function as the edge's login role, so a function in a schema only the
// caller's role may use failed with -32603 "permission denied for schema" over HTTP, while
// chumbo.handle served it, and no HTTP test called completion/complete.)
//
// The methods are read from src/protocol/ (every family's METHODS, subscriptions::METHOD, the
// methods the stateless revision removed): a method added there without a test here fails the
// last test of each era.
//
// Fixture (created here as the owner, dropped at the end): schema e2e_methods_private, USAGE for
// authenticated only (not the edge's login role: the first test checks that), with two
// completion functions that read through RLS, used by a resource template and a prompt defined
// here. The example app's summarize_project completes through private.complete_project_id
// (schema private: the same property), status_report from a static list.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect, MCP_URL, need, TOKENS, USERS } from "./common.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // owner connection to the e2e database (tests/e2e/run.sh)
const EDGE_URL = need("E2E_EDGE_DATABASE_URL"); // the edge's own connection: its login role
const EDGE_ROLE = EDGE_URL ? decodeURIComponent(new URL(EDGE_URL).username) : "chumbo_edge";
const ROOT = new URL("../../../", import.meta.url).pathname;
const SCHEMA = "e2e_methods_private";
const ORG_TEMPLATE = "app://e2e-methods/orgs/{name}";
const BUILDER = "skill://chumbo-builder/SKILL.md"; // served to authenticated by the example app
const SKILLS = "io.modelcontextprotocol/skills";

// The seed (supabase/seed.sql): each user's projects by id and by name.
const SEED = {
  alice: {
    ids: [
      "a1000000-0000-4000-8000-000000000001",
      "a1000000-0000-4000-8000-000000000002",
      "a1000000-0000-4000-8000-000000000003",
    ],
    names: ["Acme Anvil", "Acme Old Catapult", "Acme Rocket"],
  },
  bob: {
    ids: [
      "b1000000-0000-4000-8000-000000000001",
      "b1000000-0000-4000-8000-000000000002",
      "b1000000-0000-4000-8000-000000000003",
    ],
    names: ["Globex Doomsday Device", "Globex Retired Laser", "Globex Secret Plan"],
  },
};

function sql(text) {
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", DB_URL], { input: text, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/**
 * The methods each era serves, and those it answers as unknown, read from the Rust source
 * (src/protocol/): every family's METHODS plus subscriptions::METHOD; the legacy era knows all
 * but server/discover (Era::knows) and subscriptions/listen (answered only for Era::Stateless,
 * src/api.rs); the stateless era all but REMOVED_IN_STATELESS. The "unknown" lists are checked on
 * the wire too (-32601), so a wrong reading of the source fails rather than skips a method.
 */
function methodsOfEras() {
  const dir = join(ROOT, "src/protocol");
  const strings = (s) => [...s.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  const all = new Set();
  for (const f of readdirSync(dir).filter((f) => f.endsWith(".rs"))) {
    const text = readFileSync(join(dir, f), "utf8");
    for (const m of text.matchAll(/pub const METHODS: &\[&str\] = &\[([\s\S]*?)\];/g)) {
      for (const s of strings(m[1])) all.add(s);
    }
    for (const m of text.matchAll(/pub const METHOD: &str = "([^"]+)";/g)) all.add(m[1]);
  }
  const versions = readFileSync(join(dir, "versions.rs"), "utf8");
  const removedList = versions.match(/const REMOVED_IN_STATELESS: \[&str; \d+\] = \[([\s\S]*?)\];/);
  assert.ok(removedList, "versions.rs: REMOVED_IN_STATELESS not found");
  assert.match(versions, /Era::Legacy\(_\) => method != "server\/discover"/, "versions.rs: Era::knows changed");
  assert.ok(all.has("tools/call") && all.has("subscriptions/listen"), [...all].join());
  const removed = strings(removedList[1]);
  // tasks/* are the tasks extension's, 2026-07-28 only (Era::knows)
  assert.match(versions, /!method\.starts_with\("tasks\/"\)/, "versions.rs: Era::knows changed");
  const tasks = [...all].filter((m) => m.startsWith("tasks/"));
  const legacyUnknown = ["server/discover", "subscriptions/listen", ...tasks];
  return {
    legacy: { served: [...all].filter((m) => !legacyUnknown.includes(m)).sort(), unknown: legacyUnknown },
    modern: { served: [...all].filter((m) => !removed.includes(m)).sort(), unknown: removed },
  };
}
const METHODS = methodsOfEras();

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "chumbo-e2e-methods", version: "1.0.0" },
};
/** A raw 2026-07-28 request (for methods the 2.4 client will not send in that era), declaring
 * the tasks extension (which the 2.4 client has no API for). */
async function postModern(method, token, params = {}) {
  const name = params.name ?? params.taskId;
  const meta = {
    ...META,
    "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  };
  const res = await fetch(MCP_URL, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": method,
      ...(name ? { "mcp-name": name } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: meta } }),
  });
  return { status: res.status, body: await res.json() };
}

async function connectModern(token) {
  const client = new ModernClient({ name: "chumbo-e2e-methods", version: "1.0.0" }, {
    versionNegotiation: { mode: "auto" },
  });
  await client.connect(
    new ModernTransport(new URL(MCP_URL), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const sorted = (a) => [...a].sort();
const textOf = (messages) => messages.map((m) => m.content?.text ?? "").join("\n");
const prompt = (name) => ({ type: "ref/prompt", name });

/** The tests of one era as one user: one test (or more) per method, then the coverage check. */
function methodTests(era, user) {
  const { org, other, project } = USERS[user];
  const own = SEED[user];
  const theirs = SEED[user === "alice" ? "bob" : "alice"];
  const declared = new Set();
  let client;
  /** A test of `methods`: named by them, and counted for the coverage check. */
  const it = (methods, name, fn) => {
    for (const m of methods) declared.add(m);
    test(`${methods.join(", ")}: ${name}`, fn);
  };
  const complete = (ref, name, value) => client.complete({ ref, argument: { name, value } });

  before(async () => {
    client = era === "legacy" ? await connect(TOKENS[user]) : await connectModern(TOKENS[user]);
  });
  after(async () => await client?.close());

  if (era === "legacy") {
    it(["initialize"], "2025-11-25, chumbo, every capability", () => {
      assert.equal(client.transport.protocolVersion, "2025-11-25");
      assert.equal(client.getServerVersion()?.name, "chumbo");
      const caps = client.getServerCapabilities();
      for (const c of ["tools", "resources", "prompts", "completions", "logging"]) assert.ok(caps?.[c], c);
      assert.ok(caps.extensions?.[SKILLS], JSON.stringify(caps));
    });
    it(["ping"], "an empty result", async () => {
      assert.deepEqual(await client.ping(), {});
    });
    it(["logging/setLevel"], "an empty result", async () => {
      assert.deepEqual(await client.setLoggingLevel("warning"), {});
    });
  } else {
    it(["server/discover"], "2026-07-28, chumbo, every capability", async () => {
      assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
      assert.equal(client.getServerVersion()?.name, "chumbo");
      const discovered = await client.discover();
      assert.ok(discovered.supportedVersions.includes("2026-07-28"), JSON.stringify(discovered));
      const caps = discovered.capabilities;
      for (const c of ["tools", "resources", "prompts", "completions"]) assert.ok(caps?.[c], c);
      assert.ok(caps.extensions?.[SKILLS], JSON.stringify(caps));
    });
  }

  it(["tools/list", "tools/call"], "list_projects lists and returns the own organization's projects", async () => {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "list_projects"), JSON.stringify(tools.map((t) => t.name)));
    const res = await client.callTool({ name: "list_projects", arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.deepEqual(sorted(res.structuredContent.rows.map((r) => r.name)), own.names);
    assert.ok(!JSON.stringify(res).includes(other), JSON.stringify(res));
  });

  it(["resources/list", "resources/read"], "app://orgs/mine is the own organization only", async () => {
    const listed = await client.listResources();
    const uris = listed.resources.map((r) => r.uri);
    assert.ok(uris.includes("app://orgs/mine") && uris.includes(BUILDER), uris.join());
    if (era === "modern") assert.equal(listed.cacheScope, "private");
    const { contents } = await client.readResource({ uri: "app://orgs/mine" });
    assert.deepEqual(JSON.parse(contents[0].text).map((o) => o.name), [org]);
  });

  it(["resources/templates/list"], "both templates listed; reads through them see own data", async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    const templates = resourceTemplates.map((t) => t.uriTemplate);
    assert.ok(templates.includes(ORG_TEMPLATE) && templates.includes("app://projects/{id}"), templates.join());
    const { contents } = await client.readResource({ uri: `app://e2e-methods/orgs/${org}` });
    assert.deepEqual(JSON.parse(contents[0].text), { name: org, projects: own.names });
    const p = await client.readResource({ uri: `app://projects/${project}` });
    assert.equal(JSON.parse(p.contents[0].text).organization, org);
  });

  it(["prompts/list", "prompts/get"], "prompts over own data", async () => {
    const { prompts } = await client.listPrompts();
    const names = prompts.map((p) => p.name);
    for (const n of ["summarize_project", "status_report", "e2e_methods_brief"]) assert.ok(names.includes(n), n);
    const brief = await client.getPrompt({ name: "e2e_methods_brief", arguments: { project_name: own.names[0] } });
    assert.match(textOf(brief.messages), new RegExp(`^Write a brief about ${own.names[0]} \\(`));
    const report = await client.getPrompt({ name: "status_report", arguments: { status: "active" } });
    assert.ok(textOf(report.messages).includes(org) && !JSON.stringify(report).includes(other));
  });

  it(["completion/complete"], "prompt argument, static values", async () => {
    assert.deepEqual((await complete(prompt("status_report"), "status", "")).completion.values, ["active", "archived"]);
    assert.deepEqual((await complete(prompt("status_report"), "status", "ar")).completion.values, ["archived"]);
  });

  it(
    ["completion/complete"],
    `prompt argument, function in ${SCHEMA} (the caller's role only): own names`,
    async () => {
      const res = await complete(prompt("e2e_methods_brief"), "project_name", "");
      assert.deepEqual(res.completion.values, own.names);
      assert.equal(res.completion.hasMore, false);
      const none = await complete(prompt("e2e_methods_brief"), "project_name", theirs.names[0].slice(0, 3));
      assert.deepEqual(none.completion.values, [], "the other organization's names never complete");
    },
  );

  it(["completion/complete"], "prompt argument, function in the example app's private schema: own ids", async () => {
    const res = await complete(prompt("summarize_project"), "project_id", "");
    assert.deepEqual(sorted(res.completion.values), own.ids);
    const none = await complete(prompt("summarize_project"), "project_id", theirs.ids[0].slice(0, 2));
    assert.deepEqual(none.completion.values, [], "the other organization's ids never complete");
  });

  it(["completion/complete"], `resource template argument, function in ${SCHEMA}: own organization`, async () => {
    const ref = { type: "ref/resource", uri: ORG_TEMPLATE };
    assert.deepEqual((await complete(ref, "name", "")).completion.values, [org]);
    assert.deepEqual((await complete(ref, "name", org.slice(0, 2))).completion.values, [org]);
    assert.deepEqual((await complete(ref, "name", other.slice(0, 2))).completion.values, [], `no ${other}`);
  });

  it(["skills/list", "skills/get"], "chumbo-builder listed, and got as listed", async () => {
    let listed, got;
    if (era === "legacy") {
      // SDK 1.32 has no skills API: the methods through its generic request
      listed = await client.request({ method: "skills/list", params: {} }, ResultSchema);
      got = await client.request({ method: "skills/get", params: { uri: BUILDER } }, ResultSchema);
    } else {
      const skills = new SkillsClient(client);
      listed = await skills.list();
      got = await skills.get(BUILDER);
    }
    const entry = listed.skills.find((s) => s.uri === BUILDER);
    assert.ok(entry, JSON.stringify(listed.skills.map((s) => s.uri)));
    assert.equal(entry.frontmatter.name, "chumbo-builder");
    assert.deepEqual(got.skill, entry);
  });

  if (era === "modern") {
    it(["tasks/get", "tasks/update", "tasks/cancel"], "an own task: created, got, updated, cancelled", async () => {
      const { body } = await postModern("tools/call", TOKENS[user], {
        name: "build_project_report",
        arguments: { project_id: project, seconds: 20 },
      });
      const taskId = body.result?.taskId;
      assert.equal(body.result?.resultType, "task", JSON.stringify(body));
      const got = await postModern("tasks/get", TOKENS[user], { taskId });
      assert.equal(got.body.result?.taskId, taskId, JSON.stringify(got.body));
      const updated = await postModern("tasks/update", TOKENS[user], { taskId, inputResponses: {} });
      assert.equal(updated.body.result?.resultType, "complete", JSON.stringify(updated.body));
      const cancelled = await postModern("tasks/cancel", TOKENS[user], { taskId });
      assert.equal(cancelled.body.result?.resultType, "complete", JSON.stringify(cancelled.body));
      assert.equal((await postModern("tasks/get", TOKENS[user], { taskId })).body.result?.status, "cancelled");
    });
    it(["subscriptions/listen"], "acknowledged with the filter asked for, closed by the client", async () => {
      const sub = await client.listen({ toolsListChanged: true, resourcesListChanged: true });
      try {
        assert.equal(sub.honoredFilter.toolsListChanged, true);
        assert.equal(sub.honoredFilter.resourcesListChanged, true);
      } finally {
        await sub.close();
      }
      assert.equal(await sub.closed, "local");
    });
  }

  test(`the methods the ${era} era does not serve are unknown (-32601): ${METHODS[era].unknown.join(", ")}`, async () => {
    for (const method of METHODS[era].unknown) {
      if (era === "legacy") {
        await assert.rejects(client.request({ method, params: {} }, ResultSchema), (e) => e.code === -32601, method);
      } else {
        const { status, body } = await postModern(method, TOKENS[user]);
        assert.equal(status, 404, `${method}: ${JSON.stringify(body)}`);
        assert.equal(body.error?.code, -32601, `${method}: ${JSON.stringify(body)}`);
      }
    }
  });

  test(`every method the ${era} era serves (src/protocol/) has a test above`, () => {
    assert.deepEqual(sorted(declared), METHODS[era].served);
  });
}

describe("every MCP method through the edge", () => {
  before(() => {
    sql(`
      drop schema if exists ${SCHEMA} cascade; -- left over by an interrupted run
      drop function if exists mcp.e2e_methods_org(text), mcp.e2e_methods_brief(text);
      create schema ${SCHEMA};
      revoke all on schema ${SCHEMA} from public;
      grant usage on schema ${SCHEMA} to authenticated;
      create function ${SCHEMA}.complete_org(value text) returns setof text language sql stable set search_path = '' as $$
        select o.name from public.organizations o where starts_with(o.name, coalesce(value, '')) order by o.name $$;
      create function ${SCHEMA}.complete_project(value text) returns setof text language sql stable set search_path = '' as $$
        select p.name from public.projects p where starts_with(p.name, coalesce(value, '')) order by p.name $$;
      revoke execute on function ${SCHEMA}.complete_org(text), ${SCHEMA}.complete_project(text) from public;
      grant execute on function ${SCHEMA}.complete_org(text), ${SCHEMA}.complete_project(text) to authenticated;

      create function mcp.e2e_methods_org(name text) returns jsonb language sql stable set search_path = '' as $$
        select jsonb_build_object('name', o.name,
                 'projects', (select jsonb_agg(p.name order by p.name) from public.projects p where p.org_id = o.id))
          from public.organizations o where o.name = e2e_methods_org.name $$;
      comment on function mcp.e2e_methods_org(text) is 'An organization of yours, by name. @mcp {
        "resource": "${ORG_TEMPLATE}", "mimeType": "application/json",
        "completions": {"name": "${SCHEMA}.complete_org"}}';
      create function mcp.e2e_methods_brief(project_name text) returns text language sql stable set search_path = '' as $$
        select format('Write a brief about %s (%s).', p.name, p.status)
          from public.projects p where p.name = e2e_methods_brief.project_name $$;
      comment on function mcp.e2e_methods_brief(text) is 'A brief about one of your projects. @mcp {
        "prompt": true, "completions": {"project_name": "${SCHEMA}.complete_project"}}';
      revoke execute on function mcp.e2e_methods_org(text), mcp.e2e_methods_brief(text) from public, anon;
      grant execute on function mcp.e2e_methods_org(text), mcp.e2e_methods_brief(text) to authenticated;`);
  });
  after(() => {
    sql(`drop function if exists mcp.e2e_methods_org(text), mcp.e2e_methods_brief(text);
         drop schema if exists ${SCHEMA} cascade;`);
  });

  test("fixture: the completion functions' schemas are usable by the caller's role, not by the edge's", () => {
    const usage = (role, schema) => sql(`select has_schema_privilege('${role}', '${schema}', 'usage')`);
    for (const schema of [SCHEMA, "private"]) {
      assert.equal(usage("authenticated", schema), "t", `authenticated has USAGE on ${schema}`);
      assert.equal(usage(EDGE_ROLE, schema), "f", `${EDGE_ROLE} has USAGE on ${schema}: the case would prove nothing`);
    }
    const doctor = sql(`select function || ' ' || state from chumbo.doctor()
                         where function like 'mcp.e2e_methods_%' order by 1`);
    assert.match(doctor, /^mcp\.e2e_methods_brief\S* exposed\nmcp\.e2e_methods_org\S* exposed$/, doctor);
  });

  for (const era of ["legacy", "modern"]) {
    for (const user of ["alice", "bob"]) {
      const client = era === "legacy" ? "SDK 1.32, 2025-11-25" : "client 2.4, 2026-07-28";
      describe(`${era} era (${client}) as ${user} (${USERS[user].org})`, () => methodTests(era, user));
    }
  }
});
