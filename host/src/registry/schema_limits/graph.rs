//! An input schema read as a graph of its subschemas: which apply to the
//! same value (`allOf`, `$ref`, ...), which to an object's members or an
//! array's items, and what each costs on its own. Walking a call's
//! arguments through it counts every (subschema, value) visit the check
//! can make, recursion and branching included ([`Graph::work`]).
//!
//! Where the schema library's choice depends on more than the graph (which
//! `patternProperties` match, which `if` branch runs), the walk takes every
//! choice: the count is an upper bound.

use super::{weight, SchemaRefusal};
use serde_json::{Map, Value};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Keywords whose value is one subschema applied to the same value.
const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
/// Keywords whose value is an array of subschemas applied to the same value.
const IN_PLACE_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords that never affect a check (annotations and containers).
const NOT_CHECKED: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$defs",
    "definitions",
    "$vocabulary",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentSchema",
];

/// The deepest arguments the walk follows (the JSON parser stops at 128).
const MAX_ARGUMENT_DEPTH: usize = 512;

#[derive(Default)]
struct Node {
    /// Work of one visit, besides the value's own size.
    own: u64,
    /// Subschemas applied to the same value, each with how many times.
    in_place: Vec<(u32, u64)>,
    /// `properties`.
    properties: HashMap<String, u32>,
    /// Applied to every member: `patternProperties`, `unevaluatedProperties`.
    every_member: Vec<u32>,
    /// `additionalProperties`: every member not in `properties`.
    additional: Option<u32>,
    /// `propertyNames`: applied to each member's name.
    names: Option<u32>,
    /// `prefixItems` (or draft-04..2019-09 `items: [...]`): for item `i`,
    /// `prefix[i]`.
    prefix: Vec<Vec<u32>>,
    /// Applied to each item from an index on: `items`, `additionalItems`,
    /// `contains`, `unevaluatedItems`.
    items_from: Vec<(usize, u32)>,
    /// `uniqueItems: true`.
    unique: bool,
    /// A `$ref` (the library keeps a stack of them, searched per visit).
    reference: bool,
    /// `format: "regex"`: the library re-parses the string per `\c` escape.
    regex_format: bool,
    /// `unevaluated*`: which marks what its in-place subschemas evaluated
    /// by checking them again.
    unevaluated: bool,
}

/// The graph of one input schema.
pub(super) struct Graph {
    nodes: Vec<Node>,
    /// Each node's place in an order where in-place edges go forward.
    rank: Vec<u32>,
    /// The schema uses `anyOf` or `oneOf`, whose problems hold every
    /// problem of every branch (each with a copy of its value).
    pub(super) branches: bool,
}

struct Builder<'a> {
    root: &'a Value,
    ids: HashMap<*const Value, u32>,
    queue: Vec<&'a Value>,
    nodes: Vec<Node>,
    anchors: HashMap<&'a str, &'a Value>,
    branches: bool,
}

impl Graph {
    /// The graph of `root`, or why it cannot be bounded.
    pub(super) fn build(root: &Value) -> Result<Graph, SchemaRefusal> {
        let anchors = collect_anchors(root)?;
        let mut builder = Builder {
            root,
            ids: HashMap::new(),
            queue: Vec::new(),
            nodes: Vec::new(),
            anchors,
            branches: false,
        };
        builder.id(root);
        let mut next = 0;
        while next < builder.queue.len() {
            let schema = builder.queue[next];
            let node = builder.node(schema, next == 0)?;
            builder.nodes[next] = node;
            next += 1;
        }
        let mut graph = Graph {
            rank: Vec::new(),
            nodes: builder.nodes,
            branches: builder.branches,
        };
        graph.order()?;
        Ok(graph)
    }

