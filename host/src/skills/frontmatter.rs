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

/// Why a `SKILL.md`'s frontmatter is refused.
#[derive(Debug, thiserror::Error)]
pub enum FrontmatterError {
    /// The first line is not `---`.
    #[error("it does not begin with YAML frontmatter (a line \"---\")")]
    Missing,
    /// No closing line within [`MAX_FRONTMATTER_BYTES`].
    #[error("its frontmatter is over the limit of {MAX_FRONTMATTER_BYTES} bytes")]
    TooLarge,
    /// No closing line `---`.
    #[error("its frontmatter has no closing line \"---\"")]
    Unclosed,
    /// The block is not YAML this reader accepts.
    #[error("its frontmatter is not valid YAML: {0}")]
    Yaml(#[from] YamlError),
    /// The block is YAML but not a mapping.
    #[error("its frontmatter is not a YAML mapping")]
    NotMapping,
    /// A required field is absent, empty or not a string.
    #[error("its frontmatter has no non-empty string {0:?}")]
    NoField(&'static str),
    /// The description is over [`MAX_DESCRIPTION_CHARS`].
    #[error("its description is longer than {MAX_DESCRIPTION_CHARS} characters")]
    LongDescription,
}

/// Why a frontmatter block is not YAML this reader accepts.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// The YAML parser's own error.
    #[error("{0}")]
    Syntax(#[from] yaml_rust2::ScanError),
    /// A second document.
    #[error("more than one document")]
    Documents,
    /// An alias (`*name`).
    #[error("aliases (*name) are not accepted")]
    Alias,
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("nested more than {MAX_DEPTH} deep")]
    TooDeep,
    /// A mapping's end without its start.
    #[error("unbalanced mapping")]
    UnbalancedMapping,
    /// A sequence's end without its start.
    #[error("unbalanced sequence")]
    UnbalancedSequence,
    /// A key given twice (quoted in part).
    #[error("the key {0:?} appears twice")]
    DuplicateKey(String),
    /// A mapping or sequence used as a key.
    #[error("a mapping key is not a scalar")]
    KeyNotScalar,
}

/// The frontmatter of `text` (a `SKILL.md`) as a JSON object, with a
/// non-empty string `name` and `description`; the error says what is wrong.
pub fn parse(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let block = block(text)?;
    let Value::Object(map) = yaml_to_json(block)? else {
        return Err(FrontmatterError::NotMapping);
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => {}
            _ => return Err(FrontmatterError::NoField(field)),
        }
    }
    let description = map["description"].as_str().unwrap_or_default();
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(FrontmatterError::LongDescription);
    }
    Ok(map)
}

/// The text between the opening and the closing `---` lines.
fn block(text: &str) -> Result<&str, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').ok_or(FrontmatterError::Missing)?;
    if text[..first_end].trim_end_matches('\r').trim_end() != "---" {
        return Err(FrontmatterError::Missing);
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
            return Err(FrontmatterError::TooLarge);
        }
    }
    Err(FrontmatterError::Unclosed)
}

/// One open mapping or sequence while events are turned into JSON.
enum Open {
    Map(Map<String, Value>, Option<String>),
    Seq(Vec<Value>),
}

/// A single YAML document as JSON.
fn yaml_to_json(text: &str) -> Result<Value, YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Value> = None;
    loop {
        let (event, _) = parser.next_token()?;
        let value = match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentStart | Event::DocumentEnd | Event::Nothing => {
                if root.is_some() && matches!(event, Event::DocumentStart) {
                    return Err(YamlError::Documents);
                }
                continue;
            }
            Event::Alias(_) => return Err(YamlError::Alias),
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(YamlError::TooDeep);
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
                _ => return Err(YamlError::UnbalancedMapping),
            },
            Event::SequenceEnd => match stack.pop() {
                Some(Open::Seq(items)) => Value::Array(items),
                _ => return Err(YamlError::UnbalancedSequence),
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
                        return Err(YamlError::DuplicateKey(crate::text::excerpt(&k)));
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
fn key_text(key: Value) -> Result<String, YamlError> {
    match key {
        Value::String(s) => Ok(s),
        Value::Null => Ok("null".into()),
        Value::Bool(_) | Value::Number(_) => Ok(key.to_string()),
        _ => Err(YamlError::KeyNotScalar),
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
            let e = parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        let deep = format!(
            "---\nname: a\ndescription: b\nx: {}{}\n---\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(parse(&deep).unwrap_err().to_string().contains("nested"));
        let long = format!(
            "---\nname: a\ndescription: b\nx: \"{}\"\n---\n",
            "y".repeat(MAX_FRONTMATTER_BYTES)
        );
        assert!(parse(&long)
            .unwrap_err()
            .to_string()
            .contains("over the limit"));
    }
}
