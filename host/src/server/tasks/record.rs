//! A task as it is stored: its status, the wire that made it, and how it
//! ended.

use serde_json::{Map, Value};

pub use crate::server::session::Wire;
pub use crate::server::task_status::Status;

static NEWER_RERUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) use crate::server::task_status::warn_once;

/// How a finished task ended: the call's result, or its JSON-RPC error
/// object.
pub(crate) type Outcome = Result<Value, Value>;

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
    /// annotated idempotent, where the operator allows it), as read back.
    /// Kept by stores shared between replicas only.
    pub rerun: Option<StoredRerun>,
    /// The replica holding the task's lease (the one running it), where
    /// the store keeps one.
    pub holder: Option<String>,
}

/// The version of [`Rerun`] this host writes and reads (a record without
/// `v` is version 1: what hosts before versions were written wrote).
pub const RERUN_VERSION: u32 = 1;

fn version_one() -> u32 {
    1
}

/// A task's rerun call as a store read it back.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredRerun {
    /// A call this host can run again.
    Call(Rerun),
    /// A call this host must not run again, and why (written by a newer
    /// version, or unreadable): the task fails with that reason.
    Refused(String),
}

impl StoredRerun {
    /// The stored JSON `text` read by the rule of its version: a `v` newer
    /// than [`RERUN_VERSION`] is refused (that one record; the task fails
    /// with the reason, a warning is logged once, and it is counted in
    /// `wasm_mcp_cluster_unknown_records_total{record="task_rerun"}`).
    /// Unknown fields are ignored; missing ones take their defaults.
    pub fn read(text: &str) -> StoredRerun {
        #[derive(serde::Deserialize)]
        struct Version {
            #[serde(default = "version_one")]
            v: u32,
        }
        match serde_json::from_str::<Version>(text) {
            Ok(Version { v }) if v > RERUN_VERSION => {
                crate::metrics::metrics().unknown_record("task_rerun");
                warn_once(
                    &NEWER_RERUN,
                    &format!("a task's rerun call is of version {v}, newer than this host reads ({RERUN_VERSION}): such tasks are not run again here"),
                );
                StoredRerun::Refused(format!(
                    "its call was recorded by a newer host (rerun record version {v}; this host reads up to {RERUN_VERSION})"
                ))
            }
            Ok(_) => match serde_json::from_str::<Rerun>(text) {
                Ok(call) => StoredRerun::Call(call),
                Err(error) => {
                    StoredRerun::Refused(format!("its call could not be read back ({error})"))
                }
            },
            Err(error) => {
                StoredRerun::Refused(format!("its call could not be read back ({error})"))
            }
        }
    }

    /// The stored JSON (`None` for a refused call: it is never written).
    pub fn text(&self) -> Option<String> {
        match self {
            StoredRerun::Call(call) => serde_json::to_string(call).ok(),
            StoredRerun::Refused(_) => None,
        }
    }
}

/// A call that may be run again on another host: the tool (by the name
/// clients call it, and by identity: its plugin, the plugin's own name for
/// it and the component's digest), its arguments, and who it acted for
/// with what grants (so the run again passes the same access check).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rerun {
    /// The record's version ([`RERUN_VERSION`] when written here; absent,
    /// 1). A reader refuses a version newer than it knows.
    #[serde(default = "version_one")]
    pub v: u32,
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
    #[serde(default)]
    pub principal: Option<String>,
    /// The client's roots it was confined to, if any.
    #[serde(default)]
    pub roots: Option<Vec<String>>,
}
