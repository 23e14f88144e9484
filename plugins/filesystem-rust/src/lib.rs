//! The tools of the reference server `@modelcontextprotocol/server-filesystem`,
//! as a sandboxed component: the same names, arguments, schemas and result
//! texts, over the folders the host grants (its preopens, at
//! `/<root name>`). Reading files (as text, several at once, as media),
//! writing and editing them (with a unified diff), making folders,
//! listing (with sizes, as a tree), moving, searching with globs, file
//! information and the list of allowed folders.
//!
//! The tools' descriptions (`meta.rs`) and schemas (`schemas.json`) are
//! the reference's own. Paths outside the roots are refused with the
//! reference's words; what keeps them out is the sandbox itself (see
//! `roots`).

mod diff;
mod meta;
mod roots;
mod text;

use base64::Engine as _;
use globset::{GlobBuilder, GlobMatcher};
use roots::Roots;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fs;
use std::io::{ErrorKind, Read as _};
use wasm_mcp_sdk::prelude::*;

/// The largest file a tool reads whole, so that a huge file is a clear
/// error rather than an exhausted instance.
const MAX_READ_BYTES: u64 = 32 << 20;

/// A tool's outcome: its text (also its structured `content`), or the
/// message of its failure.
type Answer = Result<String, String>;

fn text_result(answer: Answer) -> CallResult {
    match answer {
        Ok(content) => CallResult {
            structured_content: Some(json!({ "content": content }).to_string()),
            content: vec![text(content)],
            is_error: false,
            meta: None,
        },
        Err(message) => error_result(message),
    }
}

/// Arguments parsed for one tool; a mismatch is a tool error, as in the
/// reference (whose validator words it differently).
fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    serde_json::from_value(args)
        .map_err(|e| format!("Input validation error: Invalid arguments for tool {tool}: {e}"))
}

/// Reads at most [`MAX_READ_BYTES`] of file `path`. Each file operation
/// is a trip to the host's file threads, so this makes as few as it can:
/// no `stat` (a folder fails at its first read), reads until one returns
/// nothing.
fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    let mut file = fs::File::open(path).map_err(|e| text::io_error(&e, "open", path))?;
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 256 << 10];
    loop {
        let n = match file.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::IsADirectory => {
                return Err("EISDIR: illegal operation on a directory, read".to_owned())
            }
            Err(e) => return Err(text::io_error(&e, "read", path)),
        };
        if n == 0 {
            return Ok(data);
        }
        data.extend_from_slice(&chunk[..n]);
        if data.len() as u64 > MAX_READ_BYTES {
            return Err(format!(
                "{path} is larger than {} MiB, the most this plugin reads",
                MAX_READ_BYTES >> 20
            ));
        }
    }
}

fn read_text(path: &str) -> Result<String, String> {
    Ok(String::from_utf8_lossy(&read_bytes(path)?).into_owned())
}

/// Writes `content` to `path` whole: created if new, else written beside it
/// and renamed over it, so a reader never sees half of it.
fn write_text(path: &str, content: &str) -> Result<(), String> {
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(mut file) => {
            use std::io::Write as _;
            file.write_all(content.as_bytes())
                .map_err(|e| text::io_error(&e, "write", path))
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => replace(path, content),
        Err(e) => Err(text::io_error(&e, "open", path)),
    }
}

fn replace(path: &str, content: &str) -> Result<(), String> {
    let hex: String = wasi::random::random::get_random_bytes(16)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let temporary = format!("{path}.{hex}.tmp");
    let written = fs::write(&temporary, content)
        .map_err(|e| text::io_error(&e, "open", &temporary))
        .and_then(|()| {
            fs::rename(&temporary, path)
                .map_err(|e| text::io_error(&e, "rename", &format!("{temporary}' -> '{path}")))
        });
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

#[derive(Deserialize)]
struct ReadText {
    path: String,
    tail: Option<f64>,
    head: Option<f64>,
}

fn read_text_file(roots: &Roots, args: ReadText) -> Answer {
    let path = roots.resolve(&args.path)?;
    let truthy = |n: Option<f64>| n.filter(|n| *n != 0.0 && !n.is_nan());
    let (head, tail) = (truthy(args.head), truthy(args.tail));
    if head.is_some() && tail.is_some() {
        return Err("Cannot specify both head and tail parameters simultaneously".to_owned());
    }
    let content = read_text(&path)?;
    if let Some(tail) = tail {
        let content = content.replace("\r\n", "\n");
        if tail < 0.0 {
            return Ok(String::new());
        }
        let lines: Vec<&str> = content.split('\n').collect();
        let keep = (tail.trunc() as usize).min(lines.len());
        return Ok(lines[lines.len() - keep..].join("\n"));
    }
    if let Some(head) = head {
        if head < 0.0 {
            return Ok(String::new());
        }
        let mut lines: Vec<&str> = content.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        let keep = (head.ceil() as usize).min(lines.len());
        return Ok(lines[..keep].join("\n"));
    }
    Ok(content)
}

#[derive(Deserialize)]
struct OnePath {
    path: String,
}

fn media_type(path: &str) -> &'static str {
    let extension = path
        .rsplit_once('.')
        .filter(|(stem, _)| !stem.ends_with('/') && !stem.is_empty())
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "svg" => "image/svg+xml",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" => "audio/ogg",
        "flac" => "audio/flac",
        _ => "application/octet-stream",
    }
}

