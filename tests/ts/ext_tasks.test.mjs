// The official Tasks client library (@modelcontextprotocol/ext-tasks) over
// the TypeScript SDK v2 client: the same tool calls on the 2026-07-28
// extension and on 2025-11-25 sessions, each run to its result, with the
// user's input asked in the task.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  toolDeclarationFromMcpTool,
} from "@modelcontextprotocol/ext-tasks/client";

const url = process.env.WASM_MCP_URL;
const clientInfo = { name: "ext-tasks-test", version: "1.0.0" };
const capabilities = { elicitation: {}, extensions: { "io.modelcontextprotocol/tasks": {} } };

let nextId = 1;

/** Sends one request as a JSON-RPC message over HTTP, framed as the
 * stateless revision frames it; its JSON-RPC response. */
async function rawDispatch(request) {
  const message = { jsonrpc: "2.0", id: `ext-${nextId++}`, ...request };
  const name = request.params?.name ?? request.params?.uri ?? request.params?.taskId;
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": request.method,
  };
  if (typeof name === "string") headers["Mcp-Name"] = name;
  const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return JSON.parse(text);
  const messages = text
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.length > 5)
    .map((line) => JSON.parse(line.slice(5)));
  return messages.find((m) => m.id === message.id && !("method" in m));
}

async function answerElicitation(request) {
  assert.equal(request.kind, "elicitation");
  assert.equal(request.params.message, "Delete ext.txt?");
  return { action: "accept", content: { confirm: true } };
}

for (const version of ["2026-07-28", "2025-11-25"]) {
  test(`ext-tasks runs tool calls as tasks at ${version}`, async () => {
    const client = new Client(clientInfo, {
      capabilities: { elicitation: {} },
      versionNegotiation: { mode: version === "2026-07-28" ? { pin: version } : "legacy" },
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const modern = version === "2026-07-28";
    const declared = new Map();
    for (const tool of (await client.listTools()).tools) declared.set(tool.name, toolDeclarationFromMcpTool(tool));
    const session = createTaskSessionFromClient(client, {
      endpointId: "wasm-mcp",
      tools: { currentTool: (name) => declared.get(name) },
      onInputRequest: answerElicitation,
      ...(modern
        ? { rawDispatch, v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities: capabilities } }
        : {}),
    });
    try {
      const events = [];
      const prefer = { task: { preference: "prefer" } };
      const slow = await session.callTool("slow_compute", { seconds: 1.5, label: "ext" }, prefer);
      const { outcome } = await slow.settle({ onEvent: (e) => events.push(e) });
      assert.equal(outcome.status, "completed", JSON.stringify(outcome));
      assert.equal(resultFromTaskOutcome(outcome).content[0].text, "Computed ext in 1.5s");
      assert.ok(outcome.task?.taskId, "the call ran as a task");

      const asked = await session.callTool("confirm_delete", { filename: "ext.txt" }, prefer);
      const answered = (await asked.settle()).outcome;
      assert.equal(answered.status, "completed", JSON.stringify(answered));
      assert.equal(resultFromTaskOutcome(answered).content[0].text, "Deleted ext.txt");
    } finally {
      await session.close();
      await client.close();
    }
  });
}