    /// Ranks the nodes so that in-place edges go forward (refusing a
    /// schema that applies itself to the same value without end), and sets
    /// how often an `unevaluated*` node's subschemas run.
    fn order(&mut self) -> Result<(), SchemaRefusal> {
        let count = self.nodes.len();
        // Depth-first, without recursion: 0 new, 1 open, 2 done.
        let mut state = vec![0u8; count];
        let mut height = vec![0u64; count];
        let mut finished = Vec::with_capacity(count);
        for start in 0..count {
            if state[start] != 0 {
                continue;
            }
            let mut stack = vec![(start, 0usize)];
            state[start] = 1;
            while let Some(top) = stack.len().checked_sub(1) {
                let (node, edge) = stack[top];
                if let Some(&(target, _)) = self.nodes[node].in_place.get(edge) {
                    stack[top].1 += 1;
                    let target = target as usize;
                    match state[target] {
                        0 => {
                            state[target] = 1;
                            stack.push((target, 0));
                        }
                        1 => return Err(SchemaRefusal::Loop),
                        _ => {}
                    }
                } else {
                    state[node] = 2;
                    height[node] = self.nodes[node]
                        .in_place
                        .iter()
                        .map(|&(t, _)| height[t as usize] + 1)
                        .max()
                        .unwrap_or(0);
                    finished.push(node);
                    stack.pop();
                }
            }
        }
        self.rank = vec![0; count];
        for (place, &node) in finished.iter().rev().enumerate() {
            self.rank[node] = place as u32;
        }
        for (node, height) in self.nodes.iter_mut().zip(height) {
            if node.unevaluated {
                for edge in &mut node.in_place {
                    edge.1 = edge.1.saturating_mul(height + 1);
                }
            }
        }
        Ok(())
    }

    /// An upper bound on the work of checking `arguments`, or `None` once
    /// it is over `limit`. Finding it costs about as much as it counts, so
    /// it stops early too.
    pub(super) fn work(&self, arguments: &Value, limit: u64) -> Option<u64> {
        let mut walk = Walk {
            graph: self,
            total: 0,
            limit,
            counts: vec![0; self.nodes.len()],
            heap: BinaryHeap::new(),
        };
        walk.visit(arguments, vec![(0, 1)], 0).then_some(walk.total)
    }
}

impl<'a> Builder<'a> {
    /// The id of the subschema `schema`, queued to be read if new.
    fn id(&mut self, schema: &'a Value) -> u32 {
        let key: *const Value = schema;
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.ids.insert(key, id);
        self.nodes.push(Node::default());
        self.queue.push(schema);
        id
    }

