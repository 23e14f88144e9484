//! The house rule ARCHITECTURE.md states, checked in the code: no import
//! cycle between the library's top-level parts (folders and files under
//! `src/`), tests included, and `config` below everything but the leaf
//! files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The parts `config` may use: leaves with no dependency in the host.
const BELOW_CONFIG: &[&str] = &["files", "names", "text"];

/// Each top-level part of `src/` and the parts its code names
/// (`crate::part`).
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        // The binary's own modules are not the library's parts.
        if ["main", "lib", "cli"].contains(&name.as_str()) {
            continue;
        }
        let mut names = BTreeSet::new();
        for file in rust_files(&path) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + "crate::".len()..];
                let used: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let in_doc = text[..at].rsplit('\n').next().unwrap().trim_start();
                if !used.is_empty() && used != name && !in_doc.starts_with("//") {
                    names.insert(used);
                }
            }
        }
        graph.insert(name, names);
    }
    graph
}

fn rust_files(path: &Path) -> Vec<std::path::PathBuf> {
    if path.is_file() {
        return vec![path.to_owned()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        files.extend(rust_files(&entry.unwrap().path()));
    }
    files.retain(|f| f.extension().is_some_and(|e| e == "rs"));
    files
}

/// A cycle through `part`, if there is one: the parts on it.
fn cycle_from(
    graph: &BTreeMap<String, BTreeSet<String>>,
    part: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(start) = path.iter().position(|p| p == part) {
        let mut cycle = path[start..].to_vec();
        cycle.push(part.to_owned());
        return Some(cycle);
    }
    if done.contains(part) {
        return None;
    }
    path.push(part.to_owned());
    for next in graph.get(part).into_iter().flatten() {
        if let Some(cycle) = cycle_from(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(part.to_owned());
    None
}

#[test]
fn no_import_cycle_between_parts() {
    let graph = dependencies();
    assert!(graph.contains_key("server") && graph.contains_key("config"));
    let mut done = BTreeSet::new();
    for part in graph.keys() {
        if let Some(cycle) = cycle_from(&graph, part, &mut Vec::new(), &mut done) {
            panic!("an import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn config_is_plain_data_below_everything() {
    let graph = dependencies();
    let above: Vec<&String> = graph["config"]
        .iter()
        .filter(|p| !BELOW_CONFIG.contains(&p.as_str()))
        .collect();
    assert!(above.is_empty(), "config uses {above:?}");
}
