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
    /// The key-value store (`wasi:keyvalue`), when granted.
    pub keyvalue: Option<super::keyvalue::KeyValueGrant>,
    /// The tools it may call (`tool-calls`, code mode), when granted.
    pub tool_calls: Option<ToolCallGrant>,
}

/// What a plugin granted `call_tools` may call: tools named by `PLUGIN.TOOL`
/// patterns (the plugin's own name for the tool; `*` matches any run of
/// characters). Each call is still decided for the caller of the call the
/// plugin serves, as that caller's own `tools/call` would be.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallGrant {
    patterns: Arc<[String]>,
}

impl ToolCallGrant {
    /// A grant of the tools `patterns` name.
    pub fn new(patterns: &[String]) -> Self {
        ToolCallGrant {
            patterns: patterns.into(),
        }
    }

    /// Whether it names tool `tool` of `plugin`.
    pub fn allows(&self, plugin: &str, tool: &str) -> bool {
        let full = format!("{plugin}.{tool}");
        self.patterns
            .iter()
            .any(|p| crate::config::unmatched::glob_matches(p, &full))
    }

    /// Its patterns, as configured.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
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
    /// A root per tenant: `host_path` and `dir` are the folder that holds
    /// each tenant's, and a call sees its tenant's folder only.
    pub tenants: Option<Arc<super::tenant_dirs::TenantDirs>>,
}

impl PartialEq for DirGrant {
    fn eq(&self, other: &Self) -> bool {
        self.host_path == other.host_path
            && self.guest_path == other.guest_path
            && self.writable == other.writable
            && self.tenants.is_some() == other.tenants.is_some()
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

    /// Opens `name`, a folder directly inside this one, without following
    /// a symlink in its place.
    pub fn open_child(&self, name: &str) -> std::io::Result<Self> {
        use rustix::fs::{openat, Mode, OFlags};
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = openat(&self.file, name, flags, Mode::empty()).map_err(|e| match e {
            // O_NOFOLLOW|O_PATH on a symlink opens the link itself, and
            // O_DIRECTORY then refuses it.
            rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP => std::io::Error::other(format!(
                "{} is not a folder",
                self.path.join(name).display()
            )),
            other => other.into(),
        })?;
        let file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        let mut handle = DirHandle {
            file,
            path: self.path.join(name),
            id: (meta.dev(), meta.ino()),
            by_fd: false,
        };
        handle.by_fd = self.by_fd;
        Ok(handle)
    }

    /// The open descriptor.
    pub(super) fn file(&self) -> &std::fs::File {
        &self.file
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
    /// When a fresh instance is made for the next call while a call runs
    /// (see the runtime's `spare` module).
    pub spare_instance: SpareMode,
    /// What its use of the key-value store may reach.
    pub keyvalue: super::keyvalue::Bounds,
    /// Tools one call may call (`tool-calls`).
    pub tool_calls: u32,
    /// How deep calls from plugins may nest, counted from the client's
    /// call, where this plugin's calls are on the way.
    pub tool_call_depth: u32,
    /// Bytes of arguments and results one call's tool calls may move.
    pub tool_call_bytes: usize,
    /// The largest view a resource read may return, in bytes.
    pub max_view_bytes: usize,
}

impl Default for Limits {
    /// The config's defaults (`[limits]`).
    fn default() -> Self {
        Limits::from(&crate::config::LimitsSection::default())
    }
}

impl From<&crate::config::LimitsSection> for Limits {
    fn from(section: &crate::config::LimitsSection) -> Self {
        Limits {
            memory_bytes: section.memory_mb << 20,
            call_timeout: Duration::from_millis(section.call_timeout_ms),
            max_result_bytes: section.max_result_mb << 20,
            max_concurrent_calls: section.max_concurrent_calls,
            max_result_items: section.max_result_items,
            max_message_bytes: section.max_message_kb << 10,
            notifications_per_sec: section.notifications_per_sec,
            load_timeout: Duration::from_millis(section.load_timeout_ms),
            max_blocking_threads: section.max_blocking_threads,
            calls_per_instance: section.calls_per_instance,
            spare_instance: section.spare_instance,
            keyvalue: super::keyvalue::Bounds {
                key_bytes: section.keyvalue_key_bytes,
                value_bytes: section.keyvalue_value_kb << 10,
                quota: super::keyvalue::Quota {
                    max_keys: section.keyvalue_keys,
                    max_bytes: section.keyvalue_mb << 20,
                },
                page_keys: section.keyvalue_page_keys.max(1),
                ops_per_call: section.keyvalue_ops_per_call,
            },
            tool_calls: section.tool_calls,
            tool_call_depth: section.tool_call_depth,
            tool_call_bytes: section.tool_call_mb << 20,
            max_view_bytes: section.max_view_kb << 10,
        }
    }
}

pub use crate::config::SpareMode;
pub use crate::names::HostPattern;

#[cfg(test)]
mod tests {
    use super::ToolCallGrant;

    #[test]
    fn a_tool_call_grant_names_tools_by_plugin_and_tool_pattern() {
        let grant =
            ToolCallGrant::new(&["filesystem.*".into(), "*.now".into(), "fetch.fetch".into()]);
        assert!(grant.allows("filesystem", "read_file"));
        assert!(grant.allows("time", "now"));
        assert!(grant.allows("fetch", "fetch"));
        assert!(!grant.allows("fetch", "fetch_all"));
        assert!(!grant.allows("filesystemx", "read"));
        assert!(!grant.allows("time", "nowhere"));
        assert!(!ToolCallGrant::new(&[]).allows("a", "b"));
    }
}
