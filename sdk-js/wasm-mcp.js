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
// exports (`wasm-mcp dev` picks it: `tools-plugin` here; export
// `resources`, `prompts` and `completions` the same way when the module
// has them). A tool's arguments are JSON Schema properties; each is
// required unless it says `optional: true` or has a `default` (used when
// the argument is left out). A tool returns a string (text), anything JSON
// can hold (text and structured content) or `result(text, structured)`
// (its own text beside structured content); a thrown error becomes a tool
// error with its message. `tool`'s last argument may set `title`,
// `outputSchema` and `annotations` (`readOnlyHint`, `destructiveHint`,
// `idempotentHint`, `openWorldHint`, `title`). A resource template's
// `{name}` matches one path segment (up to the next `/`).

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
    if (!optional && !("default" in schema)) required.push(name);
  }
  return { type: "object", properties, required };
}

/** The arguments' defaults, by name. */
function defaultsOf(args) {
  return Object.entries(args ?? {}).filter(([, spec]) => spec && "default" in spec);
}

const RESULT = Symbol("wasm-mcp result");

/** A tool result: the text clients read, and the structured content (a
 * JSON object) beside it. */
export function result(text, structured) {
  return { [RESULT]: true, text, structured };
}

function toolResult(value) {
  if (typeof value === "string") {
    return { content: [text(value)], isError: false };
  }
  if (value?.[RESULT]) {
    const structured = value.structured === undefined ? undefined : JSON.stringify(value.structured);
    return { content: [text(String(value.text))], structuredContent: structured, isError: false };
  }
  const encoded = JSON.stringify(value ?? null);
  const structured = value !== null && typeof value === "object" && !Array.isArray(value);
  return { content: [text(encoded)], structuredContent: structured ? encoded : undefined, isError: false };
}

/** A matcher for a URI template: `{name}` is one path segment. */
function templateMatcher(uriTemplate) {
  const names = [];
  const pattern = uriTemplate.replace(/\{([^}]+)\}|[^{]+/g, (part, name) => {
    if (name === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    names.push(name);
    return "([^/]+)";
  });
  const regex = new RegExp(`^${pattern}$`);
  return (uri) => {
    const found = regex.exec(uri);
    if (!found) return undefined;
    return Object.fromEntries(names.map((name, i) => [name, decoded(found[i + 1])]));
  };
}

/** `%`-escapes decoded; a malformed escape is kept as it is. */
function decoded(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The most suggestions the host passes on. */
const MAX_COMPLETIONS = 100;

/** The tools, resources, prompts and completions of one plugin. */
export class Plugin {
  #tools = new Map();
  #resources = new Map();
  #templates = [];
  #prompts = new Map();
  #completers = new Map();

  /** Adds tool `name`: `run(args)` gets the arguments `args` describes
   * (with the defaults of those left out). `options`: `title`,
   * `outputSchema` (a JSON Schema object), `annotations` (`title`,
   * `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`). */
  tool(name, description, args, run, options = {}) {
    const { title, outputSchema, annotations } = options;
    this.#tools.set(name, {
      entry: {
        name,
        title,
        description,
        inputSchema: JSON.stringify(inputSchema(args)),
        outputSchema: outputSchema === undefined ? undefined : JSON.stringify(outputSchema),
        annotations: annotations === undefined ? undefined : { ...annotations },
        taskSupport: "forbidden",
        icons: [],
      },
      run,
      defaults: defaultsOf(args),
    });
    return this;
  }

  /** Adds the resource at `uri`: `read()` returns its text (or bytes). */
  resource(uri, name, description, read, mimeType = "text/plain") {
    this.#resources.set(uri, { entry: { uri, name, description, mimeType, icons: [] }, read });
    return this;
  }

  /** Adds the resources matching `uriTemplate` (`notes://note/{id}`):
   * `read(vars, uri)` gets the template's variables by name. */
  template(uriTemplate, name, description, read, mimeType = "text/plain") {
    this.#templates.push({
      entry: { uriTemplate, name, description, mimeType, icons: [] },
      match: templateMatcher(uriTemplate),
      read,
    });
    return this;
  }

  /** Suggests values for `argument` of prompt `prompt`, or of the variable
   * `argument` of the resource template `{ template: uriTemplate }`:
   * `suggest(typed, context)` gets what the user typed and the other
   * arguments' values by name, and returns the suggestions, best first. */
  complete(prompt, argument, suggest) {
    const key = typeof prompt === "string" ? `prompt\n${prompt}` : `resource-template\n${prompt.template}`;
    this.#completers.set(`${key}\n${argument}`, suggest);
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
          const given = JSON.parse(args);
          for (const [arg, spec] of tool.defaults) {
            if (!(arg in given)) given[arg] = structuredClone(spec.default);
          }
          return toolResult(tool.run(given));
        } catch (error) {
          return { content: [text(String(error?.message ?? error))], isError: true };
        }
      },
    };
  }

  /** The `resources` interface. */
  get resources() {
    const resources = this.#resources;
    const templates = this.#templates;
    return {
      listResources: () => [...resources.values()].map((r) => r.entry),
      listResourceTemplates: () => templates.map((t) => t.entry),
      readResource(uri) {
        let resource = resources.get(uri);
        let body;
        if (resource) {
          body = resource.read();
        } else {
          for (const template of templates) {
            const vars = template.match(uri);
            if (vars) {
              resource = template;
              body = template.read(vars, uri);
              break;
            }
          }
        }
        if (!resource) throw notFound(`no resource ${uri}`);
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

  /** The `completions` interface (the full `plugin` world). */
  get completions() {
    const completers = this.#completers;
    return {
      complete(request) {
        const key = `${request.reference.tag}\n${request.reference.val}\n${request.argumentName}`;
        const suggest = completers.get(key);
        if (!suggest) return { values: [], hasMore: false };
        const all = suggest(request.argumentValue, Object.fromEntries(request.contextArguments)).map(String);
        return { values: all.slice(0, MAX_COMPLETIONS), total: all.length, hasMore: all.length > MAX_COMPLETIONS };
      },
    };
  }
}
