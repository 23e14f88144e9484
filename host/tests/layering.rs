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

// ---------------------------------------------------------------------
// Inside `server/`: the layers ARCHITECTURE.md lists.
// ---------------------------------------------------------------------

/// One import of a module of `server/` by another: where it is written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    /// The module importing (a file or folder directly under `server/`).
    from: String,
    /// The module imported.
    to: String,
    /// The file it is written in, relative to `src/`, and its line.
    file: String,
    line: usize,
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} → {}",
            self.file, self.line, self.from, self.to
        )
    }
}

/// `text` with its comments, string and character literals blanked out
/// (spaces, newlines kept), so offsets and lines stay those of the file
/// and nothing written in a comment or a string counts as a path.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < bytes.len() {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(bytes, i) {
            // r"…", r#"…"#, br#"…"#: ends at a quote and as many hashes.
            let open = i + bytes[i..].iter().position(|&b| b == b'"').unwrap() + 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = bytes[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(bytes.len(), |n| open + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(bytes.len()));
            i = j + 1;
        } else if bytes[i] == b'\'' {
            // A character literal ('x', '\n', '{'), else a lifetime ('a).
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&b| b == b'\'')
                    .map(|n| i + 3 + n)
            } else {
                let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + len) == Some(&b'\'')).then_some(i + 2 + len)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII was blanked")
}

/// The number of hashes of a raw string literal starting at `at`, if one does.
fn raw_string_start(bytes: &[u8], at: usize) -> Option<usize> {
    if at > 0 && is_ident(bytes[at - 1]) {
        return None;
    }
    let mut j = at;
    if bytes.get(j) == Some(&b'b') {
        j += 1;
    }
    if bytes.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = bytes[j..].iter().take_while(|&&b| b == b'#').count();
    (bytes.get(j + hashes) == Some(&b'"')).then_some(hashes)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end of the item that starts at `at` (after its attributes): past
/// its `;`, or past the `}` closing its first block.
fn item_end(code: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut j = at;
    while j < code.len() {
        match code[j] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => return j + 1,
            b'{' if depth == 0 => {
                let mut braces = 0usize;
                while j < code.len() {
                    match code[j] {
                        b'{' => braces += 1,
                        b'}' => {
                            braces -= 1;
                            if braces == 0 {
                                return j + 1;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                return j;
            }
            _ => {}
        }
        j += 1;
    }
    j
}

/// `code` with every `#[cfg(test)]` item blanked out, and the names of
/// the modules declared test-only in it (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = code.as_bytes().to_vec();
    let mut test_modules = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let at = from + found;
        let end = item_end(code.as_bytes(), at + "#[cfg(test)]".len());
        let item: Vec<&str> = code[at..end].split_whitespace().collect();
        if let Some(name) = item
            .iter()
            .position(|w| *w == "mod")
            .and_then(|m| item.get(m + 1))
        {
            if let Some(name) = name.strip_suffix(';') {
                test_modules.push(name.to_owned());
            }
        }
        for b in &mut out[at..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = end;
    }
    (String::from_utf8(out).unwrap(), test_modules)
}

/// The paths of a use tree starting at `at` (`a::b::{c, d::E as F}`),
/// each as its segments with the name it is brought in as when renamed,
/// and where the tree ends.
fn use_tree(
    code: &[u8],
    mut at: usize,
    prefix: &[String],
    paths: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let skip_space = |mut at: usize| {
        while at < code.len() && code[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    let word = |at: usize| {
        let end = at
            + code[at..]
                .iter()
                .take_while(|&&b| is_ident(b) || b == b'*')
                .count();
        (String::from_utf8_lossy(&code[at..end]).into_owned(), end)
    };
    let mut path = prefix.to_vec();
    loop {
        at = skip_space(at);
        if code.get(at) == Some(&b'{') {
            at += 1;
            loop {
                at = use_tree(code, at, &path, paths);
                while at < code.len() && (code[at].is_ascii_whitespace() || code[at] == b',') {
                    at += 1;
                }
                if at >= code.len() || code[at] == b'}' {
                    return at + 1;
                }
            }
        }
        let (segment, end) = word(at);
        if segment.is_empty() {
            paths.push((path, None));
            return at;
        }
        path.push(segment);
        at = skip_space(end);
        if code[at..].starts_with(b"::") {
            at += 2;
            continue;
        }
        let (next, after) = word(at);
        if next == "as" {
            let (alias, end) = word(skip_space(after));
            paths.push((path, Some(alias)));
            return end;
        }
        paths.push((path, None));
        return end;
    }
}

/// Every path in `code` that starts at `crate`, `super` or `self`,
/// resolved from module `module` (its segments from the crate's root) to
/// the crate's root, with the offset where it is written. Inline modules
/// (`mod x { … }`) are followed: `super` inside one is its parent.
fn crate_paths(code: &str, module: &[String]) -> Vec<(Vec<String>, usize)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    // The inline modules open at each point, with the brace depth they
    // opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        let boundary = at == 0 || !(is_ident(bytes[at - 1]) || bytes[at - 1] == b':');
        if !boundary || !is_ident(bytes[at]) {
            at += 1;
            continue;
        }
        let end = at + bytes[at..].iter().take_while(|&&b| is_ident(b)).count();
        let word = &code[at..end];
        if word == "mod" {
            let rest = code[end..].trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if rest[name.len()..].trim_start().starts_with('{') {
                inline.push((name, depth));
            }
        }
        if !["crate", "super", "self"].contains(&word) || !code[end..].starts_with("::") {
            at = end;
            continue;
        }
        let mut paths = Vec::new();
        let next = use_tree(bytes, at, &[], &mut paths);
        let mut here: Vec<String> = module.to_vec();
        here.extend(inline.iter().map(|(name, _)| name.clone()));
        for (path, _) in paths {
            let mut resolved = here.clone();
            let mut segments = path.into_iter().peekable();
            if segments.peek().is_some_and(|s| s == "crate") {
                resolved.clear();
                segments.next();
            }
            while let Some(s) = segments.next_if(|s| s == "super" || s == "self") {
                if s == "super" {
                    resolved.pop();
                }
            }
            resolved.extend(segments);
            found.push((resolved, at));
        }
        at = next;
    }
    found
}

/// The modules directly under `src/server/` (files and folders), and what
/// `server/mod.rs` re-exports: each name with the module it comes from.
fn server_modules(server: &Path) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(server).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && stem != "mod") {
            modules.insert(stem);
        }
    }
    let text = std::fs::read_to_string(server.join("mod.rs")).unwrap();
    let (code, test_modules) = without_tests(&code_only(&text));
    for name in test_modules {
        modules.remove(&name);
    }
    let mut reexports = BTreeMap::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("use ") {
        let at = from + found + "use ".len();
        let end = at + code[at..].find(';').expect("a use ends with ;");
        let before = code[..at - 4].trim_end();
        if before.ends_with("pub") || before.ends_with(')') {
            let mut paths = Vec::new();
            use_tree(code.as_bytes(), at, &[], &mut paths);
            for (path, alias) in paths {
                let (Some(module), Some(name)) = (path.first(), path.last()) else {
                    continue;
                };
                reexports.insert(alias.unwrap_or_else(|| name.clone()), module.clone());
            }
        }
        from = end;
    }
    (modules, reexports)
}

