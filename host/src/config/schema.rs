//! The config file's JSON Schema, derived from the config types (so it
//! cannot drift from what the host accepts), and a check of a TOML text
//! against it that finds every unknown key, wrong type and bad value at
//! once, each with its key path and line.

use serde_json::Value;
use std::collections::BTreeSet;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The JSON Schema (draft 2020-12) of the config file.
pub fn schema() -> Value {
    titled::<super::Config>("wasm-mcp config file (wasm-mcp.toml)")
}

/// The JSON Schema of a plugin's manifest (`<plugin>.toml`).
pub fn manifest_schema() -> Value {
    titled::<super::Manifest>("wasm-mcp plugin manifest (<plugin>.toml)")
}

/// `T`'s schema, with a title for editors to show.
fn titled<T: schemars::JsonSchema>(title: &str) -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), title.into());
    }
    schema
}

/// Every problem of the config text's shape: keys the host does not know,
/// values of the wrong type, words not among those allowed, required keys
/// missing. Each is `line N: key.path: what is wrong`; the first
/// 100 by line, then a count of the rest. Empty when the text
/// is not TOML (the parser says why) or has none.
pub fn shape_problems(text: &str) -> Vec<String> {
    let Ok(table) = DeTable::parse(text) else {
        return Vec::new();
    };
    let schema = schema();
    let mut walk = Walk {
        root: &schema,
        text,
        problems: Vec::new(),
    };
    walk.table(table.get_ref(), table.span(), &schema, "");
    walk.problems.sort();
    let more = walk.problems.len().saturating_sub(MAX_PROBLEMS);
    let mut problems: Vec<String> = walk
        .problems
        .into_iter()
        .take(MAX_PROBLEMS)
        .map(|(_, problem)| problem)
        .collect();
    if more > 0 {
        problems.push(format!("... and {more} more problems"));
    }
    problems
}

/// The most problems listed; the rest are counted.
const MAX_PROBLEMS: usize = 100;

/// The deepest key path walked.
const MAX_DEPTH: usize = 32;

struct Walk<'a> {
    root: &'a Value,
    text: &'a str,
    /// Each with its line, to sort by.
    problems: Vec<(usize, String)>,
}

impl<'a> Walk<'a> {
    /// `schema` with `$ref`s followed (to `#/$defs/NAME`).
    fn resolve(&self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..16 {
            let Some(name) = schema
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
            else {
                break;
            };
            match self.root.pointer(&format!("/$defs/{name}")) {
                Some(target) => schema = target,
                None => break,
            }
        }
        schema
    }

    fn report(&mut self, span: std::ops::Range<usize>, path: &str, what: String) {
        let line = self.text[..span.start.min(self.text.len())]
            .matches('\n')
            .count()
            + 1;
        let path = if path.is_empty() { "(top)" } else { path };
        self.problems
            .push((line, format!("line {line}: {path}: {what}")));
    }

