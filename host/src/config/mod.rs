//! The TOML config file: where plugins live, caching, paging, limits.

use anyhow::{Context as _, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The whole config file. Every field has a default, so an empty file (or
/// no file) is valid.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[server]`
    pub server: ServerSection,
    /// `[limits]`
    pub limits: LimitsSection,
}

/// `[server]`: what to serve and how.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// The folder of plugin components (`*.wasm`).
    pub plugins: Option<PathBuf>,
    /// Where compiled components are cached; `""` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Items per page of `tools/list` and the other lists.
    pub page_size: usize,
    /// Instructions for the model, sent in `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// How long clients may cache list results, in milliseconds (2026-07-28).
    pub list_ttl_ms: u64,
    /// Whether to reload plugins when their files change.
    pub watch: bool,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            plugins: None,
            cache_dir: None,
            page_size: 100,
            instructions: None,
            list_ttl_ms: 10_000,
            watch: true,
        }
    }
}

/// `[limits]`: what one call may use.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Linear memory per instance, in MiB.
    pub memory_mb: usize,
    /// Wall-clock time per call, in milliseconds.
    pub call_timeout_ms: u64,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            memory_mb: 256,
            call_timeout_ms: 60_000,
        }
    }
}

impl LimitsSection {
    /// The call deadline.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }
}

impl Config {
    /// Reads and checks `path`. Errors name the file, line and column.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid config {}", path.display()))
    }

    /// Parses config text.
    pub fn parse(text: &str) -> Result<Self> {
        let config: Config = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::ensure!(
            config.server.page_size > 0,
            "server.page_size must be at least 1"
        );
        anyhow::ensure!(
            config.limits.memory_mb > 0,
            "limits.memory_mb must be at least 1"
        );
        anyhow::ensure!(
            config.limits.call_timeout_ms > 0,
            "limits.call_timeout_ms must be at least 1"
        );
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn defaults_and_errors_with_line_numbers() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.server.page_size, 100);
        let c = Config::parse("[limits]\nmemory_mb = 64\n").unwrap();
        assert_eq!(c.limits.memory_mb, 64);
        let e = format!(
            "{:#}",
            Config::parse("[limits]\nmemory_mb = \"lots\"\n").unwrap_err()
        );
        assert!(e.contains("line 2"), "{e}");
        let e = format!(
            "{:#}",
            Config::parse("[server]\nplugin = \"x\"\n").unwrap_err()
        );
        assert!(e.contains("unknown field"), "{e}");
    }
}
