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
    /// The status of this task changed.
    TaskChanged(String),
    /// The client ended this handshake session (DELETE): a host holding
    /// it ends it too.
    SessionEnded(String),
    /// The server is shutting down.
    Shutdown,
}
