// The edge's own guarantees (security issue 9, edge tests of issue 15), against the real edge,
// the real database and raw HTTP where the SDKs would hide the behaviour:
//   Origin compared exactly; RFC 9728 metadata only where its `resource` is right; 408 for a body
//   that does not arrive; the SQL call cancelled when the client goes away; listen streams that a
//   spoofed NOTIFY cannot reach, that end with their token, bounded per principal, that forget a
//   client that left, and that outlast a database that briefly does not answer; the JWKS courier
//   on an unknown key id; SSE framing of a tool's log and progress events; CHUMBO_CLIENT_IP_HEADER
//   as the anonymous rate-limit bucket.
// Run through tests/e2e/run.sh (it exports the URLs, tokens and ports used here).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import net from "node:net";
import { generateKeyPairSync, sign } from "node:crypto";
import { AUX_PORT, auxEdge, MCP_URL, need, post, TOKENS } from "./common.mjs";
import { openListen as listenStream } from "../../lib/listen.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // superuser, e2e database
const EDGE_DB_URL = need("E2E_EDGE_DATABASE_URL"); // chumbo_edge, e2e database
const PUBLIC_DB_URL = need("E2E_PUBLIC_DATABASE_URL"); // superuser, a public-mode database
const PUBLIC_EDGE_DB_URL = need("E2E_PUBLIC_EDGE_DATABASE_URL");
const AUX_JWKS_PORT = Number(process.env.E2E_AUX_JWKS_PORT ?? 54369);
const ROOT = new URL("../../../", import.meta.url).pathname;
const MCP = new URL(MCP_URL);
const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KEEPALIVE_MS = Number(need("E2E_KEEPALIVE_MS")); // the MCP_URL edge's CHUMBO_KEEPALIVE_MS

