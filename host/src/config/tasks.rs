//! `[tasks]`: where tasks are kept and when calls become tasks.

use super::defaults as d;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[tasks]`
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
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
        TasksSection {
            store: None,
            ttl_ms: d::TASK_TTL_MS,
            max_ttl_ms: d::TASK_MAX_TTL_MS,
            poll_interval_ms: d::TASK_POLL_INTERVAL_MS,
            after_ms: d::TASK_AFTER_MS,
            max_running: d::TASKS_RUNNING,
            max_running_per_owner: d::TASKS_RUNNING_PER_OWNER,
            max_stored_per_owner: d::TASKS_STORED_PER_OWNER,
            max_stored_mb_per_owner: d::TASK_BYTES_PER_OWNER >> 20,
            max_stored: d::TASKS_STORED,
            max_stored_mb: d::TASK_BYTES >> 20,
            max_result_mb: d::TASK_RESULT_BYTES >> 20,
        }
    }
}