    fn node(&mut self, schema: &'a Value, is_root: bool) -> Result<Node, SchemaRefusal> {
        let mut node = Node {
            own: 1,
            ..Node::default()
        };
        let Value::Object(members) = schema else {
            return Ok(node);
        };
        for (key, value) in members {
            let key = key.as_str();
            if NOT_CHECKED.contains(&key) {
                if matches!(key, "$id" | "id") && !is_root {
                    check_nested_id(value)?;
                }
                continue;
            }
            node.own = node.own.saturating_add(1);
            match key {
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    if let Value::String(reference) = value {
                        let target = self.resolve(key, reference)?;
                        let target = self.id(target);
                        node.in_place.push((target, 1));
                        node.reference = true;
                    }
                }
                _ if IN_PLACE_ONE.contains(&key) => {
                    let target = self.id(value);
                    node.in_place.push((target, 1));
                    if key == "not" {
                        // Its problem holds a copy of the subschema.
                        node.own = node.own.saturating_add(weight(value, u64::MAX));
                    }
                }
                _ if IN_PLACE_MANY.contains(&key) => {
                    if key != "allOf" {
                        self.branches = true;
                    }
                    for item in value.as_array().into_iter().flatten() {
                        node.own = node.own.saturating_add(1);
                        let target = self.id(item);
                        node.in_place.push((target, 1));
                    }
                }
                "dependentSchemas" | "dependencies" => {
                    for dependency in value.as_object().into_iter().flat_map(Map::values) {
                        if dependency.is_array() {
                            node.own = node.own.saturating_add(weight(dependency, u64::MAX));
                        } else {
                            node.own = node.own.saturating_add(1);
                            let target = self.id(dependency);
                            node.in_place.push((target, 1));
                        }
                    }
                }
                "properties" => {
                    for (name, member) in value.as_object().into_iter().flatten() {
                        node.own = node.own.saturating_add(1);
                        let target = self.id(member);
                        node.properties.insert(name.clone(), target);
                    }
                }
                "patternProperties" => {
                    for member in value.as_object().into_iter().flat_map(Map::values) {
                        node.own = node.own.saturating_add(1);
                        let target = self.id(member);
                        node.every_member.push(target);
                    }
                }
                "unevaluatedProperties" => {
                    node.unevaluated = true;
                    let target = self.id(value);
                    node.every_member.push(target);
                }
                "additionalProperties" => node.additional = Some(self.id(value)),
                "propertyNames" => node.names = Some(self.id(value)),
                "prefixItems" | "items" if value.is_array() => {
                    for (index, item) in value.as_array().into_iter().flatten().enumerate() {
                        node.own = node.own.saturating_add(1);
                        let target = self.id(item);
                        if node.prefix.len() <= index {
                            node.prefix.resize(index + 1, Vec::new());
                        }
                        node.prefix[index].push(target);
                    }
                }
                "items" | "contains" => {
                    let target = self.id(value);
                    node.items_from.push((0, target));
                }
                "unevaluatedItems" => {
                    node.unevaluated = true;
                    let target = self.id(value);
                    node.items_from.push((0, target));
                }
                "additionalItems" => {
                    let from = members
                        .get("items")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    let target = self.id(value);
                    node.items_from.push((from, target));
                }
                "uniqueItems" => node.unique = value == &Value::Bool(true),
                "format" => node.regex_format = value.as_str() == Some("regex"),
                // `enum`, `const`, `required`, `type`, bounds: compared
                // with values no bigger than themselves.
                _ => node.own = node.own.saturating_add(weight(value, u64::MAX)),
            }
        }
        Ok(node)
    }

    /// What `reference` (the value of `keyword`) names in this schema.
    fn resolve(&self, keyword: &str, reference: &str) -> Result<&'a Value, SchemaRefusal> {
        let refused = |why: &'static str| {
            Err(SchemaRefusal::Unbounded {
                keyword: keyword.to_owned(),
                reference: super::clip(reference).to_owned(),
                why,
            })
        };
        let Some(fragment) = reference.strip_prefix('#') else {
            return refused(
                "only \"#\", \"#/json/pointer\" and \"#anchor\" within the schema are allowed",
            );
        };
        if fragment.is_empty() {
            return Ok(self.root);
        }
        if !fragment.starts_with('/') {
            return match self.anchors.get(fragment) {
                Some(&target) => Ok(target),
                None => refused("no such anchor"),
            };
        }
        // A JSON pointer in a URI fragment may use %XX escapes.
        let Ok(pointer) = percent_encoding::percent_decode_str(fragment).decode_utf8() else {
            return refused("it points at nothing");
        };
        let mut target = self.root;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            let next = match target {
                Value::Object(members) => members.get(&token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            let Some(next) = next else {
                return refused("it points at nothing");
            };
            // Into a part with an $id of its own, where $refs resolve apart.
            if let Value::Object(members) = next {
                for id in ["$id", "id"].iter().filter_map(|k| members.get(*k)) {
                    check_nested_id(id)?;
                }
            }
            target = next;
        }
        Ok(target)
    }
}

/// A nested `$id` (other than a plain `#anchor`) starts a schema of its own,
/// against which its `$ref`s resolve: refused, so every `$ref` resolves
/// within the one schema.
fn check_nested_id(value: &Value) -> Result<(), SchemaRefusal> {
    match value {
        Value::String(id) if !id.starts_with('#') => {
            Err(SchemaRefusal::NestedId(super::clip(id).to_owned()))
        }
        _ => Ok(()),
    }
}