/// `file://` and the path, with what a URL cannot hold `%`-escaped.
fn file_url(path: &str) -> String {
    let mut url = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

fn read_media_file(roots: &Roots, args: OnePath) -> CallResult {
    let found = roots.resolve(&args.path).and_then(|path| {
        let data = read_bytes(&path)?;
        Ok((path, data))
    });
    let (path, data) = match found {
        Ok(found) => found,
        Err(message) => return error_result(message),
    };
    let mime = media_type(&path);
    let base64 = base64::engine::general_purpose::STANDARD.encode(&data);
    let (item, shown) = if let Some(kind) = ["image", "audio"]
        .into_iter()
        .find(|kind| mime.starts_with(&format!("{kind}/")))
    {
        let item = json!({ "type": kind, "data": base64, "mimeType": mime });
        let content = if kind == "image" {
            image(data, mime)
        } else {
            audio(data, mime)
        };
        (item, content)
    } else {
        let uri = file_url(&path);
        let item = json!({ "type": "resource", "resource": { "uri": uri, "mimeType": mime, "blob": base64 } });
        (
            item,
            embedded(ResourceContents::blob(uri, Some(mime), data)),
        )
    };
    CallResult {
        content: vec![shown],
        structured_content: Some(json!({ "content": [item] }).to_string()),
        is_error: false,
        meta: None,
    }
}

#[derive(Deserialize)]
struct ManyPaths {
    paths: Vec<String>,
}

fn read_multiple_files(roots: &Roots, args: ManyPaths) -> Answer {
    if args.paths.is_empty() {
        return Err("At least one file path must be provided".to_owned());
    }
    let parts: Vec<String> = args
        .paths
        .iter()
        .map(
            |requested| match roots.resolve(requested).and_then(|p| read_text(&p)) {
                Ok(content) => format!("{requested}:\n{content}\n"),
                Err(message) => format!("{requested}: Error - {message}"),
            },
        )
        .collect();
    Ok(parts.join("\n---\n"))
}

#[derive(Deserialize)]
struct Write {
    path: String,
    content: String,
}

fn write_file(roots: &Roots, args: Write) -> Answer {
    let path = roots.resolve_for_change(&args.path)?;
    write_text(&path, &args.content)?;
    Ok(format!("Successfully wrote to {}", args.path))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Edit {
    old_text: String,
    new_text: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditFile {
    path: String,
    edits: Vec<Edit>,
    #[serde(default)]
    dry_run: bool,
}

fn leading_space(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `content` with `edit` applied: the first exact occurrence, else the
/// first run of lines equal to the old text's lines but for surrounding
/// whitespace (re-indented as the reference does).
fn apply_edit(content: &str, edit: &Edit) -> Result<String, String> {
    let old = edit.old_text.replace("\r\n", "\n");
    let new = edit.new_text.replace("\r\n", "\n");
    if content.contains(&old) {
        return Ok(content.replacen(&old, &new, 1));
    }
    let old_lines: Vec<&str> = old.split('\n').collect();
    let mut lines: Vec<String> = content.split('\n').map(str::to_owned).collect();
    if old_lines.len() <= lines.len() {
        for i in 0..=lines.len() - old_lines.len() {
            let matches = old_lines
                .iter()
                .zip(&lines[i..i + old_lines.len()])
                .all(|(o, c)| o.trim() == c.trim());
            if !matches {
                continue;
            }
            let indent = leading_space(&lines[i]).to_owned();
            let replaced: Vec<String> = new
                .split('\n')
                .enumerate()
                .map(|(j, line)| {
                    if j == 0 {
                        return format!("{indent}{}", line.trim_start());
                    }
                    let old_indent = old_lines.get(j).map_or("", |l| leading_space(l));
                    let new_indent = leading_space(line);
                    if !old_indent.is_empty() && !new_indent.is_empty() {
                        let extra = new_indent.len().saturating_sub(old_indent.len());
                        format!("{indent}{}{}", " ".repeat(extra), line.trim_start())
                    } else {
                        line.to_owned()
                    }
                })
                .collect();
            lines.splice(i..i + old_lines.len(), replaced);
            return Ok(lines.join("\n"));
        }
    }
    Err(format!(
        "Could not find exact match for edit:\n{}",
        edit.old_text
    ))
}

fn edit_file(roots: &Roots, args: EditFile) -> Answer {
    let path = if args.dry_run {
        roots.resolve(&args.path)?
    } else {
        roots.resolve_for_change(&args.path)?
    };
    let content = read_text(&path)?.replace("\r\n", "\n");
    let mut changed = content.clone();
    for edit in &args.edits {
        changed = apply_edit(&changed, edit)?;
    }
    let diff = diff::unified(&path, &content, &changed);
    let mut fence = 3;
    while diff.contains(&"`".repeat(fence)) {
        fence += 1;
    }
    let fence = "`".repeat(fence);
    if !args.dry_run {
        replace(&path, &changed)?;
    }
    Ok(format!("{fence}diff\n{diff}{fence}\n\n"))
}

fn create_directory(roots: &Roots, args: OnePath) -> Answer {
    let path = roots.resolve_for_change(&args.path)?;
    fs::create_dir_all(&path).map_err(|e| text::io_error(&e, "mkdir", &path))?;
    Ok(format!("Successfully created directory {}", args.path))
}

/// A folder's entries (name, whether a folder, not following symlinks),
/// by name as Node's `readdir` gives them.
fn entries(path: &str) -> Result<Vec<(String, bool)>, String> {
    let mut found = Vec::new();
    for entry in fs::read_dir(path).map_err(|e| text::io_error(&e, "scandir", path))? {
        let entry = entry.map_err(|e| text::io_error(&e, "scandir", path))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        found.push((entry.file_name().to_string_lossy().into_owned(), is_dir));
    }
    found.sort();
    Ok(found)
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn list_directory(roots: &Roots, args: OnePath) -> Answer {
    let path = roots.resolve(&args.path)?;
    Ok(entries(&path)?
        .iter()
        .map(|(name, is_dir)| format!("{} {name}", if *is_dir { "[DIR]" } else { "[FILE]" }))
        .collect::<Vec<_>>()
        .join("\n"))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListSizes {
    path: String,
    #[serde(default)]
    sort_by: SortBy,
}

#[derive(Deserialize, Default, PartialEq)]
#[serde(rename_all = "lowercase")]
enum SortBy {
    #[default]
    Name,
    Size,
}

fn list_directory_with_sizes(roots: &Roots, args: ListSizes) -> Answer {
    let path = roots.resolve(&args.path)?;
    let mut listed: Vec<(String, bool, u64)> = entries(&path)?
        .into_iter()
        .map(|(name, is_dir)| {
            let size = fs::metadata(join(&path, &name)).map_or(0, |m| m.len());
            (name, is_dir, size)
        })
        .collect();
    let files = listed.iter().filter(|e| !e.1).count();
    let total: u64 = listed.iter().filter(|e| !e.1).map(|e| e.2).sum();
    if args.sort_by == SortBy::Size {
        listed.sort_by_key(|entry| std::cmp::Reverse(entry.2));
    } else {
        listed.sort_by(|a, b| text::locale_order(&a.0, &b.0));
    }
    let mut lines: Vec<String> = listed
        .iter()
        .map(|(name, is_dir, size)| {
            format!(
                "{} {} {}",
                if *is_dir { "[DIR]" } else { "[FILE]" },
                text::pad_end(name, 30),
                if *is_dir {
                    String::new()
                } else {
                    text::pad_start(&text::size(*size), 10)
                }
            )
        })
        .collect();
    lines.push(String::new());
    lines.push(format!(
        "Total: {files} files, {} directories",
        listed.len() - files
    ));
    lines.push(format!("Combined size: {}", text::size(total)));
    Ok(lines.join("\n"))
}

/// A glob as `minimatch` with `{ dot: true }` reads it: `*` stops at `/`,
/// `**` spans folders, dot files match. One that does not parse matches
/// only itself.
enum Glob {
    Pattern(GlobMatcher),
    Literal(String),
}

impl Glob {
    fn new(pattern: &str) -> Glob {
        match GlobBuilder::new(pattern).literal_separator(true).build() {
            Ok(glob) => Glob::Pattern(glob.compile_matcher()),
            Err(_) => Glob::Literal(pattern.to_owned()),
        }
    }

    fn matches(&self, path: &str) -> bool {
        match self {
            Glob::Pattern(m) => m.is_match(path),
            Glob::Literal(p) => p == path,
        }
    }
}

/// `path` relative to `base` (both absolute and normalized).
fn relative(base: &str, path: &str) -> String {
    let base: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    let path: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let common = base.iter().zip(&path).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; base.len() - common];
    parts.extend(&path[common..]);
    parts.join("/")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tree {
    path: String,
    #[serde(default)]
    exclude_patterns: Vec<String>,
}

/// How deep `directory_tree` and `search_files` go, so a deep tree ends
/// with a clear error rather than an exhausted stack.
const MAX_DEPTH: usize = 256;

fn directory_tree(roots: &Roots, args: Tree) -> Answer {
    // Exclusions: a glob with `*` as written; a plain name anywhere, or a
    // folder and everything in it.
    let excluded: Vec<Vec<Glob>> = args
        .exclude_patterns
        .iter()
        .map(|p| {
            if p.contains('*') {
                vec![Glob::new(p)]
            } else {
                vec![
                    Glob::new(p),
                    Glob::new(&format!("**/{p}")),
                    Glob::new(&format!("**/{p}/**")),
                ]
            }
        })
        .collect();
    let root = roots::normalize("/", &args.path);
    fn build(
        roots: &Roots,
        root: &str,
        current: &str,
        excluded: &[Vec<Glob>],
        depth: usize,
    ) -> Result<Vec<Value>, String> {
        if depth > MAX_DEPTH {
            return Err(format!("{current} is more than {MAX_DEPTH} folders deep"));
        }
        let path = roots.resolve(current)?;
        let mut tree = Vec::new();
        for (name, is_dir) in entries(&path)? {
            let child = join(current, &name);
            let rel = relative(root, &roots::normalize("/", &child));
            if excluded.iter().flatten().any(|g| g.matches(&rel)) {
                continue;
            }
            let mut entry =
                json!({ "name": name, "type": if is_dir { "directory" } else { "file" } });
            if is_dir {
                entry["children"] = Value::Array(build(roots, root, &child, excluded, depth + 1)?);
            }
            tree.push(entry);
        }
        Ok(tree)
    }
    let start = if args.path.starts_with('/') {
        root.clone()
    } else {
        args.path.clone()
    };
    let tree = build(roots, &root, &start, &excluded, 0)?;
    serde_json::to_string_pretty(&tree).map_err(|e| e.to_string())
}

#[derive(Deserialize)]
struct Move {
    source: String,
    destination: String,
}

fn move_file(roots: &Roots, args: Move) -> Answer {
    let source = roots.resolve_for_change(&args.source)?;
    let destination = roots.resolve_for_change(&args.destination)?;
    match fs::symlink_metadata(&destination) {
        Ok(_) => return Err(format!("Destination already exists: {destination}")),
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(text::io_error(&e, "lstat", &destination))
        }
        Err(_) => {}
    }
    fs::rename(&source, &destination)
        .map_err(|e| text::io_error(&e, "rename", &format!("{source}' -> '{destination}")))?;
    Ok(format!(
        "Successfully moved {} to {}",
        args.source, args.destination
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Search {
    path: String,
    pattern: String,
    #[serde(default)]
    exclude_patterns: Vec<String>,
}

fn search_files(roots: &Roots, args: Search) -> Answer {
    let root = roots.resolve(&args.path)?;
    let pattern = Glob::new(&args.pattern);
    let excluded: Vec<Glob> = args.exclude_patterns.iter().map(|p| Glob::new(p)).collect();
    let mut found = Vec::new();
    fn search(
        roots: &Roots,
        root: &str,
        current: &str,
        pattern: &Glob,
        excluded: &[Glob],
        found: &mut Vec<String>,
        depth: usize,
    ) {
        let Ok(listed) = entries(current) else { return };
        for (name, is_dir) in listed {
            let full = join(current, &name);
            if roots.resolve(&full).is_err() {
                continue;
            }
            let rel = relative(root, &full);
            if excluded.iter().any(|g| g.matches(&rel)) {
                continue;
            }
            if pattern.matches(&rel) {
                found.push(full.clone());
            }
            if is_dir && depth < MAX_DEPTH {
                search(roots, root, &full, pattern, excluded, found, depth + 1);
            }
        }
    }
    search(roots, &root, &root, &pattern, &excluded, &mut found, 0);
    Ok(if found.is_empty() {
        "No matches found".to_owned()
    } else {
        found.join("\n")
    })
}

fn get_file_info(roots: &Roots, args: OnePath) -> Answer {
    let path = roots.resolve(&args.path)?;
    let meta = fs::metadata(&path).map_err(|e| text::io_error(&e, "stat", &path))?;
    let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
    let accessed = meta.accessed().unwrap_or(modified);
    let created = meta.created().unwrap_or(modified);
    let writable = roots.resolve_for_change(&path).is_ok();
    // The sandbox hides a file's own mode bits: these say what the grant
    // lets the plugin do.
    let permissions = match (meta.is_dir(), writable) {
        (true, true) => "755",
        (true, false) => "555",
        (false, true) => "644",
        (false, false) => "444",
    };
    Ok([
        format!("size: {}", meta.len()),
        format!("created: {}", text::date(created)),
        format!("modified: {}", text::date(modified)),
        format!("accessed: {}", text::date(accessed)),
        format!("isDirectory: {}", meta.is_dir()),
        format!("isFile: {}", meta.is_file()),
        format!("permissions: {permissions}"),
    ]
    .join("\n"))
}

fn list_allowed_directories(roots: &Roots) -> Answer {
    Ok(format!("Allowed directories:\n{}", roots.listed("\n")))
}

/// Runs tool `name` on `args`.
fn run(name: &str, args: Value) -> CallResult {
    let roots = Roots(roots::granted());
    let answer = match name {
        "read_file" | "read_text_file" => parse(name, args).and_then(|a| read_text_file(&roots, a)),
        "read_media_file" => {
            return match parse(name, args) {
                Ok(a) => read_media_file(&roots, a),
                Err(message) => error_result(message),
            }
        }
        "read_multiple_files" => parse(name, args).and_then(|a| read_multiple_files(&roots, a)),
        "write_file" => parse(name, args).and_then(|a| write_file(&roots, a)),
        "edit_file" => parse(name, args).and_then(|a| edit_file(&roots, a)),
        "create_directory" => parse(name, args).and_then(|a| create_directory(&roots, a)),
        "list_directory" => parse(name, args).and_then(|a| list_directory(&roots, a)),
        "list_directory_with_sizes" => {
            parse(name, args).and_then(|a| list_directory_with_sizes(&roots, a))
        }
        "directory_tree" => parse(name, args).and_then(|a| directory_tree(&roots, a)),
        "move_file" => parse(name, args).and_then(|a| move_file(&roots, a)),
        "search_files" => parse(name, args).and_then(|a| search_files(&roots, a)),
        "get_file_info" => parse(name, args).and_then(|a| get_file_info(&roots, a)),
        "list_allowed_directories" => list_allowed_directories(&roots),
        _ => Err(format!("Unknown tool: {name}")),
    };
    text_result(answer)
}

/// Schema `key` (`inputSchema` or `outputSchema`) of tool `name`, from the
/// reference's listing. Parsed only when the tools are listed.
fn schema(name: &str, key: &str) -> Option<Value> {
    let mut all: Vec<Value> = serde_json::from_str(include_str!("schemas.json")).ok()?;
    let at = all.iter().position(|t| t["name"] == name)?;
    Some(all.swap_remove(at)[key].take())
}

/// The schema functions of each tool (closures of no state, so plain
/// `fn`s the SDK calls only when listing).
macro_rules! schemas {
    ($name:expr, $($tool:literal),* $(,)?) => {
        match $name {
            $($tool => (
                (|| schema($tool, "inputSchema").unwrap_or_default()) as fn() -> Value,
                (|| schema($tool, "outputSchema")) as fn() -> Option<Value>,
            ),)*
            _ => (Value::default as fn() -> Value, (|| None) as fn() -> Option<Value>),
        }
    };
}

/// The view of `directory_tree` (MCP Apps).
const TREE_VIEW: &str = "ui://filesystem/tree";

/// The most of a file `preview_file` shows, in bytes.
const PREVIEW_BYTES: u64 = 4096;

#[derive(Deserialize, JsonSchema)]
struct Preview {
    /// The file, as `directory_tree` names it.
    path: String,
}

/// The start of a file, for the tree view: at most [`PREVIEW_BYTES`],
/// read no further.
fn preview_file(roots: &Roots, args: Preview) -> Answer {
    let path = roots.resolve(&args.path)?;
    let file = fs::File::open(&path).map_err(|e| text::io_error(&e, "open", &path))?;
    let mut bytes = Vec::new();
    file.take(PREVIEW_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| text::io_error(&e, "read", &path))?;
    let more = bytes.len() as u64 > PREVIEW_BYTES;
    bytes.truncate(PREVIEW_BYTES as usize);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if more {
        text.push_str("\n…");
    }
    Ok(text)
}

fn plugin() -> Plugin {
    // The tree's view and the tool only it calls: not listed to the model,
    // so the tools listed stay those of the reference server.
    let viewed = Plugin::new()
        .view(TREE_VIEW, "directory-tree", include_str!("tree.html"))
        .add_tool(
            Tool::new("preview_file", |args: Preview| {
                text_result(preview_file(&Roots(roots::granted()), args))
            })
            .title("Preview File")
            .description("The first 4 KiB of a file, for the directory tree's view.")
            .read_only()
            .view_only(),
        );
    meta::TOOLS.iter().fold(viewed, |plugin, tool| {
        let (input, output) = schemas!(
            tool.name,
            "read_file",
            "read_text_file",
            "read_media_file",
            "read_multiple_files",
            "write_file",
            "edit_file",
            "create_directory",
            "list_directory",
            "list_directory_with_sizes",
            "directory_tree",
            "move_file",
            "search_files",
            "get_file_info",
            "list_allowed_directories",
        );
        let [read_only_hint, destructive_hint, idempotent_hint, open_world_hint] = tool.hints;
        let name = tool.name;
        let described = Tool::new(name, move |args: Value| run(name, args));
        let described = match name {
            "directory_tree" => described.view(TREE_VIEW),
            _ => described,
        };
        plugin.add_tool(
            described
                .title(tool.title)
                .description(tool.description)
                .input_schema_with(input)
                .output_schema_with(output)
                .annotations(ToolAnnotations {
                    title: None,
                    read_only_hint,
                    destructive_hint,
                    idempotent_hint,
                    open_world_hint,
                }),
        )
    })
}

export_plugin!(plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_match_exactly_or_line_by_line_ignoring_indentation() {
        let edit = |old: &str, new: &str| Edit {
            old_text: old.into(),
            new_text: new.into(),
        };
        assert_eq!(apply_edit("a b a", &edit("a", "c")).unwrap(), "c b a");
        assert_eq!(
            apply_edit(
                "x\n    foo()\n    bar()\n",
                &edit("foo()\n  bar()", "baz()\n  qux()")
            )
            .unwrap(),
            "x\n    baz()\n    qux()\n"
        );
        assert!(apply_edit("abc", &edit("zzz", "y"))
            .unwrap_err()
            .contains("Could not find"));
    }

    #[test]
    fn every_tool_has_its_schemas() {
        for tool in &meta::TOOLS {
            let input = schema(tool.name, "inputSchema").unwrap();
            assert_eq!(input["type"], "object", "{}", tool.name);
            assert!(schema(tool.name, "outputSchema").is_some(), "{}", tool.name);
        }
        let listed: Vec<Value> = serde_json::from_str(include_str!("schemas.json")).unwrap();
        assert_eq!(listed.len(), meta::TOOLS.len());
    }

    #[test]
    fn relative_paths_and_media_types() {
        assert_eq!(relative("/a/b", "/a/b/c/d"), "c/d");
        assert_eq!(relative("/a/b", "/a/b"), "");
        assert_eq!(media_type("/x/photo.JPG"), "image/jpeg");
        assert_eq!(media_type("/x/.png"), "application/octet-stream");
        assert_eq!(file_url("/a b/ü.txt"), "file:///a%20b/%C3%BC.txt");
    }
}
