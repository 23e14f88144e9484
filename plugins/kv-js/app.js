// A test fixture: the key-value store through the JavaScript helper
// (`Bucket` of sdk-js/wasm-mcp.js, copied here as `wasm-mcp new js`
// would). The same tools as kv-rust, kv-go and kv-c, for
// tests/test_keyvalue_sdks.py.
import { Bucket, Plugin } from "./wasm-mcp.js";

const KEY = { key: { type: "string", description: "The key." } };
const KEY_VALUE = { ...KEY, value: { type: "string", description: "The value (text)." } };
const bucket = () => Bucket.open("counter");

const plugin = new Plugin()
  .tool("js_put", "Sets a key", KEY_VALUE, ({ key, value }) => {
    bucket().set(key, value);
    return "ok";
  })
  .tool("js_get", "Reads a key", KEY, ({ key }) => bucket().getText(key) ?? "(none)")
  .tool("js_count", "Adds one to a key", KEY, ({ key }) => String(bucket().increment(key)))
  .tool("js_append", "Appends to a key's value", KEY_VALUE, ({ key, value }) => {
    const decoder = new TextDecoder();
    const written = bucket().update(key, (old) => (old ? decoder.decode(old) : "") + value);
    return decoder.decode(written);
  })
  .tool("js_keys", "Lists every key", {}, () => [...bucket().keys()].join("\n"))
  .tool("js_remove", "Removes a key; says whether it still exists", KEY, ({ key }) => {
    const b = bucket();
    b.delete(key);
    return String(b.exists(key));
  })
  .tool("js_batch", "Sets, reads and removes comma-separated keys at once", KEY_VALUE, ({ key, value }) => {
    const b = bucket();
    const keys = key.split(",");
    b.setMany(keys.map((k) => [k, `${k}=${value}`]));
    const values = b.getMany(keys).map((v) => (v === undefined ? "(none)" : new TextDecoder().decode(v)));
    b.deleteMany(keys);
    return values.join(",");
  });

export const tools = plugin.tools;
