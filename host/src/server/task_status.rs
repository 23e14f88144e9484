//! Where a task is in its life: a plain value that tasks, their records
//! and the server-wide events that announce a change all carry.

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Running.
    Working,
    /// Waiting for the client's input.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped by the client.
    Cancelled,
}

impl Status {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// The status named `text`, as a task row or a bus event has it.
    ///
    /// The rule for a status this version does not know (written by a
    /// newer one): it reads as `working`. The terminal statuses are fixed
    /// by MCP (`completed`, `failed`, `cancelled`), so a new one is a kind
    /// of "still going": the client keeps polling, and the replica running
    /// the task moves it to a status every version knows when it ends.
    /// Counted in `wasm_mcp_cluster_unknown_records_total{record="task_status"}`.
    pub fn parse(text: &str) -> Status {
        Status::known(text).unwrap_or_else(|| {
            crate::metrics::metrics().unknown_record("task_status");
            warn_once(
                &UNKNOWN_STATUS,
                &format!(
                    "a task's status {:?} is not one this version knows (a newer replica wrote it): it reads as working",
                    crate::protocol::excerpt(text, 64)
                ),
            );
            Status::Working
        })
    }

    /// The status named `text`, if this version knows it.
    pub fn known(text: &str) -> Option<Status> {
        Some(match text {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }

    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

static UNKNOWN_STATUS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Logs `message` at warn the first time only (per `flag`): a newer
/// replica may write many such records.
pub(crate) fn warn_once(flag: &std::sync::atomic::AtomicBool, message: &str) {
    if !flag.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            "{message} (logged once; counted in wasm_mcp_cluster_unknown_records_total)"
        );
    }
}
