//! The lock file: JSON, versioned, its plugins in name order (and every
//! object's keys sorted), read bounded and written in one step.

use super::record::Entry;
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The lock file's name when no `[server] lock` names one.
pub const FILE_NAME: &str = "wasm-mcp.lock";

/// The lock file format this host reads and writes.
pub const VERSION: u32 = 1;

/// The largest lock file read, in bytes (it holds every definition whole).
pub const MAX_LOCK_BYTES: u64 = 32 << 20;

/// The plugins recorded in a lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// The format: [`VERSION`].
    pub version: u32,
    /// Each plugin's entry, by plugin name.
    pub plugins: BTreeMap<String, Entry>,
}

impl Default for LockFile {
    fn default() -> Self {
        LockFile {
            version: VERSION,
            plugins: BTreeMap::new(),
        }
    }
}

impl LockFile {
    /// Reads and checks the lock file at `path` (at most
    /// [`MAX_LOCK_BYTES`]). Blocks: call it off the async workers.
    pub fn read(path: &Path) -> Result<LockFile> {
        let text = crate::files::read_regular_text(path, MAX_LOCK_BYTES).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                anyhow::anyhow!(
                    "the plugin lock {} does not exist: write it with `wasm-mcp lock`",
                    path.display()
                )
            } else {
                anyhow::anyhow!(
                    "reading the plugin lock {} (at most {} MiB): {e}",
                    path.display(),
                    MAX_LOCK_BYTES >> 20
                )
            }
        })?;
        Self::parse(&text).with_context(|| format!("invalid plugin lock {}", path.display()))
    }

    /// Parses lock file text.
    pub fn parse(text: &str) -> Result<LockFile> {
        #[derive(Deserialize)]
        struct Versioned {
            version: u32,
        }
        let versioned: Versioned =
            serde_json::from_str(text).context("not a lock file: no \"version\" number")?;
        anyhow::ensure!(
            versioned.version == VERSION,
            "lock file version {} (this host reads version {VERSION})",
            versioned.version
        );
        Ok(serde_json::from_str(text)?)
    }

    /// The file's text: pretty JSON, keys sorted, ending in a newline.
    pub fn text(&self) -> String {
        // Through `Value`, whose objects sort their keys.
        let value = serde_json::to_value(self).expect("a lock file serializes");
        let mut text = serde_json::to_string_pretty(&value).expect("a lock file serializes");
        text.push('\n');
        text
    }

    /// Writes it to `path` in one step (a hidden file beside it, renamed
    /// into place), so a host reading the lock never sees half of it.
    /// Blocks: call it off the async workers.
    pub fn write(&self, path: &Path) -> Result<()> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(FILE_NAME);
        let staged = path.with_file_name(format!(".{name}.staged"));
        let writing = || format!("writing the plugin lock {}", path.display());
        std::fs::write(&staged, self.text()).with_context(writing)?;
        std::fs::rename(&staged, path).with_context(writing)
    }
}

/// Where the lock file is: `[server] lock` when set, else
/// [`FILE_NAME`] beside the config file, else in the current folder.
pub fn lock_path(configured: Option<&Path>, config_file: Option<&Path>) -> PathBuf {
    if let Some(path) = configured {
        return path.to_owned();
    }
    match config_file.and_then(Path::parent) {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(FILE_NAME),
        _ => PathBuf::from(FILE_NAME),
    }
}
