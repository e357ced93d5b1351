// The hard time bound of a call (security issue 26, item 1), through the real edge and the real
// database: a tool whose code catches every cancel (query_canceled), directly or inside a DO block
// it was handed, still ends within its bound (timeoutMs) plus one second, its writes rolled back;
// the client gets the timeout answer; the edge's pool and the caller's in-flight slots are usable
// again at once. The same when the client goes away. (On 0.4.0 such a tool ran to its end: 8 s,
// and answered normally.)
// Run through tests/e2e/run.sh (it exports the URLs and tokens used here).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { AUX_PORT, auxEdge, MCP_URL, need, TOKENS } from "./common.mjs";

const DB_URL = need("E2E_DATABASE_URL"); // superuser, e2e database
if (!DB_URL) throw new Error("E2E_DATABASE_URL is not set (run the suite through tests/e2e/run.sh)");
const BOUND_MS = 1000; // the tools' timeoutMs below
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// An edge of its own (pool and wait settings) serving the same resource as MCP_URL, so the tokens fit.
const AUX_URL = `http://localhost:${AUX_PORT}${new URL(MCP_URL).pathname}`;

function psql(sql) {
  const r = spawnSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", DB_URL], { input: sql, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

const writes = (who) => Number(psql(`select count(*) from public.bound_writes where who = '${who}'`));

/** tools/call as Alice through the edge: the HTTP status, the JSON answer and the time it took. */
async function call(name, args, { signal, url = MCP_URL, id = "1", traceparent } = {}) {
  try {
    return await call1(name, args, { signal, url, id, traceparent });
  } catch (e) {
    // a kept-alive socket to an aux edge that has been restarted since (nothing reached it): once
    // more, on a new one
    if (e?.cause?.code !== "UND_ERR_SOCKET") throw e;
    return await call1(name, args, { signal, url, id, traceparent });
  }
}
/** `id`: the request id as JSON text (so one beyond 2^53 goes as written); the answer's `text`. */
async function call1(name, args, { signal, url, id, traceparent }) {
  const started = Date.now();
  const res = await fetch(url, {
    method: "POST",
    signal,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${TOKENS.alice}`,
      ...(traceparent ? { traceparent } : {}),
    },
    body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":${JSON.stringify({ name, arguments: args })}}`,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text), text, ms: Date.now() - started };
}

function assertTimeoutAnswer(r) {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.result?.isError, true, JSON.stringify(r.body));
  assert.match(r.body.result.content[0].text, /The call took too long and was cancelled \(trace id [0-9a-f]{32}\)/);
}

