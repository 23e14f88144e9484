// The TypeScript SDK (v1) client finding and calling tools through the
// host's tool search ([server] tool_search = "only"; the config comes from
// WASM_MCP_CONFIG).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

test("lists only the search tools, finds a tool and calls it", async () => {
  const transport = new StdioClientTransport({
    command: process.env.WASM_MCP_BINARY,
    args: ["serve", "--plugins", process.env.WASM_MCP_PLUGINS],
    env: process.env,
    stderr: "ignore",
  });
  const client = new Client({ name: "ts-search", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["search_tools", "call_tool"]);
    const found = await client.callTool({ name: "search_tools", arguments: { query: "reverse text" } });
    assert.equal(found.isError, undefined);
    assert.equal(found.structuredContent.tools[0].name, "reverse");
    const reversed = await client.callTool({
      name: "call_tool",
      arguments: { name: "reverse", arguments: { text: "stressed" } },
    });
    assert.equal(reversed.content[0].text, "desserts");
  } finally {
    await client.close();
  }
});
