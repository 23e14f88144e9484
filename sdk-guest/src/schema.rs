//! JSON Schemas derived from Rust types.

use schemars::{generate::SchemaSettings, JsonSchema};
use serde_json::Value;

/// The JSON Schema (draft 2020-12) of `T`, with definitions inlined where
/// possible so that clients see a self-contained object schema.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(map) = value.as_object_mut() {
        map.remove("title");
    }
    value
}

/// The input schema of a tool whose argument type is `T`: an object schema,
/// even for `()` (no arguments).
pub(crate) fn input_schema_of<T: JsonSchema>() -> Value {
    let mut value = schema_of::<T>();
    let is_object = value.get("type").and_then(Value::as_str) == Some("object");
    if !is_object {
        value = serde_json::json!({ "type": "object", "properties": {} });
    }
    value
}
