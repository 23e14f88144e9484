//! Bounds on a tool's input schema, which a plugin writes and the host
//! checks every call's arguments against.
//!
//! At load, a schema is refused when it is too big, too deep, has too long
//! an enum, expands (through `$ref`s) past [`MAX_SCHEMA_COST`], has a
//! `$ref` that does not stay within it, or applies itself to the same value
//! without end. What is left is read as a graph of its subschemas
//! (`graph.rs`): per call, walking the arguments through it counts every
//! visit the check can make, each subschema counted as often as recursion
//! and combinators (`anyOf` in `anyOf` at every level of a recursive
//! schema) apply it, and `uniqueItems` as the array's size (the host
//! checks it in linear time, `unique.rs`). A call whose check could
//! cost over [`MAX_VALIDATION_WORK`] is refused before checking starts.
//!
//! Memory: the walk holds a count per subschema and a list per level of the
//! arguments; a check holds its arguments, a set of hashes per
//! `uniqueItems` array, and the problems it lists, which are listed only
//! within [`MAX_LISTING_WORK`] (each problem names its path and some
//! copy the value): at most about 64 MiB besides the arguments.

mod graph;
mod unique;

use serde_json::Value;
use std::collections::HashMap;

pub use unique::keyword as unique_items_keyword;

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
/// The most a call's check may cost: every visit of a subschema to a value
/// of the arguments (each as many times as recursion and combinators apply
/// it), each costing the subschema's own size (its enum, its `required`)
/// plus a unit per 16 bytes of the value's string, plus the `uniqueItems`
/// arrays' sizes. About a tenth of a second of one core.
pub const MAX_VALIDATION_WORK: u64 = 20_000_000;
/// Checks that may cost more than this run on a blocking thread, not on
/// an async worker.
pub const INLINE_VALIDATION_WORK: u64 = 200_000;
/// The problems of arguments that break their schema are listed when the
/// check's work times (4 + the arguments' weight) is at most this: the
/// schema library works out every problem before the first is listed,
/// each with its path and some with a copy of the value (`anyOf` keeps
/// every branch's). Over it, only the first problem is given, or none
/// when the schema has `anyOf`/`oneOf`. About 64 bytes a unit: 64 MiB.
pub const MAX_LISTING_WORK: u64 = 1 << 20;

/// Why an input schema is refused (each message ends "tool skipped: ...").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaRefusal {
    /// Over [`MAX_SCHEMA_BYTES`] (its size).
    #[error("its input schema is {0} bytes, over the limit of {MAX_SCHEMA_BYTES}")]
    TooBig(usize),
    /// Nested deeper than [`MAX_SCHEMA_DEPTH`].
    #[error("its input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
    /// An `enum` of more than [`MAX_ENUM_VALUES`] values (how many).
    #[error("its input schema has an enum of {0} values, over the limit of {MAX_ENUM_VALUES}")]
    LongEnum(usize),
    /// A chain of more than [`MAX_REF_DEPTH`] `$ref`s.
    #[error("its input schema chains more than {MAX_REF_DEPTH} $refs")]
    LongRefChain,
    /// Expands past [`MAX_SCHEMA_COST`].
    #[error(
        "its input schema expands (with its $refs written out) to more than {MAX_SCHEMA_COST} nodes"
    )]
    TooCostly,
    /// Applies itself to the same value without end.
    #[error(
        "its input schema applies itself to the same value without end \
         (a loop of $refs and combinators that never goes into the arguments)"
    )]
    Loop,
    /// A reference that does not stay within the schema.
    #[error("its input schema has a {keyword} this host cannot bound: {reference:?} ({why})")]
    Unbounded {
        /// `$ref`, `$dynamicRef` or `$recursiveRef`.
        keyword: String,
        /// The reference, clipped.
        reference: String,
        /// Why it cannot be followed.
        why: &'static str,
    },
    /// An `$id` below the root (clipped).
    #[error("its input schema has a nested $id ({0:?}): only the root may have one")]
    NestedId(String),
    /// Two anchors of one name (clipped).
    #[error("its input schema has two anchors named {0:?}")]
    TwoAnchors(String),
}

/// Whether a schema of `bytes` bytes of JSON may be read at all.
pub fn check_size(bytes: usize) -> Result<(), SchemaRefusal> {
    if bytes > MAX_SCHEMA_BYTES {
        return Err(SchemaRefusal::TooBig(bytes));
    }
    Ok(())
}

