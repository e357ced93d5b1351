// Spans out (docs/observability.md), end to end: real edges with OpenTelemetry on (the JS SDK), the
// database timing its phases, and a real OTLP receiver (receiver.py) that decodes every export
// with the official schema and writes the spans to TRACES_SPANS as JSON lines.
// Run through tests/traces/run.sh (it starts the receiver and the edges and exports the ports,
// tokens and paths used here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { openListen } from "../lib/listen.mjs";

const need = (name) => process.env[name] ?? assert.fail(`${name} is not set (run tests/traces/run.sh)`);
const edge = (prefix) => ({
  url: `http://localhost:${need(`${prefix}_PORT`)}/functions/v1/mcp`,
  token: need(`${prefix}_TOKEN`),
});
const PROTOBUF = edge("TRACES_EDGE"); // exports http/protobuf to the receiver
const JSON_EDGE = edge("TRACES_JSON_EDGE"); // exports http/json to the receiver
const DOWN = edge("TRACES_DOWN_EDGE"); // exports to a port where nothing listens
const OFF = edge("TRACES_OFF_EDGE"); // no OTEL_* at all
const SAMPLED = edge("TRACES_SAMPLED_EDGE"); // parentbased_traceidratio at 0: samples no root
const FLUSH = edge("TRACES_FLUSH_EDGE"); // a ten-minute batch delay
const LIMITS = edge("TRACES_LIMITS_EDGE"); // at most 3 attributes a span, no link
const SPANS = need("TRACES_SPANS");
const DB_URL = need("TRACES_DATABASE_URL");

const hex = (bytes) => randomBytes(bytes).toString("hex");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SERVER = "SPAN_KIND_SERVER";
const ERROR = "STATUS_CODE_ERROR";

