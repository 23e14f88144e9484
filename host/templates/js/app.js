// {{name}}: a wasm-mcp plugin in JavaScript with one tool.
//
// Built with componentize-js against the `tools-plugin` world of
// wit/plugin.wit (see README.md). Interfaces are exported as objects named
// after them; a thrown value becomes the `error` of a result.

const GREET_SCHEMA = {
  type: "object",
  properties: { name: { type: "string", description: "Who to greet." } },
  required: ["name"],
};

export const tools = {
  listTools() {
    return [
      {
        name: "greet",
        description: "Says hello to someone",
        inputSchema: JSON.stringify(GREET_SCHEMA),
        taskSupport: "forbidden",
        icons: [],
      },
    ];
  },

  callTool(name, args) {
    if (name !== "greet") {
      throw { tag: "not-found", val: `no tool named ${name}` };
    }
    const { name: who } = JSON.parse(args);
    return { content: [{ tag: "text", val: { text: `Hello, ${who}!` } }], isError: false };
  },
};