    fn value(&mut self, value: &Spanned<DeValue>, schema: &'a Value, path: &str) {
        // The schema is a few tables deep; a value nested deeper than any
        // it describes was refused above, or is not looked into.
        if path.matches(['.', '[']).count() > MAX_DEPTH {
            return;
        }
        let schema = self.resolve(schema);
        let span = value.span();
        for key in ["anyOf", "oneOf"] {
            if let Some(choices) = schema.get(key).and_then(Value::as_array) {
                return self.choice(value, choices, path);
            }
        }
        if !kind_allowed(schema, value.get_ref()) {
            let expected = expected(self, schema);
            let found = kind_name(value.get_ref());
            return self.report(
                span,
                path,
                format!("invalid type: expected {expected}, found {found}"),
            );
        }
        if let Some(words) = allowed_words(schema) {
            if let DeValue::String(s) = value.get_ref() {
                if !words.contains(s.as_ref()) {
                    let list = quoted_list(&words);
                    return self.report(span, path, format!("{s:?} is not one of {list}"));
                }
            }
        }
        match value.get_ref() {
            DeValue::Integer(int) => self.integer(int, schema, span, path),
            DeValue::Table(table) => self.table(table, span, schema, path),
            DeValue::Array(items) => {
                let item_schema = schema.get("items").unwrap_or(&Value::Bool(true));
                for (i, item) in items.iter().enumerate() {
                    self.value(item, item_schema, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    /// A value that must match one of `choices` (an `Option`, an untagged
    /// enum, an enum whose words are documented one by one).
    fn choice(&mut self, value: &Spanned<DeValue>, choices: &'a [Value], path: &str) {
        let mut fitting = Vec::new();
        for choice in choices {
            let resolved = self.resolve(choice);
            let mut trial = Walk {
                root: self.root,
                text: self.text,
                problems: Vec::new(),
            };
            trial.value(value, resolved, path);
            if trial.problems.is_empty() {
                return;
            }
            if kind_allowed(resolved, value.get_ref()) {
                fitting.push(trial.problems);
            }
        }
        // One choice of the right kind: its own problems say the most.
        if fitting.len() == 1 {
            self.problems.extend(fitting.pop().unwrap_or_default());
            return;
        }
        let words: BTreeSet<&str> = choices
            .iter()
            .filter_map(|c| self.resolve(c).get("const").and_then(Value::as_str))
            .collect();
        let span = value.span();
        if !words.is_empty() && words.len() == choices.len() {
            let found = match value.get_ref() {
                DeValue::String(s) => format!("{s:?}"),
                other => kind_name(other).to_owned(),
            };
            let list = quoted_list(&words);
            return self.report(span, path, format!("{found} is not one of {list}"));
        }
        let expected: Vec<String> = choices
            .iter()
            .map(|c| expected(self, self.resolve(c)))
            .filter(|e| e != "nothing")
            .collect();
        let found = kind_name(value.get_ref());
        self.report(
            span,
            path,
            format!(
                "invalid type: expected {}, found {found}",
                expected.join(" or ")
            ),
        );
    }

    fn integer(
        &mut self,
        int: &toml::de::DeInteger,
        schema: &Value,
        span: std::ops::Range<usize>,
        path: &str,
    ) {
        let digits = int.as_str().replace('_', "");
        let Ok(n) = i128::from_str_radix(&digits, int.radix()) else {
            return self.report(span, path, format!("{} is not a number", int.as_str()));
        };
        let min = schema.get("minimum").and_then(Value::as_f64);
        let max = match schema.get("format").and_then(Value::as_str) {
            Some("uint8") => Some(u8::MAX as i128),
            Some("uint16") => Some(u16::MAX as i128),
            Some("uint32") => Some(u32::MAX as i128),
            Some("uint64" | "uint") => Some(i64::MAX as i128),
            Some("int32") => Some(i32::MAX as i128),
            _ => None,
        };
        if min.is_some_and(|m| (n as f64) < m) || max.is_some_and(|m| n > m) {
            let range = match (min, max) {
                (Some(lo), Some(hi)) if hi < i64::MAX as i128 => format!("from {lo} to {hi}"),
                (Some(lo), _) => format!("at least {lo}"),
                (None, Some(hi)) => format!("at most {hi}"),
                (None, None) => String::new(),
            };
            self.report(span, path, format!("{n} is out of range: {range}"));
        }
    }

    fn table(
        &mut self,
        table: &DeTable,
        span: std::ops::Range<usize>,
        schema: &'a Value,
        path: &str,
    ) {
        let schema = self.resolve(schema);
        let properties = schema.get("properties").and_then(Value::as_object);
        let extra = schema.get("additionalProperties");
        for (key, value) in table.iter() {
            let name = key.get_ref().as_ref();
            let at = if path.is_empty() {
                toml_key(name)
            } else {
                format!("{path}.{}", toml_key(name))
            };
            if let Some(field) = properties.and_then(|p| p.get(name)) {
                self.value(value, field, &at);
            } else {
                match extra {
                    Some(Value::Bool(false)) => {
                        let known: BTreeSet<&str> = properties
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        let closest = known
                            .iter()
                            .map(|k| (strsim::jaro_winkler(name, k), *k))
                            .filter(|(score, _)| *score > 0.8)
                            .max_by(|a, b| a.0.total_cmp(&b.0));
                        let hint = match closest {
                            Some((_, k)) => format!("did you mean {k}?"),
                            None if known.is_empty() => "it takes no keys".to_owned(),
                            None => format!(
                                "known here: {}",
                                known.into_iter().collect::<Vec<_>>().join(", ")
                            ),
                        };
                        self.report(key.span(), &at, format!("unknown field ({hint})"));
                    }
                    Some(field @ Value::Object(_)) => self.value(value, field, &at),
                    _ => {}
                }
            }
        }
        for required in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if table.get(required).is_none() {
                let at = if path.is_empty() {
                    required.to_owned()
                } else {
                    format!("{path}.{required}")
                };
                self.report(span.clone(), &at, "missing field".into());
            }
        }
    }
}

/// A key as it is written in a dotted path: bare when it can be.
fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        name.to_owned()
    } else {
        format!("{name:?}")
    }
}

/// The words a string may be (`enum` or `const`), if it is limited to some.
fn allowed_words(schema: &Value) -> Option<BTreeSet<&str>> {
    if let Some(word) = schema.get("const").and_then(Value::as_str) {
        return Some([word].into());
    }
    let words = schema.get("enum")?.as_array()?;
    Some(words.iter().filter_map(Value::as_str).collect())
}

fn quoted_list(words: &BTreeSet<&str>) -> String {
    words
        .iter()
        .map(|w| format!("{w:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON Schema types `value` may have.
fn kinds(value: &DeValue) -> &'static [&'static str] {
    match value {
        DeValue::String(_) => &["string"],
        DeValue::Integer(_) => &["integer", "number"],
        DeValue::Float(_) => &["number"],
        DeValue::Boolean(_) => &["boolean"],
        DeValue::Datetime(_) => &["string"],
        DeValue::Array(_) => &["array"],
        DeValue::Table(_) => &["object"],
    }
}

fn kind_name(value: &DeValue) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Whether the schema's `type` (or `const`) admits a value of this kind;
/// a schema that names no type admits any.
fn kind_allowed(schema: &Value, value: &DeValue) -> bool {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => match schema.get("const") {
            Some(Value::String(_)) => vec!["string"],
            Some(Value::Bool(_)) => vec!["boolean"],
            _ => return true,
        },
    };
    kinds(value).iter().any(|k| types.contains(k))
}

/// What a schema wants, in words.
fn expected(walk: &Walk, schema: &Value) -> String {
    let schema = walk.resolve(schema);
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let words: Vec<&str> = types
        .iter()
        .filter_map(|t| match *t {
            "string" => Some("a string"),
            "integer" => Some("an integer"),
            "number" => Some("a number"),
            "boolean" => Some("a boolean"),
            "array" => Some("an array"),
            "object" => Some("a table"),
            _ => None,
        })
        .collect();
    if words.is_empty() {
        if let Some(word) = schema.get("const").and_then(Value::as_str) {
            return format!("{word:?}");
        }
        return "nothing".to_owned();
    }
    words.join(" or ")
}

#[cfg(test)]
mod tests;
