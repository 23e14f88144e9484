// Code mode in JavaScript: one tool, `run_javascript`, that runs a script
// (the body of an async function) which calls the other plugins' tools as
// JavaScript functions.
//
// Built into a component with componentize-js against the
// `tools-calling-plugin` world of wit/plugin.wit (see scripts/build), as
// dist/plugins/code-js.wasm; the tools a script reaches are those the
// operator's `[plugins.code-js] call_tools` grants and the caller may use
// (none without the grant: then `tools.call` throws the host's refusal).
// runner.js runs the script (and runs under Node too). The `tools` export
// is written out here rather than with sdk-js's Plugin: its `callTool` is
// async, and componentize-js runs the event loop until the promise it
// returns settles, so a script may `await`.
import { callTool, searchTools } from "wasm-mcp:plugin/tool-calls@0.1.0";
import { DESCRIPTION, INPUT_SCHEMA, OUTPUT_SCHEMA, ToolError, run } from "./runner.js";

const NAME = "run_javascript";

/** The host's call-tool; a call that did not run throws ToolError. */
function call(name, args) {
  try {
    return callTool(name, args);
  } catch (e) {
    const error = e?.payload ?? e;
    if (typeof error?.code === "number") throw new ToolError(String(error.message), error.code);
    throw e;
  }
}

function text(value) {
  return { tag: "text", val: { text: value } };
}

export const tools = {
  listTools: () => [
    {
      name: NAME,
      title: "Run JavaScript",
      description: DESCRIPTION,
      inputSchema: JSON.stringify(INPUT_SCHEMA),
      outputSchema: JSON.stringify(OUTPUT_SCHEMA),
      // A long script may run as an MCP task.
      taskSupport: "optional",
      icons: [],
    },
  ],

  async callTool(name, args) {
    if (name !== NAME) throw { tag: "not-found", val: `no tool named ${name}` };
    const { script } = JSON.parse(args);
    const outcome = await run(script, searchTools, call);
    if (outcome.ok) {
      const structured = JSON.stringify({ result: outcome.result, output: outcome.output });
      return { content: [text(structured)], structuredContent: structured, isError: false };
    }
    const said = outcome.output ? `${outcome.error}\n\nLogged before the error:\n${outcome.output}` : outcome.error;
    return { content: [text(said)], isError: true };
  },
};
