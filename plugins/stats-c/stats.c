// An example plugin in C, against the wasm-mcp contract's tools-plugin
// world, with the bindings `wit-bindgen c` generates. One tool, `stats`:
// the count, mean, smallest and largest of a list of numbers. Build it
// with build.sh.
#include "tools_plugin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *INPUT_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"numbers\":{\"type\":\"array\","
    "\"items\":{\"type\":\"number\"},\"minItems\":1,"
    "\"description\":\"The numbers to summarise.\"}},"
    "\"required\":[\"numbers\"],\"additionalProperties\":false}";

static const char *OUTPUT_SCHEMA =
    "{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"},"
    "\"mean\":{\"type\":\"number\"},\"min\":{\"type\":\"number\"},"
    "\"max\":{\"type\":\"number\"}},\"required\":[\"count\",\"mean\",\"min\",\"max\"]}";

// A string the host copies out; the instance ends after the call, so
// nothing here is freed.
static tools_plugin_string_t text(const char *s) {
  tools_plugin_string_t out;
  tools_plugin_string_dup(&out, s);
  return out;
}

void exports_wasm_mcp_plugin_tools_list_tools(exports_wasm_mcp_plugin_tools_list_tool_t *ret) {
  exports_wasm_mcp_plugin_tools_tool_t *tool = calloc(1, sizeof *tool);
  tool->name = text("stats");
  tool->description.is_some = true;
  tool->description.val = text("The count, mean, smallest and largest of a list of numbers.");
  tool->input_schema = text(INPUT_SCHEMA);
  tool->output_schema.is_some = true;
  tool->output_schema.val = text(OUTPUT_SCHEMA);
  tool->task_support = EXPORTS_WASM_MCP_PLUGIN_TOOLS_TASK_SUPPORT_FORBIDDEN;
  ret->ptr = tool;
  ret->len = 1;
}

static bool fail(exports_wasm_mcp_plugin_tools_error_t *err, uint8_t tag, const char *why) {
  err->tag = tag;
  err->val.internal = text(why);  // every case carries a string
  return false;
}

// The host checked the arguments against INPUT_SCHEMA and passes them as
// compact JSON, so they are `{"numbers":[n,n,...]}`.
static bool parse(const char *json, size_t *count, double *sum, double *min, double *max) {
  const char *p = strchr(json, '[');
  if (!p) return false;
  *count = 0;
  *sum = 0;
  for (p++; *p && *p != ']'; p++) {
    char *end;
    double n = strtod(p, &end);
    if (end == p) return false;
    if (*count == 0 || n < *min) *min = n;
    if (*count == 0 || n > *max) *max = n;
    *sum += n;
    (*count)++;
    p = end;
    if (*p == ']') break;
  }
  return *count > 0;
}

bool exports_wasm_mcp_plugin_tools_call_tool(tools_plugin_string_t *name,
                                             exports_wasm_mcp_plugin_tools_json_t *arguments,
                                             exports_wasm_mcp_plugin_tools_call_result_t *ret,
                                             exports_wasm_mcp_plugin_tools_error_t *err) {
  if (name->len != 5 || memcmp(name->ptr, "stats", 5) != 0)
    return fail(err, WASM_MCP_PLUGIN_TYPES_ERROR_NOT_FOUND, "no such tool");
  char *json = malloc(arguments->len + 1);
  memcpy(json, arguments->ptr, arguments->len);
  json[arguments->len] = 0;
  size_t count;
  double sum, min, max;
  if (!parse(json, &count, &sum, &min, &max))
    return fail(err, WASM_MCP_PLUGIN_TYPES_ERROR_INVALID_PARAMS, "expected {\"numbers\": [...]}");

  char summary[256], structured[256];
  double mean = sum / (double)count;
  snprintf(summary, sizeof summary, "count %zu, mean %g, min %g, max %g", count, mean, min, max);
  snprintf(structured, sizeof structured,
           "{\"count\":%zu,\"mean\":%.17g,\"min\":%.17g,\"max\":%.17g}", count, mean, min, max);

  exports_wasm_mcp_plugin_tools_content_t *content = calloc(1, sizeof *content);
  content->tag = WASM_MCP_PLUGIN_TYPES_CONTENT_TEXT;
  content->val.text.text = text(summary);
  ret->content.ptr = content;
  ret->content.len = 1;
  ret->structured_content.is_some = true;
  ret->structured_content.val = text(structured);
  ret->is_error = false;
  return true;
}
