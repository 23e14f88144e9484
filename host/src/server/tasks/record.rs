//! A task as it is stored: its status, the wire that made it, and how it
//! ended.

use serde_json::{Map, Value};

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

    /// The status named `text` (stored by this host; anything else reads
    /// as `failed`).
    pub fn parse(text: &str) -> Status {
        match text {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "cancelled" => Status::Cancelled,
            _ => Status::Failed,
        }
    }

    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

pub use crate::server::session::Wire;

/// How a finished task ended: the call's result, or its JSON-RPC error
/// object.
pub type Outcome = Result<Value, Value>;

/// One task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its id.
    pub id: String,
    /// Who may see it (a principal or a session); `None`: whoever has the id.
    pub owner: Option<String>,
    /// The wire that created it.
    pub wire: Wire,
    /// The request it runs (`tools/call`).
    pub method: String,
    /// The tool it calls.
    pub target: String,
    /// Its status.
    pub status: Status,
    /// Why it is in that status, when there is something to say.
    pub status_message: Option<String>,
    /// When it was created, in ms since the Unix epoch.
    pub created_ms: u64,
    /// When its status last changed, in ms since the Unix epoch.
    pub updated_ms: u64,
    /// How long after creation it may be deleted, in ms.
    pub ttl_ms: u64,
    /// How it ended, once terminal.
    pub outcome: Option<Outcome>,
    /// The questions it waits for the client to answer (2026-07-28
    /// `inputRequests`), while `input_required`.
    pub input_requests: Option<Map<String, Value>>,
    /// The call to run again if its host stops before it ends (a tool
    /// annotated idempotent, where the operator allows it): a [`Rerun`] as
    /// JSON. Kept by stores shared between replicas only.
    pub rerun: Option<Value>,
}

/// A call that may be run again on another host: the tool (by the name
/// clients call it, and by identity: its plugin, the plugin's own name for
/// it and the component's digest), its arguments, and who it acted for
/// with what grants (so the run again passes the same access check).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rerun {
    /// The tool, as clients call it.
    pub tool: String,
    /// The plugin that served it (absent from records of older hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The plugin's own name for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_tool: Option<String>,
    /// The SHA-256 of the plugin's component, in hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The caller's token claims and profiles ([`crate::server::Caller::grants`]);
    /// absent for the operator's own client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<Value>,
    /// Its arguments.
    pub arguments: Value,
    /// The principal the call acted for.
    pub principal: Option<String>,
    /// The client's roots it was confined to, if any.
    pub roots: Option<Vec<String>>,
}
