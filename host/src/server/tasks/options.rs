//! How tasks are kept and when calls become tasks.

use super::TaskQuotas;
use crate::config::defaults;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// How tasks are kept and when calls become tasks.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// The SQLite database; `None` keeps tasks in memory only.
    pub store: Option<PathBuf>,
    /// How long a task is kept after it is created, unless the client asks
    /// for less (2025-11-25 `task.ttl`).
    pub ttl: Duration,
    /// The longest time to live a client may ask for.
    pub max_ttl: Duration,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
    /// On 2026-07-28, a call of a task-supporting tool that is still running
    /// after this long becomes a task.
    pub after: Duration,
    /// Tasks that may run at once; beyond it, calls run without a task
    /// (2026-07-28) or are refused (2025-11-25).
    pub max_running: usize,
    /// What one owner, and everyone, may keep and run.
    pub quotas: TaskQuotas,
    /// How long this host's hold on its running tasks lasts in a shared
    /// store unless renewed (it renews, and looks for tasks of hosts that
    /// stopped, every third of it).
    pub lease: Duration,
    /// Run the unfinished tasks of idempotent tools again when the host
    /// running them stopped (among replicas), instead of failing them.
    pub rerun_idempotent: bool,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            store: None,
            ttl: Duration::from_millis(defaults::TASK_TTL_MS),
            max_ttl: Duration::from_millis(defaults::TASK_MAX_TTL_MS),
            poll_interval: Duration::from_millis(defaults::TASK_POLL_INTERVAL_MS),
            after: Duration::from_millis(defaults::TASK_AFTER_MS),
            max_running: defaults::TASKS_RUNNING,
            quotas: TaskQuotas::default(),
            lease: Duration::from_secs(defaults::LEASE_SECS),
            rerun_idempotent: false,
        }
    }
}
