//! A plugin that calls tools through the host (the contract's
//! `tool-calls`, code mode's interface): a test fixture for the grant, the
//! caller's access, the bounds and cancellation. `call` calls one tool a
//! number of times and says how it went; `search` lists what it may call.

use serde_json::{json, Value};
use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Call {
    /// The tool to call, as clients call it.
    name: String,
    /// Its arguments, a JSON object.
    #[serde(default)]
    arguments: Option<serde_json::Map<String, Value>>,
    /// How many times to call it (it stops at the first error).
    #[serde(default)]
    times: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct Search {
    /// What to look for (empty: everything).
    query: String,
    /// How many tools at most.
    #[serde(default)]
    limit: Option<u32>,
}

/// `{"ok": calls that ran, "last": the last result, "error": {"code",
/// "message"} of the call that did not run}`, as JSON text.
fn call(c: Call) -> String {
    let arguments = Value::Object(c.arguments.unwrap_or_default());
    let (mut ok, mut last, mut error) = (0u32, Value::Null, Value::Null);
    for _ in 0..c.times.unwrap_or(1) {
        match host::call_tool(&c.name, &arguments) {
            Ok(result) => {
                ok += 1;
                last = result;
            }
            Err(e) => {
                error = json!({ "code": e.code, "message": e.message });
                break;
            }
        }
    }
    json!({ "ok": ok, "last": last, "error": error }).to_string()
}

fn search(s: Search) -> String {
    let found: Vec<Value> = host::search_tools(&s.query, s.limit.unwrap_or(100))
        .into_iter()
        .map(|t| {
            json!({
                "name": t.name,
                "plugin": t.plugin,
                "description": t.description,
                "inputSchema": serde_json::from_str::<Value>(&t.input_schema).unwrap_or(Value::Null),
            })
        })
        .collect();
    json!({ "tools": found }).to_string()
}

fn plugin() -> Plugin {
    Plugin::new()
        .tool(
            "call",
            "Calls a tool through the host, a number of times",
            call,
        )
        .tool(
            "search",
            "Lists the tools it may call for this request",
            search,
        )
}

export_plugin!(plugin);
