// The TypeScript SDK (v1) answers a plugin's elicitation and sampling
// requests, over stdio and over Streamable HTTP.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { transports } from "./transports.mjs";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

for (const [name, transport] of Object.entries(transports)) {
  test(`answers elicitation and sampling over ${name}`, async () => {
    const client = new Client(
      { name: "ts-round-trips", version: "1.0.0" },
      { capabilities: { elicitation: {}, sampling: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      assert.equal(request.params.message, "Your name?");
      return { action: "accept", content: { username: "grace", email: "grace@example.com" } };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      assert.equal(request.params.messages[0].content.text, "Say hi");
      return { role: "assistant", model: "ts-model", content: { type: "text", text: "hello from ts" } };
    });
    await client.connect(transport());
    try {
      const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "Your name?" } });
      assert.match(elicited.content[0].text, /^User response: action=accept, content=\{.*"grace".*\}$/);
      const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "Say hi" } });
      assert.equal(sampled.content[0].text, "LLM response: hello from ts");
    } finally {
      await client.close();
    }
  });
}

test("SDK v2 at 2026-07-28 answers input-required rounds over HTTP", async () => {
  const { Client: ClientV2, StreamableHTTPClientTransport: TransportV2 } = await import("@modelcontextprotocol/client");
  const client = new ClientV2(
    { name: "ts-v2-round-trips", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } }, capabilities: { elicitation: {}, sampling: {} } },
  );
  const asked = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params.message);
    const field = Object.keys(request.params.requestedSchema.properties)[0];
    return { action: "accept", content: { [field]: field === "name" ? "Lin" : "blue" } };
  });
  client.setRequestHandler("sampling/createMessage", async () => ({
    role: "assistant",
    model: "ts-model",
    content: { type: "text", text: "Paris" },
  }));
  await client.connect(new TransportV2(new URL(process.env.WASM_MCP_URL)));
  try {
    const rounds = await client.callTool({ name: "test_input_required_result_multi_round", arguments: {} });
    assert.equal(rounds.content[0].text, "Lin likes blue");
    assert.deepEqual(asked, ["Step 1: What is your name?", "Step 2: What is your favorite color?"]);
    const sampled = await client.callTool({ name: "test_input_required_result_sampling", arguments: {} });
    assert.equal(sampled.content[0].text, "The model says: Paris");
  } finally {
    await client.close();
  }
});
