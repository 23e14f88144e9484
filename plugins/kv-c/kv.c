// A test fixture: the key-value store through the bindings `wit-bindgen c`
// generates for the contract (wasi:keyvalue's store and atomics), as
// docs/src/plugins/c.md shows them. The same tools as kv-rust, kv-js and
// kv-go (but batch), for tests/test_keyvalue_sdks.py.
#include "tools_plugin.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A string the host copies out. The instance ends after the call, so
// nothing here is freed.
static tools_plugin_string_t text(const char *s) {
  tools_plugin_string_t out;
  tools_plugin_string_dup(&out, s);
  return out;
}

static const char *KEY =
    "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\"}},\"required\":[\"key\"]}";
static const char *KEY_VALUE =
    "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":\"string\"},"
    "\"value\":{\"type\":\"string\"}},\"required\":[\"key\",\"value\"]}";
static const char *NOTHING = "{\"type\":\"object\"}";

static const char *TOOLS[] = {"c_put", "c_get", "c_count", "c_append", "c_keys", "c_remove"};
#define TOOL_COUNT (sizeof TOOLS / sizeof TOOLS[0])

void exports_wasm_mcp_plugin_tools_list_tools(exports_wasm_mcp_plugin_tools_list_tool_t *ret) {
  exports_wasm_mcp_plugin_tools_tool_t *tools = calloc(TOOL_COUNT, sizeof *tools);
  for (size_t i = 0; i < TOOL_COUNT; i++) {
    const char *name = TOOLS[i];
    tools[i].name = text(name);
    tools[i].description.is_some = true;
    tools[i].description.val = text(name);
    bool has_value = !strcmp(name, "c_put") || !strcmp(name, "c_append");
    tools[i].input_schema = text(!strcmp(name, "c_keys") ? NOTHING : has_value ? KEY_VALUE : KEY);
    tools[i].task_support = EXPORTS_WASM_MCP_PLUGIN_TOOLS_TASK_SUPPORT_FORBIDDEN;
  }
  ret->ptr = tools;
  ret->len = TOOL_COUNT;
}