/// What checking arguments against one input schema may cost.
pub struct Bound {
    graph: graph::Graph,
}

/// How much of a failed check's problems may be listed.
#[derive(Debug, PartialEq, Eq)]
pub enum Listing {
    /// Up to a handful.
    Some,
    /// The first.
    First,
    /// None: only that the arguments do not match.
    None,
}

impl Bound {
    /// An upper bound on the work of checking `arguments`, or `None` when
    /// it is over `limit` (finding it costs about as much as it counts, so
    /// finding it stops there).
    pub fn work(&self, arguments: &Value, limit: u64) -> Option<u64> {
        self.graph.work(arguments, limit)
    }

    /// How much a failed check of `work` on `arguments` may list.
    pub fn listing(&self, work: u64, arguments: &Value) -> Listing {
        let cap = MAX_LISTING_WORK / work.max(1) + 1;
        if work.saturating_mul(4 + weight(arguments, cap)) <= MAX_LISTING_WORK {
            Listing::Some
        } else if self.graph.branches {
            Listing::None
        } else {
            Listing::First
        }
    }
}

/// Checks `schema` against the bounds above but its size
/// ([`check_size`]); what checking arguments against it costs, or why it
/// is refused.
pub fn check(schema: &Value) -> Result<Bound, SchemaRefusal> {
    let mut walk = Walk {
        root: schema,
        done: HashMap::new(),
        open: Vec::new(),
    };
    walk.cost(schema, 0)?;
    Ok(Bound {
        graph: graph::Graph::build(schema)?,
    })
}

