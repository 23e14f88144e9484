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
//! - `plain`: a tool with an ordinary schema beside them;
//! - `any_of_self`, `one_of_root`, `all_of_contains`, `dynamic_if`:
//!   schemas that apply themselves more than once per level of the
//!   arguments (through `anyOf`, `oneOf`, `allOf` with `contains`, and
//!   `if`/`then` with `$dynamicRef`): served; deep arguments are refused;
//! - `branchy`: six levels of `anyOf` of four branches, no recursion;
//! - `tree`, `contains_nested`: recursive schemas that apply themselves
//!   once per level (linear);
//! - `unique`: an array whose items must be unique;
//! - `remote_ref`, `loop_in_place`, `nested_id`: refused at load (a `$ref`
//!   out of the schema, a schema that applies itself to the same value
//!   without end, a nested `$id`).

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

/// An object whose `a` is checked against `node` (kept in `$defs`).
fn with_node(node: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": { "a": { "$ref": "#/$defs/n" } },
        "$defs": { "n": node }
    })
}

fn bomb_schemas() -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    let n = || json!({ "$ref": "#/$defs/n" });
    let mut levels = serde_json::Map::new();
    for i in 0..6 {
        let next = json!({ "$ref": format!("#/$defs/d{}", i + 1) });
        levels.insert(
            format!("d{i}"),
            json!({ "anyOf": [next.clone(), next.clone(), next.clone(), next] }),
        );
    }
    levels.insert("d6".into(), json!({ "type": "string", "minLength": 2 }));
    vec![
        (
            "any_of_self",
            with_node(json!({ "anyOf": [
                { "type": "array", "items": n() },
                { "type": "array", "items": n() }
            ] })),
        ),
        (
            "one_of_root",
            json!({ "type": "object", "oneOf": [
                { "properties": { "a": { "$ref": "#" } } },
                { "additionalProperties": { "$ref": "#" } }
            ] }),
        ),
        (
            "all_of_contains",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": { "a": { "$ref": "#/definitions/n" } },
                "definitions": { "n": { "allOf": [
                    { "items": { "$ref": "#/definitions/n" } },
                    { "contains": { "$ref": "#/definitions/n" } }
                ] } }
            }),
        ),
        (
            "dynamic_if",
            with_node(json!({
                "$dynamicAnchor": "node",
                "if": { "items": { "$dynamicRef": "#node" } },
                "then": { "items": { "$ref": "#node" } },
                "else": { "type": "integer" }
            })),
        ),
        (
            "branchy",
            json!({
                "type": "object",
                "$defs": levels,
                "properties": { "a": { "type": "array", "items": { "$ref": "#/$defs/d0" } } }
            }),
        ),
        (
            "tree",
            json!({
                "type": "object",
                "properties": { "root": { "$ref": "#/$defs/node" } },
                "$defs": { "node": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "children": { "type": "array", "items": { "$ref": "#/$defs/node" } }
                    },
                    "required": ["name"]
                } }
            }),
        ),
        (
            "contains_nested",
            with_node(json!({ "anyOf": [
                { "type": "integer" },
                { "type": "array", "contains": n() }
            ] })),
        ),
        (
            "unique",
            json!({
                "type": "object",
                "properties": { "items": { "type": "array", "uniqueItems": true } },
                "required": ["items"]
            }),
        ),
        (
            "remote_ref",
            json!({ "type": "object", "properties": {
                "a": { "$ref": "https://json-schema.org/draft/2020-12/schema" }
            } }),
        ),
        (
            "loop_in_place",
            json!({ "type": "object", "$defs": {
                "a": { "anyOf": [{ "$ref": "#/$defs/b" }, { "type": "string" }] },
                "b": { "not": { "$ref": "#/$defs/a" } }
            }, "properties": { "x": { "$ref": "#/$defs/a" } } }),
        ),
        (
            "nested_id",
            json!({ "type": "object", "$defs": {
                "b": { "$id": "https://example.com/b", "items": { "$ref": "#" } }
            }, "properties": { "a": { "$ref": "#/$defs/b" } } }),
        ),
    ]
}

fn plugin() -> Plugin {
    let mut plugin = Plugin::new();
    for (name, schema) in bomb_schemas() {
        plugin = plugin.add_tool(
            Tool::new(name, |_: serde_json::Value| "validated")
                .description("A schema of the host's bound tests")
                .input_schema(schema),
        );
    }
    plugin
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
