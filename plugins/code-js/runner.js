// The script runner of `run_javascript`: the `tools` object a script calls
// tools through, and running a script (its `return`, its last expression,
// what it logs, what it throws).
//
// Plain JavaScript, free of the component's bindings: `run` gets the
// host's `search-tools` and `call-tool` as two functions, so the runner
// also runs (and is checked) under Node.

/** The longest script taken (characters). */
export const MAX_SCRIPT = 100_000;
/** The most logged output kept (UTF-8 bytes); the rest is cut, with a note. */
export const MAX_OUTPUT = 64 * 1024;
/** The most of a stack kept: its first lines, then its first characters. */
const MAX_STACK_LINES = 40;
const MAX_STACK_CHARS = 8000;
/** The most tools one search-tools asks for (the host's cap). */
const CATALOGUE = 100;
/** The most characters of a tool's description in a signature line. */
const MAX_SUMMARY = 120;

export const DESCRIPTION = `\
Runs a JavaScript script (the body of an async function) in a sandbox and \
returns its result. The tools you may use are functions of \`tools\`: \
\`await tools.<plugin>.<tool>({arg: value, ...})\` (names as identifiers: \
\`-\` and other characters become \`_\`; \`tools.<plugin>["real-name"]\` \
works too), or \`await tools.call("tool_name", {arg: value})\`. A call \
returns the tool's structured content when it has some (an object: log \
one to see its shape), else its text (a string). A refused call or a failed tool throws \`ToolError\` (\`.message\`; \
\`.code\`: the JSON-RPC error code, null when the tool itself failed), \
which the script may catch. Find tools with \`tools.search("words", 20)\`: \
an array of one-line signatures such as \`notes.add_note({text: string, \
tags?: string[]}) — Adds a note\`, best matches first ("" lists all); the server's \`search_tools\` tool, when \
offered, finds the same tools. \`Object.keys(tools)\` lists the plugins, \
\`Object.keys(tools.<plugin>)\` their tools. The result is what the script \
\`return\`s, else the value of its last expression statement (as JSON); \
what it logs with console.log (at most 64 KiB) comes back as \`output\`. \
An uncaught error makes a tool error holding its stack and the output. \
No files or network except through tools. Every run starts afresh.`;

export const INPUT_SCHEMA = {
  type: "object",
  properties: {
    script: {
      type: "string",
      maxLength: MAX_SCRIPT,
      description: "JavaScript source, run as an async function's body: `return` gives the result.",
    },
  },
  required: ["script"],
  additionalProperties: false,
};

export const OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    result: { description: "What the script returned." },
    output: { type: "string", description: "What the script logged." },
  },
  required: ["result", "output"],
};

/** A tool call that did not run (`code`: the JSON-RPC error code the host
 * gave) or a tool that failed (`code` is null; `result` is its
 * CallToolResult). */
export class ToolError extends Error {
  constructor(message, code = null, result = null) {
    super(code === null ? message : `${message} (code ${code})`);
    this.name = "ToolError";
    this.message = message;
    this.code = code;
    this.result = result;
  }

  toString() {
    return this.code === null ? `ToolError: ${this.message}` : `ToolError: ${this.message} (code ${this.code})`;
  }
}

/** `name` as a JavaScript identifier. */
export function identifier(name) {
  const ident = String(name).replace(/[^A-Za-z0-9_$]/g, "_") || "_";
  return /^[0-9]/.test(ident) ? `_${ident}` : ident;
}

const TYPES = { string: "string", integer: "number", number: "number", boolean: "boolean", null: "null", object: "object", array: "any[]" };