/// Every `$anchor`, `$dynamicAnchor` and `$id: "#name"` in `root` outside
/// parts with an `$id` of their own; an anchor named twice is refused (it
/// could name either).
fn collect_anchors(root: &Value) -> Result<HashMap<&str, &Value>, SchemaRefusal> {
    let mut anchors = HashMap::new();
    let mut stack = vec![root];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(members) => {
                let own_id = ["$id", "id"]
                    .iter()
                    .filter_map(|k| members.get(*k))
                    .any(|id| check_nested_id(id).is_err());
                if own_id && !std::ptr::eq(value, root) {
                    continue;
                }
                for (key, member) in members {
                    let name = match (key.as_str(), member) {
                        ("$anchor" | "$dynamicAnchor", Value::String(name)) => Some(name.as_str()),
                        ("$id" | "id", Value::String(id)) => id.strip_prefix('#'),
                        _ => None,
                    };
                    if let Some(name) = name.filter(|n| !n.is_empty()) {
                        if anchors
                            .insert(name, value)
                            .is_some_and(|v| !std::ptr::eq(v, value))
                        {
                            return Err(SchemaRefusal::TwoAnchors(super::clip(name).to_owned()));
                        }
                    }
                    stack.push(member);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    Ok(anchors)
}

struct Walk<'g> {
    graph: &'g Graph,
    total: u64,
    limit: u64,
    /// Per node, how often it applies to the value being visited.
    counts: Vec<u64>,
    heap: BinaryHeap<Reverse<(u32, u32)>>,
}

impl Walk<'_> {
    fn charge(&mut self, work: u64) -> bool {
        self.total = self.total.saturating_add(work);
        self.total <= self.limit
    }

    /// Visits `value` with the subschemas `seeds` (node, times) applied to
    /// it; false once over the limit.
    fn visit(&mut self, value: &Value, seeds: Vec<(u32, u64)>, depth: usize) -> bool {
        if depth > MAX_ARGUMENT_DEPTH {
            return false;
        }
        let active = self.close(seeds);
        let graph = self.graph;
        let leaf = match value {
            Value::String(s) => 1 + s.len() as u64 / 16,
            _ => 1,
        };
        let mut unique = 0u64;
        for &(id, times) in &active {
            let node = &graph.nodes[id as usize];
            let mut each = node.own.saturating_add(leaf);
            if node.reference {
                each = each.saturating_add(depth as u64);
            }
            if let (true, Value::String(s)) = (node.regex_format, value) {
                let escapes = s.matches("\\c").count() as u64;
                each = each.saturating_add(leaf.saturating_mul(escapes));
            }
            if node.unique && value.is_array() {
                unique = unique.saturating_add(times);
            }
            if !self.charge(times.saturating_mul(each)) {
                return false;
            }
        }
        // Hashing every item, then comparing equal hashes.
        if let Some(cap) = (self.limit - self.total).checked_div(unique) {
            if !self.charge(unique.saturating_mul(2 * weight(value, cap + 1))) {
                return false;
            }
        }
        match value {
            Value::Object(members) => {
                for (name, member) in members {
                    let mut seeds = Vec::new();
                    let name_work = 1 + name.len() as u64 / 16;
                    for &(id, times) in &active {
                        let node = &graph.nodes[id as usize];
                        let before = seeds.len();
                        if let Some(&target) = node.properties.get(name) {
                            seeds.push((target, times));
                        } else if let Some(target) = node.additional {
                            seeds.push((target, times));
                        }
                        seeds.extend(node.every_member.iter().map(|&t| (t, times)));
                        if let Some(target) = node.names {
                            let key = Value::String(name.clone());
                            if !self.visit(&key, vec![(target, times)], depth + 1) {
                                return false;
                            }
                        }
                        let routes = (seeds.len() - before) as u64 + 1;
                        if !self.charge(times.saturating_mul(routes.saturating_mul(name_work))) {
                            return false;
                        }
                    }
                    if !seeds.is_empty() && !self.visit(member, seeds, depth + 1) {
                        return false;
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let mut seeds = Vec::new();
                    for &(id, times) in &active {
                        let node = &graph.nodes[id as usize];
                        let before = seeds.len();
                        for &target in node.prefix.get(index).into_iter().flatten() {
                            seeds.push((target, times));
                        }
                        for &(from, target) in &node.items_from {
                            if index >= from {
                                seeds.push((target, times));
                            }
                        }
                        let routes = (seeds.len() - before) as u64 + 1;
                        if !self.charge(times.saturating_mul(routes)) {
                            return false;
                        }
                    }
                    if !seeds.is_empty() && !self.visit(item, seeds, depth + 1) {
                        return false;
                    }
                }
            }
            _ => {}
        }
        true
    }

    /// `seeds` with every subschema they apply in place, each with its
    /// count (paths multiply), in rank order.
    fn close(&mut self, seeds: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
        let graph = self.graph;
        for (id, times) in seeds {
            self.add(id, times);
        }
        let mut active = Vec::new();
        while let Some(Reverse((_, id))) = self.heap.pop() {
            let times = std::mem::take(&mut self.counts[id as usize]);
            active.push((id, times));
            for &(target, each) in &graph.nodes[id as usize].in_place {
                self.add(target, times.saturating_mul(each));
            }
        }
        active
    }

    fn add(&mut self, id: u32, times: u64) {
        let count = &mut self.counts[id as usize];
        if *count == 0 {
            self.heap.push(Reverse((self.graph.rank[id as usize], id)));
        }
        *count = count.saturating_add(times).max(1);
    }
}
