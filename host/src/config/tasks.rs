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
        }
    }
}