/// Every import of one module directly under `src/server/` by another,
/// tests excluded (`#[cfg(test)]` items, and the test-only modules they
/// declare, such as `tests.rs` and `tests/` folders).
fn server_edges(src: &Path) -> Vec<Edge> {
    let server = src.join("server");
    let (modules, reexports) = server_modules(&server);
    let mut files = rust_files(&server);
    files.sort();
    // First the test-only modules' files, from their declarations.
    let mut test_only: Vec<std::path::PathBuf> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let (_, test_modules) = without_tests(&code_only(&text));
        // Where this file's child modules live.
        let children = if file.file_stem().is_some_and(|s| s == "mod") {
            file.parent().unwrap().to_owned()
        } else {
            file.with_extension("")
        };
        for name in test_modules {
            test_only.push(children.join(format!("{name}.rs")));
            test_only.push(children.join(name));
        }
    }
    let mut edges = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(&server).unwrap();
        let parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        if parts[0] == "mod" || test_only.iter().any(|t| file.starts_with(t)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let (code, _) = without_tests(&code_only(&text));
        let mut module: Vec<String> = vec!["server".into()];
        module.extend(parts.iter().filter(|p| *p != "mod").cloned());
        let me = &parts[0];
        for (path, at) in crate_paths(&code, &module) {
            if path.first().map(String::as_str) != Some("server") {
                continue;
            }
            let Some(name) = path.get(1) else { continue };
            let to = if modules.contains(name) {
                name
            } else if let Some(module) = reexports.get(name) {
                module
            } else {
                continue;
            };
            if to != me {
                edges.insert(Edge {
                    from: me.clone(),
                    to: to.clone(),
                    file: format!("server/{}", relative.display()),
                    line: text[..at].matches('\n').count() + 1,
                });
            }
        }
    }
    edges.into_iter().collect()
}

