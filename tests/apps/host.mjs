// The test host's page script (bundled by esbuild in apps.test.mjs): the official host bridge
// (AppBridge of @modelcontextprotocol/ext-apps) talking to a view in a sandboxed iframe, with the
// Content-Security-Policy built from the resource's _meta.ui.csp. Tool calls of the view go to
// window.hostCallTool, which the test exposes (it holds the MCP client, connected as the user).
import { AppBridge, buildAllowAttribute, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

/** The CSP of a view: nothing but inline code, plus exactly the origins its csp declares. */
export function cspOf(csp = {}) {
  const origins = (key, none = "'none'") => (csp[key] ?? []).join(" ") || none;
  const resources = (csp.resourceDomains ?? []).join(" ");
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`.trim(),
    `style-src 'unsafe-inline' ${resources}`.trim(),
    `img-src data: ${resources}`.trim(),
    `font-src ${origins("resourceDomains")}`,
    `media-src ${origins("resourceDomains")}`,
    `connect-src ${origins("connectDomains")}`,
    `frame-src ${origins("frameDomains")}`,
    `base-uri ${origins("baseUriDomains")}`,
    "form-action 'none'",
  ].join("; ");
}

function withCsp(html, csp) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${cspOf(csp).replaceAll('"', "&quot;")}">`;
  return /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (h) => h + meta) : meta + html;
}

globalThis.startHost = async ({ html, ui, toolInput, toolResult }) => {
  const iframe = document.createElement("iframe");
  // no allow-same-origin: the view gets an opaque origin, no cookies, no access to this page
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");
  const allow = buildAllowAttribute(ui?.permissions ?? {});
  if (allow) iframe.setAttribute("allow", allow);
  iframe.title = "MCP App";
  iframe.srcdoc = withCsp(html, ui?.csp);
  document.getElementById("view").append(iframe);
  const bridge = new AppBridge(null, { name: "chumbo-test-host", version: "1.0.0" }, { serverTools: {} });
  bridge.oncalltool = (params) => globalThis.hostCallTool(params);
  const ready = new Promise((resolve) => {
    bridge.oninitialized = async () => {
      await bridge.sendToolInput({ arguments: toolInput });
      await bridge.sendToolResult(toolResult);
      resolve();
    };
  });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  await ready;
  globalThis.hostCsp = cspOf(ui?.csp);
};
