//! Tool arguments mirrored in `Mcp-Param-*` headers (SEP-2243): a tool's
//! input schema marks them with `x-mcp-header`. Found once, when a plugin
//! is loaded, and checked on every stateless `tools/call`.

use serde_json::Value;

/// One argument a stateless `tools/call` repeats in a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParameter {
    /// Where the argument is: property names from the arguments' root.
    pub path: Vec<String>,
    /// The name the schema gives (`Mcp-Param-{name}`), for messages.
    pub name: String,
    /// The header to look up: `mcp-param-` and the name in lower case.
    pub header: String,
}

impl HeaderParameter {
    /// The argument in `arguments`, unless absent or null.
    pub fn value_in<'a>(&self, arguments: &'a Value) -> Option<&'a Value> {
        self.path
            .iter()
            .try_fold(arguments, |v, key| v.get(key))
            .filter(|v| !v.is_null())
    }
}

/// The `x-mcp-header` annotations reachable from a schema's root through
/// `properties` only.
pub fn header_parameters(schema: &Value) -> Vec<HeaderParameter> {
    fn walk(schema: &Value, path: &mut Vec<String>, found: &mut Vec<HeaderParameter>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, property) in properties {
            path.push(key.clone());
            if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str) {
                found.push(HeaderParameter {
                    path: path.clone(),
                    name: name.to_owned(),
                    header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                });
            }
            walk(property, path, found);
            path.pop();
        }
    }
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_found_through_properties_only() {
        let schema = json!({ "type": "object", "properties": {
            "region": { "type": "string", "x-mcp-header": "Region" },
            "where": { "type": "object", "properties": {
                "zone": { "type": "string", "x-mcp-header": "Zone" } } },
            "list": { "type": "array", "items": { "type": "object", "properties": {
                "hidden": { "type": "string", "x-mcp-header": "Hidden" } } } } } });
        let found = header_parameters(&schema);
        let names: Vec<_> = found.iter().map(|p| p.header.as_str()).collect();
        assert_eq!(names, ["mcp-param-region", "mcp-param-zone"]);
        let arguments = json!({ "region": "eu", "where": { "zone": null } });
        assert_eq!(found[0].value_in(&arguments), Some(&json!("eu")));
        assert_eq!(found[1].value_in(&arguments), None);
    }
}
