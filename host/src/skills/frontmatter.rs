//! A `SKILL.md`'s YAML frontmatter, rendered as the JSON object the Skills
//! extension sends verbatim in every entry.
//!
//! The frontmatter is the block between a first line `---` and the next
//! line `---`. It is parsed event by event (YAML 1.2 core schema, as the
//! suite's and most hosts' parsers read it), bounded: at most
//! [`MAX_FRONTMATTER_BYTES`], nesting at most [`MAX_DEPTH`] deep, and no
//! anchors' aliases (an alias can multiply a small text into a huge value).

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::Yaml;

/// The largest frontmatter block read.
pub const MAX_FRONTMATTER_BYTES: usize = 64 << 10;

/// The deepest nesting of mappings and sequences.
pub const MAX_DEPTH: usize = 32;

/// The longest description the Agent Skills specification allows.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The frontmatter of `text` (a `SKILL.md`) as a JSON object, with a
/// non-empty string `name` and `description`; the error says what is wrong.
pub fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let block = block(text)?;
    let value =
        yaml_to_json(block).map_err(|e| format!("its frontmatter is not valid YAML: {e}"))?;
    let Value::Object(map) = value else {
        return Err("its frontmatter is not a YAML mapping".into());
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(format!("its frontmatter has no non-empty string {field:?}")),
        }
    }
    let description = map["description"].as_str().unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "its description is longer than {MAX_DESCRIPTION_CHARS} characters"
        ));
    }
    Ok(map)
}

/// The text between the opening and the closing `---` lines.
fn block(text: &str) -> Result<&str, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || "it does not begin with YAML frontmatter (a line \"---\")".to_string();
    let first_end = text.find('\n').ok_or_else(missing)?;
    if text[..first_end].trim_end_matches('\r').trim_end() != "---" {
        return Err(missing());
    }
    let body = &text[first_end + 1..];
    let mut at = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.trim_end_matches([' ', '\t']) == "---" {
            return Ok(body[..at].trim_end_matches(['\n', '\r']));
        }
        at += line.len();
        if at > MAX_FRONTMATTER_BYTES {
            return Err(format!(
                "its frontmatter is over the limit of {MAX_FRONTMATTER_BYTES} bytes"
            ));
        }
    }
    Err("its frontmatter has no closing line \"---\"".into())
}

/// One open mapping or sequence while events are turned into JSON.
enum Open {
    Map(Map<String, Value>, Option<String>),
    Seq(Vec<Value>),
}

/// A single YAML document as JSON.
fn yaml_to_json(text: &str) -> Result<Value, String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    loop {
        let (event, _) = parser.next_token().map_err(|e| e.to_string())?;
        let value = match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentStart | Event::DocumentEnd | Event::Nothing => {
                if root.is_some() && matches!(event, Event::DocumentStart) {
                    return Err("more than one document".into());
                }
                continue;
            }
            Event::Alias(_) => return Err("aliases (*name) are not accepted".into()),
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("nested more than {MAX_DEPTH} deep"));
                }
                stack.push(if matches!(event, Event::MappingStart(..)) {
                    Open::Map(Map::new(), None)
                } else {
                    Open::Seq(Vec::new())
                });
                continue;
            }
            Event::MappingEnd => match stack.pop() {
                Some(Open::Map(map, _)) => Value::Object(map),
                _ => return Err("unbalanced mapping".into()),
            },
            Event::SequenceEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                _ => return Err("unbalanced sequence".into()),
            },
            Event::Scalar(text, style, _, tag) => scalar(text, style, tag.is_some()),
        };
        match stack.last_mut() {
            None => root = Some(value),
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(map, key)) => match key.take() {
                None => *key = Some(key_text(value)?),
                Some(k) => {
                    if map.contains_key(&k) {
                        let k = crate::text::excerpt(&k);
                        return Err(format!("the key {k:?} appears twice"));
                    }
                    map.insert(k, value);
                }
            },
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

/// A scalar: quoted (or tagged) ones are strings, plain ones resolved by
/// the core schema (null, booleans, numbers).
fn scalar(text: String, style: TScalarStyle, tagged: bool) -> Value {
    if style != TScalarStyle::Plain || tagged {
        return Value::String(text);
    }
    match Yaml::from_str(&text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or(Value::String(text), Value::Number),
        _ => Value::String(text),
    }
}

/// A mapping key as a JSON key.
fn key_text(key: Value) -> Result<String, String> {
    match key {
        Value::String(s) => Ok(s),
        Value::Null => Ok("null".into()),
        Value::Bool(_) | Value::Number(_) => Ok(key.to_string()),
        _ => Err("a mapping key is not a scalar".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_frontmatter_verbatim() {
        let text = "---\nname: pdf\ndescription: \"Fill: forms\"\nlicense: MIT\nmetadata:\n  version: 2.1\n  tags: [a, b]\n  on: yes\n  n: 3\n  none: ~\n---\n# Body\n";
        let map = parse(text).unwrap();
        assert_eq!(
            Value::Object(map),
            json!({"name": "pdf", "description": "Fill: forms", "license": "MIT",
                   "metadata": {"version": 2.1, "tags": ["a", "b"], "on": "yes", "n": 3, "none": null}})
        );
        let crlf = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody";
        assert_eq!(parse(crlf).unwrap()["name"], "a");
    }

    #[test]
    fn refuses_what_is_not_frontmatter() {
        for (text, says) in [
            ("# no frontmatter\n", "does not begin"),
            ("---\nname: a\ndescription: b\n", "no closing"),
            ("---\nname: a\n---\n", "\"description\""),
            ("---\nname: ''\ndescription: b\n---\n", "\"name\""),
            ("---\n- a\n---\n", "not a YAML mapping"),
            ("---\nname: [a\ndescription: b\n---\n", "not valid YAML"),
            (
                "---\na: &x [1]\nb: *x\nname: a\ndescription: b\n---\n",
                "aliases",
            ),
            (
                "---\nname: a\nname: b\ndescription: c\n---\n",
                "appears twice",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        let deep = format!(
            "---\nname: a\ndescription: b\nx: {}{}\n---\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse(&deep).unwrap_err().contains("nested"));
        let long = format!(
            "---\nname: a\ndescription: b\nx: \"{}\"\n---\n",
            "y".repeat(MAX_FRONTMATTER_BYTES)
        );
        assert!(parse(&long).unwrap_err().contains("over the limit"));
    }
}