function psql(sql, url = DB_URL) {
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", url], { input: sql, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

/** A token of scripts/mint-token.ts for MCP_URL (the tokens' audience): `mint("alice", "--ttl=2")`. */
function mint(...args) {
  const r = spawnSync("deno", ["run", "-A", `${ROOT}scripts/mint-token.ts`, ...args], {
    env: { ...process.env, CHUMBO_PUBLIC_URL: MCP_URL },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

const PING = { jsonrpc: "2.0", id: 1, method: "ping" };
async function ping(url, opts) {
  try {
    return await ping1(url, opts);
  } catch (e) {
    // a kept-alive socket to an aux edge that has been restarted since: once more, on a new one
    if (e?.cause?.code !== "UND_ERR_SOCKET") throw e;
    return await ping1(url, opts);
  }
}
function ping1(url, { token, headers = {} } = {}) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: JSON.stringify(PING),
  });
}

// ---------------------------------------------------------------------------------------------
describe("Origin is compared exactly (scheme, host, port)", () => {
  // An edge with the default setting (no CHUMBO_ALLOWED_ORIGINS): only the public URL's origin.
  // Its public URL is MCP_URL (the tokens' audience), while it listens on AUX_PORT.
  const port = Number(MCP.port);
  const url = `http://localhost:${AUX_PORT}${MCP.pathname}`;
  let edge;
  before(() => (edge = auxEdge({ CHUMBO_PUBLIC_URL: MCP_URL })));
  after(() => edge?.stop());
  for (
    const [origin, allowed] of [
      [MCP.origin, true],
      [`http://localhost:${port + 1}`, false], // same host, other port: another site
      [`http://localhost:${AUX_PORT}`, false], // even the port this edge listens on, if not the public one
      [`https://localhost:${port}`, false],
      [`http://127.0.0.1:${port}`, false], // an allowed Host, but not the public URL's origin
      ["http://evil.example.com", false],
      ["null", false],
    ]
  ) {
    test(`${origin} → ${allowed ? "served" : "403"}`, async () => {
      const res = await ping(url, { token: TOKENS.alice, headers: { origin } });
      await res.body?.cancel();
      assert.equal(res.status, allowed ? 200 : 403);
      const pre = await fetch(url, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
      await pre.body?.cancel();
      assert.equal(pre.status, allowed ? 204 : 403, "preflight");
    });
  }
});

describe("CHUMBO_ALLOWED_ORIGINS", () => {
  const url = `http://localhost:${AUX_PORT}${MCP.pathname}`;
  test("adds exact origins (compared in canonical form); '*' allows any", async () => {
    let edge = auxEdge({
      CHUMBO_PUBLIC_URL: MCP_URL,
      CHUMBO_ALLOWED_ORIGINS: "http://app.example.test:8080, https://Other.Example.test",
    });
    try {
      for (
        const [origin, status] of [
          ["http://app.example.test:8080", 200],
          ["https://other.example.test", 200],
          ["http://app.example.test", 403],
          ["http://app.example.test:8081", 403],
          [MCP.origin, 200], // the public URL's origin is always allowed
        ]
      ) {
        const res = await ping(url, { token: TOKENS.alice, headers: { origin } });
        await res.body?.cancel();
        assert.equal(res.status, status, origin);
      }
    } finally {
      edge.stop();
    }
    edge = auxEdge({ CHUMBO_PUBLIC_URL: MCP_URL, CHUMBO_ALLOWED_ORIGINS: "*" });
    try {
      const res = await ping(url, { token: TOKENS.alice, headers: { origin: "http://anything.example:1" } });
      await res.body?.cancel();
      assert.equal(res.status, 200);
    } finally {
      edge.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("protected-resource metadata follows RFC 9728 §3.3", () => {
  const get = async (url) => {
    const res = await fetch(url);
    return { status: res.status, body: res.status === 200 ? await res.json() : (await res.body?.cancel(), null) };
  };

  test("MCP URL with a path: path-inserted and function-local forms name it; the root does not exist", async () => {
    for (
      const path of [
        `/.well-known/oauth-protected-resource${MCP.pathname}`,
        `${MCP.pathname}/.well-known/oauth-protected-resource`,
      ]
    ) {
      const r = await get(new URL(path, MCP));
      assert.equal(r.status, 200, path);
      assert.equal(r.body.resource, MCP_URL, path);
    }
    // The root URL is derived from the resource http://localhost:PORT, which is not this server.
    assert.equal((await get(new URL("/.well-known/oauth-protected-resource", MCP))).status, 404);
    // Nor is http://localhost:PORT/mcp (the gateway's internal path) the resource.
    assert.equal((await get(new URL("/.well-known/oauth-protected-resource/mcp", MCP))).status, 404);
  });

  test("MCP URL at the origin's root: the root form names it", async () => {
    const edge = auxEdge({ CHUMBO_PUBLIC_URL: `http://localhost:${AUX_PORT}/` });
    try {
      const r = await get(`http://localhost:${AUX_PORT}/.well-known/oauth-protected-resource`);
      assert.equal(r.status, 200);
      assert.equal(r.body.resource, `http://localhost:${AUX_PORT}`);
    } finally {
      edge.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
/** A raw HTTP/1.1 exchange: write `chunks`, collect what comes back until the server closes or `ms`. */
function rawClient(port) {
  const sock = net.connect(port, "127.0.0.1");
  let data = "";
  let closed = false;
  sock.setEncoding("latin1");
  sock.on("data", (d) => (data += d));
  sock.on("close", () => (closed = true));
  sock.on("error", () => {});
  const until = async (pred, ms) => {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await sleep(20);
    return pred();
  };
  return { sock, data: () => data, closed: () => closed, until };
}

describe("slow HTTP clients", () => {
  test("a body that stalls gets 408 (with Connection: close) while the client still owes bytes", async () => {
    const edge = auxEdge({ CHUMBO_BODY_TIMEOUT_MS: "1000" });
    try {
      const c = rawClient(AUX_PORT);
      const body = JSON.stringify(PING);
      c.sock.write(
        `POST /functions/v1/mcp HTTP/1.1\r\nHost: localhost:${AUX_PORT}\r\ncontent-type: application/json\r\n` +
          `accept: application/json, text/event-stream\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      );
      // the edge answers on its own, while the client still owes the rest of the body
      assert.ok(
        await c.until(() => /\r\n\r\n\{.*\}$/s.test(c.data()), 10000),
        `no answer: ${JSON.stringify(c.data())}`,
      );
      assert.match(c.data(), /^HTTP\/1\.1 408 /);
      assert.match(c.data(), /\r\nconnection: close\r\n/i);
      assert.match(c.data(), /"id":null,"error":\{"code":-32000,"message":"Request body not received within 1000 ms"/);
      // Deno.serve (2.9.6) gives a handler no way to drop the socket itself (README, Slow clients):
      // the client is told to close; the edge holds nothing for it any more.
      c.sock.destroy();
    } finally {
      edge.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("a client that goes away cancels its SQL call", () => {
  before(() =>
    psql(`create function mcp.slow_sleep(seconds int) returns text language sql
            as $$ select pg_sleep(seconds)::text || 'slept' $$;
          comment on function mcp.slow_sleep(int) is 'Sleeps (e2e: cancellation).';
          revoke execute on function mcp.slow_sleep(int) from public, anon;
          grant execute on function mcp.slow_sleep(int) to authenticated;`)
  );
  after(() => psql("drop function if exists mcp.slow_sleep(int)"));

  const sleeping = () =>
    psql(`select pid from pg_stat_activity where datname = current_database() and application_name like 'chumbo-edge%'
            and state = 'active' and wait_event = 'PgSleep'`).split("\n").filter(Boolean);

  test("tools/call slow_sleep(20): the backend stops sleeping soon after the client aborts", async () => {
    const ac = new AbortController();
    const call = post({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "slow_sleep", arguments: { seconds: 20 } },
    }, {
      token: TOKENS.alice,
    }).then(() => {}, () => {});
    const fetching = fetch(MCP_URL, {
      method: "POST",
      signal: ac.signal,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        authorization: `Bearer ${TOKENS.alice}`,
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 8,
        method: "tools/call",
        params: { name: "slow_sleep", arguments: { seconds: 20 } },
      }),
    }).catch(() => {});
    let pids = [];
    for (let i = 0; i < 200 && pids.length < 2; i++) {
      pids = sleeping();
      if (pids.length < 2) await sleep(50);
    }
    assert.equal(pids.length, 2, "both calls are visible in pg_stat_activity");
    const started = Date.now();
    ac.abort(); // one client leaves; the other waits for its answer
    let left = pids;
    while (left.length > 1 && Date.now() - started < 10000) {
      await sleep(50);
      left = sleeping();
    }
    assert.equal(left.length, 1, `one backend stopped sleeping within 10 s of the abort (${Date.now() - started} ms)`);
    await fetching;
    // the other call, whose client stayed, is untouched: cancel it by the same route (cleanup)
    psql(`select pg_cancel_backend(${left[0]})`);
    await call;
  });

  // A cancel request names a backend, not a query. With one pool connection every call runs on the
  // same backend, the next caller's call right behind the one whose client leaves: a cancel that
  // arrives once the first call has finished must not stop the second. (The edge before the fix
  // failed this in each of three runs: 2 to 5 of the 200 staying calls got a 503.)
  /** A tool that sleeps `ms` milliseconds, and an aux edge with `pool` connections calling it. */
  function napping(pool) {
    psql(`create function mcp.nap_ms(ms int) returns text language sql
            as $$ select pg_sleep(ms / 1000.0)::text || 'napped' $$;
          revoke execute on function mcp.nap_ms(int) from public, anon;
          grant execute on function mcp.nap_ms(int) to authenticated;`);
    const edge = auxEdge({ CHUMBO_PUBLIC_URL: MCP_URL, CHUMBO_DB_POOL: String(pool) });
    const url = `http://localhost:${AUX_PORT}${MCP.pathname}`;
    const call = (ms, signal, token = TOKENS.alice) =>
      fetch(url, {
        method: "POST",
        signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          authorization: `Bearer ${token}`,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: ms,
          method: "tools/call",
          params: { name: "nap_ms", arguments: { ms } },
        }),
      });
    return {
      url,
      call,
      stop() {
        edge.stop();
        psql("drop function if exists mcp.nap_ms(int)");
      },
    };
  }

  test("a client that leaves never cancels the next caller's call on the same connection", async () => {
    const { url, call, stop } = napping(1);
    try {
      await (await ping(url, { token: TOKENS.alice })).body?.cancel();
      const failures = [];
      for (let i = 0; i < 200; i++) {
        const ac = new AbortController();
        const leaving = call(20, ac.signal).then((r) => r.body?.cancel(), () => {});
        const staying = call(0).then(async (r) => ({ status: r.status, body: await r.text() }));
        setTimeout(() => ac.abort(), 15 + Math.random() * 15); // around the end of the 20 ms call
        const [, r] = await Promise.all([leaving, staying]);
        if (r.status !== 200 || !r.body.includes("napped") || r.body.includes('"isError":true')) {
          failures.push(`${r.status} ${r.body.slice(0, 200)}`);
        }
      }
      // what the edge logged for them (its log is replaced when the next aux edge starts)
      const logged = failures.length
        ? readFileSync(`${ROOT}.chumbo/e2e-edge-aux.log`, "utf8").split("\n").filter((l) =>
          /^chumbo-edge [0-9a-f-]+:|^\s+at |Error/.test(l)
        )
        : [];
      assert.deepEqual(
        failures,
        [],
        `every call whose client stayed answered normally; the edge logged:\n${logged.join("\n")}`,
      );
    } finally {
      stop();
    }
  });

  // The pool is shared fairly (db.ts, Pool): a connection that comes free goes to the waiting caller
  // who holds the fewest. First come, first served kept Bob waiting behind all of Alice's queued
  // calls (answered after all six of hers), each bounded by the database but together as long as
  // she liked to keep them coming.
  test("one caller's queue of slow calls does not hold up another's: the next free connection is theirs", async () => {
    const { url, call, stop } = napping(2);
    const answered = [];
    let alice = [];
    try {
      for (const token of [TOKENS.alice, TOKENS.bob]) await (await ping(url, { token })).body?.cancel();
      alice = Array.from({ length: 6 }, (_, i) =>
        call(1500).then(
          async (r) =>
            answered.push(`alice ${i}${r.status === 200 && (await r.text()).includes("napped") ? "" : " failed"}`),
          (e) => answered.push(`alice ${i} failed: ${e.cause?.code ?? e}`),
        ));
      // Alice's first two calls hold both connections; her four others wait at the edge.
      for (let i = 0; i < 250 && sleeping().length < 2; i++) await sleep(20);
      assert.equal(sleeping().length, 2, "two of Alice's calls are running");
      await sleep(200);
      const bob = await call(0, undefined, TOKENS.bob).then(async (r) => ({ status: r.status, body: await r.text() }));
      answered.push("bob");
      await Promise.all(alice);
      assert.equal(bob.status, 200, bob.body);
      assert.match(bob.body, /napped/);
      assert.ok(!answered.some((a) => a.includes("failed")), answered.join(", "));
      assert.ok(
        answered.indexOf("bob") <= 2,
        `Bob was answered after ${answered.indexOf("bob")} of Alice's calls (${answered.join(", ")})`,
      );
    } finally {
      await Promise.all(alice);
      stop();
    }
  });

  // A connection the pool ends while the driver is still starting it (a client left; its call's
  // new connection was still fetching types) used to reject a promise nobody held, and Deno stops
  // on that: the edge died in every run of these rounds (and at the end of a wrk run).
  test("a burst of clients leaving mid-call (64 at once, 20 times) never stops the edge", async () => {
    const { url, call, stop } = napping(8);
    try {
      await (await ping(url, { token: TOKENS.alice })).body?.cancel();
      for (let round = 0; round < 20; round++) {
        const leaving = [];
        for (let i = 0; i < 64; i++) {
          const ac = new AbortController();
          leaving.push(call(Math.floor(Math.random() * 40), ac.signal).then((r) => r.body?.cancel(), () => {}));
          setTimeout(() => ac.abort(), Math.random() * 40);
        }
        await Promise.all(leaving);
      }
      // Still serving: the connections the cancels replaced close within moments (until then the
      // database may refuse new ones: too many clients), and the next call is answered.
      let last = "";
      for (let i = 0; i < 50 && !last.includes("napped"); i++) {
        const r = await call(0).then(async (r) => `${r.status} ${await r.text()}`, (e) => `${e.cause?.code ?? e}`);
        if (!r.includes("napped")) await sleep(200);
        last = r;
      }
      assert.match(last, /^200 .*napped/, `the edge still answers (its log: ${ROOT}.chumbo/e2e-edge-aux.log)`);
    } finally {
      stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
/** A raw subscriptions/listen stream (tests/lib/listen.mjs), its acknowledgement checked when it opened. */
async function openListen(token, notifications, id) {
  const s = await listenStream(MCP_URL, token, { notifications, id });
  if (s.status === 200 && !s.done) {
    assert.ok(await s.until(() => s.messages().length >= 1, 5000), "acknowledgement");
    assert.equal(s.messages()[0].method, "notifications/subscriptions/acknowledged");
  }
  return s;
}

function touchListProjects() {
  psql(
    "select format('comment on function mcp.list_projects is %L', obj_description('mcp.list_projects'::regproc, 'pg_proc')) \\gexec",
  );
}

describe("subscriptions/listen streams", () => {
  const open = [];
  after(async () => {
    for (const s of open) await s.close();
  });
  const listen = async (...a) => {
    const s = await openListen(...a);
    open.push(s);
    return s;
  };

  test("a NOTIFY from any role changes nothing; a real change reaches exactly the kinds asked for", async () => {
    const s = await listen(TOKENS.alice, { toolsListChanged: true, promptsListChanged: true });
    // Any role may NOTIFY on any channel: the one chumbo's event trigger uses is no exception.
    psql(
      "set role authenticated; notify chumbo_capabilities, 'x'; reset role; set role anon; notify chumbo_capabilities, '{}'",
    );
    // The edge re-checks on a NOTIFY (one chumbo.http call per stream); give it ample time to
    // (wrongly) pass something on. Any list_changed from here on would come from the spoof.
    await sleep(1500);
    assert.deepEqual(s.listChanged(), [], "a spoofed NOTIFY reached the stream");
    touchListProjects();
    assert.ok(await s.until(() => s.listChanged().length >= 2, 5000), JSON.stringify(s.messages()));
    // A barrier, not a pause: the edge enqueues one re-check's frames in one synchronous loop and
    // its keep-alives from a timer, so a keep-alive after them means that re-check sent nothing more.
    const settled = () => s.text.lastIndexOf(": keepalive") > s.text.lastIndexOf("list_changed");
    assert.ok(await s.until(settled, KEEPALIVE_MS * 2 + 1000), "no keep-alive after the list_changed frames");
    const methods = s.listChanged().map((m) => m.method).sort();
    assert.deepEqual(methods, ["notifications/prompts/list_changed", "notifications/tools/list_changed"]);
    for (const m of s.listChanged()) assert.equal(m.params._meta[SUBSCRIPTION_ID], s.id);
    assert.equal(s.done, false, "the stream stays open");
  });

  test("a stream ends with its token: an error for the listen id once the database refuses the token", async () => {
    const s = await listen(mint("alice", "--ttl=2"), { toolsListChanged: true });
    // The token's exp is 2 s away; the database may allow some clock-skew leeway on top.
    assert.ok(await s.until(() => s.done, 90000), "the stream outlived its token");
    const last = s.messages().at(-1);
    assert.equal(last.id, s.id, JSON.stringify(last));
    assert.equal(typeof last.error?.code, "number", JSON.stringify(last));
  });

  test("max_streams is exact: a principal's Nth stream (N = max_listen_streams) is served, the N+1th gets 429", async () => {
    // Carol: no other test opens a stream for her, so every open stream of hers is counted here.
    const carol = mint("carol");
    const max = Number(psql("select chumbo.configure('{}') ->> 'max_listen_streams'"));
    assert.ok(Number.isInteger(max) && max >= 1, `max_listen_streams = ${max}`);
    for (let i = 1; i <= max; i++) {
      const s = await listen(carol, { toolsListChanged: true });
      assert.equal(s.status, 200, `stream ${i} of ${max}: ${s.text}`);
    }
    const refused = await listen(carol, { toolsListChanged: true });
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.res.headers.get("retry-after") ?? "", /^\d+$/);
    assert.match(JSON.parse(refused.text).error.message, new RegExp(`at most ${max} listen streams`));
  });

  test("max_streams per principal: one more gets 429 + Retry-After, the others are untouched; a client that leaves frees its slot", async () => {
    const mine = [];
    let refused;
    for (let i = 0; i < 40 && !refused; i++) {
      const s = await listen(TOKENS.alice, { toolsListChanged: true });
      if (s.status === 200) mine.push(s);
      else refused = s;
    }
    assert.ok(refused, `no limit after ${mine.length} streams`);
    assert.equal(refused.status, 429, refused.text);
    assert.match(refused.res.headers.get("retry-after") ?? "", /^\d+$/);
    const body = JSON.parse(refused.text);
    assert.equal(body.id, refused.id);
    assert.equal(typeof body.error.code, "number");
    assert.ok(mine.length >= 1);

    // another principal is not affected
    const bob = await listen(TOKENS.bob, { toolsListChanged: true });
    assert.equal(bob.status, 200);

    // the open ones still work
    touchListProjects();
    for (const s of [...mine, bob]) {
      assert.ok(await s.until(() => s.listChanged().length >= 1, 5000), `stream ${s.id} got no list_changed`);
      assert.equal(s.done, false);
    }

    // One client disconnects: the edge drops it from its subscribers, and its slot is free again.
    await mine.pop().close();
    let again;
    const end = Date.now() + 15000;
    do {
      again = await listen(TOKENS.alice, { toolsListChanged: true });
      if (again.status !== 200) await sleep(200);
    } while (again.status !== 200 && Date.now() < end);
    assert.equal(again.status, 200, "the slot of the disconnected stream was never freed");
  });
});

// ---------------------------------------------------------------------------------------------
// A re-check that gets no answer (the old primary shutting down in a failover, a restart, a
// network fault) is not a refusal of the stream: the edge asks again every second and ends the
// stream only after CHUMBO_DB_RETRY_MS without an answer. (tests/ha once lost a stream that way:
// its re-check reached the old primary as it shut down.) Here an aux edge's pool reaches
// PostgreSQL through a TCP relay the test can cut; its LISTEN connection does not.
describe("a listen re-check that gets no answer", () => {
  const RETRY_MS = 10_000;
  const sockets = new Set();
  let down = false;
  const relay = net.createServer((client) => {
    if (down) return client.destroy();
    const target = new URL(EDGE_DB_URL);
    const server = net.connect(Number(target.port || 5432), target.hostname);
    for (const [a, b] of [[client, server], [server, client]]) {
      sockets.add(a);
      a.pipe(b);
      a.on("error", () => b.destroy());
      a.on("close", () => (sockets.delete(a), b.destroy()));
    }
  });
  /** The database unreachable for the aux edge's pool: open connections reset, new ones refused. */
  const cut = () => {
    down = true;
    for (const s of sockets) s.destroy();
  };
  let edge, url;
  before(async () => {
    await new Promise((r) => relay.listen(0, "127.0.0.1", r));
    const viaRelay = new URL(EDGE_DB_URL);
    viaRelay.hostname = "127.0.0.1";
    viaRelay.port = String(relay.address().port);
    edge = auxEdge({
      CHUMBO_PUBLIC_URL: MCP_URL,
      EDGE_DATABASE_URL: viaRelay.href,
      CHUMBO_LISTEN_DATABASE_URL: EDGE_DB_URL,
      CHUMBO_DB_RETRY_MS: String(RETRY_MS),
      CHUMBO_DB_POOL: "2",
    });
    url = `http://localhost:${AUX_PORT}${MCP.pathname}`;
  });
  after(() => {
    edge?.stop();
    relay.close();
    for (const s of sockets) s.destroy();
  });
  const openHere = async (token) => {
    const s = await listenStream(url, token, { notifications: { toolsListChanged: true } });
    assert.equal(s.status, 200, s.text);
    assert.ok(await s.until(() => s.messages().length >= 1, 5000), "acknowledgement");
    return s;
  };

  test("is asked again: the stream stays open and tells of a change made while the database was unreachable", async () => {
    down = false;
    const s = await openHere(TOKENS.alice);
    try {
      cut();
      touchListProjects(); // the NOTIFY reaches the edge's LISTEN; its re-check finds no database
      await sleep(2000);
      assert.equal(s.done, false, `the stream ended while the database was unreachable: ${s.text}`);
      assert.deepEqual(s.listChanged(), []);
      down = false;
      assert.ok(await s.until(() => s.listChanged().length >= 1, 10_000), `no list_changed: ${s.text}`);
      assert.equal(s.listChanged()[0].method, "notifications/tools/list_changed");
      assert.equal(s.done, false, "the stream stays open");
    } finally {
      down = false;
      await s.close();
    }
  });

  test("ends the stream with an error for the listen id once nothing answered for CHUMBO_DB_RETRY_MS", async () => {
    down = false;
    const s = await openHere(TOKENS.bob);
    try {
      cut();
      const cutAt = Date.now();
      touchListProjects();
      assert.ok(await s.until(() => s.done, RETRY_MS + 10_000), `the stream outlived the retry window: ${s.text}`);
      const waited = Date.now() - cutAt;
      assert.ok(waited >= RETRY_MS - 500, `the stream ended ${waited} ms after the cut, before the retry window`);
      const last = s.messages().at(-1);
      assert.equal(last.id, s.id, JSON.stringify(last));
      assert.equal(last.error?.code, -32603, JSON.stringify(last));
      assert.match(last.error.message, /^Service unavailable \(trace [0-9a-f-]+\)$/);
    } finally {
      down = false;
      await s.close();
    }
  });

  // The retry window is no extension of a token: once the database would refuse the token (its exp
  // plus the clock-skew leeway, src/identity/auth.rs LEEWAY_SECONDS, 30 s), a re-check that gets no
  // answer ends the stream at once. (Before, it stayed open until CHUMBO_DB_RETRY_MS.) The token
  // here expired 25 s ago, so the database accepts it for 5 s more.
  test("past its token's end, a stream the database cannot re-check ends at once, not after CHUMBO_DB_RETRY_MS", async () => {
    down = false;
    const token = mint("alice", "--ttl=-25");
    const until = (claimsOf(token).exp + 30) * 1000;
    const s = await openHere(token);
    try {
      cut();
      const cutAt = Date.now();
      assert.ok(until - cutAt < RETRY_MS - 4000, `the token is accepted ${until - cutAt} ms after the cut: too long`);
      touchListProjects(); // its re-checks now get no answer, every second
      assert.ok(await s.until(() => s.done, RETRY_MS + 10_000), `the stream never ended: ${s.text}`);
      const endedAt = Date.now();
      assert.ok(endedAt >= until - 100, `the stream ended ${until - endedAt} ms before its token's end`);
      assert.ok(
        endedAt < Math.max(until, cutAt) + 2500 && endedAt - cutAt < RETRY_MS - 1000,
        `the stream ended ${endedAt - until} ms after its token's end (${endedAt - cutAt} ms after the cut)`,
      );
      const last = s.messages().at(-1);
      assert.equal(last.id, s.id, JSON.stringify(last));
      assert.equal(last.error?.code, -32603, JSON.stringify(last));
      assert.match(
        last.error.message,
        /^Subscription ended: its token expired while the database did not answer \(trace [0-9a-f-]+\)$/,
      );
    } finally {
      down = false;
      await s.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------
const b64u = (v) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
function es256(claims, privateKey, kid) {
  const input = `${b64u({ alg: "ES256", kid, typ: "JWT" })}.${b64u(claims)}`;
  return `${input}.${
    sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url")
  }`;
}
const claimsOf = (token) => JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString());

describe("JWKS courier", () => {
  let served;
  let server;
  let devJwks;
  before(async () => {
    const r = spawnSync("deno", ["run", "-A", `${ROOT}scripts/mint-token.ts`, "jwks"], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    devJwks = JSON.parse(r.stdout);
    served = devJwks;
    server = createServer((_req, res) =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(served))
    );
    await new Promise((ok) => server.listen(AUX_JWKS_PORT, "127.0.0.1", ok));
  });
  after(() => {
    server?.close();
    if (devJwks) psql(`select chumbo.configure(jsonb_build_object('jwks', '${JSON.stringify(devJwks)}'::jsonb))`);
  });

  test("a token whose kid the database does not know makes the edge fetch the JWKS again; the call then succeeds", async () => {
    const edge = auxEdge({
      CHUMBO_PUBLIC_URL: MCP_URL, // the tokens' audience
      CHUMBO_JWKS_URL: `http://127.0.0.1:${AUX_JWKS_PORT}/jwks.json`,
      CHUMBO_JWKS_MIN_REFRESH_MS: "0", // refresh on an unknown kid right away (default: at most every 30 s)
    });
    const url = `http://localhost:${AUX_PORT}${MCP.pathname}`;
    try {
      // the edge's first request carries the dev JWKS (known key)
      let res = await ping(url, { token: TOKENS.alice });
      await res.body?.cancel();
      assert.equal(res.status, 200);

      // the issuer rotates: a new key, published at the JWKS URL only
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const kid = `rotated-${Date.now()}`;
      const now = Math.floor(Date.now() / 1000);
      const token = es256({ ...claimsOf(TOKENS.alice), iat: now, nbf: now, exp: now + 600 }, privateKey, kid);
      res = await ping(MCP_URL, { token }); // the main edge has no courier: the database does not know the key
      await res.body?.cancel();
      assert.equal(res.status, 401, "the database must not know the new key yet");

      served = { keys: [...devJwks.keys, { ...publicKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" }] };
      res = await ping(url, { token });
      await res.body?.cancel();
      assert.equal(res.status, 200, "the courier did not fetch the rotated key");
    } finally {
      edge.stop();
    }
  });

  test("without the courier grant, set_jwks is refused: the edge logs it and the request goes on", async () => {
    // chumbo_e2e_public ran plain grant_edge('chumbo_edge'): no EXECUTE on chumbo.set_jwks there
    const edge = auxEdge({
      EDGE_DATABASE_URL: PUBLIC_EDGE_DB_URL,
      CHUMBO_JWKS_URL: `http://127.0.0.1:${AUX_JWKS_PORT}/jwks.json`,
    });
    try {
      const res = await ping(edge.url, { headers: { "x-forwarded-for": "192.0.2.77" } });
      await res.body?.cancel();
      assert.equal(res.status, 200); // public mode: no token needed
      const log = readFileSync(`${ROOT}.chumbo/e2e-edge-aux.log`, "utf8");
      assert.match(log, /the database refused chumbo\.set_jwks/);
      const again = await ping(edge.url);
      await again.body?.cancel();
      assert.equal(again.status, 200, "the edge keeps serving");
    } finally {
      edge.stop();
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe("SSE framing of a tool's log and progress events", () => {
  before(() =>
    psql(`create function mcp.sse_probe() returns text language plpgsql as $$
          begin
            perform chumbo.log('info', '"one"');
            perform chumbo.progress(1, 3, 'first');
            perform chumbo.log('warning', '"two"');
            perform chumbo.progress(2, 3, 'second');
            perform chumbo.progress(3, 3);
            return 'done';
          end $$;
          comment on function mcp.sse_probe() is 'Logs and reports progress (e2e: SSE framing).';
          revoke execute on function mcp.sse_probe() from public, anon;
          grant execute on function mcp.sse_probe() to authenticated;`)
  );
  after(() => psql("drop function if exists mcp.sse_probe()"));

  test("events arrive as `event: message` frames, in order, before the response", async () => {
    const res = await post(
      {
        jsonrpc: "2.0",
        id: 21,
        method: "tools/call",
        params: { name: "sse_probe", arguments: {}, _meta: { progressToken: "p-21" } },
      },
      { token: TOKENS.alice },
    );
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/event-stream/);
    const text = await res.text();
    const frames = text.split("\n\n").filter(Boolean);
    for (const f of frames) assert.match(f, /^event: message\ndata: [^\n]+$/, JSON.stringify(f));
    const msgs = frames.map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)));
    const shape = msgs.map((m) =>
      m.method === "notifications/message"
        ? `log:${m.params.data}`
        : m.method === "notifications/progress"
        ? `progress:${m.params.progressToken}:${m.params.progress}/${m.params.total}`
        : `response:${m.id}`
    );
    assert.deepEqual(shape, [
      "log:one",
      "progress:p-21:1/3",
      "log:two",
      "progress:p-21:2/3",
      "progress:p-21:3/3",
      "response:21",
    ]);
    assert.match(JSON.stringify(msgs.at(-1).result), /done/);
  });
});

// ---------------------------------------------------------------------------------------------
describe("CHUMBO_CLIENT_IP_HEADER: its first entry is the anonymous rate-limit bucket", () => {
  const LIMIT = 3;
  let edge;
  before(() => {
    psql(`select chumbo.configure('{"auth_mode": "public", "rate_limit_per_minute": ${LIMIT}}')`, PUBLIC_DB_URL);
    edge = auxEdge({ CHUMBO_CLIENT_IP_HEADER: "X-Client-IP", EDGE_DATABASE_URL: PUBLIC_EDGE_DB_URL });
  });
  after(() => edge?.stop());

  test("different addresses get separate buckets, the same address shares one", async () => {
    // The limiter counts per fixed minute: start early in one, so the whole test fits in it.
    const s = new Date().getSeconds();
    if (s > 45) await sleep((61 - s) * 1000);
    const addr = `198.51.100.${Math.floor(Math.random() * 200) + 1}`; // fresh buckets on every run
    const other = `203.0.113.${Math.floor(Math.random() * 200) + 1}`;
    const status = async (ip) => {
      const res = await ping(edge.url, { headers: { "x-client-ip": ip } });
      await res.body?.cancel();
      return res.status;
    };
    const first = [];
    for (let i = 0; i < LIMIT; i++) first.push(await status(`${addr}, 10.0.0.${i + 1}`)); // later entries: proxies
    assert.deepEqual(first, Array(LIMIT).fill(200));
    assert.equal(await status(addr), 429, "the same first entry shares one bucket");
    assert.equal(await status(other), 200, "another address has a bucket of its own");
    // (An edge that ignored the header would put all of these in its peer's one bucket, and an
    // edge that used the whole header value would give the bare address a bucket of its own.)
  });
});

// ---------------------------------------------------------------------------------------------
// The edge forwards request and response bodies as text (chumbo.http_parts): what the client sent
// is what the tool gets, and the answer arrives byte for byte as the database wrote it, including
// non-ASCII text, characters JSON may escape or not (U+2028, U+2029, emoji), and large results.
describe("bodies pass through the edge intact", () => {
  const ECHO = "e2e_echo";
  const BIG = "e2e_big_number";
  before(() => {
    psql(
      `create or replace function mcp.${ECHO}(text text, copies int default 1) returns text
            language sql stable as $$ select repeat(text, copies) $$;
          comment on function mcp.${ECHO}(text, int) is 'Echo text back, repeated (e2e: bodies pass through).';
          revoke execute on function mcp.${ECHO}(text, int) from public;
          grant execute on function mcp.${ECHO}(text, int) to authenticated;
          create or replace function mcp.${BIG}() returns table (n int8)
            language sql stable as $$ select 9007199254740993::int8 $$;
          comment on function mcp.${BIG}() is 'A number JSON.parse would round (e2e: bodies pass through).';
          revoke execute on function mcp.${BIG}() from public;
          grant execute on function mcp.${BIG}() to authenticated;`,
    );
  });

  // 2^53 + 1: an edge that parsed the answer and wrote it again (JSON.parse, JSON.stringify) would
  // send 9007199254740992; the text block and structuredContent (a one-column row is its value) carry the exact digits.
  test("a number beyond a double's precision keeps its digits", async () => {
    const r = await post({ jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: BIG, arguments: {} } }, {
      token: TOKENS.alice,
    });
    assert.equal(r.status, 200);
    const text = await r.text();
    assert.match(text, /"structuredContent":\{"rows":\[9007199254740993\]\}/);
    assert.doesNotMatch(text, /9007199254740992/);
  });
  after(() => psql(`drop function if exists mcp.${ECHO}(text, int); drop function if exists mcp.${BIG}()`));

  const call = (id, text, copies) =>
    post({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: ECHO, arguments: { text, copies } },
    }, {
      token: TOKENS.alice,
    });
  const SAMPLES = [
    ["non-ASCII", "Grüße, naïve café – 日本語 – Ωμέγα – 🦀🚀 ", 1],
    [
      "JSON-significant",
      `"quoted" \\back\\slash\\ {"body": [1,2]} \u2028\u2029 tab\tnew\nline `,
      3,
    ],
    ["large (about 350 KB)", "Größe 🦀 αβγ — the quick brown fox. ", 8000],
  ];
  for (const [label, text, copies] of SAMPLES) {
    test(label, async () => {
      const r = await call(41, text, copies);
      assert.equal(r.status, 200);
      assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
      const raw = new Uint8Array(await r.arrayBuffer());
      const body = JSON.parse(
        new TextDecoder("utf-8", { fatal: true }).decode(raw),
      );
      assert.equal(body.id, 41);
      assert.equal(
        body.result.isError ?? false,
        false,
        JSON.stringify(body.result).slice(0, 300),
      );
      assert.equal(body.result.content[0].text, text.repeat(copies));
      // The bytes are the database's own answer, not a re-serialization by the edge.
      const want = psql(
        `select body from chumbo.http_parts(
           '{"method":"POST","path":"/functions/v1/mcp","headers":{"content-type":"application/json",` +
          `"mcp-protocol-version":"2025-11-25","authorization":"Bearer ${TOKENS.alice}"},` +
          `"resource":"${MCP_URL}","resource_metadata":"${MCP_URL}/.well-known/oauth-protected-resource"}',
           $body$${
            JSON.stringify({
              jsonrpc: "2.0",
              id: 41,
              method: "tools/call",
              params: { name: ECHO, arguments: { text, copies } },
            })
          }$body$)`,
        EDGE_DB_URL,
      );
      assert.equal(new TextDecoder().decode(raw), want);
    });
  }

  // "café" in Latin-1 (0xE9) is not UTF-8: read leniently, the tool would get "caf\uFFFD". A
  // body is refused as a parse error whether it comes with a length or chunked, and so is a raw
  // NUL (PostgreSQL's text cannot hold it); the same text in UTF-8 goes through.
  test("a body that is not UTF-8 text is refused, never passed on with its bytes replaced", async () => {
    const message = (text) =>
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: ECHO, arguments: { text } } });
    const latin1 = Buffer.from(message("caf\u00e9"), "latin1");
    const withNul = Buffer.concat([Buffer.from(message("a")), Buffer.from([0])]);
    const send = (bytes, chunked) =>
      post(chunked ? new Blob([bytes]).stream() : bytes, {
        token: TOKENS.alice,
        ...(chunked ? { duplex: "half" } : {}),
      });
    for (const [label, bytes] of [["Latin-1", latin1], ["a raw NUL", withNul]]) {
      for (const chunked of [false, true]) {
        const r = await send(bytes, chunked);
        const body = await r.json();
        assert.equal(r.status, 400, `${label}, chunked ${chunked}: ${JSON.stringify(body)}`);
        assert.equal(body.error.code, -32700);
        assert.match(body.error.message, /UTF-8/);
      }
    }
    const r = await send(Buffer.from(message("caf\u00e9")), false);
    assert.equal((await r.json()).result.content[0].text, "caf\u00e9");
    // A body is text the database parses, whatever it says: not the edge's own verdict on reading
    // it (these were answered 408 and 413).
    for (const text of ["timeout", "too large", "not text"]) {
      const r = await post(text, { token: TOKENS.alice });
      assert.equal(r.status, 400, text);
      assert.equal((await r.json()).error.code, -32700, text);
    }
  });
});
