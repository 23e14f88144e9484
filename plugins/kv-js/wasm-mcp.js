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
// `outputSchema`, `annotations` (`readOnlyHint`, `destructiveHint`,
// `idempotentHint`, `openWorldHint`, `title`) and `taskSupport`
// ("optional" or "required" let a client run the tool as an MCP task;
// the default is "forbidden"). A long tool reports progress, notices a
// cancel and goes on as a task at once with the host's imports
// (`progress`, `isCancelled`, `continueAsTask` from
// "wasm-mcp:plugin/host@0.1.0"). A resource template's
// `{name}` matches one path segment (up to the next `/`). `meta` (an
// object) sets a tool's `_meta`.
//
// MCP Apps (interactive HTML views, extension `io.modelcontextprotocol/ui`)
// take a line each: `plugin.view("ui://files/tree", "tree", html)` serves
// the view (a resource: export `resources` too), and a tool's
// `{ view: "ui://files/tree" }` names it as the tool's view;
// `{ viewOnly: true }` keeps a tool for the views alone (the model is not
// offered it; a view still calls it).
//
// `Bucket` is the plugin's key-value store (wasi:keyvalue), where the
// operator grants it (`[plugins.NAME] keyvalue = true`):
//
//   import { Bucket } from "./wasm-mcp.js";
//
//   const bucket = Bucket.open("counters");
//   bucket.set("greeting", "hello");       // text or bytes
//   bucket.getText("greeting");            // "hello" (undefined: no value)
//   bucket.increment("visits");            // 1, 2, ... at once
//   bucket.update("log", (old) => (old ? new TextDecoder().decode(old) : "") + "ada\n");
//   for (const key of bucket.keys()) { ... }   // every page
//
// A failure throws `KeyValueError` (`kind`: "access-denied" without the
// grant, "no-such-store", "conflict" when `update` ran out of attempts,
// "other" with the host's text).

import { open as openBucket } from "wasi:keyvalue/store@0.2.0-draft2";
import { Cas as RawCas, increment as rawIncrement, swap as rawSwap } from "wasi:keyvalue/atomics@0.2.0-draft2";
import { getMany, setMany, deleteMany } from "wasi:keyvalue/batch@0.2.0-draft2";

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

/** The MIME type of an MCP Apps view (SEP-1865), exactly. */
export const VIEW_MIME_TYPE = "text/html;profile=mcp-app";

