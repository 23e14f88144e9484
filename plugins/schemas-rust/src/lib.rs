//! A plugin whose tools have input schemas that would cost the host's
//! request path dearly to check arguments against: a test fixture for the
//! host's schema bounds; never load it in production.
//!
//! - `enum_bomb`: an array of strings, each checked against an enum of
//!   10^5 values (refused at load);
//! - `ref_chain`: 30 levels of `$ref`s, each level using the next twice
//!   (refused at load);
//! - `big_enum`: an enum of 4 000 values (served; arguments whose check
//!   would cost too much are refused before it starts);
//! - `plain`: a tool with an ordinary schema beside them.

use wasm_mcp_sdk::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

fn enum_values(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("value-{i}")).collect()
}

fn array_of_enum(count: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "items": { "type": "array", "items": { "enum": enum_values(count) } }
        }
    })
}

/// `d0` … `d{levels}`, each level's schema using the next one twice.
fn ref_chain(levels: usize) -> serde_json::Value {
    let mut defs = serde_json::Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            serde_json::json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}]}]}),
        );
    }
    defs.insert(format!("d{levels}"), serde_json::json!({"type": "integer"}));
    serde_json::json!({
        "type": "object",
        "$defs": defs,
        "properties": { "x": { "$ref": "#/$defs/d0" } }
    })
}

fn plugin() -> Plugin {
    Plugin::new()
        .add_tool(
            Tool::new("enum_bomb", |_: serde_json::Value| "validated")
                .description("An array of strings each checked against an enum of 10^5 values")
                .input_schema(array_of_enum(100_000)),
        )
        .add_tool(
            Tool::new("ref_chain", |_: serde_json::Value| "validated")
                .description("30 levels of $refs, each used twice by the level above")
                .input_schema(ref_chain(30)),
        )
        .add_tool(
            Tool::new("big_enum", |_: serde_json::Value| "validated")
                .description("An array of strings each checked against an enum of 4000 values")
                .input_schema(array_of_enum(4000)),
        )
        .tool("plain", "Says hello", |n: Name| {
            format!("Hello, {}!", n.name)
        })
}

export_plugin!(plugin);
