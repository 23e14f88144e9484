//! Skills a plugin ships beside its component, served under the Skills
//! extension of MCP (`io.modelcontextprotocol/skills`, SEP-2640).
//!
//! Plugin `NAME` (`NAME.wasm`) ships its skills in the folder
//! `NAME.skills/` beside it: one folder per skill, named as the skill,
//! holding a `SKILL.md` (YAML frontmatter with `name` and `description`)
//! and any files beside it. Skill `S` of plugin `P` is served at
//! `skill://P/S/SKILL.md`; its other files at `skill://P/S/<path>`.
//!
//! A skills folder is read whole, bounded (see the constants), and held in
//! memory: what is listed with a digest is what is served. Symlinks,
//! FIFOs, devices and sockets inside it are refused, hidden entries
//! (`.name`) are skipped; a skill that breaks a rule is refused with the
//! reason, and the others still serve.

pub mod frontmatter;
mod read;

pub use read::{folders, read_folder, Refusal};

use serde_json::{Map, Value};
use std::sync::Arc;

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The folder beside `NAME.wasm` that holds its skills: `NAME.skills`.
pub const FOLDER_SUFFIX: &str = ".skills";

/// Skills one plugin may ship, by default (`[server] skills_per_plugin`).
pub const MAX_SKILLS: usize = 64;
/// Files one skill may hold, `SKILL.md` included (the extension's limit).
pub const MAX_FILES: usize = 512;
/// Folders one skill may hold, its own included.
pub const MAX_FOLDERS: usize = 64;
/// Entries (files, folders, hidden ones) looked at in one skill, or at the
/// top of a skills folder, before it is refused.
pub const MAX_ENTRIES: usize = 2048;
/// How deep folders may nest within a skill.
pub const MAX_DEPTH: usize = 8;
/// The largest file in a skill, by default (`[server] skill_file_kb`).
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// The most bytes one skill may hold (the extension's limit).
pub const MAX_SKILL_BYTES: u64 = 16 << 20;
/// The most bytes all the skills of one plugin may hold, by default
/// (`[server] skills_mb`).
pub const MAX_PLUGIN_BYTES: u64 = 32 << 20;

/// The bounds an operator sets on each plugin's skills (the per-skill
/// ones, [`MAX_FILES`] and [`MAX_SKILL_BYTES`], are the extension's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Skills one plugin may ship.
    pub skills: usize,
    /// The largest file.
    pub file_bytes: u64,
    /// All of one plugin's skills together (held in memory).
    pub plugin_bytes: u64,
}

impl Limits {
    /// The limits `config` sets (`[server] skills_per_plugin`,
    /// `skill_file_kb`, `skills_mb`).
    pub fn of(config: &crate::config::Config) -> Self {
        let server = &config.server;
        Limits {
            skills: server.skills_per_plugin,
            file_bytes: server.skill_file_kb.saturating_mul(1 << 10),
            plugin_bytes: server.skills_mb.saturating_mul(1 << 20),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            skills: MAX_SKILLS,
            file_bytes: MAX_FILE_BYTES,
            plugin_bytes: MAX_PLUGIN_BYTES,
        }
    }
}

/// The MIME type of directory resources.
pub const DIRECTORY_MIME: &str = "inode/directory";

/// One file of a skill, with its bytes.
pub struct SkillFile {
    /// Its path within the skill, `/`-separated.
    pub path: String,
    /// Its resource URI.
    pub uri: String,
    /// Its content.
    pub bytes: Arc<[u8]>,
    /// `sha256:` and the lowercase hex SHA-256 of `bytes`.
    pub digest: String,
    /// Its MIME type, from its name.
    pub mime: &'static str,
}

/// One skill.
pub struct Skill {
    /// Its name (its folder's, and its frontmatter's).
    pub name: String,
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// The URI of its folder (`skill://P/S`).
    pub root: String,
    /// Its `SKILL.md` frontmatter, verbatim.
    pub frontmatter: Map<String, Value>,
    /// Its files, by path; `SKILL.md` among them.
    pub files: Vec<Arc<SkillFile>>,
}

/// A child of a directory resource.
pub enum Child<'a> {
    /// A file.
    File(&'a Arc<SkillFile>),
    /// A folder: its name and URI.
    Folder(String, String),
}

impl Skill {
    /// Its frontmatter's description.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The direct children of folder `dir` (a path within the skill, `""`
    /// for its root), in order; `None` when the skill has no such folder.
    pub fn children(&self, dir: &str) -> Option<Vec<Child<'_>>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut children: Vec<Child<'_>> = Vec::new();
        let mut found = dir.is_empty();
        for file in &self.files {
            let Some(rest) = file.path.strip_prefix(&prefix) else {
                continue;
            };
            found = true;
            match rest.split_once('/') {
                None => children.push(Child::File(file)),
                Some((folder, _)) => {
                    let uri = format!("{}/{}{}", self.root, encode_path(&prefix), encode(folder));
                    // Sorted by path, a folder's files are next to each other.
                    let seen =
                        matches!(children.last(), Some(Child::Folder(_, last)) if *last == uri);
                    if !seen {
                        children.push(Child::Folder(folder.to_owned(), uri));
                    }
                }
            }
        }
        found.then_some(children)
    }
}

/// The skills of one plugin, as read from its folder.
#[derive(Default)]
pub struct Skills {
    /// The skills that passed, by name.
    pub skills: Vec<Arc<Skill>>,
    /// Why each refused skill (or the folder) was refused.
    pub problems: Vec<String>,
    /// One digest over every served skill's URI and files' digests: equal
    /// digests, equal skills.
    pub digest: String,
}

impl Skills {
    /// Every file of every skill.
    pub fn files(&self) -> impl Iterator<Item = (&Arc<Skill>, &Arc<SkillFile>)> {
        self.skills
            .iter()
            .flat_map(|s| s.files.iter().map(move |f| (s, f)))
    }
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64
/// lowercase letters, digits and hyphens, no hyphen first, last or twice
/// in a row.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The characters a URI path segment keeps as they are.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One path segment, percent-encoded for a URI.
pub fn encode(segment: &str) -> String {
    percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string()
}

/// A `/`-separated path, each segment percent-encoded.
pub fn encode_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// The MIME type of a file called `name`.
pub fn mime_of(name: &str, bytes: &[u8]) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, x)| x.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("xml") => "application/xml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("rs") => "text/x-rust",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("pdf") => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for ok in ["a", "pdf-processing", "x1", &"a".repeat(64)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "A",
            "a_b",
            "a.b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode("a b%.md"), "a%20b%25.md");
        assert_eq!(encode_path("x y/z"), "x%20y/z");
    }
}
