// The TypeScript SDK (v1) client against the host over stdio.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const binary = process.env.WASM_MCP_BINARY;
const plugins = process.env.WASM_MCP_PLUGINS;

async function connect() {
  const transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--plugins", plugins],
    env: process.env,
    stderr: "ignore",
  });
  const client = new Client({ name: "ts-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

test("lists and calls tools, reads resources, gets prompts, completes", async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "add"));
    const sum = await client.callTool({ name: "add", arguments: { a: 20, b: 22 } });
    assert.deepEqual(sum.structuredContent, { sum: 42 });
    const words = await client.callTool({ name: "word_count", arguments: { text: "a b c" } });
    assert.equal(words.content[0].text, "3");
    const note = await client.readResource({ uri: "notes://note/groceries" });
    assert.equal(note.contents[0].text, "milk, eggs, bread");
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, "notes://note/{id}");
    const prompt = await client.getPrompt({ name: "summarize", arguments: { id: "ideas" } });
    assert.match(prompt.messages[0].content.text, /a wasm host for MCP tools/);
    const done = await client.complete({
      ref: { type: "ref/prompt", name: "summarize" },
      argument: { name: "id", value: "gr" },
    });
    assert.deepEqual(done.completion.values, ["groceries"]);
  } finally {
    await client.close();
  }
});

test("receives progress and log notifications", async () => {
  const client = await connect();
  try {
    const logs = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params.data));
    await client.setLoggingLevel("info");
    const progress = [];
    // Steps 200 ms apart: the SDK drops a progress notification it reads in
    // the same chunk as the response (it handles notifications a microtask
    // later), which a busy machine makes likely for back-to-back messages.
    const result = await client.callTool(
      { name: "countdown", arguments: { steps: 2, delay_ms: 200 } },
      undefined,
      { onprogress: (p) => progress.push(p.progress) },
    );
    assert.equal(result.content[0].text, "counted down from 2");
    // The SDK may drop a progress notification that races the response.
    assert.ok(progress.length >= 1 && progress[0] === 1, `progress: ${progress}`);
    assert.deepEqual(logs, ["step 1 of 2", "step 2 of 2"]);
  } finally {
    await client.close();
  }
});
