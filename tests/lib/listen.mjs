// A raw `subscriptions/listen` stream (MCP 2026-07-28) over fetch, for tests that look at the
// wire itself (SSE frames, keep-alive comments, aborts, failovers): the SDK clients hide those.
// One helper for every suite (no dependencies beyond Node's own).

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

/**
 * Opens a listen stream at `url` with `token`. The returned stream reads in the background:
 * `text` (everything received), `messages()` (the `data:` frames parsed), `listChanged()`,
 * `until(pred, ms)` (waits for pred or the time, returns pred()), `done`, `close()`.
 * A refused request (not 200 text/event-stream) returns at once with `status` and the body in `text`.
 * @param {string} url the MCP endpoint
 * @param {string} token a bearer token
 * @param {{id?: string, notifications?: object, meta?: object}} [options]
 */
export async function openListen(url, token, options = {}) {
  const id = options.id ?? `listen-${Math.random().toString(36).slice(2)}`;
  const ac = new AbortController();
  const res = await fetch(url, {
    method: "POST",
    signal: ac.signal,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "subscriptions/listen",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "subscriptions/listen",
      params: { notifications: options.notifications ?? { toolsListChanged: true }, _meta: options.meta ?? META },
    }),
  });
  const s = { id, res, status: res.status, text: "", done: false, pump: null };
  s.messages = () => [...s.text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]));
  s.listChanged = () => s.messages().filter((m) => /list_changed$/.test(m.method ?? ""));
  s.until = async (pred, ms) => {
    const end = Date.now() + ms;
    while (!pred() && !s.done && Date.now() < end) await sleep(25);
    return pred();
  };
  s.close = async () => {
    ac.abort();
    await s.pump?.catch(() => {});
  };
  if (res.status !== 200 || !/event-stream/.test(res.headers.get("content-type") ?? "")) {
    s.text = await res.text();
    s.done = true;
    return s;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  s.pump = (async () => {
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        s.text += dec.decode(r.value, { stream: true });
      }
    } catch { /* aborted */ }
    s.done = true;
  })();
  return s;
}