/** POST one JSON-RPC message; `headers` on top of the usual ones. */
async function call(e, message, headers = {}) {
  const started = performance.now();
  const r = await fetch(e.url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${e.token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
  const text = await r.text();
  return { status: r.status, text, body: text ? JSON.parse(text) : null, ms: performance.now() - started };
}

const toolCall = (id, name, args, meta) => ({
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

/** The records of a file the receiver writes, one JSON object a line: the complete lines only (the
 * last, while it has no newline yet, is still being written). */
const jsonLines = (file) =>
  readFileSync(file, "utf8").split("\n").slice(0, -1).filter(Boolean).map((line) => JSON.parse(line));
/** Every span the receiver has written so far. */
const received = (file = SPANS) => jsonLines(file);

/** Polls the receiver's output until `pick(spans)` is truthy (the edge exports in the background). */
async function waitFor(what, pick, ms = 15_000) {
  const until = Date.now() + ms;
  for (;;) {
    const found = pick(received());
    if (found) return found;
    if (Date.now() > until) assert.fail(`no ${what} reached the receiver within ${ms} ms`);
    await sleep(100);
  }
}

/** The MCP server span `name` in trace `traceId`, once it and its children have arrived. */
const mcpSpan = (traceId, name) =>
  waitFor(`span "${name}" in trace ${traceId}`, (all) => {
    const span = all.find((s) => s.trace_id === traceId && s.name === name && s.kind === SERVER);
    return span && all.some((s) => s.parent_id === span.span_id && s.name === "chumbo execute") && span;
  });
const childrenOf = (span) => received().filter((s) => s.parent_id === span.span_id);
const within = (inner, outer) => inner.start >= outer.start && inner.end <= outer.end;

function psql(sql) {
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", DB_URL], { input: sql, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}
const audited = (traceId) =>
  Number(psql(`select count(*) from chumbo.audit_events where trace_id = '${traceId}' and method = 'tools/call'`));

/** The database's phases under an MCP span: each `chumbo <phase>`, INTERNAL, within its time. */
function assertPhases(span) {
  const children = childrenOf(span);
  const names = children.map((c) => c.name);
  for (const phase of ["chumbo authenticate", "chumbo policy", "chumbo execute", "chumbo render"]) {
    assert.ok(names.includes(phase), `${phase} under ${span.name}: ${names}`);
  }
  for (const c of children) {
    assert.match(c.name, /^chumbo [a-z_]+$/);
    assert.equal(c.kind, "SPAN_KIND_INTERNAL", c.name);
    assert.equal(c.trace_id, span.trace_id, c.name);
    assert.equal(c.attributes["db.system.name"], "postgresql", c.name);
    assert.ok(within(c, span), `${c.name} [${c.start}, ${c.end}] within ${span.name} [${span.start}, ${span.end}]`);
  }
}

test("a client's _meta traceparent that says not sampled (flags 00): no MCP span of it is exported", async () => {
  const [unsampled, sampled] = [hex(16), hex(16)];
  const r = await call(PROTOBUF, toolCall(11, "list_projects", {}, { traceparent: `00-${unsampled}-${hex(8)}-00` }));
  assert.equal(r.status, 200, r.text);
  // a sampled call right after: once its span is in, the exporter has run past the first one
  await call(PROTOBUF, toolCall(12, "list_projects", {}, { traceparent: `00-${sampled}-${hex(8)}-01` }));
  await mcpSpan(sampled, "tools/call list_projects");
  assert.deepEqual(received().filter((s) => s.trace_id === unsampled), []);
});

test("mcp.server.operation.duration: a histogram in seconds by method, tool and outcome, without request ids", async () => {
  const ok = await call(PROTOBUF, toolCall(21, "list_projects", {}));
  assert.equal(ok.status, 200, ok.text);
  // a name no tool has is whatever the client sent: it must not make a series of its own
  const unknown = await call(PROTOBUF, toolCall(22, "made-up-name-8231", {}));
  assert.equal(unknown.status, 200, unknown.text);
  // and a made-up method is `_OTHER`, as OpenTelemetry's HTTP conventions record an unknown method
  const noMethod = await call(PROTOBUF, { jsonrpc: "2.0", id: 23, method: "made-up/method-8231" });
  assert.equal(noMethod.body.error?.code, -32601, noMethod.text);
  const points = () =>
    jsonLines(`${SPANS}.metrics.jsonl`)
      .filter((p) => p.name === "mcp.server.operation.duration" && p.service === "chumbo-traces-protobuf");
  const until = Date.now() + 15_000;
  let seen = [];
  for (;;) {
    seen = points();
    const called = seen.find((p) =>
      p.attributes["gen_ai.tool.name"] === "list_projects" && !p.attributes["error.type"]
    );
    const failed = seen.find((p) => p.attributes["error.type"] === "-32602");
    const other = seen.find((p) => p.attributes["mcp.method.name"] === "_OTHER");
    if (called && failed && other) {
      assert.equal(other.attributes["error.type"], "-32601", JSON.stringify(other));
      assert.equal(failed.attributes["gen_ai.tool.name"], undefined, JSON.stringify(failed));
      assert.ok(!seen.some((p) => JSON.stringify(p).includes("made-up")), "a made-up name or method in a series");
      assert.equal(called.unit, "s");
      assert.ok(called.count >= 1 && called.sum > 0 && called.sum / called.count < 10, JSON.stringify(called));
      assert.deepEqual(called.attributes, {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "gen_ai.tool.name": "list_projects",
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "tcp",
      });
      break;
    }
    if (Date.now() > until) assert.fail(`no duration points for both calls: ${JSON.stringify(seen)}`);
    await sleep(100);
  }
  // low cardinality, nothing of a request: only these attribute keys in any point
  const allowed = [
    "mcp.method.name",
    "mcp.protocol.version",
    "gen_ai.tool.name",
    "gen_ai.prompt.name",
    "gen_ai.operation.name",
    "network.transport",
    "error.type",
  ];
  for (const p of seen) {
    for (const key of Object.keys(p.attributes)) assert.ok(allowed.includes(key), `${key} in ${JSON.stringify(p)}`);
  }
});

/** Every metric point the receiver has written so far for `name` from the protobuf edge (or `service`). */
const metricPoints = (name, service = "chumbo-traces-protobuf") =>
  jsonLines(`${SPANS}.metrics.jsonl`)
    .filter((p) => p.name === name && p.service === service);

/** Polls the metric points of `name` until `pick(points)` is truthy (the edge exports every 300 ms here). */
async function waitForPoint(name, what, pick, ms = 15_000, service = undefined) {
  const until = Date.now() + ms;
  for (;;) {
    const found = pick(metricPoints(name, service));
    if (found) return found;
    if (Date.now() > until) assert.fail(`no ${what} (${name}) within ${ms} ms: ${JSON.stringify(metricPoints(name))}`);
    await sleep(100);
  }
}

test("a parent-based ratio sampler (OTEL_TRACES_SAMPLER): a request it does not sample exports no span but counts in the duration; a client's sampled _meta traceparent still gets its span and phases", async () => {
  // Not sampled: the sampler follows the caller's header (flags 00), and would not sample a root.
  const unsampled = hex(16);
  const quiet = await call(SAMPLED, toolCall(31, "list_projects", {}), { traceparent: `00-${unsampled}-${hex(8)}-00` });
  assert.equal(quiet.status, 200, quiet.text);
  assert.equal(audited(unsampled), 1); // the database still carries the caller's trace id
  // A message whose own _meta.traceparent says sampled: its parent decides, not the ratio.
  const [sampled, clientSpan] = [hex(16), hex(8)];
  const r = await call(SAMPLED, toolCall(32, "list_projects", {}, { traceparent: `00-${sampled}-${clientSpan}-01` }));
  assert.equal(r.status, 200, r.text);
  const span = await mcpSpan(sampled, "tools/call list_projects");
  assert.equal(span.service, "chumbo-traces-sampled");
  assert.equal(span.parent_id, clientSpan);
  assertPhases(span);
  // The HTTP spans were not sampled (a root at ratio 0; a parent that said 00): none exported.
  assert.deepEqual(
    received().filter((s) =>
      s.trace_id === unsampled ||
      s.service === "chumbo-traces-sampled" && s.kind === SERVER && s.name.startsWith("POST ")
    ),
    [],
  );
  // Both messages count in the duration, sampled or not.
  await waitForPoint(
    "mcp.server.operation.duration",
    "both calls' durations",
    (ps) => ps.find((p) => p.attributes["gen_ai.tool.name"] === "list_projects" && p.count >= 2),
    15_000,
    "chumbo-traces-sampled",
  );
});

test("mcp.server.session.duration: a subscriptions/listen stream's time when it ends; chumbo.edge.listen.streams counts the open ones", async () => {
  const STREAMS = "chumbo.edge.listen.streams";
  const SESSION = "mcp.server.session.duration";
  const attributes = {
    "mcp.protocol.version": "2026-07-28",
    "network.transport": "tcp",
    "network.protocol.name": "http",
  };
  const before = Date.now() * 1e6;
  const s = await openListen(PROTOBUF.url, PROTOBUF.token, { id: "listen-traces" });
  assert.equal(s.status, 200);
  let held;
  try {
    assert.ok(await s.until(() => s.messages().length >= 1, 5000), "acknowledgement");
    assert.equal(s.messages()[0].method, "notifications/subscriptions/acknowledged");
    const opened = Date.now();

    // Open: the UpDownCounter says one stream (no other test opens one on this edge).
    const open = await waitForPoint(
      STREAMS,
      "an open stream",
      (ps) => ps.find((p) => p.time > before && p.value === 1),
    );
    assert.equal(open.kind, "sum");
    assert.equal(open.monotonic, false);
    assert.deepEqual(open.attributes, attributes);
    assert.deepEqual(metricPoints(SESSION), [], "no session ended yet");
    await sleep(Math.max(0, 600 - (Date.now() - opened)));
    held = (Date.now() - opened) / 1000;
  } finally {
    await s.close(); // the client goes away: the stream ends, without an error
  }

  const ended = await waitForPoint(SESSION, "an ended session", (ps) => ps.find((p) => p.count >= 1));
  assert.equal(ended.kind, "histogram");
  assert.equal(ended.unit, "s");
  assert.equal(ended.count, 1);
  assert.ok(ended.sum >= 0.5 && ended.sum <= held + 1, `${ended.sum} s for a stream held ${held} s`);
  assert.deepEqual(ended.attributes, attributes, "no error.type: the client ended it");
  const closedAt = Date.now() * 1e6;
  await waitForPoint(STREAMS, "the stream closed", (ps) => ps.find((p) => p.time > closedAt && p.value === 0));
});

test("a tools/call with params._meta.traceparent: its MCP span is in the client's trace, under the client's span, with the database's phases inside it", async () => {
  const [traceId, clientSpan] = [hex(16), hex(8)];
  const r = await call(PROTOBUF, toolCall(1, "list_projects", {}, { traceparent: `00-${traceId}-${clientSpan}-01` }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result.isError, undefined, r.text);

  const span = await mcpSpan(traceId, "tools/call list_projects");
  assert.equal(span.parent_id, clientSpan);
  assert.equal(span.service, "chumbo-traces-protobuf");
  assert.equal(span.encoding, "protobuf");
  assert.notEqual(span.status, ERROR);
  assert.deepEqual(span.attributes, {
    "mcp.method.name": "tools/call",
    "mcp.protocol.version": "2025-11-25",
    "jsonrpc.request.id": "1",
    "gen_ai.tool.name": "list_projects",
    "gen_ai.operation.name": "execute_tool",
    "network.transport": "tcp",
  });
  assertPhases(span);
  // The transport's context, the edge's HTTP server span (a trace of its own here), is linked.
  assert.equal(span.links.length, 1);
  const http = await waitFor("the linked HTTP span", (all) => all.find((s) => s.span_id === span.links[0].span_id));
  assert.equal(http.trace_id, span.links[0].trace_id);
  assert.equal(http.kind, SERVER);
  assert.equal(http.scope, "chumbo-edge");
  assert.ok(within(span, http), "the MCP span lies within the HTTP request's time");
  // The trace id the audit row carries is the exported one.
  assert.equal(audited(traceId), 1);
});

test("a traceparent only as an HTTP header: the edge's HTTP span is under the client's span and the MCP span under it", async () => {
  const [traceId, clientSpan] = [hex(16), hex(8)];
  const r = await call(PROTOBUF, toolCall("h-1", "list_projects", {}), {
    traceparent: `00-${traceId}-${clientSpan}-01`,
  });
  assert.equal(r.status, 200, r.text);

  const span = await mcpSpan(traceId, "tools/call list_projects");
  const http = await waitFor("the HTTP span", (all) => all.find((s) => s.span_id === span.parent_id));
  assert.equal(http.trace_id, traceId);
  assert.equal(http.parent_id, clientSpan);
  assert.equal(http.scope, "chumbo-edge");
  assert.equal(http.kind, SERVER);
  // By the HTTP conventions: `{method} {http.route}`, the status it answered.
  assert.equal(http.name, "POST /functions/v1/mcp");
  assert.equal(http.attributes["http.request.method"], "POST");
  assert.equal(http.attributes["http.route"], "/functions/v1/mcp");
  assert.equal(http.attributes["http.response.status_code"], 200);
  assert.deepEqual(span.links, []);
  assert.equal(span.attributes["jsonrpc.request.id"], "h-1");
  assert.ok(within(span, http));
  assertPhases(span);
  assert.equal(audited(traceId), 1);
});

test("a tool that fails (isError): error.type tool_error, status ERROR; an unknown tool: error.type -32602, not named", async () => {
  // No traceparent at all: the trace id in the tool's error message is the exported trace's.
  const failed = await call(
    PROTOBUF,
    toolCall(2, "rename_project", { project_id: "00000000-0000-4000-8000-00000000dead", name: "renamed" }),
  );
  assert.equal(failed.body.result?.isError, true, failed.text);
  const traceId = failed.body.result.content[0].text.match(/\(trace id ([0-9a-f]{32})\)/)?.[1];
  assert.ok(traceId, failed.text);
  const tool = await mcpSpan(traceId, "tools/call rename_project");
  assert.equal(tool.status, ERROR);
  assert.equal(tool.attributes["error.type"], "tool_error");
  assert.ok(childrenOf(tool).some((c) => c.name === "chumbo execute"), "the failing execution is a span too");
  const http = await waitFor("the HTTP span", (all) => all.find((s) => s.span_id === tool.parent_id));
  assert.equal(http.trace_id, traceId);
  assert.equal(http.parent_id, "", "the edge's HTTP span began the trace");

  const unknownTrace = hex(16);
  const unknown = await call(PROTOBUF, toolCall(3, "no_such_tool", {}), {
    traceparent: `00-${unknownTrace}-${hex(8)}-01`,
  });
  assert.equal(unknown.body.error?.code, -32602, unknown.text);
  // A name no tool has is whatever the client sent: the span is the method's alone (span names
  // must stay few), and no attribute carries the name.
  const rpc = await waitFor(
    "span tools/call",
    (all) => all.find((s) => s.trace_id === unknownTrace && s.kind === SERVER && s.name.startsWith("tools/call")),
  );
  assert.equal(rpc.name, "tools/call");
  assert.equal(rpc.attributes["gen_ai.tool.name"], undefined);
  assert.ok(!JSON.stringify(rpc).includes("no_such_tool"), JSON.stringify(rpc));
  assert.equal(rpc.status, ERROR);
  assert.equal(rpc.attributes["error.type"], "-32602");
  assert.equal(rpc.attributes["rpc.response.status_code"], "-32602");
});

test("refused before any method (401): no MCP span, error.type on the edge's HTTP span", async () => {
  const traceId = hex(16);
  const r = await call({ ...PROTOBUF, token: "not-a-token" }, toolCall(4, "list_projects", {}), {
    traceparent: `00-${traceId}-${hex(8)}-01`,
  });
  assert.equal(r.status, 401);
  const http = await waitFor("the HTTP span of the 401", (all) => all.find((s) => s.trace_id === traceId));
  assert.equal(http.attributes["error.type"], "401");
  await sleep(500); // anything else of this request would have been exported with it
  assert.deepEqual(received().filter((s) => s.trace_id === traceId).map((s) => s.name), [http.name]);
});

test("nothing secret in a span: not the bearer token, an argument value, nor what the tool returned", async () => {
  const marker = `marker-${hex(8)}`;
  const traceId = hex(16);
  const traceparent = `00-${traceId}-${hex(8)}-01`;
  const search = await call(PROTOBUF, toolCall(5, "search_documents", { query: marker }), { traceparent });
  assert.equal(search.status, 200, search.text);
  const listed = await call(PROTOBUF, toolCall(6, "list_projects", {}), { traceparent });
  const rows = listed.body.result.structuredContent.rows;
  assert.ok(rows.length > 0, listed.text);
  await mcpSpan(traceId, "tools/call search_documents");
  await mcpSpan(traceId, "tools/call list_projects");

  // Every span received in this run, of every edge: names, attributes, links, resources.
  const exported = readFileSync(SPANS, "utf8");
  const secrets = [
    PROTOBUF.token,
    PROTOBUF.token.split(".")[2], // the signature alone
    JSON_EDGE.token,
    marker,
    ...rows.flatMap((row) => [row.name, row.description]),
  ];
  for (const secret of secrets) assert.ok(!exported.includes(secret), `"${secret.slice(0, 24)}…" was exported`);
});

test("http/json: the same spans reach the receiver in OTLP/JSON, gzip-compressed, with OTEL_EXPORTER_OTLP_HEADERS", async () => {
  const [traceId, clientSpan] = [hex(16), hex(8)];
  const r = await call(JSON_EDGE, toolCall(7, "list_projects", {}, { traceparent: `00-${traceId}-${clientSpan}-01` }));
  assert.equal(r.status, 200, r.text);
  const span = await mcpSpan(traceId, "tools/call list_projects");
  assert.equal(span.encoding, "json");
  assert.equal(span.content_encoding, "gzip"); // OTEL_EXPORTER_OTLP_COMPRESSION
  assert.equal(span.test_header, "json edge"); // OTEL_EXPORTER_OTLP_HEADERS, URL-decoded
  assert.equal(span.service, "chumbo-traces-json");
  assert.equal(span.parent_id, clientSpan);
  assert.equal(span.attributes["gen_ai.tool.name"], "list_projects");
  assertPhases(span);
});

test("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT: a JSON-RPC id longer than the limit is cut to it in the span, never inside a character; without a limit it is whole", async () => {
  const id = "x".repeat(23) + "\u{1F600}" + "y".repeat(40); // a character outside the BMP at the limit
  for (const [e, want] of [[JSON_EDGE, "x".repeat(23) + "\u{1F600}"], [PROTOBUF, id]]) {
    const [traceId, clientSpan] = [hex(16), hex(8)];
    const r = await call(e, toolCall(id, "list_projects", {}, { traceparent: `00-${traceId}-${clientSpan}-01` }));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, id); // the answer keeps the client's id whole
    const span = await mcpSpan(traceId, "tools/call list_projects");
    assert.equal(span.attributes["jsonrpc.request.id"], want);
    assert.equal(span.attributes["gen_ai.tool.name"], "list_projects"); // shorter than the limit: as it is
  }
});

test("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT and OTEL_SPAN_LINK_COUNT_LIMIT: a span keeps the attributes set first and counts the rest as dropped, its link is dropped and counted; without limits all are kept", async () => {
  /** The spans of one tools/call with the client's context in `_meta` (the MCP span then links the
   * HTTP span), and of one with it as a header (the HTTP span is then in the client's trace). */
  async function spansOf(e) {
    const [metaTrace, headerTrace] = [hex(16), hex(16)];
    let r = await call(e, toolCall("c-1", "list_projects", {}, { traceparent: `00-${metaTrace}-${hex(8)}-01` }));
    assert.equal(r.status, 200, r.text);
    r = await call(e, toolCall("c-2", "list_projects", {}), { traceparent: `00-${headerTrace}-${hex(8)}-01` });
    assert.equal(r.status, 200, r.text);
    const mcp = await mcpSpan(metaTrace, "tools/call list_projects");
    const underHttp = await mcpSpan(headerTrace, "tools/call list_projects");
    const http = await waitFor("the HTTP span", (all) => all.find((s) => s.span_id === underHttp.parent_id));
    return { mcp, http, phase: childrenOf(mcp).find((c) => c.name === "chumbo execute") };
  }
  const whole = await spansOf(PROTOBUF);
  const limited = await spansOf(LIMITS);
  assert.equal(limited.mcp.service, "chumbo-traces-limits");
  for (const s of Object.values(whole)) assert.equal(s.dropped_attributes_count, 0, s.name);
  assert.equal(whole.mcp.links.length, 1);
  assert.equal(whole.mcp.dropped_links_count, 0);

  // Six attributes on the MCP span, four on the HTTP span (its status set last): three kept, in order.
  for (const [kind, all] of [["mcp", 6], ["http", 4]]) {
    const attributes = Object.entries(whole[kind].attributes);
    assert.equal(attributes.length, all, kind);
    assert.deepEqual(Object.entries(limited[kind].attributes), attributes.slice(0, 3), kind);
    assert.equal(limited[kind].dropped_attributes_count, all - 3, kind);
  }
  assert.equal(limited.http.attributes["http.response.status_code"], undefined);
  // The link to the HTTP span, not allowed: left out and counted.
  assert.deepEqual(limited.mcp.links, []);
  assert.equal(limited.mcp.dropped_links_count, 1);
  // A span within the limits is as it is.
  assert.deepEqual(limited.phase.attributes, { "db.system.name": "postgresql" });
  assert.equal(limited.phase.dropped_attributes_count, 0);
  assert.equal(limited.phase.dropped_links_count, 0);
});

test("what a capability opts in to have recorded (as for its audit row): a tool's arguments as gen_ai.tool.call.arguments; a resource URI as mcp.resource.uri when it has no parameters or its resource opts in", async () => {
  psql(`create or replace function mcp.trace_shout(words text) returns text language sql as $$ select upper(words) $$;
        comment on function mcp.trace_shout(text) is '@mcp {"audit": {"arguments": true}}';
        create or replace function mcp.trace_entry(id text) returns text language sql as $$ select 'entry ' || id $$;
        comment on function mcp.trace_entry(text) is '@mcp {"resource": "trace-entries://{id}", "audit": {"arguments": true}}';
        grant execute on function mcp.trace_shout(text), mcp.trace_entry(text) to authenticated;`);
  const marker = `marker-${hex(8)}`;
  /** The MCP span of `message`; `answered`: whether it must be a result (else an error will do). */
  const spanOf = async (message, name, answered = true) => {
    const traceId = hex(16);
    const r = await call(PROTOBUF, message, { traceparent: `00-${traceId}-${hex(8)}-01` });
    assert.equal(r.status, 200, r.text);
    if (answered) assert.equal(r.body.error, undefined, r.text);
    return await waitFor(
      `span "${name}" in trace ${traceId}`,
      (all) => all.find((s) => s.trace_id === traceId && s.name === name && s.kind === SERVER),
    );
  };
  const read = (uri) => ({ id: 2, method: "resources/read", params: { uri } });

  const shout = await spanOf(toolCall(1, "trace_shout", { words: marker }), "tools/call trace_shout");
  assert.deepEqual(JSON.parse(shout.attributes["gen_ai.tool.call.arguments"]), { words: marker });
  // A tool that does not opt in: nothing of its arguments (as the test above checks of every span).
  const search = await spanOf(toolCall(1, "search_documents", { query: marker }), "tools/call search_documents");
  assert.equal(search.attributes["gen_ai.tool.call.arguments"], undefined);

  // A resource without parameters: its URI is the declared one. A template's URI carries its
  // parameters: recorded only when its resource opts in. The span name never has the URI.
  const mine = await spanOf(read("app://orgs/mine"), "resources/read");
  assert.equal(mine.attributes["mcp.resource.uri"], "app://orgs/mine");
  const project = await spanOf(read(`app://projects/${marker}`), "resources/read", false);
  assert.equal(project.attributes["mcp.resource.uri"], undefined);
  const entry = await spanOf(read(`trace-entries://${marker}`), "resources/read");
  assert.equal(entry.attributes["mcp.resource.uri"], `trace-entries://${marker}`);
});

test("a client's own text in a span is cut to 4,096 characters even with no limit set: a request id of 5,000 (the queue of spans must not hold megabytes a span)", async () => {
  const id = "i".repeat(4095) + "\u{1F600}" + "j".repeat(904); // a character outside the BMP at the cut
  const traceId = hex(16);
  const r = await call(PROTOBUF, toolCall(id, "list_projects", {}, { traceparent: `00-${traceId}-${hex(8)}-01` }));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.id, id); // the answer keeps the client's id whole
  const span = await mcpSpan(traceId, "tools/call list_projects");
  assert.equal(span.attributes["jsonrpc.request.id"], "i".repeat(4095) + "\u{1F600}");
});

test("a request id beyond 2^53 is in its span as the client wrote it", async () => {
  // As a JavaScript number the edge read 9007199254740993 as 9007199254740992.
  const traceId = hex(16);
  const id = JSON.rawJSON("9007199254740993");
  const r = await call(PROTOBUF, toolCall(id, "list_projects", {}, { traceparent: `00-${traceId}-${hex(8)}-01` }));
  assert.equal(r.status, 200, r.text);
  assert.match(r.text, /"id":9007199254740993[,}]/); // the answer keeps it (the database writes it)
  const span = await mcpSpan(traceId, "tools/call list_projects");
  assert.equal(span.attributes["jsonrpc.request.id"], "9007199254740993");
});

test("the receiver down: every call still answers 200, without waiting for the exporter", async () => {
  // Over 2 s at a 100 ms batch delay: the exporter fails twenty times meanwhile.
  const until = Date.now() + 2_000;
  let calls = 0;
  while (Date.now() < until) {
    const r = await call(DOWN, toolCall(calls, "list_projects", {}, { traceparent: `00-${hex(16)}-${hex(8)}-01` }));
    assert.equal(r.status, 200, r.text);
    assert.ok(Array.isArray(r.body.result.structuredContent.rows), r.text);
    assert.ok(r.ms < 1_000, `a call took ${Math.round(r.ms)} ms`);
    calls++;
    await sleep(50);
  }
  assert.ok(calls >= 10, `${calls} calls`);

  // The exporter was live all along: once a receiver listens on that port, spans arrive there.
  const late = `${SPANS}.late`;
  writeFileSync(late, "");
  const receiver = spawn(need("TRACES_PYTHON"), [
    new URL("receiver.py", import.meta.url).pathname,
    need("TRACES_CLOSED_PORT"),
    late,
  ], {
    stdio: "inherit",
  });
  try {
    const traceId = hex(16);
    let found;
    for (const until = Date.now() + 15_000; !found && Date.now() < until; await sleep(300)) {
      const r = await call(DOWN, toolCall("late", "list_projects", {}, { traceparent: `00-${traceId}-${hex(8)}-01` }));
      assert.equal(r.status, 200, r.text);
      found = received(late).find((s) => s.trace_id === traceId && s.name === "tools/call list_projects");
    }
    assert.ok(found, "no span reached the receiver started on the edge's endpoint");
    assert.equal(found.service, "chumbo-traces-down");
  } finally {
    receiver.kill();
  }
});

test("an edge that stops sends the spans still waiting in its batch first", async () => {
  const traceId = hex(16);
  const r = await call(FLUSH, toolCall(41, "list_projects", {}, { traceparent: `00-${traceId}-${hex(8)}-01` }));
  assert.equal(r.status, 200, r.text);
  await sleep(500);
  assert.deepEqual(received().filter((s) => s.trace_id === traceId), [], "nothing sent before the batch delay");
  const stopped = spawnSync("bash", [new URL("../../scripts/edge.sh", import.meta.url).pathname, "stop"], {
    env: { ...process.env, CHUMBO_EDGE_ID: "traces-flush-edge", CHUMBO_PORT: need("TRACES_FLUSH_EDGE_PORT") },
    encoding: "utf8",
  });
  assert.equal(stopped.status, 0, stopped.stderr);
  const span = await mcpSpan(traceId, "tools/call list_projects");
  assert.equal(span.service, "chumbo-traces-flush");
  assertPhases(span);
});

test("tracing off (no OTEL_*): answers as always, nothing exported", async () => {
  const traceId = hex(16);
  const r = await call(OFF, toolCall(8, "list_projects", {}, { traceparent: `00-${traceId}-${hex(8)}-01` }), {
    traceparent: `00-${traceId}-${hex(8)}-01`,
  });
  assert.equal(r.status, 200, r.text);
  assert.ok(r.body.result.structuredContent.rows.length > 0, r.text);
  assert.equal(audited(traceId), 1); // the trace context still reaches the database
  // A barrier: a traced call made after it has arrived, so anything of the first would have too.
  const barrier = hex(16);
  await call(PROTOBUF, toolCall(9, "list_projects", {}, { traceparent: `00-${barrier}-${hex(8)}-01` }));
  await mcpSpan(barrier, "tools/call list_projects");
  assert.deepEqual(received().filter((s) => s.trace_id === traceId), []);
});

test("every span of the edge's lies within its parent's time: twenty calls, each MCP span inside its HTTP span", async () => {
  // The SDK anchors a span it times itself at Date.now(), whole milliseconds, while the MCP span
  // and its phases are placed by the edge's monotonic clock: an HTTP span timed by the SDK could
  // end up to a millisecond before the MCP span inside it. Twenty short calls make that visible.
  const traces = [];
  for (let i = 0; i < 20; i++) {
    const traceId = hex(16);
    traces.push(traceId);
    const r = await call(PROTOBUF, toolCall(`w-${i}`, "list_projects", {}), {
      traceparent: `00-${traceId}-${hex(8)}-01`,
    });
    assert.equal(r.status, 200, r.text);
  }
  for (const traceId of traces) {
    const span = await mcpSpan(traceId, "tools/call list_projects");
    const http = received().find((s) => s.span_id === span.parent_id);
    assert.ok(http, `the HTTP span of trace ${traceId}`);
    assert.ok(within(span, http), `MCP span ${span.start}..${span.end} within HTTP span ${http.start}..${http.end}`);
    for (const phase of childrenOf(span)) assert.ok(within(phase, span), `${phase.name} within the MCP span`);
  }
});

test("tracestate: the header's on the HTTP span and what is under it; _meta's with _meta's traceparent; an invalid one dropped", async () => {
  // Header only: the HTTP span takes it (the W3C propagator), the MCP span and phases inherit it.
  const [traceId, clientSpan] = [hex(16), hex(8)];
  const r = await call(PROTOBUF, toolCall("s-1", "list_projects", {}), {
    traceparent: `00-${traceId}-${clientSpan}-01`,
    tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
  });
  assert.equal(r.status, 200, r.text);
  const span = await mcpSpan(traceId, "tools/call list_projects");
  const http = received().find((s) => s.span_id === span.parent_id);
  for (const s of [http, span, ...childrenOf(span)]) {
    assert.equal(s.trace_state, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7", s.name);
  }

  // _meta's traceparent wins for the message, with _meta's tracestate (never the header's).
  const [metaTrace, metaSpan] = [hex(16), hex(8)];
  const headerTrace = hex(16);
  const m = await call(
    PROTOBUF,
    toolCall("s-2", "list_projects", {}, { traceparent: `00-${metaTrace}-${metaSpan}-01`, tracestate: "vendor=meta1" }),
    { traceparent: `00-${headerTrace}-${hex(8)}-01`, tracestate: "edge=header" },
  );
  assert.equal(m.status, 200, m.text);
  const metaMcp = await mcpSpan(metaTrace, "tools/call list_projects");
  assert.equal(metaMcp.parent_id, metaSpan);
  for (const s of [metaMcp, ...childrenOf(metaMcp)]) assert.equal(s.trace_state, "vendor=meta1", s.name);
  const headerHttp = received().find((s) => s.span_id === metaMcp.links[0].span_id);
  assert.equal(headerHttp.trace_state, "edge=header");

  // Invalid (an uppercase key, a key twice): ignored as a whole; the traceparent still counts.
  for (const [id, bad] of [["s-3", "Vendor=x"], ["s-4", "a=1,a=2"]]) {
    const [t, p] = [hex(16), hex(8)];
    const b = await call(
      PROTOBUF,
      toolCall(id, "list_projects", {}, { traceparent: `00-${t}-${p}-01`, tracestate: bad }),
    );
    assert.equal(b.status, 200, b.text);
    const badMcp = await mcpSpan(t, "tools/call list_projects");
    assert.equal(badMcp.parent_id, p);
    for (const s of [badMcp, ...childrenOf(badMcp)]) assert.equal(s.trace_state, "", `${bad}: ${s.name}`);
  }
});
