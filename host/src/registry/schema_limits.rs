//! Bounds on a tool's input schema, which a plugin writes and the host
//! checks every call's arguments against.
//!
//! Checking arguments costs, at worst, about the schema's size (with each
//! `$ref` written out where it is used) times the arguments' size. So a
//! schema is refused at load when it is too big, too deep, has too long an
//! enum or expands (through `$ref`s) past [`MAX_SCHEMA_COST`]; and a call
//! whose arguments would cost more than [`MAX_VALIDATION_WORK`] to check
//! is refused before any checking starts.

use serde_json::Value;
use std::collections::HashMap;

/// The largest input schema, in bytes of JSON.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;
/// The deepest nesting of a schema's JSON.
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// The most values one `enum` may list.
pub const MAX_ENUM_VALUES: usize = 4096;
/// The longest chain of `$ref`s, one leading to the next.
pub const MAX_REF_DEPTH: usize = 32;
/// The most nodes a schema may expand to, each `$ref` counted as what it
/// refers to (a reference back into itself counted once).
pub const MAX_SCHEMA_COST: u64 = 65_536;
/// The most a call's check may cost: the schema's expanded nodes times the
/// arguments' weight (their JSON values, plus a unit per 16 bytes of
/// strings). About a tenth of a second of one core.
pub const MAX_VALIDATION_WORK: u64 = 20_000_000;
/// Checks that may cost more than this run on a blocking thread, not on
/// an async worker.
pub const INLINE_VALIDATION_WORK: u64 = 200_000;

/// Whether a schema of `bytes` bytes of JSON may be read at all.
pub fn check_size(bytes: usize) -> Result<(), String> {
    if bytes > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {bytes} bytes, over the limit of {MAX_SCHEMA_BYTES}"
        ));
    }
    Ok(())
}

/// Checks `schema` against the bounds above but its size
/// ([`check_size`]); its cost, or why it is refused.
pub fn check(schema: &Value) -> Result<u64, String> {
    let mut walk = Walk {
        root: schema,
        done: HashMap::new(),
        open: Vec::new(),
    };
    walk.cost(schema, 0)
}

/// What a call's check of `arguments` against a schema of `cost` costs.
pub fn validation_work(cost: u64, arguments: &Value) -> u64 {
    // Counting stops once the product is over the limit.
    let cap = MAX_VALIDATION_WORK / cost.max(1) + 1;
    cost.max(1).saturating_mul(weight(arguments, cap))
}

/// The weight of `value`, counted up to `cap`.
fn weight(value: &Value, cap: u64) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        total += 1;
        match value {
            Value::String(s) => total += s.len() as u64 / 16,
            Value::Array(items) => stack.extend(items),
            Value::Object(members) => {
                for (key, member) in members {
                    total += key.len() as u64 / 16;
                    stack.push(member);
                }
            }
            _ => {}
        }
        if total > cap {
            break;
        }
    }
    total
}

struct Walk<'a> {
    root: &'a Value,
    /// The cost of each `$ref` target worked out so far.
    done: HashMap<&'a str, u64>,
    /// The `$ref`s being worked out, outermost first.
    open: Vec<&'a str>,
}

impl<'a> Walk<'a> {
    fn cost(&mut self, node: &'a Value, depth: usize) -> Result<u64, String> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "its input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels"
            ));
        }
        let mut total = 1u64;
        match node {
            Value::Array(items) => {
                for item in items {
                    total = self.add(total, item, depth)?;
                }
            }
            Value::Object(members) => {
                if let Some(Value::Array(values)) = members.get("enum") {
                    if values.len() > MAX_ENUM_VALUES {
                        return Err(format!(
                            "its input schema has an enum of {} values, over the limit of {MAX_ENUM_VALUES}",
                            values.len()
                        ));
                    }
                }
                for (key, member) in members {
                    total = self.add(total, member, depth)?;
                    if matches!(key.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef") {
                        if let Value::String(reference) = member {
                            total = total.saturating_add(self.reference(reference)?);
                        }
                    }
                }
            }
            _ => {}
        }
        over_budget(total)
    }

    fn add(&mut self, total: u64, node: &'a Value, depth: usize) -> Result<u64, String> {
        over_budget(total.saturating_add(self.cost(node, depth + 1)?))
    }

    /// The cost of what `reference` refers to, in this schema (a reference
    /// elsewhere, or to nothing, is the schema library's to refuse).
    fn reference(&mut self, reference: &'a str) -> Result<u64, String> {
        if let Some(&cost) = self.done.get(reference) {
            return Ok(cost);
        }
        // A reference back into one being worked out: a recursive schema,
        // which each level of the arguments walks once more.
        if self.open.contains(&reference) {
            return Ok(1);
        }
        if self.open.len() >= MAX_REF_DEPTH {
            return Err(format!(
                "its input schema chains more than {MAX_REF_DEPTH} $refs"
            ));
        }
        let Some(target) = resolve(self.root, reference) else {
            return Ok(1);
        };
        self.open.push(reference);
        let cost = self.cost(target, 0);
        self.open.pop();
        let cost = cost?;
        self.done.insert(reference, cost);
        Ok(cost)
    }
}

