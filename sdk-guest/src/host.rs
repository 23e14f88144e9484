//! What the host offers a plugin while it serves a request: logging,
//! progress, cancellation, change notices, and questions to the client.

use crate::bindings::wasm_mcp::plugin::host as raw;
pub use crate::bindings::wasm_mcp::plugin::host::{
    ElicitationAction, ElicitationMode, ElicitationRequest, ElicitationResponse, InputError,
    ListKind, Root, SamplingMessage, SamplingRequest, SamplingResponse,
};
pub use crate::bindings::wasm_mcp::plugin::types::LogLevel;

/// Logs `message` at `level`; the client sees it if it asked for that level.
pub fn log(level: LogLevel, message: impl AsRef<str>) {
    raw::log(level, message.as_ref());
}

/// Logs at `debug`.
pub fn debug(message: impl AsRef<str>) {
    log(LogLevel::Debug, message);
}

/// Logs at `info`.
pub fn info(message: impl AsRef<str>) {
    log(LogLevel::Info, message);
}

/// Logs at `warning`.
pub fn warn(message: impl AsRef<str>) {
    log(LogLevel::Warning, message);
}

/// Logs at `error`.
pub fn error(message: impl AsRef<str>) {
    log(LogLevel::Error, message);
}

/// Reports progress on the current request (sent when the client asked for it).
pub fn progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    raw::progress(progress, total, message);
}

/// Whether the client cancelled the current request.
pub fn is_cancelled() -> bool {
    raw::is_cancelled()
}

/// Tells the host that this plugin's list of `kind` changed.
pub fn list_changed(kind: ListKind) {
    raw::list_changed(kind);
}

/// Tells the host that the resource at `uri` changed.
pub fn resource_updated(uri: &str) {
    raw::resource_updated(uri);
}

/// Asks the user to fill in a form described by a JSON Schema, and waits.
pub fn elicit_form(
    message: &str,
    schema: &serde_json::Value,
) -> Result<ElicitationResponse, InputError> {
    raw::elicit(&ElicitationRequest {
        message: message.to_owned(),
        mode: ElicitationMode::Form(schema.to_string()),
    })
}

/// Asks the client's model for a reply to a single user message, and waits.
pub fn sample_text(prompt: &str, max_tokens: u32) -> Result<SamplingResponse, InputError> {
    raw::sample(&SamplingRequest {
        messages: vec![SamplingMessage {
            role: crate::bindings::wasm_mcp::plugin::types::Role::User,
            content: crate::text(prompt),
        }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: Vec::new(),
        extra: None,
    })
}

/// Asks the client for its filesystem roots, and waits.
pub fn roots() -> Result<Vec<Root>, InputError> {
    raw::roots()
}
