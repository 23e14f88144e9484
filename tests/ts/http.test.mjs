// The TypeScript SDKs against the host over Streamable HTTP: v1
// (@modelcontextprotocol/sdk, 2025-11-25 sessions) and v2
// (@modelcontextprotocol/client, stateless 2026-07-28). Each lists, calls,
// reads, gets, and hears tools/list_changed after a hot reload.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

const url = new URL(process.env.WASM_MCP_URL);
const folder = process.env.WASM_MCP_FOLDER;
const dist = process.env.WASM_MCP_DIST;

/** Replaces a plugin file atomically with another build. */
function replacePlugin(name, withBuild) {
  const tmp = join(folder, `.${name}.wasm.tmp`);
  copyFileSync(join(dist, `${withBuild}.wasm`), tmp);
  renameSync(tmp, join(folder, `${name}.wasm`));
}

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen in ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Lists the tools until one is called `name` (a plugin the test before
 * put back may still be reloading), for up to two minutes. */
async function listedWith(client, name, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const { tools } = await client.listTools();
    if (tools.some((t) => t.name === name)) return tools;
    if (Date.now() > deadline) throw new Error(`no tool called ${name} in tools/list within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function exercise(client) {
  await listedWith(client, "greet");
  const greet = await client.callTool({ name: "greet", arguments: { name: "ts" } });
  assert.equal(greet.content[0].text, "Hello, ts!");
  const note = await client.readResource({ uri: "notes://note/groceries" });
  assert.equal(note.contents[0].text, "milk, eggs, bread");
  const prompt = await client.getPrompt({ name: "summarize", arguments: { id: "ideas" } });
  assert.match(prompt.messages[0].content.text, /a wasm host for MCP tools/);
}

test("SDK v1 over Streamable HTTP: session, calls, list_changed after a reload", async () => {
  const client = new ClientV1({ name: "ts-v1", version: "1.0.0" });
  const transport = new TransportV1(url);
  await client.connect(transport);
  try {
    assert.ok(transport.sessionId, "the server gave a session id");
    await exercise(client);
    const changed = new Promise((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    replacePlugin("hello", "wordcount");
    await within(120_000, changed, "tools/list_changed");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "word_count"));
    assert.ok(!tools.some((t) => t.name === "greet"));
  } finally {
    await transport.terminateSession();
    await client.close();
    replacePlugin("hello", "hello");
  }
});

test("SDK v2 over Streamable HTTP at 2026-07-28: calls, listen, list_changed after a reload", async () => {
  const client = new ClientV2(
    { name: "ts-v2", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const transport = new TransportV2(url);
  await client.connect(transport);
  try {
    await exercise(client);
    const changed = new Promise((resolve) =>
      client.setNotificationHandler("notifications/tools/list_changed", () => resolve()),
    );
    const subscription = await client.listen({ toolsListChanged: true });
    assert.equal(subscription.honoredFilter.toolsListChanged, true);
    replacePlugin("hello", "wordcount");
    await within(120_000, changed, "tools/list_changed on the listen stream");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "word_count"));
    await subscription.close();
  } finally {
    await client.close();
    replacePlugin("hello", "hello");
  }
});