function viewUri(uri, what) {
  if (typeof uri !== "string" || !uri.startsWith("ui://")) {
    throw new Error(`${what} is a ui:// URI, not ${JSON.stringify(uri)}`);
  }
  return uri;
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** A tool's `_meta` as JSON text (or undefined): `meta`, with
 * `ui.resourceUri` (the view) and `ui.visibility` (["app"] when view-only)
 * merged into its `ui`. */
function toolMeta(meta, view, viewOnly) {
  if (meta !== undefined && !isObject(meta)) throw new Error("a tool's meta is an object");
  if (view === undefined && !viewOnly) return meta === undefined ? undefined : JSON.stringify(meta);
  const merged = { ...meta };
  const ui = isObject(merged.ui) ? { ...merged.ui } : {};
  if (view !== undefined) ui.resourceUri = viewUri(view, "a tool's view");
  if (viewOnly) ui.visibility = ["app"];
  merged.ui = ui;
  return JSON.stringify(merged);
}

/** What `taskSupport` may be. */
const TASK_SUPPORT = ["forbidden", "optional", "required"];

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
   * `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`),
   * `taskSupport` ("forbidden", the default, "optional" or "required"),
   * `meta` (the tool's `_meta`, an object). MCP Apps: `view` names the
   * tool's interactive view, the `ui://` URI of a view this plugin serves
   * (`plugin.view`), as `_meta.ui.resourceUri`; `viewOnly: true` makes the
   * tool the views' alone (`_meta.ui.visibility = ["app"]`: not offered to
   * the model, still called by a view). Both are merged into `meta.ui`:
   *
   *   plugin.tool("show_tree", "Shows the tree", args, run, { view: "ui://files/tree" });
   *   plugin.tool("expand", "Expands a folder", args, run, { viewOnly: true });
   */
  tool(name, description, args, run, options = {}) {
    const { title, outputSchema, annotations, taskSupport = "forbidden", meta, view, viewOnly = false } = options;
    if (!TASK_SUPPORT.includes(taskSupport)) {
      throw new Error(`taskSupport is one of ${TASK_SUPPORT.join(", ")}, not ${JSON.stringify(taskSupport)}`);
    }
    const toolMetaText = toolMeta(meta, view, viewOnly);
    this.#tools.set(name, {
      entry: {
        name,
        title,
        description,
        inputSchema: JSON.stringify(inputSchema(args)),
        outputSchema: outputSchema === undefined ? undefined : JSON.stringify(outputSchema),
        annotations: annotations === undefined ? undefined : { ...annotations },
        taskSupport,
        icons: [],
        meta: toolMetaText,
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

  /** Serves an MCP Apps view: the resource at `uri` (a `ui://` URI), named
   * `name`, whose MIME type is `text/html;profile=mcp-app` and whose
   * contents are `html` (the page, a string, or a function returning it at
   * each read). `options`: `title`, `description`, and `ui`, the view's
   * `_meta.ui` (an object), set on the listed resource and on the contents
   * a read returns: `csp` (`connectDomains`, `resourceDomains`,
   * `frameDomains`, `baseUriDomains`: arrays of origins), `permissions`
   * (`camera`, `microphone`, `geolocation`, `clipboardWrite`: each `{}`),
   * `domain`, `prefersBorder`. A tool shows it with `{ view: uri }`.
   *
   *   plugin.view("ui://files/tree", "tree", html,
   *     { ui: { csp: { connectDomains: ["https://api.example.com"] } } });
   */
  view(uri, name, html, options = {}) {
    viewUri(uri, "a view's URI");
    const { title, description, ui } = options;
    if (ui !== undefined && !isObject(ui)) throw new Error("a view's ui is an object");
    if (typeof html !== "string" && typeof html !== "function") {
      throw new Error("a view's html is a string or a function returning one");
    }
    const meta = ui === undefined ? undefined : JSON.stringify({ ui });
    this.#resources.set(uri, {
      entry: { uri, name, title, description, mimeType: VIEW_MIME_TYPE, icons: [], meta },
      read: typeof html === "function" ? html : () => html,
      contentsMeta: meta,
    });
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
            meta: resource.contentsMeta,
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

/** A key-value store operation's failure: `kind` is "access-denied" (the
 * plugin has no store: the operator grants it with `[plugins.NAME]
 * keyvalue = true`), "no-such-store", "conflict" (`Bucket.update` found the
 * value changed on each attempt) or "other" (the host's text: a bound
 * reached, a store that is down). */
export class KeyValueError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = "KeyValueError";
    this.kind = kind;
  }
}

/** A thrown `wasi:keyvalue/store.error` (or anything else) as a KeyValueError. */
function storeError(e) {
  const error = e?.payload ?? e;
  switch (error?.tag) {
    case "access-denied":
      return new KeyValueError(
        "access-denied",
        "access denied: this plugin has no key-value store (the operator grants it with `[plugins.NAME] keyvalue = true`)",
      );
    case "no-such-store":
      return new KeyValueError("no-such-store", "no such key-value store");
    case "other":
      return new KeyValueError("other", String(error.val));
    default:
      return e instanceof Error ? e : new KeyValueError("other", String(e));
  }
}

