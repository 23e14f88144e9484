// A tool's view (MCP Apps) rendered for real: the TypeScript SDK finds
// the tool whose _meta.ui names a view, reads the view, calls the tool;
// Chromium (Debian's, driven headless by playwright-core) frames the view
// behind the extension's own host side (AppBridge and PostMessageTransport
// from @modelcontextprotocol/ext-apps, bundled for the page by esbuild),
// which hands it the tool's input and result and carries its tools/call
// back to the server. The view's tree is clicked open, a file clicked, its
// preview (fetched by the view-only tool) awaited, and a screenshot taken.
//
// Usage: node apps_view.mjs URL FOLDER SCREENSHOT
// Prints one JSON line of what it saw.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const [url, folder, screenshot] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

const client = new Client(
  { name: "apps-view-test", version: "1.0.0" },
  { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } } },
);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const declared = client.getServerCapabilities()?.extensions?.["io.modelcontextprotocol/ui"] ?? null;
const { tools } = await client.listTools();
const viewed = tools.find((t) => t._meta?.ui?.resourceUri);
if (!viewed) throw new Error("no tool names a view: " + JSON.stringify(tools.map((t) => t.name)));
const uri = viewed._meta.ui.resourceUri;
const { contents } = await client.readResource({ uri });
const view = contents[0];
const args = { path: folder };
const result = await client.callTool({ name: viewed.name, arguments: args });

// The host side of the extension, for the page.
const bundled = await build({
  stdin: {
    contents:
      'import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";\n' +
      "window.AppBridge = AppBridge; window.PostMessageTransport = PostMessageTransport;",
    resolveDir: dirname(fileURLToPath(import.meta.url)),
  },
  bundle: true,
  format: "iife",
  write: false,
  logLevel: "silent",
});

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
const seen = { calls: [] };
try {
  const page = await browser.newPage({ viewport: { width: 720, height: 560 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // The view's tool calls reach the server through this client, as in a
  // real host.
  await page.exposeFunction("callServerTool", async (params) => {
    seen.calls.push(params.name);
    return await client.callTool(params);
  });
  await page.setContent(
    '<!doctype html><body style="margin:0"><iframe id="view" sandbox="allow-scripts" ' +
      'style="border:0;width:700px;height:540px"></iframe></body>',
  );
  await page.addScriptTag({ content: bundled.outputFiles[0].text });
  await page.evaluate(
    async ({ html, args, result }) => {
      const frame = document.getElementById("view");
      const bridge = new window.AppBridge(
        null,
        { name: "wasm-mcp test host", version: "1.0.0" },
        { serverTools: {} },
      );
      bridge.oncalltool = (params) => window.callServerTool(params);
      bridge.oninitialized = () => {
        bridge.sendToolInput({ arguments: args });
        bridge.sendToolResult(result);
      };
      await bridge.connect(new window.PostMessageTransport(frame.contentWindow, frame.contentWindow));
      frame.srcdoc = html;
    },
    { html: view.text, args, result },
  );
  const frame = page.frameLocator("#view");
  await frame.locator("li.directory > span", { hasText: "sub" }).click({ timeout: 20000 });
  await frame.locator("li.file > span", { hasText: "b.txt" }).click({ timeout: 20000 });
  await frame.locator("#preview", { hasText: "deep" }).waitFor({ timeout: 20000 });
  seen.preview = await frame.locator("#preview").textContent();
  seen.status = await frame.locator("#status").textContent();
  seen.files = await frame.locator("li > span").allTextContents();
  await page.screenshot({ path: screenshot });
  seen.errors = errors;
} finally {
  await browser.close();
  await client.close();
}

console.log(
  JSON.stringify({
    declared,
    tools: tools.map((t) => t.name),
    viewed: viewed.name,
    uri,
    mimeType: view.mimeType,
    result: { isError: Boolean(result.isError) },
    ...seen,
  }),
);
