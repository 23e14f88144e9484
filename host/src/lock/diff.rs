//! What differs between a plugin's lock entry and what it is now, as
//! lines a person reads: each change named, the locked and the new text
//! one above the other.

use super::record::{Definition, Entry};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The most lines one plugin's diff holds; the rest are counted.
pub const MAX_LINES: usize = 400;

/// The most places named in one changed schema.
const MAX_PATHS: usize = 8;

/// How many characters before the first difference a long text shows.
const CONTEXT_CHARS: usize = 60;

/// `locked` and `now` as excerpts that start shortly before where they
/// first differ (`…` marking what is left out), so that a change deep in a
/// long description shows.
pub(super) fn around_difference(locked: &str, now: &str) -> (String, String) {
    let same = locked
        .chars()
        .zip(now.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let skip = same.saturating_sub(CONTEXT_CHARS);
    let cut = |text: &str| {
        let rest: String = text.chars().skip(skip).collect();
        let shown = crate::text::excerpt(&rest);
        if skip > 0 {
            format!("…{shown}")
        } else {
            shown
        }
    };
    (cut(locked), cut(now))
}

/// The lines saying how `now` differs from `locked`; empty when it does
/// not.
pub fn diff(locked: &Entry, now: &Entry) -> Vec<String> {
    let mut out = Lines::default();
    if locked.source != now.source {
        out.change("source changed", &locked.source, &now.source);
    }
    if locked.component != now.component {
        let heading = if locked.same_definitions(now) {
            "component digest changed, definitions identical"
        } else {
            "component digest changed"
        };
        out.change(heading, &locked.component, &now.component);
    }
    if locked.signer != now.signer {
        out.change("signer changed", &locked.signer, &now.signer);
    }
    asks(&mut out, &locked.asks, &now.asks);
    definitions(&mut out, "tool", &locked.tools, &now.tools);
    definitions(&mut out, "prompt", &locked.prompts, &now.prompts);
    definitions(&mut out, "resource", &locked.resources, &now.resources);
    definitions(&mut out, "template", &locked.templates, &now.templates);
    out.done()
}

/// Diff lines, bounded by [`MAX_LINES`].
#[derive(Default)]
struct Lines {
    lines: Vec<String>,
    left_out: usize,
}

impl Lines {
    fn push(&mut self, line: String) {
        if self.lines.len() < MAX_LINES {
            self.lines.push(line);
        } else {
            self.left_out += 1;
        }
    }

    /// A heading, then the locked and the new value one above the other.
    fn change(&mut self, heading: &str, locked: &str, now: &str) {
        let (locked, now) = around_difference(locked, now);
        self.push(heading.to_owned());
        self.push(format!("  locked: {locked}"));
        self.push(format!("  now:    {now}"));
    }

    fn done(mut self) -> Vec<String> {
        if self.left_out > 0 {
            self.lines
                .push(format!("… and {} more lines", self.left_out));
        }
        self.lines
    }
}

/// The grants asked for that were added (`+`) or dropped (`-`).
fn asks(out: &mut Lines, locked: &crate::config::Manifest, now: &crate::config::Manifest) {
    let mut changes = Vec::new();
    let lists = [
        ("host", &locked.hosts, &now.hosts),
        ("env", &locked.env, &now.env),
    ];
    for (what, old, new) in lists {
        let (old, new): (BTreeSet<_>, BTreeSet<_>) = (old.iter().collect(), new.iter().collect());
        changes.extend(new.difference(&old).map(|v| format!("+ {what} {v}")));
        changes.extend(old.difference(&new).map(|v| format!("- {what} {v}")));
    }
    for (root, mode) in &now.roots {
        match locked.roots.get(root) {
            None => changes.push(format!("+ root {root} ({mode})")),
            Some(old) if old != mode => changes.push(format!("~ root {root} ({old} → {mode})")),
            Some(_) => {}
        }
    }
    for (root, mode) in &locked.roots {
        if !now.roots.contains_key(root) {
            changes.push(format!("- root {root} ({mode})"));
        }
    }
    if locked.keyvalue != now.keyvalue {
        let sign = if now.keyvalue { '+' } else { '-' };
        changes.push(format!("{sign} keyvalue"));
    }
    if changes.is_empty() {
        return;
    }
    out.push("grants asked for changed (manifest):".to_owned());
    for change in changes {
        out.push(format!("  {}", crate::text::excerpt(&change)));
    }
}

/// The definitions of one kind added, removed or changed.
fn definitions(
    out: &mut Lines,
    kind: &str,
    locked: &BTreeMap<String, Definition>,
    now: &BTreeMap<String, Definition>,
) {
    let keys: BTreeSet<&String> = locked.keys().chain(now.keys()).collect();
    for key in keys {
        let name = format!("{kind} {}", crate::text::excerpt(key));
        match (locked.get(key), now.get(key)) {
            (Some(old), None) => {
                out.push(format!("{name}: removed"));
                out.push(format!("  locked: {}", about(&old.definition)));
            }
            (None, Some(new)) => {
                out.push(format!("{name}: added"));
                out.push(format!("  now:    {}", about(&new.definition)));
            }
            (Some(old), Some(new)) if old.digest != new.digest => {
                fields(out, &name, &old.definition, &new.definition)
            }
            _ => {}
        }
    }
}

/// Each field of one definition that changed.
fn fields(out: &mut Lines, name: &str, old: &Value, new: &Value) {
    let empty = serde_json::Map::new();
    let old_fields = old.as_object().unwrap_or(&empty);
    let new_fields = new.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = old_fields.keys().chain(new_fields.keys()).collect();
    for key in keys {
        let (a, b) = (old_fields.get(key), new_fields.get(key));
        if a == b {
            continue;
        }
        let mut heading = format!("{name}: {} changed", crate::text::excerpt(key));
        if key.ends_with("Schema") {
            let mut paths = Vec::new();
            places(
                a.unwrap_or(&Value::Null),
                b.unwrap_or(&Value::Null),
                "",
                &mut paths,
            );
            if !paths.is_empty() {
                heading.push_str(&format!(" at {}", paths.join(", ")));
            }
        }
        out.change(&heading, &shown(a), &shown(b));
    }
}

/// The JSON pointers where `a` and `b` differ, at most [`MAX_PATHS`].
fn places(a: &Value, b: &Value, at: &str, paths: &mut Vec<String>) {
    if a == b || paths.len() > MAX_PATHS {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let next = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                places(
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                    &next,
                    paths,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                places(p, q, &format!("{at}/{i}"), paths);
            }
        }
        _ => {
            if paths.len() == MAX_PATHS {
                paths.push("…".to_owned());
            } else {
                paths.push(crate::text::excerpt(if at.is_empty() { "/" } else { at }));
            }
        }
    }
}

/// A field's value as shown: text as itself, anything else as JSON.
fn shown(value: Option<&Value>) -> String {
    match value {
        None => "(none)".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A definition in a few words: its description, else its JSON.
fn about(definition: &Value) -> String {
    match definition.get("description") {
        Some(Value::String(s)) => crate::text::excerpt(s),
        _ => crate::text::excerpt(&definition.to_string()),
    }
}
