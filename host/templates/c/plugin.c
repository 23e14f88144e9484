// {{name}}: a wasm-mcp plugin in C, against the contract's tools-plugin
// world with the bindings `wit-bindgen c` generates (see README.md). One
// tool, `greet`.
#include "tools_plugin.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *GREET_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
    "\"description\":\"Who to greet.\"}},\"required\":[\"name\"],"
    "\"additionalProperties\":false}";

// A string the host copies out. The instance ends after the call, so
// nothing here is freed.
static tools_plugin_string_t text(const char *s) {
  tools_plugin_string_t out;
  tools_plugin_string_dup(&out, s);
  return out;
}

void exports_wasm_mcp_plugin_tools_list_tools(exports_wasm_mcp_plugin_tools_list_tool_t *ret) {
  exports_wasm_mcp_plugin_tools_tool_t *tool = calloc(1, sizeof *tool);
  tool->name = text("greet");
  tool->description.is_some = true;
  tool->description.val = text("Says hello to someone.");
  tool->input_schema = text(GREET_SCHEMA);
  tool->task_support = EXPORTS_WASM_MCP_PLUGIN_TOOLS_TASK_SUPPORT_FORBIDDEN;
  ret->ptr = tool;
  ret->len = 1;
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

// A result whose text is `message`; `failed` makes it a tool error, which
// the model reads and may correct its call by.
static void reply(exports_wasm_mcp_plugin_tools_call_result_t *ret, const char *message, bool failed) {
  exports_wasm_mcp_plugin_tools_content_t *content = calloc(1, sizeof *content);
  content->tag = WASM_MCP_PLUGIN_TYPES_CONTENT_TEXT;
  content->val.text.text = text(message);
  ret->content.ptr = content;
  ret->content.len = 1;
  ret->is_error = failed;
}

bool exports_wasm_mcp_plugin_tools_call_tool(tools_plugin_string_t *name,
                                             exports_wasm_mcp_plugin_tools_json_t *arguments,
                                             exports_wasm_mcp_plugin_tools_call_result_t *ret,
                                             exports_wasm_mcp_plugin_tools_error_t *err) {
  if (name->len != 5 || memcmp(name->ptr, "greet", 5) != 0) {
    err->tag = WASM_MCP_PLUGIN_TYPES_ERROR_NOT_FOUND;
    err->val.not_found = text("no such tool");
    return false;
  }
  char *who = string_member((const char *)arguments->ptr, arguments->len, "name");
  if (!who) {
    err->tag = WASM_MCP_PLUGIN_TYPES_ERROR_INVALID_PARAMS;
    err->val.invalid_params = text("expected {\"name\": \"...\"}");
    return false;
  }
  if (!*who) {
    // A tool error: the call was understood, and failed.
    reply(ret, "name is empty: say who to greet", true);
    return true;
  }
  char *greeting = malloc(strlen(who) + 9);
  strcpy(greeting, "Hello, ");
  strcat(greeting, who);
  strcat(greeting, "!");
  reply(ret, greeting, false);
  return true;
}
