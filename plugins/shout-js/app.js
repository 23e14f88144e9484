// Example tools written in JavaScript: shout text, and count its characters.
//
// Built into a component with componentize-js against the `tools-plugin`
// world of wit/plugin.wit (see scripts/build, or run `wasm-mcp dev` on this
// folder). Interfaces are exported as objects named after them; a thrown
// value becomes the `error` of a result.
import { log } from "wasm-mcp:plugin/host@0.1.0";

const TEXT = {
  type: "object",
  properties: { text: { type: "string", description: "The text to work on." } },
  required: ["text"],
};

const TOOLS = {
  shout: {
    description: "Upper-cases text",
    run: ({ text }) => text.toUpperCase() + "!",
  },
  char_count: {
    description: "Counts the characters (Unicode code points) of text",
    run: ({ text }) => String([...text].length),
  },
};

function text(value) {
  return { tag: "text", val: { text: value } };
}

export const tools = {
  listTools() {
    return Object.entries(TOOLS).map(([name, tool]) => ({
      name,
      description: tool.description,
      inputSchema: JSON.stringify(TEXT),
      taskSupport: "forbidden",
      icons: [],
    }));
  },

  callTool(name, args) {
    const tool = TOOLS[name];
    if (!tool) {
      throw { tag: "not-found", val: `no tool named ${name}` };
    }
    log("debug", `${name} called`);
    return { content: [text(tool.run(JSON.parse(args)))], isError: false };
  },
};
