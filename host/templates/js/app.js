// {{name}}: a wasm-mcp plugin in JavaScript with a tool, a resource, a
// resource template, a prompt and completions for it. Built with componentize-js (see README.md); wasm-mcp.js turns the
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
  .template("plugin://{{name}}/greeting/{who}", "greeting", "A greeting for someone", ({ who }) => `Hello, ${who}!`)
  .prompt(
    "introduce",
    "Asks for an introduction",
    { speaker: "Who is speaking.", sentences: { description: "How many sentences.", optional: true } },
    ({ speaker, sentences }) => `Introduce ${speaker} in ${sentences ?? 2} sentences.`,
  )
  .complete("introduce", "speaker", (typed) => ["Ada", "Alan", "Grace"].filter((name) => name.startsWith(typed)));

export const tools = plugin.tools;
export const resources = plugin.resources;
export const prompts = plugin.prompts;
export const completions = plugin.completions;
