//! What changed server-wide, fanned out to every connection.

use crate::runtime::host_types::ListKind;
use crate::runtime::types::LogLevel;

/// Something that changed server-wide, fanned out to every connection.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// The catalogue's list of `kind` changed.
    ListChanged(ListKind),
    /// The contents of the resource at this URI changed.
    ResourceUpdated(String),
    /// A new version of this plugin replaced the old one: every subscribed
    /// URI it serves may read differently now.
    PluginReplaced(String),
    /// A message for the log of every session that set a log level.
    Log {
        /// Its level.
        level: LogLevel,
        /// Who says it.
        logger: String,
        /// What it says.
        message: String,
    },
    /// An error every client is told of, whatever log level it set (unless
    /// one above `error`), and on every `subscriptions/listen` stream: a
    /// plugin's sources that did not build under `dev`.
    Alert {
        /// Who says it.
        logger: String,
        /// What it says.
        message: String,
    },
    /// The status of task `id` changed: to `status` when the event says
    /// (with its message), else a listener reads the task again (an event
    /// from a replica of an earlier version names the task only).
    TaskChanged {
        /// The task.
        id: String,
        /// Its new status, when known.
        status: Option<super::task_status::Status>,
        /// Why it is in that status, when there is something to say.
        message: Option<String>,
    },
    /// The client ended this handshake session (DELETE): a host holding
    /// it ends it too.
    SessionEnded(String),
    /// What this handshake session settled (its log level, subscriptions,
    /// roots or capabilities) changed through another host: a host holding
    /// a copy reads it again from the session store.
    SessionChanged(String),
    /// The server is shutting down.
    Shutdown,
}

impl ServerEvent {
    /// Task `id` changed, to a status not said (listeners read it again).
    pub fn task_changed(id: impl Into<String>) -> Self {
        ServerEvent::TaskChanged {
            id: id.into(),
            status: None,
            message: None,
        }
    }

    /// Task `id` is now `status`, for `message`.
    pub fn task_now(
        id: impl Into<String>,
        status: super::task_status::Status,
        message: Option<String>,
    ) -> Self {
        ServerEvent::TaskChanged {
            id: id.into(),
            status: Some(status),
            message,
        }
    }
}