describe("a call ends within its time bound whatever its code catches", () => {
  before(() =>
    psql(`
      create table public.bound_writes (who text not null);
      grant insert, select on public.bound_writes to authenticated;
      -- catches every cancel, the bound's and the client's, and goes on until it is done
      create function mcp.stubborn(seconds int) returns text language plpgsql as $$
      declare t0 timestamptz := clock_timestamp();
      begin
        insert into public.bound_writes values ('stubborn');
        while clock_timestamp() < t0 + make_interval(secs => seconds) loop
          begin perform pg_sleep(0.05); exception when query_canceled then null; end;
        end loop;
        return 'survived';
      end $$;
      comment on function mcp.stubborn(int) is 'Catches every cancel (e2e). @mcp {"timeoutMs": ${BOUND_MS}}';
      -- an injectable tool: runs the statement it is given
      create function mcp.run_statement(statement text) returns text language plpgsql as $$
      begin execute statement; return 'ran'; end $$;
      comment on function mcp.run_statement(text) is 'Runs a statement (e2e: injection). @mcp {"timeoutMs": ${BOUND_MS}}';
      -- catches the bound's cancel once and answers at once
      create function mcp.catch_once() returns text language plpgsql as $$
      begin
        insert into public.bound_writes values ('catch_once');
        begin perform pg_sleep(10); exception when query_canceled then return 'caught it'; end;
        return 'slept';
      end $$;
      comment on function mcp.catch_once() is 'Catches one cancel (e2e). @mcp {"timeoutMs": ${BOUND_MS}}';
      create function mcp.quick() returns text language sql as $$ select 'quick' $$;
      comment on function mcp.quick() is 'Answers at once (e2e).';
      -- writes and answers at once: whether it ran shows in bound_writes
      create function mcp.quick_write() returns text language sql
        as $$ insert into public.bound_writes values ('quick_write'); select 'wrote' $$;
      revoke execute on function mcp.stubborn(int), mcp.run_statement(text), mcp.catch_once(), mcp.quick(), mcp.quick_write() from public, anon;
      grant execute on function mcp.stubborn(int), mcp.run_statement(text), mcp.catch_once(), mcp.quick(), mcp.quick_write() to authenticated;`)
  );
  after(() =>
    psql(
      `drop function if exists mcp.stubborn(int), mcp.run_statement(text), mcp.catch_once(), mcp.quick(), mcp.quick_write();
          drop table if exists public.bound_writes;`,
    )
  );

  test("a tool that catches every cancel: the timeout answer within its bound + 1 s, its write rolled back", async () => {
    const r = await call("stubborn", { seconds: 8 });
    assertTimeoutAnswer(r);
    assert.ok(r.ms < BOUND_MS + 1000, `answered after ${r.ms} ms (bound ${BOUND_MS} ms)`);
    assert.ok(r.ms >= BOUND_MS, `not before its bound (${r.ms} ms)`);
    assert.equal(writes("stubborn"), 0, "its insert was rolled back");
  });

  test("the edge's timeout answer carries the request's id as the client wrote it, beyond 2^53 too", async () => {
    // As a JavaScript number 9007199254740993 would have come back as 9007199254740992.
    const r = await call("stubborn", { seconds: 8 }, { id: "9007199254740993" });
    assertTimeoutAnswer(r);
    assert.match(r.text, /"id":9007199254740993[,}]/, r.text);
  });

  test("the edge's timeout answer names the request's trace, as the database's log line does", async () => {
    // The client's trace (its traceparent header) is the request's: the hard stop's FATAL names it
    // and the edge answers with it. It answered with an id of its own (a UUID) that no log line of
    // the database carried.
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const r = await call("stubborn", { seconds: 8 }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    assertTimeoutAnswer(r);
    assert.match(r.body.result.content[0].text, new RegExp(`\\(trace id ${traceId}\\)`));
    // Without one, the database's own id: W3C form, 32 hex digits.
    const own = await call("stubborn", { seconds: 8 });
    assert.match(own.body.result.content[0].text, /\(trace id [0-9a-f]{32}\)$/);
  });

  test("the same code handed to an injectable tool in a DO block", async () => {
    const statement = `insert into public.bound_writes values ('injected');
      do $do$ declare t0 timestamptz := clock_timestamp(); begin
        while clock_timestamp() < t0 + interval '8 s' loop
          begin perform pg_sleep(0.05); exception when query_canceled then null; end;
        end loop; end $do$`;
    const r = await call("run_statement", { statement });
    assertTimeoutAnswer(r);
    assert.ok(r.ms < BOUND_MS + 1000, `answered after ${r.ms} ms`);
    assert.equal(writes("injected"), 0, "its insert was rolled back");
  });

  test("a tool that catches the cancel and answers is still a timeout, rolled back", async () => {
    const r = await call("catch_once", {});
    assertTimeoutAnswer(r);
    assert.ok(r.ms < BOUND_MS + 1000, `answered after ${r.ms} ms`);
    assert.equal(writes("catch_once"), 0, "its insert was rolled back");
  });

  test("four stubborn calls hold Alice's four in-flight slots; right after, her next four calls run", async () => {
    const stopped = await Promise.all([1, 2, 3, 4].map(() => call("stubborn", { seconds: 8 })));
    for (const r of stopped) {
      assertTimeoutAnswer(r);
      assert.ok(r.ms < BOUND_MS + 1000, `answered after ${r.ms} ms`);
    }
    // The slots went with the ended backends, and the edge's pool replaced its connections.
    const next = await Promise.all([1, 2, 3, 4].map(() => call("quick", {})));
    for (const r of next) {
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.result?.content?.[0]?.text, "quick", JSON.stringify(r.body));
    }
    assert.equal(writes("stubborn"), 0);
  });

  test("a client that goes away: its call still ends within the bound + 1 s, rolled back, slot freed", async () => {
    const running = () =>
      psql(`select count(*) from pg_stat_activity where datname = current_database()
              and application_name like 'chumbo-edge%' and state = 'active' and query like '%http_parts%'`);
    const ac = new AbortController();
    const started = Date.now();
    const leaving = call("stubborn", { seconds: 8 }, { signal: ac.signal }).catch(() => "aborted");
    // the call is running (its insert is visible to nobody, but its backend is)
    while (running() === "0" && Date.now() - started < 5000) await sleep(20);
    assert.equal(running(), "1", "the call is running");
    ac.abort();
    assert.equal(await leaving, "aborted");
    while (running() !== "0" && Date.now() - started < 10000) await sleep(20);
    const ended = Date.now() - started;
    assert.equal(running(), "0");
    assert.ok(ended < BOUND_MS + 1000, `its backend stopped ${ended} ms after the call began`);
    assert.equal(writes("stubborn"), 0, "its insert was rolled back");
    const next = await Promise.all([1, 2, 3, 4].map(() => call("quick", {})));
    for (const r of next) assert.equal(r.status, 200, JSON.stringify(r.body));
  });

  // The edge's pool is where a hard stop meets the next callers: the stopped call's connection
  // closes under it. With postgres.js's own pool (3.4.9) a caller waiting for that connection was
  // never answered, or failed with the stopped call's error (db.ts, Pool).
  test("callers waiting for the hard-stopped call's connection are answered normally", async () => {
    const edge = auxEdge({ CHUMBO_PUBLIC_URL: MCP_URL, CHUMBO_DB_POOL: "1" });
    try {
      for (let round = 0; round < 3; round++) {
        const stopped = call("stubborn", { seconds: 8 }, { url: AUX_URL, signal: AbortSignal.timeout(15_000) });
        await sleep(100); // the stubborn call holds the one connection; these wait for it
        const waiting = [1, 2, 3].map(() => call("quick", {}, { url: AUX_URL, signal: AbortSignal.timeout(15_000) }));
        assertTimeoutAnswer(await stopped);
        for (const r of await Promise.all(waiting)) {
          assert.equal(r.status, 200, JSON.stringify(r.body));
          assert.equal(r.body.result?.content?.[0]?.text, "quick", JSON.stringify(r.body));
        }
      }
      assert.equal(writes("stubborn"), 0);
    } finally {
      edge.stop();
    }
  });

  test("a caller that finds no connection free within CHUMBO_DB_WAIT_MS gets 503 with Retry-After, and nothing ran", async () => {
    const edge = auxEdge({ CHUMBO_PUBLIC_URL: MCP_URL, CHUMBO_DB_POOL: "1", CHUMBO_DB_WAIT_MS: "300" });
    try {
      const holding = call("stubborn", { seconds: 8 }, { url: AUX_URL });
      await sleep(100);
      const r = await call("quick_write", {}, { url: AUX_URL });
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.headers.get("retry-after"), "1");
      assert.match(r.body.error?.message ?? "", /^Service busy/);
      assertTimeoutAnswer(await holding);
      assert.equal(writes("quick_write"), 0, "the refused call never ran");
      // and the same call, once a connection is free, runs and writes (the count above can move)
      const again = await call("quick_write", {}, { url: AUX_URL });
      assert.equal(again.body.result?.content?.[0]?.text, "wrote", JSON.stringify(again.body));
      assert.equal(writes("quick_write"), 1);
    } finally {
      edge.stop();
    }
  });
});
