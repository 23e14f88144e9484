//! MCP on the wire: JSON-RPC 2.0 messages, error codes, and the protocol
//! revisions with their negotiation. Knows nothing of transports or wasm.

mod header_params;
mod jsonrpc;
mod method;
pub mod model;
pub mod params;
mod result_type;
mod version;

pub use header_params::{header_parameters, HeaderParameter};
pub use jsonrpc::{
    parse_message, ErrorCode, ErrorResponse, Incoming, JsonRpc, Notification, RequestId,
    ResultResponse, RpcError,
};
pub use method::{client, notification, Availability, Caching, Method};
pub use params::Params;
pub use result_type::ResultType;
pub use version::{negotiate_handshake, Revision};

/// An unguessable id for the wire (session ids, elicitation ids, parked
/// calls): 128 bits from the operating system's secure random source, as hex.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How much of a client's input an error message quotes.
pub const QUOTED_BYTES: usize = 200;

/// At most `max` bytes of client input, for quoting it in an error: cut at
/// a character boundary, with how much was left out.
pub fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}… ({} bytes)", crate::text::head(text, max), text.len())
}

/// `_meta` keys of the 2026-07-28 revision.
pub mod meta {
    /// The protocol version of a request.
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for a request.
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's identity.
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The log level a request opts in to.
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The server's identity, on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The subscription a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The task a message belongs to (2025-11-25 tasks).
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// The tasks extension of 2026-07-28 (`capabilities.extensions`).
    pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
    /// The MCP Apps extension (`capabilities.extensions`): tools with
    /// interactive views.
    pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
    /// The MIME type of an MCP Apps view.
    pub const UI_MIME_TYPE: &str = "text/html;profile=mcp-app";

    /// The value of [`RELATED_TASK`]: the task a message belongs to.
    #[derive(Debug, Clone, serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct RelatedTask<'a> {
        /// The task's id.
        pub task_id: &'a str,
    }

    /// Marks a message's params (or a result) as belonging to task `id`:
    /// `_meta["io.modelcontextprotocol/related-task"] = { taskId }`.
    pub fn tag_related_task(value: &mut serde_json::Value, id: &str) {
        let Some(obj) = value.as_object_mut() else {
            return;
        };
        let meta = obj
            .entry("_meta")
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            let related = serde_json::to_value(RelatedTask { task_id: id })
                .expect("a related task serializes");
            meta.insert(RELATED_TASK.into(), related);
        }
    }
}