function store(operation) {
  try {
    return operation();
  } catch (e) {
    throw storeError(e);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A value to store as bytes: a string is UTF-8. */
function bytes(value) {
  if (typeof value === "string") return encoder.encode(value);
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new TypeError("a key-value value is a string or bytes (Uint8Array)");
}

/** How many times `Bucket.update` reads and tries again when another
 * writer got there first. */
export const UPDATE_ATTEMPTS = 16;

/** A bucket of the plugin's key-value store: string keys, byte values. */
export class Bucket {
  #raw;

  constructor(raw) {
    this.#raw = raw;
  }

  /** Opens the bucket `name` of this plugin's store (of the caller's tenant). */
  static open(name) {
    return new Bucket(store(() => openBucket(name)));
  }

  /** The value of `key` (a Uint8Array), or undefined. */
  get(key) {
    return store(() => this.#raw.get(key));
  }

  /** The value of `key` as text (UTF-8), or undefined. */
  getText(key) {
    const value = this.get(key);
    return value === undefined ? undefined : decoder.decode(value);
  }

  /** The value of `key` parsed as JSON, or undefined. */
  getJSON(key) {
    const text = this.getText(key);
    return text === undefined ? undefined : JSON.parse(text);
  }

  /** Sets `key` to `value` (a string, as UTF-8, or bytes). */
  set(key, value) {
    const data = bytes(value);
    store(() => this.#raw.set(key, data));
  }

  /** Sets `key` to `value` written as JSON. */
  setJSON(key, value) {
    this.set(key, JSON.stringify(value));
  }

  /** Removes `key` (nothing happens when it has no value). */
  delete(key) {
    store(() => this.#raw.delete(key));
  }

  /** Whether `key` has a value. */
  exists(key) {
    return store(() => this.#raw.exists(key));
  }

  /** Adds `delta` (default 1) to the number `key` holds (none counts as
   * 0), at once; the new number (a Number: exact up to 2^53). */
  increment(key, delta = 1) {
    return Number(store(() => rawIncrement(this.#raw, key, BigInt(delta))));
  }

  /** Replaces the value of `key` with `change(old)` (old: a Uint8Array,
   * or undefined; the result a string or bytes), safely: when another
   * caller wrote the key in between, it reads and calls `change` again, at
   * most UPDATE_ATTEMPTS times, then throws a "conflict" KeyValueError.
   * Returns the bytes written. */
  update(key, change) {
    let cas = this.cas(key);
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
      const value = bytes(change(cas.current()));
      const fresh = cas.swap(value);
      if (fresh === true) return value;
      cas = fresh;
    }
    throw new KeyValueError("conflict", `the value of ${JSON.stringify(key)} changed under each of ${UPDATE_ATTEMPTS} attempts to update it`);
  }

  /** A compare-and-swap handle on `key` (see `Cas`); `update` is the loop
   * most callers want. */
  cas(key) {
    return new Cas(store(() => RawCas.new(this.#raw, key)));
  }

  /** One page of keys from `cursor` (undefined: the first): `{ keys,
   * cursor }`, `cursor` undefined after the last page. */
  listKeys(cursor) {
    const page = store(() => this.#raw.listKeys(cursor));
    return { keys: page.keys, cursor: page.cursor };
  }

  /** Every key, fetched a page at a time as the iteration goes. */
  *keys() {
    let cursor;
    do {
      const page = this.listKeys(cursor);
      yield* page.keys;
      // A page that moves nothing on ends the listing.
      if (page.cursor !== undefined && (page.keys.length === 0 || page.cursor === cursor)) return;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }

  /** The values of `keys` in their order (undefined for a key without
   * one), in one operation. */
  getMany(keys) {
    const found = new Map();
    for (const pair of store(() => getMany(this.#raw, keys))) {
      if (pair) found.set(pair[0], pair[1]);
    }
    return keys.map((key) => found.get(key));
  }

  /** Sets each `[key, value]` of `entries` (an iterable of pairs, or an
   * object), in one operation. */
  setMany(entries) {
    const pairs = Symbol.iterator in Object(entries) ? [...entries] : Object.entries(entries);
    const data = pairs.map(([key, value]) => [key, bytes(value)]);
    store(() => setMany(this.#raw, data));
  }

  /** Removes each of `keys`, in one operation. */
  deleteMany(keys) {
    store(() => deleteMany(this.#raw, keys));
  }
}

/** A compare-and-swap handle on one key (`Bucket.cas`). */
export class Cas {
  #raw;

  constructor(raw) {
    this.#raw = raw;
  }

  /** The value of the key when the handle was made, or undefined. */
  current() {
    return store(() => this.#raw.current());
  }

  /** Writes `value` if the key still holds what `current` saw: true, or,
   * when it changed, a fresh Cas holding the value as it is now (to try
   * again with). A store failure throws KeyValueError. The handle is used
   * up either way. */
  swap(value) {
    const data = bytes(value);
    try {
      rawSwap(this.#raw, data);
      return true;
    } catch (e) {
      const error = e?.payload ?? e;
      if (error?.tag === "cas-failed") return new Cas(error.val);
      if (error?.tag === "store-error") throw storeError(error.val);
      throw storeError(e);
    }
  }
}
