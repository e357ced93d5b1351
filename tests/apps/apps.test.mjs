// MCP Apps from the database in a real host (run by tests/apps/run.sh): the example app's view
// read from chumbo as Alice over the edge, rendered in headless Chromium under the official host
// bridge (AppBridge, @modelcontextprotocol/ext-apps) in a sandboxed iframe with the CSP built from
// _meta.ui.csp; sent a tool result; its form filled and its button clicked: exactly one row is
// written, Alice's. A view cannot call a tool without "app" visibility; it cannot reach the
// network its CSP does not allow; Bob's list never shows Alice's note.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import puppeteer from "puppeteer-core";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { getToolUiResourceUri, isToolVisibilityModelOnly } from "@modelcontextprotocol/ext-apps/app-bridge";

const { APPS_MCP_URL, APPS_ALICE_TOKEN, APPS_BOB_TOKEN, APPS_DATABASE_URL, CHROMIUM } = process.env;
const OUT = process.env.APPS_OUT ?? "/tmp/chumbo-apps-test";
const ALICE = "aaaaaaaa-0000-4000-8000-000000000001";
const URI = "ui://chumbo-example/notes";
const EXTENSION = "io.modelcontextprotocol/ui";

const sql = (query) =>
  execFileSync("psql", ["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", APPS_DATABASE_URL, "-c", query], {
    encoding: "utf8",
  }).trim();

async function connect(token) {
  const client = new Client({ name: "chumbo-apps-test-host", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(APPS_MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

let alice, bob, browser, page, bundle;
const forwarded = [], refused = [];

before(async () => {
  mkdirSync(OUT, { recursive: true });
  [alice, bob] = await Promise.all([connect(APPS_ALICE_TOKEN), connect(APPS_BOB_TOKEN)]);
  const built = await esbuild.build({
    entryPoints: [fileURLToPath(new URL("host.mjs", import.meta.url))],
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "error",
  });
  bundle = built.outputFiles[0].text;
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});

after(async () => {
  await browser?.close();
  await Promise.all([alice?.close(), bob?.close()]);
});

test("the server declares the extension, links the tool, hides the app-only tool", async () => {
  assert.ok(alice.getServerCapabilities()?.extensions?.[EXTENSION], JSON.stringify(alice.getServerCapabilities()));
  const { tools } = await alice.listTools();
  const list = tools.find((t) => t.name === "list_notes");
  assert.equal(list?._meta?.ui?.resourceUri, URI);
  assert.equal(list?._meta?.["ui/resourceUri"], URI);
  assert.ok(!tools.some((t) => t.name === "add_note"), "the app-only tool is not in tools/list");
  assert.deepEqual(tools.find((t) => t.name === "clear_notes")?._meta?.ui?.visibility, ["model"]);
  // as the official SDK reads them: the link (also from the deprecated flat key alone), model-only
  assert.equal(getToolUiResourceUri(list), URI);
  assert.equal(getToolUiResourceUri({ _meta: { "ui/resourceUri": list._meta["ui/resourceUri"] } }), URI);
  assert.ok(isToolVisibilityModelOnly(tools.find((t) => t.name === "clear_notes")));
  assert.ok(!isToolVisibilityModelOnly(list));
  const { resources } = await alice.listResources();
  const entry = resources.find((r) => r.uri === URI);
  assert.equal(entry?.mimeType, "text/html;profile=mcp-app");
});

test("the view renders under AppBridge, writes exactly one row, Alice's, through its button", async () => {
  const { tools } = await alice.listTools();
  const { contents } = await alice.readResource({ uri: URI });
  assert.equal(contents.length, 1);
  assert.equal(contents[0].mimeType, "text/html;profile=mcp-app");
  const ui = contents[0]._meta?.ui;
  assert.deepEqual(ui?.csp, { connectDomains: [], resourceDomains: [] });
  // the model's call, whose result the host hands the view
  const toolResult = await alice.callTool({ name: "list_notes", arguments: {} });

  page = await browser.newPage();
  await page.setViewport({ width: 720, height: 420 });
  // the host's policy (spec): a view may call a tool only if its visibility includes "app"
  await page.exposeFunction("hostCallTool", async (params) => {
    const listed = tools.find((t) => t.name === params.name);
    const visibility = listed?._meta?.ui?.visibility ?? ["model", "app"];
    if (listed && !visibility.includes("app")) {
      refused.push(params.name);
      throw new Error(`${params.name} is not available to apps`);
    }
    forwarded.push(params.name);
    return await alice.callTool(params);
  });
  await page.setContent(
    `<!doctype html><html><head><title>chumbo test host</title><style>
       body { font: 14px system-ui, sans-serif; margin: 12px; background: #f6f8fa; }
       iframe { width: 680px; height: 330px; border: 1px solid #d0d7de; border-radius: 8px; background: #fff; }
     </style></head><body><div>chumbo test host: ${URI} as Alice</div><div id="view"></div></body></html>`,
  );
  await page.addScriptTag({ content: bundle });
  await page.evaluate((args) => globalThis.startHost(args), {
    html: contents[0].text,
    ui,
    toolInput: {},
    toolResult,
  });
  const frame = await (await page.waitForSelector("iframe")).contentFrame();
  await frame.waitForFunction(() => document.getElementById("notes").textContent.includes("No notes yet."));

  const before = Number(sql("select count(*) from public.notes"));
  await frame.type("#body", "Buy anvil polish");
  await frame.click("#save");
  await frame.waitForFunction(() => document.getElementById("status").textContent === "Saved.", { timeout: 15000 });
  await frame.waitForFunction(() => document.getElementById("notes").textContent.includes("Buy anvil polish"));
  assert.deepEqual(forwarded, ["add_note", "list_notes"]);
  assert.equal(Number(sql("select count(*) from public.notes")), before + 1, "exactly one row written");
  assert.equal(
    sql("select owner || ' ' || body from public.notes order by id desc limit 1"),
    `${ALICE} Buy anvil polish`,
  );
  await page.screenshot({ path: `${OUT}/apps-view.png` });
  console.log(`screenshot: ${OUT}/apps-view.png`);
});

test("a view cannot call a tool without app visibility; its CSP allows no network", async () => {
  const frame = await (await page.$("iframe")).contentFrame();
  const rows = sql("select count(*) from public.notes");
  // the view asks the host, over the same postMessage channel, for the model-only tool
  const answer = await frame.evaluate(() =>
    new Promise((resolve) => {
      const id = 4242;
      globalThis.addEventListener("message", (e) => {
        if (e.data?.id === id) resolve(e.data);
      });
      globalThis.parent.postMessage({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "clear_notes", arguments: {} },
      }, "*");
    })
  );
  assert.ok(answer.error, JSON.stringify(answer));
  assert.match(answer.error.message, /not available to apps/);
  assert.deepEqual(refused, ["clear_notes"]);
  assert.equal(sql("select count(*) from public.notes"), rows, "nothing was deleted");
  const csp = await page.evaluate(() => globalThis.hostCsp);
  assert.match(csp, /connect-src 'none'/);
  const fetched = await frame.evaluate(
    (url) => fetch(url).then(() => "fetched", (e) => `refused: ${e.message}`),
    APPS_MCP_URL,
  );
  assert.match(fetched, /^refused/);
});

test("Bob's notes never show Alice's", async () => {
  const result = await bob.callTool({ name: "list_notes", arguments: {} });
  assert.deepEqual(result.structuredContent, { notes: [] });
});
