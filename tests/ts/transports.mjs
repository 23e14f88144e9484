// The host as the TypeScript SDK (v1) reaches it in the tests: spawned over
// stdio, or the HTTP endpoint the Python test started (WASM_MCP_URL).
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const transports = {
  stdio: () =>
    new StdioClientTransport({
      command: process.env.WASM_MCP_BINARY,
      args: ["serve", "--plugins", process.env.WASM_MCP_PLUGINS],
      env: process.env,
      stderr: "ignore",
    }),
  http: () => new StreamableHTTPClientTransport(new URL(process.env.WASM_MCP_URL)),
};