/// The layers of `server/` as ARCHITECTURE.md lists them, lowest first:
/// the numbered list after the paragraph that starts "Inside `server/`",
/// each item's modules in backquotes before its first ": " (an item's
/// indented lines explain it).
fn server_layers() -> Vec<Vec<String>> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let doc = std::fs::read_to_string(doc).unwrap();
    let section = doc
        .split_once("\nInside `server/`")
        .expect("ARCHITECTURE.md lists the layers of server/")
        .1;
    let mut lines = section.lines().skip_while(|l| !l.starts_with("1. "));
    let mut layers = Vec::new();
    for line in lines.by_ref() {
        if line.starts_with(' ') {
            continue;
        }
        let Some((number, rest)) = line.split_once(". ") else {
            break;
        };
        assert_eq!(
            number.parse(),
            Ok(layers.len() + 1),
            "layers numbered in order: {line}"
        );
        let names = rest.split_once(": ").map_or(rest, |(names, _)| names);
        let layer: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|n| n.trim_end_matches('/').trim_end_matches(".rs").to_owned())
            .collect();
        assert!(!layer.is_empty(), "a layer names its modules: {line}");
        layers.push(layer);
    }
    assert!(layers.len() > 3, "ARCHITECTURE.md lists server/'s layers");
    layers
}

#[test]
fn server_modules_import_only_their_layer_and_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layers = server_layers();
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, layer)| layer.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let (modules, _) = server_modules(&src.join("server"));
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !layer_of.contains_key(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "ARCHITECTURE.md places no layer for {unplaced:?}"
    );
    let gone: Vec<&&str> = layer_of.keys().filter(|m| !modules.contains(**m)).collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md's layers name modules that are not in server/: {gone:?}"
    );

    let edges = server_edges(&src);
    assert!(
        edges.len() > 20,
        "the edge finder finds server's imports: {edges:?}"
    );
    let mut wrong: Vec<String> = edges
        .iter()
        .filter(|e| layer_of[e.to.as_str()] > layer_of[e.from.as_str()])
        .map(|e| {
            format!(
                "{e} (layer {} imports layer {})",
                layer_of[e.from.as_str()] + 1,
                layer_of[e.to.as_str()] + 1
            )
        })
        .collect();
    // Within a layer: no cycle.
    let mut within: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in edges
        .iter()
        .filter(|e| layer_of[e.to.as_str()] == layer_of[e.from.as_str()])
    {
        within
            .entry(e.from.clone())
            .or_default()
            .insert(e.to.clone());
    }
    let (mut done, mut told) = (BTreeSet::new(), BTreeSet::new());
    for module in within.keys() {
        if let Some(cycle) = cycle_from(&within, module, &mut Vec::new(), &mut done) {
            // Each cycle once, whichever module it was found from.
            if !told.insert(cycle.iter().cloned().collect::<BTreeSet<_>>()) {
                continue;
            }
            let at: Vec<String> = cycle
                .windows(2)
                .filter_map(|w| edges.iter().find(|e| e.from == w[0] && e.to == w[1]))
                .map(ToString::to_string)
                .collect();
            wrong.push(format!(
                "a cycle within a layer: {} ({})",
                cycle.join(" → "),
                at.join("; ")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the order of server/ (ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

/// The edge finder itself, on a small tree written for it.
#[test]
fn the_edge_finder_follows_super_crate_groups_and_reexports() {
    let root = std::env::temp_dir().join(format!("layering-{}", std::process::id()));
    let server = root.join("server");
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["call", "tasks/tests", "low"] {
        std::fs::create_dir_all(server.join(dir)).unwrap();
    }
    let files = [
        ("mod.rs", "mod call; mod low; mod shared; mod tasks;\n#[cfg(test)]\nmod tests;\npub use low::{Thing, other::Other as Renamed};\n#[cfg(test)]\npub use shared::Hidden;\n"),
        ("low/mod.rs", "pub struct Thing;\n"),
        ("shared.rs", "pub struct Server;\n"),
        ("tests.rs", "use super::shared::Server;\n"),
        (
            "call/mod.rs",
            "mod deep;\n// super::shared::Server in a comment\nconst S: &str = \"super::shared\";\nuse super::{low::Thing, Renamed};\n",
        ),
        (
            "call/deep.rs",
            "use super::super::shared::Server;\nfn f(c: char) -> bool { c == '{' }\nuse crate::server::{tasks, Thing};\n#[cfg(test)]\nmod tests {\n    use crate::server::shared;\n}\n",
        ),
        (
            "tasks/mod.rs",
            "mod inner { use super::super::low::Thing; }\n#[cfg(test)]\nmod tests;\n",
        ),
        ("tasks/tests/mod.rs", "use crate::server::shared::Server;\n"),
    ];
    for (path, text) in files {
        std::fs::write(server.join(path), text).unwrap();
    }
    let edges: Vec<String> = server_edges(&root)
        .iter()
        .map(ToString::to_string)
        .collect();
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        edges,
        [
            "server/call/deep.rs:3: call → low",
            "server/call/mod.rs:4: call → low",
            "server/call/deep.rs:1: call → shared",
            "server/call/deep.rs:3: call → tasks",
            "server/tasks/mod.rs:1: tasks → low",
        ]
    );
}
