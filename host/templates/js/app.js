// {{name}}: a wasm-mcp plugin in JavaScript with a tool, a resource and a
// prompt. Built with componentize-js (see README.md); wasm-mcp.js turns the
// functions below into the contract's records.
import { Plugin } from "./wasm-mcp.js";

const plugin = new Plugin()
  .tool(
    "greet",
    "Says hello to someone",
    { name: { type: "string", description: "Who to greet." } },
    ({ name }) => `Hello, ${name}!`,
  )
  .resource("plugin://{{name}}/about", "about", "What this plugin is", () => "{{name}} was made with wasm-mcp new.")
  .prompt(
    "introduce",
    "Asks for an introduction",
    { speaker: "Who is speaking.", sentences: { description: "How many sentences.", optional: true } },
    ({ speaker, sentences }) => `Introduce ${speaker} in ${sentences ?? 2} sentences.`,
  );

export const tools = plugin.tools;
export const resources = plugin.resources;
export const prompts = plugin.prompts;
