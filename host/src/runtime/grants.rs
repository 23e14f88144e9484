//! What one plugin may reach and use: folders, environment variables,
//! outbound hosts, and per-call limits. Decided by the config (which this
//! module knows nothing of) and enforced by the runtime on every call.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Everything a plugin was granted. The default grants nothing and applies
/// the default limits.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    /// Host folders the plugin sees, each at its own guest path.
    pub dirs: Vec<DirGrant>,
    /// Environment variables the plugin sees, with their values.
    pub env: Vec<(String, Secret)>,
    /// Hosts the plugin may send HTTP requests to.
    pub hosts: Vec<HostPattern>,
    /// What one call may use.
    pub limits: Limits,
}

/// A value only the plugin sees: debug output shows `[hidden]`, never the
/// value, so no log or error can carry it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the plugin.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[hidden]")
    }
}

/// A host folder made visible to a plugin.
#[derive(Debug, Clone)]
pub struct DirGrant {
    /// The folder on the host, as configured (canonical).
    pub host_path: PathBuf,
    /// The folder itself, opened once: what every call sees, whatever
    /// `host_path` names later.
    pub dir: Arc<DirHandle>,
    /// Where the plugin sees it (`/<root name>`).
    pub guest_path: String,
    /// Whether the plugin may create, change, rename and delete in it.
    pub writable: bool,
}

impl PartialEq for DirGrant {
    fn eq(&self, other: &Self) -> bool {
        self.host_path == other.host_path
            && self.guest_path == other.guest_path
            && self.writable == other.writable
    }
}

/// A directory opened once (`O_PATH`), so that later renames, symlinks or
/// replacements of its path cannot change which directory it is.
#[derive(Debug)]
pub struct DirHandle {
    file: std::fs::File,
    path: PathBuf,
    /// Device and inode, to tell this directory from whatever its path
    /// names later.
    id: (u64, u64),
    /// Whether `/proc/self/fd/N` names this very directory (Linux).
    by_fd: bool,
}

impl DirHandle {
    /// Opens the directory at `path` (following symlinks in `path` itself).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(path)?;
        let meta = file.metadata()?;
        let id = (meta.dev(), meta.ino());
        let mut handle = DirHandle {
            file,
            path: path.to_owned(),
            id,
            by_fd: false,
        };
        handle.by_fd = std::fs::metadata(handle.fd_path())
            .is_ok_and(|m| (m.dev(), m.ino()) == id && m.is_dir());
        Ok(handle)
    }

    fn fd_path(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }

    /// A path that opens this very directory: its descriptor's `/proc`
    /// link, or (without `/proc`) the configured path as long as it still
    /// names the same directory.
    pub fn open_path(&self) -> std::io::Result<PathBuf> {
        if self.by_fd {
            return Ok(self.fd_path());
        }
        let now = std::fs::metadata(&self.path)?;
        if (now.dev(), now.ino()) != self.id {
            return Err(std::io::Error::other(format!(
                "{} is no longer the folder that was configured",
                self.path.display()
            )));
        }
        Ok(self.path.clone())
    }
}

/// Per-call limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Linear memories and tables of one instance, all together, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock time per call.
    pub call_timeout: Duration,
    /// The largest result, in bytes of JSON.
    pub max_result_bytes: usize,
    /// Calls of this plugin that may run at once; more wait their turn,
    /// and a call's deadline starts when its turn comes.
    pub max_concurrent_calls: usize,
    /// Items in one result (content blocks, list entries, ...).
    pub max_result_items: usize,
    /// The largest single message to the client (log line, progress
    /// message, resource URI, set of questions), in bytes.
    pub max_message_bytes: usize,
    /// Notifications one call may send per second (also its burst).
    pub notifications_per_sec: u32,
    /// Deadline of the `list-*` calls made at load.
    pub load_timeout: Duration,
    /// OS threads the plugin's file operations may occupy at once.
    pub max_blocking_threads: usize,
    /// Calls one instance serves in turn: 1, a fresh instance per call;
    /// more, instances kept warm between calls (an operator's opt-in).
    pub calls_per_instance: u32,
    /// When a fresh instance is made ahead of the next call while the
    /// plugin is idle (see the runtime's `spare` module).
    pub spare_instance: SpareMode,
}

/// When a plugin gets a spare instance: one made ahead of its next call.
/// Read from `"auto"`, `"always"` or `"never"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SpareMode {
    /// Where instantiating takes long enough for a spare to pay (CPython,
    /// Go), not where making one in a task of its own would cost more than
    /// it saves (most Rust and C plugins).
    #[default]
    Auto,
    /// After every call that returned normally with no other call running.
    Always,
    /// Never: every call waits for its instance to be made.
    Never,
}

impl<'de> serde::Deserialize<'de> for SpareMode {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Self, D::Error> {
        match String::deserialize(from)?.as_str() {
            "auto" => Ok(SpareMode::Auto),
            "always" => Ok(SpareMode::Always),
            "never" => Ok(SpareMode::Never),
            other => Err(serde::de::Error::custom(format!(
                "{other:?} is not \"auto\", \"always\" or \"never\""
            ))),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            call_timeout: Duration::from_secs(60),
            max_result_bytes: 16 << 20,
            max_concurrent_calls: 16,
            max_result_items: 10_000,
            max_message_bytes: 64 << 10,
            notifications_per_sec: 100,
            load_timeout: Duration::from_secs(5),
            max_blocking_threads: 16,
            calls_per_instance: 1,
            spare_instance: SpareMode::Auto,
        }
    }
}

/// A host name a plugin may reach: exact (`api.example.com`) or a wildcard
/// for the subdomains of a name (`*.example.com`, which does not match
/// `example.com` itself). Compared without case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern(String);

impl HostPattern {
    /// Parses a pattern; `None` when it is not a host name or `*.` + one.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        let name = text.strip_prefix("*.").unwrap_or(&text);
        let valid = !name.is_empty() && name.split('.').all(crate::names::is_valid);
        valid.then_some(HostPattern(text))
    }

    /// Whether `host` (a name or an IP address, without port) matches.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self.0.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => host == self.0,
        }
    }

    /// Whether every host this pattern matches is also matched by `other`.
    pub fn within(&self, other: &HostPattern) -> bool {
        match (self.0.strip_prefix("*."), other.0.strip_prefix("*.")) {
            (None, _) => other.matches(&self.0),
            (Some(mine), Some(theirs)) => mine == theirs || other.matches(mine),
            (Some(_), None) => false,
        }
    }

    /// The pattern as written (lower-cased).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::HostPattern;

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn exact_and_wildcard_patterns() {
        assert!(p("api.example.com").matches("API.example.com"));
        assert!(!p("api.example.com").matches("api.example.com.evil.net"));
        assert!(p("*.example.com").matches("a.b.example.com"));
        assert!(!p("*.example.com").matches("example.com"));
        assert!(!p("*.example.com").matches("evilexample.com"));
        assert!(p("127.0.0.1").matches("127.0.0.1"));
        assert!(HostPattern::parse("*").is_none());
        assert!(HostPattern::parse("a..b").is_none());
        assert!(HostPattern::parse("http://x").is_none());
    }

    #[test]
    fn a_pattern_is_within_a_wider_one() {
        assert!(p("api.example.com").within(&p("*.example.com")));
        assert!(p("*.api.example.com").within(&p("*.example.com")));
        assert!(p("*.example.com").within(&p("*.example.com")));
        assert!(!p("*.example.com").within(&p("api.example.com")));
        assert!(!p("example.com").within(&p("*.example.com")));
    }
}
