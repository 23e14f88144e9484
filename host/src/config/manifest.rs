//! A plugin's manifest: what it asks for. It sits beside the component as
//! `<plugin>.toml`; a plugin without one asks for nothing.
//!
//! ```toml
//! hosts = ["api.github.com"]      # outbound HTTP ("*": every host the config allows it)
//! env = ["GITHUB_TOKEN"]          # environment variables
//! keyvalue = true                 # a key-value store (wasi:keyvalue)
//!
//! [roots]                         # folders, by the config's root names
//! notes = "read-write"
//! docs = "read-only"
//! # "*" = "read-write"            # or: every root the config allows it
//! ```

use super::Mode;
use anyhow::{Context as _, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a plugin asks for, in `<plugin>.toml` beside its component; the
/// config decides what it gets.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Manifest {
    /// Roots (named in the host's config) and the access it wants to each;
    /// `"*"` for every root the config allows it.
    pub roots: BTreeMap<String, Mode>,
    /// Hosts it wants to send HTTP requests to (`api.example.com`,
    /// `*.example.com`); `"*"` for every host the config allows it.
    pub hosts: Vec<String>,
    /// Environment variables it wants to read.
    pub env: Vec<String>,
    /// Whether it wants a key-value store (`wasi:keyvalue`): its own data
    /// of each tenant, granted by `[plugins.NAME] keyvalue = true`.
    pub keyvalue: bool,
}

impl Manifest {
    /// The root name (or host) that asks for every root (or host) the
    /// config allows the plugin.
    pub const ANY: &'static str = "*";

    /// The manifest file of the component at `wasm`: same folder and stem, `.toml`.
    pub fn path_for(wasm: &Path) -> PathBuf {
        wasm.with_extension("toml")
    }

    /// Reads the manifest beside the component at `wasm`; none is an empty
    /// one. It must be a regular file of at most
    /// [`crate::files::MAX_MANIFEST_BYTES`]. Blocks: call it off the async
    /// workers.
    pub fn beside(wasm: &Path) -> Result<Self> {
        let path = Self::path_for(wasm);
        let text = match crate::files::read_regular_text(&path, crate::files::MAX_MANIFEST_BYTES) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Manifest::default()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Self::parse(&text).with_context(|| format!("invalid manifest {}", path.display()))
    }

    /// Parses manifest text.
    pub fn parse(text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_manifest_beside_a_component() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("notes.wasm");
        assert_eq!(Manifest::beside(&wasm).unwrap(), Manifest::default());
        std::fs::write(
            dir.path().join("notes.toml"),
            "env = [\"A\"]\n[roots]\nnotes = \"read-write\"\n",
        )
        .unwrap();
        let m = Manifest::beside(&wasm).unwrap();
        assert_eq!(m.roots["notes"], Mode::ReadWrite);
        assert_eq!(m.env, ["A"]);
        std::fs::write(
            dir.path().join("notes.toml"),
            "\n[roots]\nnotes = \"all\"\n",
        )
        .unwrap();
        let e = format!("{:#}", Manifest::beside(&wasm).unwrap_err());
        assert!(e.contains("notes.toml") && e.contains("line 3"), "{e}");
    }
}
