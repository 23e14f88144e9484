//! How a plugin call's results and failures become JSON-RPC answers.

use crate::protocol::{ErrorCode, RpcError};
use crate::runtime::{types, CallError, LoadedPlugin};
use crate::server::Outcome;
use serde_json::Value;

/// Maps a failed call into a plugin: `None` when cancelled (no response).
pub(crate) fn call_failed(plugin: &LoadedPlugin, error: CallError) -> Option<String> {
    tracing::warn!(plugin = plugin.name(), "call failed: {error}");
    match error {
        CallError::Cancelled => None,
        other => Some(other.to_string()),
    }
}

/// A failed call as a JSON-RPC outcome: -32603, or no response when cancelled.
pub(crate) fn failed_request(plugin: &LoadedPlugin, error: CallError) -> Outcome {
    call_failed(plugin, error)
        .map(RpcError::internal)
        .map_or(Ok(super::Done::NoResponse), Err)
}

/// `result` if its JSON fits the plugin's result limit, else why not.
pub(crate) fn within_result_limit(plugin: &LoadedPlugin, result: Value) -> Result<Value, String> {
    let limit = plugin.grants().limits.max_result_bytes;
    let size = crate::server::outbox::json_size(&result);
    if size <= limit {
        return Ok(result);
    }
    tracing::warn!(plugin = plugin.name(), size, limit, "result over the limit");
    Err(format!(
        "the result is {size} bytes of JSON, over this plugin's limit of {limit} bytes"
    ))
}

/// A plugin's own error as a JSON-RPC error; `not_found` is the code of
/// its not-found.
pub(crate) fn plugin_error(error: types::Error, not_found: ErrorCode) -> RpcError {
    match error {
        types::Error::InvalidParams(m) => RpcError::invalid_params(m),
        types::Error::NotFound(m) => RpcError::new(not_found, m),
        types::Error::Internal(m) => RpcError::internal(m),
    }
}

/// -32021: the request needed a capability the client did not declare.
pub(crate) fn missing_capability(capability: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MissingRequiredClientCapability,
        format!("this request needs the client capability \"{capability}\", which the request did not declare"),
    )
    .with_data(crate::protocol::model::to_json(
        &super::wire::RequiredCapabilities::one(capability),
    ))
}