// Writes code point `c` as UTF-8 at `out`; the bytes written.
static size_t utf8(uint32_t c, char *out) {
  if (c < 0x80) { out[0] = (char)c; return 1; }
  if (c < 0x800) { out[0] = (char)(0xC0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    out[0] = (char)(0xE0 | c >> 12); out[1] = (char)(0x80 | (c >> 6 & 0x3F));
    out[2] = (char)(0x80 | (c & 0x3F)); return 3;
  }
  out[0] = (char)(0xF0 | c >> 18); out[1] = (char)(0x80 | (c >> 12 & 0x3F));
  out[2] = (char)(0x80 | (c >> 6 & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F)); return 4;
}

static uint32_t hex4(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v = v << 4 | (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

// The string value of member `key` in a JSON object, decoded, or NULL.
// The host validated the arguments against the tool's schema and passes
// them as compact JSON (`{"name":"..."}`), so a plain search for the key
// finds it.
static char *string_member(const char *json, size_t len, const char *key) {
  char pattern[64];
  size_t k = strlen(key);
  size_t n = k + 4;  // "key":"
  if (n + 1 > sizeof pattern) return NULL;
  pattern[0] = '"'; memcpy(pattern + 1, key, k); memcpy(pattern + 1 + k, "\":\"", 4);
  const char *end = json + len, *p = json;
  for (; p + n <= end; p++)
    if (memcmp(p, pattern, n) == 0) break;
  if (p + n > end) return NULL;
  p += n;
  char *out = malloc((size_t)(end - p) + 1), *o = out;  // decoding never grows
  while (p < end && *p != '"') {
    if (*p != '\\') { *o++ = *p++; continue; }
    if (++p >= end) break;
    char e = *p++;
    switch (e) {
      case 'b': *o++ = '\b'; break;
      case 'f': *o++ = '\f'; break;
      case 'n': *o++ = '\n'; break;
      case 'r': *o++ = '\r'; break;
      case 't': *o++ = '\t'; break;
      case 'u': {
        if (end - p < 4) { free(out); return NULL; }
        uint32_t c = hex4(p); p += 4;
        if (c >= 0xD800 && c < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
          c = 0x10000 + ((c - 0xD800) << 10) + (hex4(p + 2) - 0xDC00); p += 6;
        }
        o += utf8(c, o);
        break;
      }
      default: *o++ = e;  // \" \\ \/
    }
  }
  *o = 0;
  return out;
}

// The store's error as text: the host's own, or what the tag means.
static char *store_error(const wasi_keyvalue_store_error_t *e) {
  if (e->tag == WASI_KEYVALUE_STORE_ERROR_ACCESS_DENIED) return "access denied: no key-value store granted";
  if (e->tag == WASI_KEYVALUE_STORE_ERROR_NO_SUCH_STORE) return "no such key-value store";
  char *out = malloc(e->val.other.len + 1);
  memcpy(out, e->val.other.ptr, e->val.other.len);
  out[e->val.other.len] = 0;
  return out;
}

static char *bytes_text(const uint8_t *ptr, size_t len) {
  char *out = malloc(len + 1);
  memcpy(out, ptr, len);
  out[len] = 0;
  return out;
}

// Runs tool `name` on the bucket: the text of its result, or NULL with
// `*failed` set to what failed.
static char *run(const char *name, wasi_keyvalue_store_borrow_bucket_t bucket, char *key, char *value,
                 char **failed) {
  wasi_keyvalue_store_error_t err;
  tools_plugin_string_t k = {(uint8_t *)key, strlen(key)};
  if (!strcmp(name, "c_put")) {
    tools_plugin_list_u8_t v = {(uint8_t *)value, strlen(value)};
    if (!wasi_keyvalue_store_method_bucket_set(bucket, &k, &v, &err)) return *failed = store_error(&err), NULL;
    return "ok";
  }
  if (!strcmp(name, "c_get")) {
    tools_plugin_option_list_u8_t got;
    if (!wasi_keyvalue_store_method_bucket_get(bucket, &k, &got, &err)) return *failed = store_error(&err), NULL;
    return got.is_some ? bytes_text(got.val.ptr, got.val.len) : "(none)";
  }
  if (!strcmp(name, "c_count")) {
    int64_t n;
    if (!wasi_keyvalue_atomics_increment(bucket, &k, 1, &n, &err)) return *failed = store_error(&err), NULL;
    char *out = malloc(24);
    snprintf(out, 24, "%" PRId64, n);
    return out;
  }
  if (!strcmp(name, "c_append")) {
    // Compare-and-swap: read, write if unchanged, else again from the
    // fresh handle the failed swap gives back.
    wasi_keyvalue_atomics_own_cas_t cas;
    if (!wasi_keyvalue_atomics_static_cas_new(bucket, &k, &cas, &err)) return *failed = store_error(&err), NULL;
    for (int attempt = 0; attempt < 16; attempt++) {
      tools_plugin_option_list_u8_t old;
      if (!wasi_keyvalue_atomics_method_cas_current(wasi_keyvalue_atomics_borrow_cas(cas), &old, &err))
        return *failed = store_error(&err), NULL;
      size_t old_len = old.is_some ? old.val.len : 0, add = strlen(value);
      uint8_t *new = malloc(old_len + add + 1);
      if (old_len) memcpy(new, old.val.ptr, old_len);
      memcpy(new + old_len, value, add);
      tools_plugin_list_u8_t v = {new, old_len + add};
      wasi_keyvalue_atomics_cas_error_t cas_err;
      if (wasi_keyvalue_atomics_swap(cas, &v, &cas_err)) return bytes_text(new, v.len);
      if (cas_err.tag == WASI_KEYVALUE_ATOMICS_CAS_ERROR_STORE_ERROR)
        return *failed = store_error(&cas_err.val.store_error), NULL;
      cas = cas_err.val.cas_failed;
    }
    wasi_keyvalue_atomics_cas_drop_own(cas);
    return *failed = "the value kept changing", NULL;
  }
  if (!strcmp(name, "c_keys")) {
    // Every page: each answer's cursor asks for the next.
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    tools_plugin_string_t cursor = {0};
    bool more = false;
    do {
      wasi_keyvalue_store_key_response_t page;
      if (!wasi_keyvalue_store_method_bucket_list_keys(bucket, more ? &cursor : NULL, &page, &err))
        return *failed = store_error(&err), NULL;
      for (size_t i = 0; i < page.keys.len; i++) {
        tools_plugin_string_t *key_i = &page.keys.ptr[i];
        while (len + key_i->len + 2 > cap) out = realloc(out, cap *= 2);
        if (len) out[len++] = '\n';
        memcpy(out + len, key_i->ptr, key_i->len);
        len += key_i->len;
      }
      more = page.cursor.is_some && page.keys.len > 0;
      if (more) cursor = page.cursor.val;
    } while (more);
    out[len] = 0;
    return out;
  }
  if (!strcmp(name, "c_remove")) {
    bool exists;
    if (!wasi_keyvalue_store_method_bucket_delete(bucket, &k, &err) ||
        !wasi_keyvalue_store_method_bucket_exists(bucket, &k, &exists, &err))
      return *failed = store_error(&err), NULL;
    return exists ? "true" : "false";
  }
  return NULL;
}

bool exports_wasm_mcp_plugin_tools_call_tool(tools_plugin_string_t *name,
                                             exports_wasm_mcp_plugin_tools_json_t *arguments,
                                             exports_wasm_mcp_plugin_tools_call_result_t *ret,
                                             exports_wasm_mcp_plugin_tools_error_t *err) {
  char *tool = bytes_text(name->ptr, name->len);
  const char *json = (const char *)arguments->ptr;
  char *key = string_member(json, arguments->len, "key");
  char *value = string_member(json, arguments->len, "value");
  char *result = NULL, *failed = NULL;
  wasi_keyvalue_store_own_bucket_t bucket;
  wasi_keyvalue_store_error_t open_err;
  tools_plugin_string_t bucket_name = {(uint8_t *)"counter", 7};
  if (!wasi_keyvalue_store_open(&bucket_name, &bucket, &open_err)) {
    failed = store_error(&open_err);
  } else {
    result = run(tool, wasi_keyvalue_store_borrow_bucket(bucket), key ? key : "", value ? value : "", &failed);
    wasi_keyvalue_store_bucket_drop_own(bucket);
    if (!result && !failed) {
      err->tag = WASM_MCP_PLUGIN_TYPES_ERROR_NOT_FOUND;
      err->val.not_found = text("no such tool");
      return false;
    }
  }
  exports_wasm_mcp_plugin_tools_content_t *content = calloc(1, sizeof *content);
  content->tag = WASM_MCP_PLUGIN_TYPES_CONTENT_TEXT;
  content->val.text.text = text(result ? result : failed);
  ret->content.ptr = content;
  ret->content.len = 1;
  ret->is_error = result == NULL;
  return true;
}
