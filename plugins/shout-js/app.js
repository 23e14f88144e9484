// Example tools written in JavaScript: shout text, and count its characters.
//
// Built into a component with componentize-js against the `tools-plugin`
// world of wit/plugin.wit (see scripts/build, or run `wasm-mcp dev` on this
// folder); wasm-mcp.js (a copy of sdk-js/wasm-mcp.js, as `wasm-mcp new js`
// makes) turns the functions below into the contract's records, and a
// thrown error becomes a tool error.
import { log } from "wasm-mcp:plugin/host@0.1.0";
import { Plugin } from "./wasm-mcp.js";

const TEXT = { text: { type: "string", description: "The text to work on." } };

const plugin = new Plugin()
  .tool("shout", "Upper-cases text", TEXT, ({ text }) => {
    log("debug", "shout called");
    return text.toUpperCase() + "!";
  })
  .tool("char_count", "Counts the characters (Unicode code points) of text", TEXT, ({ text }) =>
    String([...text].length),
  );

export const tools = plugin.tools;