/** A TypeScript-looking type for a JSON Schema. */
function typeOf(schema, depth = 0) {
  if (schema === null || typeof schema !== "object" || depth > 3) return "any";
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.slice(0, 8).map((v) => JSON.stringify(v));
    if (schema.enum.length > 8) values.push("…");
    return values.join(" | ") || "any";
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[key])) {
      return [...new Set(schema[key].map((m) => typeOf(m, depth + 1)))].join(" | ") || "any";
    }
  }
  if (Array.isArray(schema.type)) {
    return schema.type.map((t) => typeOf({ ...schema, type: t }, depth + 1)).join(" | ") || "any";
  }
  if (schema.type === "array" && schema.items && typeof schema.items === "object" && Object.keys(schema.items).length) {
    const item = typeOf(schema.items, depth + 1);
    return item.includes(" ") ? `(${item})[]` : `${item}[]`;
  }
  return TYPES[schema.type] ?? "any";
}

function summary(description) {
  const paragraph = String(description ?? "").trim().split("\n\n")[0].split(/\s+/).join(" ");
  const line = paragraph.split(/(?<=[.!?]) (?=[A-Z])/)[0]; // its first sentence
  return line.length <= MAX_SUMMARY ? line : `${line.slice(0, MAX_SUMMARY - 1).trimEnd()}…`;
}

/** `{path: string, head?: number}`: the required arguments first. */
function signatureOf(schema) {
  if (schema === null || typeof schema !== "object") return "{}";
  const properties = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
  const required = (Array.isArray(schema.required) ? schema.required : []).filter((n) => typeof n === "string");
  const key = (n) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(n) ? n : JSON.stringify(n));
  const params = required.map((n) => `${key(n)}: ${typeOf(properties[n])}`);
  for (const [n, s] of Object.entries(properties)) {
    if (required.includes(n)) continue;
    const fallback = s && typeof s === "object" && "default" in s ? ` = ${JSON.stringify(s.default)}` : "";
    params.push(`${key(n)}?: ${typeOf(s)}${fallback}`);
  }
  return `{${params.join(", ")}}`;
}

/** The tools the caller may use, from search-tools, fetched when a script
 * first needs them. */
class Catalogue {
  #search;
  #call;
  #plugins = null; // identifier -> Map(identifier or name -> function)
  #names = new Map(); // "plugin.tool" -> the tool's name
  complete = true;

  constructor(search, call) {
    this.#search = search;
    this.#call = call;
  }