/// The weight of `value` (its JSON values, plus a unit per 16 bytes of
/// strings), counted up to `cap`.
pub fn weight(value: &Value, cap: u64) -> u64 {
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

/// `text` cut to a length fit for a log line.
fn clip(text: &str) -> &str {
    match text.char_indices().nth(80) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

struct Walk<'a> {
    root: &'a Value,
    /// The cost of each `$ref` target worked out so far.
    done: HashMap<&'a str, u64>,
    /// The `$ref`s being worked out, outermost first.
    open: Vec<&'a str>,
}

impl<'a> Walk<'a> {
    fn cost(&mut self, node: &'a Value, depth: usize) -> Result<u64, SchemaRefusal> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaRefusal::TooDeep);
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
                        return Err(SchemaRefusal::LongEnum(values.len()));
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

    fn add(&mut self, total: u64, node: &'a Value, depth: usize) -> Result<u64, SchemaRefusal> {
        over_budget(total.saturating_add(self.cost(node, depth + 1)?))
    }

    /// The cost of what `reference` refers to, in this schema (a reference
    /// elsewhere, or to nothing, is the schema library's to refuse).
    fn reference(&mut self, reference: &'a str) -> Result<u64, SchemaRefusal> {
        if let Some(&cost) = self.done.get(reference) {
            return Ok(cost);
        }
        // A reference back into one being worked out: a recursive schema,
        // which each level of the arguments walks once more.
        if self.open.contains(&reference) {
            return Ok(1);
        }
        if self.open.len() >= MAX_REF_DEPTH {
            return Err(SchemaRefusal::LongRefChain);
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

fn over_budget(total: u64) -> Result<u64, SchemaRefusal> {
    if total > MAX_SCHEMA_COST {
        return Err(SchemaRefusal::TooCostly);
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

    fn bound(schema: &Value) -> Result<Bound, SchemaRefusal> {
        check_size(schema.to_string().len())?;
        check(schema)
    }

    fn work(schema: &Value, arguments: &Value) -> Option<u64> {
        bound(schema).unwrap().work(arguments, MAX_VALIDATION_WORK)
    }

    /// `[[[...[true]...]]]`, `depth` arrays deep.
    fn nested(depth: usize) -> Value {
        let mut value = json!([true]);
        for _ in 0..depth {
            value = json!([value]);
        }
        value
    }

    #[test]
    fn ordinary_schemas_are_cheap() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string"}, "n": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}}}, "required": ["name"]});
        let w = work(&schema, &json!({"name": "x", "tags": ["a", "b"]})).unwrap();
        assert!(w < 100, "{w}");
        let b = bound(&schema).unwrap();
        assert_eq!(b.listing(w, &json!({"name": 1})), Listing::Some);
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
        let error = bound(&schema).err().unwrap().to_string();
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
        assert!(bound(&chain).err().unwrap().to_string().contains("chains"));
        let tree = json!({"type": "object", "$defs": {"node": {"type": "object", "properties": {
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "properties": {"root": {"$ref": "#/$defs/node"}}});
        let mut node = json!({});
        for _ in 0..100 {
            node = json!({"children": [node, {}]});
        }
        // A linear recursive schema costs in step with the arguments.
        let w = work(&tree, &json!({"root": node})).unwrap();
        assert!(w < 100 * 1000, "{w}");
        let itself = json!({"type": "object", "properties": {"again": {"$ref": "#"}}});
        assert!(work(&itself, &json!({"again": {"again": {}}})).unwrap() < 50);
        // A %-escaped pointer reaches its target, whose size then counts.
        let values: Vec<u32> = (0..1000).collect();
        let escaped = json!({"type": "object", "$defs": {"a b": {"enum": values}},
            "properties": {"x": {"$ref": "#/$defs/a%20b"}, "y": {"$ref": "#/$defs/a%20b"}}});
        assert!(work(&escaped, &json!({"x": 1, "y": 2})).unwrap() > 2000);
    }

    #[test]
    fn size_depth_and_enum_length_are_bounded() {
        let values: Vec<String> = (0..MAX_ENUM_VALUES + 1).map(|i| i.to_string()).collect();
        let wide = json!({"type": "object", "properties": {"x": {"enum": values}}});
        assert!(bound(&wide).err().unwrap().to_string().contains("enum"));
        let mut deep = json!({"type": "string"});
        for _ in 0..MAX_SCHEMA_DEPTH {
            deep = json!({"items": deep});
        }
        let deep = json!({"type": "object", "properties": {"x": deep}});
        assert!(bound(&deep).err().unwrap().to_string().contains("deeper"));
        assert!(check_size(MAX_SCHEMA_BYTES + 1)
            .unwrap_err()
            .to_string()
            .contains("bytes"));
    }

    #[test]
    fn the_work_of_a_check_grows_with_the_arguments_and_stops_counting_past_the_limit() {
        let values: Vec<String> = (0..4000).map(|i| format!("value-{i}")).collect();
        let schema = json!({"type": "object", "properties": {"x": {"type": "array", "items": {"enum": values}}}});
        let items: Vec<String> = (0..10_000).map(|i| format!("item{i}")).collect();
        assert_eq!(work(&schema, &json!({"x": items})), None);
        let w = work(&schema, &json!({"x": ["a"]})).unwrap();
        assert!(w > 4000 && w < INLINE_VALIDATION_WORK, "{w}");
        let text = json!({"x": "y".repeat(1 << 20)});
        let plain = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        assert!(work(&plain, &text).unwrap() > 60_000);
        // Values no subschema applies to cost nothing.
        let items: Vec<u32> = (0..100_000).collect();
        assert!(work(&plain, &json!({"y": items})).unwrap() < 100);
    }

    #[test]
    fn recursion_through_branches_counts_every_branch_at_every_level() {
        // The reported attack: 53 bytes of arguments, 11.8 s and 1.5 GB.
        let any_of = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/n"}},
                                      {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}});
        assert_eq!(work(&any_of, &json!({"a": nested(24)})), None);
        // Shallow arguments stay cheap: 2^5 paths.
        assert!(work(&any_of, &json!({"a": nested(5)})).unwrap() < 20_000);
        for shape in [
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
                "$defs": {"n": {"oneOf": [{"items": {"$ref": "#/$defs/n"}}, {"items": {"$ref": "#/$defs/n"}}, {"type": "boolean"}]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/n"}},
                "definitions": {"n": {"allOf": [{"items": {"$ref": "#/definitions/n"}}, {"contains": {"$ref": "#/definitions/n"}}]}}}),
            json!({"type": "object", "anyOf": [{"properties": {"a": {"$ref": "#"}}}, {"additionalProperties": {"$ref": "#"}}]}),
            json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveAnchor": true, "type": "object",
                "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"items": {"$recursiveRef": "#"}, "contains": {"$ref": "#/$defs/n"}, "prefixItems": [{"$ref": "#/$defs/n"}]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
                "$defs": {"n": {"$dynamicAnchor": "n", "if": {"items": {"$dynamicRef": "#n"}}, "then": {"items": {"$ref": "#n"}}}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/%24defs/n"}},
                "$defs": {"n": {"not": {"items": {"$ref": "#/%24defs/n"}}, "items": {"$ref": "#/%24defs/n"}}}}),
        ] {
            let args = if shape.get("anyOf").is_some() {
                let mut v = json!({});
                for _ in 0..40 {
                    v = json!({"a": v});
                }
                v
            } else {
                json!({"a": nested(40)})
            };
            assert_eq!(work(&shape, &args), None, "{shape}");
        }
    }

    #[test]
    fn branching_without_recursion_is_counted_too() {
        // Six levels of anyOf, each of four branches: 4^6 paths to one
        // value, in a schema of a few hundred bytes.
        let mut defs = serde_json::Map::new();
        for i in 0..6 {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
            defs.insert(
                format!("d{i}"),
                json!({"anyOf": [next.clone(), next.clone(), next.clone(), next]}),
            );
        }
        defs.insert("d6".into(), json!({"type": "string", "minLength": 2}));
        let schema = json!({"type": "object", "$defs": defs,
            "properties": {"a": {"items": {"$ref": "#/$defs/d0"}}}});
        let b = bound(&schema).unwrap();
        assert!(b.work(&json!({"a": ["x"]}), MAX_VALIDATION_WORK).unwrap() > 4096);
        assert!(b
            .work(&json!({"a": vec!["x"; 1000]}), MAX_VALIDATION_WORK)
            .is_none());
    }

    #[test]
    fn unique_items_costs_the_arrays_size() {
        let schema = json!({"type": "object", "properties": {"a": {"uniqueItems": true}}});
        let items: Vec<Value> = (0..40_000).map(|_| json!([[], []])).collect();
        let w = work(&schema, &json!({"a": items})).unwrap();
        assert!(w > 200_000 && w < 1_000_000, "{w}");
        let recursive = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/u"}},
            "$defs": {"u": {"uniqueItems": true, "items": {"$ref": "#/$defs/u"}}}});
        let mut deep = json!([]);
        for _ in 0..120 {
            deep = json!([deep, vec![0; 3000]]);
        }
        // Each level hashes everything below it.
        assert!(work(&recursive, &json!({"a": deep})).is_none());
    }

    #[test]
    fn refs_that_leave_the_schema_and_loops_in_place_are_refused() {
        for (schema, expected) in [
            (
                json!({"type": "object", "properties": {"a": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}),
                "cannot bound",
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}),
                "cannot bound",
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}),
                "points at nothing",
            ),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#nowhere"}}}),
                "no such anchor",
            ),
            (
                json!({"type": "object", "$defs": {"b": {"$id": "https://example.com/b", "items": {"$ref": "#"}}},
                "properties": {"a": {"$ref": "#/$defs/b"}}}),
                "nested $id",
            ),
            (
                json!({"type": "object", "allOf": [{"$ref": "#"}]}),
                "without end",
            ),
            (
                json!({"type": "object", "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
                "properties": {"x": {"$ref": "#/$defs/a"}}}),
                "without end",
            ),
        ] {
            let error = bound(&schema)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(expected), "{schema}: {error}");
        }
        // An anchor and a property named $id are fine.
        let anchored = json!({"type": "object", "$id": "https://example.com/root",
            "$defs": {"n": {"$anchor": "node", "items": {"$ref": "#node"}}},
            "properties": {"$id": {"type": "string"}, "a": {"$ref": "#node"}}});
        assert!(work(&anchored, &json!({"$id": "x", "a": nested(50)})).unwrap() < 2000);
    }

    #[test]
    fn listing_problems_is_bounded_by_the_work_and_the_arguments() {
        let plain =
            bound(&json!({"type": "object", "properties": {"a": {"type": "string"}}})).unwrap();
        let branchy = bound(&json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}})).unwrap();
        let small = json!({"a": true});
        assert_eq!(plain.listing(10, &small), Listing::Some);
        let big = json!({"a": vec![0; 100_000]});
        assert_eq!(plain.listing(100, &big), Listing::First);
        assert_eq!(branchy.listing(100, &big), Listing::None);
        assert_eq!(branchy.listing(MAX_LISTING_WORK, &small), Listing::None);
    }
}
