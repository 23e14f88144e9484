//! `[tasks]`: where tasks are kept and when calls become tasks.

use serde::Deserialize;
use std::path::PathBuf;

/// `[tasks]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TasksSection {
    /// The SQLite file tasks are kept in (relative to the config file);
    /// `""` keeps them in memory only. Default:
    /// `$XDG_STATE_HOME/wasm-mcp/tasks.db` (`~/.local/state/…`).
    pub store: Option<PathBuf>,
    /// How long a task is kept after it is created, in milliseconds.
    pub ttl_ms: u64,
    /// The longest time to live a client may ask for, in milliseconds.
    pub max_ttl_ms: u64,
    /// The polling interval suggested to clients, in milliseconds.
    pub poll_interval_ms: u64,
    /// On 2026-07-28, a call of a task-supporting tool that is still running
    /// after this many milliseconds becomes a task.
    pub after_ms: u64,
    /// Tasks that may run at once.
    pub max_running: usize,
    /// Tasks of one owner (principal, else session) that may run at once.
    pub max_running_per_owner: usize,
    /// Tasks one owner may keep in the store until they expire.
    pub max_stored_per_owner: usize,
    /// MiB of task results one owner may keep.
    pub max_stored_mb_per_owner: usize,
    /// Tasks kept in the store in all.
    pub max_stored: usize,
    /// MiB of task results kept in all.
    pub max_stored_mb: usize,
    /// The largest task result kept, in MiB of JSON.
    pub max_result_mb: usize,
}

impl Default for TasksSection {
    fn default() -> Self {
        let d = crate::server::tasks::TaskOptions::default();
        TasksSection {
            store: None,
            ttl_ms: d.ttl.as_millis() as u64,
            max_ttl_ms: d.max_ttl.as_millis() as u64,
            poll_interval_ms: d.poll_interval.as_millis() as u64,
            after_ms: d.after.as_millis() as u64,
            max_running: d.max_running,
            max_running_per_owner: d.quotas.running_per_owner,
            max_stored_per_owner: d.quotas.stored_per_owner,
            max_stored_mb_per_owner: d.quotas.bytes_per_owner >> 20,
            max_stored: d.quotas.stored_total,
            max_stored_mb: d.quotas.bytes_total >> 20,
            max_result_mb: d.quotas.result_bytes >> 20,
        }
    }
}

impl TasksSection {
    /// The quotas this section sets.
    pub fn quotas(&self) -> crate::server::tasks::TaskQuotas {
        crate::server::tasks::TaskQuotas {
            running_per_owner: self.max_running_per_owner,
            stored_per_owner: self.max_stored_per_owner,
            bytes_per_owner: self.max_stored_mb_per_owner << 20,
            stored_total: self.max_stored,
            bytes_total: self.max_stored_mb << 20,
            result_bytes: self.max_result_mb << 20,
        }
    }
}