  #add(info) {
    const plugin = identifier(info.plugin);
    if (!this.#plugins.has(plugin)) this.#plugins.set(plugin, new Map());
    const tools = this.#plugins.get(plugin);
    const ident = identifier(info.name);
    if (!tools.has(ident)) {
      // The first of names that read the same wins.
      tools.set(ident, this.#function(plugin, ident, info));
      this.#names.set(`${plugin}.${ident}`, info.name);
    }
    if (!tools.has(info.name)) tools.set(info.name, tools.get(ident));
  }

  plugins() {
    if (this.#plugins === null) {
      this.#plugins = new Map();
      const found = this.#search("", CATALOGUE);
      this.complete = found.length < CATALOGUE;
      for (const info of found) this.#add(info);
    }
    return this.#plugins;
  }

  /** The identifiers of a plugin's tools. */
  toolsOf(plugin) {
    const tools = this.plugins().get(plugin);
    return tools ? [...tools].filter(([key, f]) => key === f.identifier).map(([key]) => key) : [];
  }

  find(plugin, name) {
    let found = this.plugins().get(plugin)?.get(name);
    if (found === undefined && !this.complete) {
      // More tools than one search returns: look for this one.
      for (const info of this.#search(name.split(/[^A-Za-z0-9]+/).filter(Boolean).join(" "), CATALOGUE)) {
        if (identifier(info.plugin) === plugin && (info.name === name || identifier(info.name) === name)) this.#add(info);
      }
      found = this.plugins().get(plugin)?.get(name);
    }
    return found;
  }

  nameOf(name) {
    this.plugins();
    return this.#names.get(name) ?? name;
  }

  call(name, args) {
    if (args === null || typeof args !== "object" || Array.isArray(args)) {
      throw new TypeError(`a tool's arguments are an object, not ${args === null ? "null" : Array.isArray(args) ? "an array" : typeof args}`);
    }
    const result = JSON.parse(this.#call(name, JSON.stringify(args)));
    const content = Array.isArray(result.content) ? result.content : [];
    const texts = content.filter((c) => c?.type === "text").map((c) => String(c.text ?? ""));
    if (result.isError) throw new ToolError(texts.join("\n") || `the tool ${name} failed`, null, result);
    if (result.structuredContent !== undefined && result.structuredContent !== null) return result.structuredContent;
    if (texts.length || !content.length) return texts.join("\n");
    return content;
  }

  #function(plugin, ident, info) {
    let schema = {};
    try {
      schema = JSON.parse(info.inputSchema);
    } catch {}
    const name = info.name;
    const tool = (args = {}) => this.call(name, args);
    Object.defineProperty(tool, "name", { value: ident });
    tool.identifier = ident;
    tool.toolName = name;
    tool.signature = `${plugin}.${ident}(${signatureOf(schema)})`;
    tool.description = info.description ?? "";
    tool.inputSchema = schema;
    tool.toString = () => `${tool.signature}${tool.description ? ` — ${tool.description}` : ""}`;
    return tool;
  }
}

function pluginProxy(catalogue, plugin) {
  return new Proxy(Object.create(null), {
    get(_, key) {
      if (typeof key !== "string") return undefined;
      if (key === "toJSON" || key === "then") return undefined;
      const found = catalogue.find(plugin, key);
      if (found === undefined) {
        throw new TypeError(`no tool tools.${plugin}.${key} you may use (tools.search(...) finds them)`);
      }
      return found;
    },
    has: (_, key) => typeof key === "string" && catalogue.find(plugin, key) !== undefined,
    ownKeys: () => catalogue.toolsOf(plugin),
    getOwnPropertyDescriptor(_, key) {
      const value = typeof key === "string" ? catalogue.find(plugin, key) : undefined;
      return value === undefined ? undefined : { value, enumerable: true, configurable: true, writable: false };
    },
  });
}

/** `tools` of a script. */
export function makeTools(search, call) {
  const catalogue = new Catalogue(search, call);
  const own = {
    call(name, args = {}) {
      return catalogue.call(catalogue.nameOf(String(name)), args);
    },
    search(query = "", limit = 20) {
      const found = search(String(query), Math.max(0, Math.min(Math.trunc(Number(limit)) || 0, CATALOGUE)));
      return found.map((info) => {
        const tool = catalogue.find(identifier(info.plugin), info.name);
        const line = tool ? tool.signature : `tools.call(${JSON.stringify(info.name)}, {...})`;
        const text = summary(info.description);
        return text ? `${line} — ${text}` : line;
      });
    },
  };
  const plugins = new Map();
  const pluginOf = (key) => {
    const ident = identifier(key);
    if (!catalogue.plugins().has(ident) && catalogue.complete) return undefined;
    if (!plugins.has(ident)) plugins.set(ident, pluginProxy(catalogue, ident));
    return plugins.get(ident);
  };
  return new Proxy(own, {
    get(target, key) {
      if (typeof key !== "string" || key in target) return target[key];
      if (key === "toJSON" || key === "then") return undefined;
      const found = pluginOf(key);
      if (found === undefined) {
        throw new TypeError(`no plugin tools.${key} with tools you may use (tools.search(...) finds them)`);
      }
      return found;
    },
    has: (target, key) => key in target || (typeof key === "string" && pluginOf(key) !== undefined),
    ownKeys: () => [...catalogue.plugins().keys()],
    getOwnPropertyDescriptor(target, key) {
      if (typeof key !== "string" || key in target) return undefined;
      const value = catalogue.plugins().has(key) ? pluginOf(key) : undefined;
      return value === undefined ? undefined : { value, enumerable: true, configurable: true, writable: false };
    },
  });
}

/** Logged text, kept up to `MAX_OUTPUT` UTF-8 bytes. */
class Output {
  parts = [];
  left = MAX_OUTPUT;
  cut = false;
  #encoder = new TextEncoder();

