// The TypeScript SDKs against replicas behind HAProxy (tests/test_cluster.py
// starts them): v1 (2025-11-25 sessions, which stick to a replica or are
// taken up by another) and v2 (stateless 2026-07-28, spread over every
// replica). Each lists, calls, reads and gets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

const url = new URL(process.env.WASM_MCP_URL);

async function exercise(client, calls) {
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === "greet"));
  for (let i = 0; i < calls; i++) {
    const greet = await client.callTool({ name: "greet", arguments: { name: `ts${i}` } });
    assert.equal(greet.content[0].text, `Hello, ts${i}!`);
  }
  const note = await client.readResource({ uri: "notes://note/groceries" });
  assert.equal(note.contents[0].text, "milk, eggs, bread");
  const prompt = await client.getPrompt({ name: "summarize", arguments: { id: "ideas" } });
  assert.match(prompt.messages[0].content.text, /a wasm host for MCP tools/);
}

test("SDK v1 through HAProxy: one session, many calls", async () => {
  const client = new ClientV1({ name: "ts-v1", version: "1.0.0" });
  const transport = new TransportV1(url);
  await client.connect(transport);
  try {
    assert.ok(transport.sessionId, "the server gave a session id");
    await exercise(client, 10);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

test("SDK v2 through HAProxy at 2026-07-28: calls spread over the replicas", async () => {
  const client = new ClientV2(
    { name: "ts-v2", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const transport = new TransportV2(url);
  await client.connect(transport);
  try {
    await exercise(client, 30);
  } finally {
    await client.close();
  }
});