fn over_budget(total: u64) -> Result<u64, String> {
    if total > MAX_SCHEMA_COST {
        return Err(format!(
            "its input schema expands (with its $refs written out) to more than {MAX_SCHEMA_COST} nodes"
        ));
    }
    Ok(total)
}

/// The node `reference` (`#` or `#/json/pointer`) names in `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    // A JSON pointer in a URI fragment may use %XX escapes.
    let decoded = percent_encoding::percent_decode_str(pointer)
        .decode_utf8()
        .ok()?;
    root.pointer(&decoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cost(schema: &Value) -> Result<u64, String> {
        check_size(schema.to_string().len())?;
        check(schema)
    }

    #[test]
    fn ordinary_schemas_are_cheap() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string"}, "n": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}}}, "required": ["name"]});
        let c = cost(&schema).unwrap();
        assert!(c < 40, "{c}");
        assert!(validation_work(c, &json!({"name": "x"})) <= INLINE_VALIDATION_WORK);
    }

    #[test]
    fn a_ref_chain_that_doubles_at_each_level_is_refused() {
        let mut defs = serde_json::Map::new();
        for i in 0..30 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}]}]}),
            );
        }
        defs.insert("d30".into(), json!({"type": "string"}));
        let schema =
            json!({"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}});
        let error = cost(&schema).unwrap_err();
        assert!(error.contains("expands"), "{error}");
    }

    #[test]
    fn a_long_ref_chain_is_refused_and_a_recursive_schema_is_not() {
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            defs.insert(
                format!("d{i}"),
                json!({"$ref": format!("#/$defs/d{}", i + 1)}),
            );
        }
        defs.insert("d40".into(), json!({"type": "string"}));
        let chain =
            json!({"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/d0"}}});
        assert!(cost(&chain).unwrap_err().contains("chains"));
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/node"}}});
        assert!(cost(&tree).unwrap() < 100);
        let itself = json!({"type": "object", "properties": {"again": {"$ref": "#"}}});
        assert!(cost(&itself).unwrap() < 20);
        // A %-escaped pointer reaches its target, whose size then counts.
        let values: Vec<u32> = (0..1000).collect();
        let escaped = json!({"type": "object", "$defs": {"a b": {"enum": values}},
            "properties": {"x": {"$ref": "#/$defs/a%20b"}, "y": {"$ref": "#/$defs/a%20b"}}});
        assert!(cost(&escaped).unwrap() > 2000);
    }

    #[test]
    fn size_depth_and_enum_length_are_bounded() {
        let values: Vec<String> = (0..MAX_ENUM_VALUES + 1).map(|i| i.to_string()).collect();
        let wide = json!({"type": "object", "properties": {"x": {"enum": values}}});
        assert!(cost(&wide).unwrap_err().contains("enum"));
        let mut deep = json!({"type": "string"});
        for _ in 0..MAX_SCHEMA_DEPTH {
            deep = json!({"items": deep});
        }
        let deep = json!({"type": "object", "properties": {"x": deep}});
        assert!(cost(&deep).unwrap_err().contains("deeper"));
        assert!(check_size(MAX_SCHEMA_BYTES + 1)
            .unwrap_err()
            .contains("bytes"));
    }

    #[test]
    fn the_work_of_a_check_grows_with_the_arguments_and_stops_counting_past_the_limit() {
        let items: Vec<String> = (0..10_000).map(|i| format!("item{i}")).collect();
        let args = json!({"x": items});
        let work = validation_work(4_000, &args);
        assert!(work > MAX_VALIDATION_WORK, "{work}");
        assert!(validation_work(4_000, &json!({"x": ["a"]})) < INLINE_VALIDATION_WORK);
        let text = json!({"x": "y".repeat(1 << 20)});
        assert!(validation_work(1, &text) > 60_000);
    }
}