  write(text) {
    if (this.cut) return;
    const bytes = this.#encoder.encode(text);
    if (bytes.length <= this.left) {
      this.parts.push(text);
      this.left -= bytes.length;
    } else {
      this.parts.push(new TextDecoder().decode(bytes.slice(0, this.left)).replace(/\uFFFD$/, ""));
      this.left = 0;
      this.cut = true;
    }
  }

  text() {
    return this.parts.join("") + (this.cut ? `\n[output cut: more than ${MAX_OUTPUT / 1024} KiB was logged]` : "");
  }
}

/** A logged value, as Node shows it, roughly. */
function show(value) {
  if (typeof value === "string") return value;
  if (value instanceof Error) return value.stack ? `${value}\n${value.stack}`.trimEnd() : String(value);
  if (typeof value === "function") return `[Function ${value.name || "(anonymous)"}]`;
  if (value === undefined || typeof value === "bigint" || typeof value === "symbol") return String(value);
  try {
    const text = JSON.stringify(jsonable(value));
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}

function makeConsole(output) {
  const log = (...args) => output.write(`${args.map(show).join(" ")}\n`);
  return { log, info: log, warn: log, error: log, debug: log, trace: log, dir: (v) => log(v) };
}

/** `value` as JSON can hold it: a Map as an object, a Set as an array,
 * what JSON cannot hold (undefined, a function, a BigInt, a cycle) as its
 * text. */
export function jsonable(value, depth = 0, seen = new Set()) {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (value === undefined) return null;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return String(value);
  if (typeof value === "function") return `[Function ${value.name || "(anonymous)"}]`;
  if (typeof value !== "object") return String(value);
  if (seen.has(value) || depth >= 64) return "[Circular]";
  if (value instanceof Error) return String(value);
  if (typeof value.toJSON === "function") {
    try {
      return jsonable(value.toJSON(), depth + 1, seen);
    } catch {
      return String(value);
    }
  }
  seen.add(value);
  try {
    if (Array.isArray(value) || ArrayBuffer.isView(value)) return Array.from(value, (v) => jsonable(v, depth + 1, seen));
    if (value instanceof Set) return [...value].map((v) => jsonable(v, depth + 1, seen));
    const entries = value instanceof Map ? [...value].map(([k, v]) => [String(k), v]) : Object.entries(value);
    return Object.fromEntries(entries.map(([k, v]) => [k, jsonable(v, depth + 1, seen)]));
  } finally {
    seen.delete(value);
  }
}

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
const PARAMS = ["tools", "ToolError", "console"];

/** Whether `head` (the script before its last lines) may end where `tail`
 * (those lines) begins: JavaScript would not read them as one statement. */
function splits(head, tail) {
  const start = tail.trimStart();
  if (/^(async\s+)?function\b|^class\b/.test(start)) return false; // a declaration, hoisted
  if (!/^[+\-*/%&|^<>=?.,:([`]|^(in|instanceof)\b/.test(start)) return true;
  return !head.trim() || /;\s*$/.test(head.replace(/\/\/[^\n]*$/, ""));
}

/** The script as a function: with its last expression statement returned
 * when it ends in one (the last lines, or the last statements of its last
 * line, that make an expression, when what comes before makes statements). */
function compile(script) {
  const plain = new AsyncFunction(...PARAMS, script); // throws a SyntaxError first
  const body = script.replace(/\s+$/, "");
  // Where the last statement may begin: after a `;` of the last line, at
  // the start of one of the last 50 lines.
  const starts = [];
  const lastLine = body.lastIndexOf("\n") + 1;
  for (let at = body.lastIndexOf(";"); at >= lastLine; at = body.lastIndexOf(";", at - 1)) {
    if (at < body.length - 1) starts.push(at + 1);
    if (at === 0) break;
  }
  for (let at = lastLine, n = 0; n < 50; n++) {
    starts.push(at);
    if (at === 0) break;
    at = body.lastIndexOf("\n", at - 2) + 1;
  }
  for (const at of starts) {
    const head = body.slice(0, at);
    const tail = body.slice(at).replace(/;\s*$/, "");
    if (!tail.trim() || tail.trim().startsWith("//") || !splits(head, tail)) continue;
    try {
      new AsyncFunction(tail.trim().startsWith("{") ? "return 0" : `return (${tail}\n)`); // an expression alone
      new AsyncFunction(head); // statements alone
      return new AsyncFunction(...PARAMS, `${head}return (${tail}\n);`); // on its lines
    } catch {}
  }
  return plain;
}

/** The stack of an error thrown in the script: its frames in the script,
 * with the script's line numbers. */
function stackOf(error) {
  if (!(error instanceof Error)) {
    let text;
    try {
      text = typeof error === "string" ? error : JSON.stringify(jsonable(error));
    } catch {
      text = String(error);
    }
    return `Uncaught ${text}`;
  }
  const frames = [];
  for (const frame of String(error.stack ?? "").split("\n")) {
    // SpiderMonkey: `name@FILE line N > AsyncFunction:LINE:COL` (two
    // lines of the function's header before the script's first).
    const found = /^(.*?)@.* > AsyncFunction:(\d+):(\d+)$/.exec(frame);
    if (found) {
      frames.push(`    at ${found[1] === "anonymous" || !found[1] ? "<script>" : found[1]} (line ${Number(found[2]) - 2}, column ${found[3]})`);
    }
    // V8 (Node): `    at NAME (eval at ..., <anonymous>:LINE:COL)`.
    const v8 = /^\s*at (?:(\S+) \()?.*<anonymous>:(\d+):(\d+)\)?$/.exec(frame);
    if (v8) {
      frames.push(`    at ${v8[1] === "eval" || !v8[1] ? "<script>" : v8[1]} (line ${Number(v8[2]) - 2}, column ${v8[3]})`);
    }
  }
  // Frames repeated in a row (a deep recursion) shown once.
  const shown = [];
  for (let i = 0; i < frames.length; ) {
    let j = i + 1;
    while (j < frames.length && frames[j] === frames[i]) j++;
    shown.push(frames[i]);
    if (j - i > 1) shown.push(`    [the frame above repeated ${j - i - 1} more times]`);
    i = j;
  }
  let lines = [`${error}`, ...shown];
  let cut = false;
  if (lines.length > MAX_STACK_LINES) {
    lines = lines.slice(0, MAX_STACK_LINES);
    cut = true;
  }
  let text = lines.join("\n");
  if (text.length > MAX_STACK_CHARS) {
    text = text.slice(0, MAX_STACK_CHARS);
    cut = true;
  }
  return cut ? `${text}\n[stack cut]` : text;
}

/** Runs `script`. `search(query, limit)` returns the host's tool-info
 * records; `call(name, argumentsJson)` returns a CallToolResult as JSON or
 * throws `ToolError`. Resolves to `{ok: true, result, output}` or
 * `{ok: false, error, output}`. */
export async function run(script, search, call) {
  const output = new Output();
  let fn;
  try {
    fn = compile(String(script));
  } catch (error) {
    // SpiderMonkey says where (two lines of the function's header first).
    const line = typeof error?.lineNumber === "number" ? error.lineNumber - 2 : 0;
    const lines = String(script).split("\n").length;
    const where = line > lines ? " (at the end of the script)" : line > 0 ? ` (line ${line})` : "";
    return { ok: false, error: `${error}${where}`, output: "" };
  }
  try {
    const value = await fn(makeTools(search, call), ToolError, makeConsole(output));
    return { ok: true, result: jsonable(value), output: output.text() };
  } catch (error) {
    return { ok: false, error: stackOf(error), output: output.text() };
  }
}
