// wasm-mcp for JavaScript plugins: plain functions become tools, resources
// and prompts, and this module writes the contract's records for them.
//
//   import { Plugin } from "./wasm-mcp.js";
//
//   const plugin = new Plugin();
//   plugin.tool("greet", "Says hello to someone",
//     { name: { type: "string", description: "Who to greet." } },
//     ({ name }) => `Hello, ${name}!`);
//
//   export const tools = plugin.tools;
//
// Build with componentize-js against the world that covers what the module
// exports (`wasm-mcp dev` picks it: `tools-plugin` here). A tool's
// arguments are JSON Schema properties; each is required unless it says
// `optional: true`. A tool returns a string (text) or anything JSON can
// hold (text and structured content); a thrown error becomes a tool error
// with its message.

function text(value) {
  return { tag: "text", val: { text: value } };
}

function notFound(what) {
  return { tag: "not-found", val: what };
}

function inputSchema(args) {
  const properties = {};
  const required = [];
  for (const [name, spec] of Object.entries(args ?? {})) {
    const { optional, ...schema } = spec;
    properties[name] = schema;
    if (!optional) required.push(name);
  }
  return { type: "object", properties, required };
}

function toolResult(value) {
  if (typeof value === "string") {
    return { content: [text(value)], isError: false };
  }
  const encoded = JSON.stringify(value ?? null);
  const structured = value !== null && typeof value === "object" && !Array.isArray(value);
  return { content: [text(encoded)], structuredContent: structured ? encoded : undefined, isError: false };
}

/** The tools, resources and prompts of one plugin. */
export class Plugin {
  #tools = new Map();
  #resources = new Map();
  #prompts = new Map();

  /** Adds tool `name`: `run(args)` gets the arguments `args` describes. */
  tool(name, description, args, run) {
    this.#tools.set(name, {
      entry: {
        name,
        description,
        inputSchema: JSON.stringify(inputSchema(args)),
        taskSupport: "forbidden",
        icons: [],
      },
      run,
    });
    return this;
  }

  /** Adds the resource at `uri`: `read()` returns its text (or bytes). */
  resource(uri, name, description, read, mimeType = "text/plain") {
    this.#resources.set(uri, { entry: { uri, name, description, mimeType, icons: [] }, read });
    return this;
  }

  /** Adds prompt `name`: `args` maps each argument to its description
   * (`{ description, optional }` for an optional one); `render(args)`
   * returns a message or a list of them. */
  prompt(name, description, args, render) {
    const argumentsList = Object.entries(args ?? {}).map(([arg, spec]) => ({
      name: arg,
      description: typeof spec === "string" ? spec : spec.description,
      required: !(typeof spec === "object" && spec.optional),
    }));
    this.#prompts.set(name, { entry: { name, description, arguments: argumentsList, icons: [] }, render });
    return this;
  }

  /** The `tools` interface, to export as `export const tools = plugin.tools`. */
  get tools() {
    const tools = this.#tools;
    return {
      listTools: () => [...tools.values()].map((t) => t.entry),
      callTool(name, args) {
        const tool = tools.get(name);
        if (!tool) throw notFound(`no tool named ${name}`);
        try {
          return toolResult(tool.run(JSON.parse(args)));
        } catch (error) {
          return { content: [text(String(error?.message ?? error))], isError: true };
        }
      },
    };
  }

  /** The `resources` interface. */
  get resources() {
    const resources = this.#resources;
    return {
      listResources: () => [...resources.values()].map((r) => r.entry),
      listResourceTemplates: () => [],
      readResource(uri) {
        const resource = resources.get(uri);
        if (!resource) throw notFound(`no resource ${uri}`);
        const body = resource.read();
        return [
          {
            uri,
            mimeType: resource.entry.mimeType,
            body: body instanceof Uint8Array ? { tag: "blob", val: body } : { tag: "text", val: String(body) },
          },
        ];
      },
    };
  }

  /** The `prompts` interface. */
  get prompts() {
    const prompts = this.#prompts;
    return {
      listPrompts: () => [...prompts.values()].map((p) => p.entry),
      getPrompt(name, args) {
        const prompt = prompts.get(name);
        if (!prompt) throw notFound(`no prompt named ${name}`);
        const said = prompt.render(Object.fromEntries(args));
        const messages = Array.isArray(said) ? said : [said];
        return {
          description: prompt.entry.description,
          messages: messages.map((m) => ({ role: "user", content: text(String(m)) })),
        };
      },
    };
  }
}
