//! What the host offers a plugin while it serves a request: logging,
//! progress, cancellation, change notices, and questions to the client.

use crate::bindings::wasm_mcp::plugin::host as raw;
pub use crate::bindings::wasm_mcp::plugin::host::{
    Answer, ElicitationAction, ElicitationMode, ElicitationRequest, ElicitationResponse,
    InputError, ListKind, Question, Root, SamplingMessage, SamplingRequest, SamplingResponse,
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

/// Lets the rest of the current tool call run as an MCP task when the tool
/// and the request allow it: the client gets a task handle now and the
/// result later. Returns whether the call runs as a task.
pub fn continue_as_task() -> bool {
    raw::continue_as_task()
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
    raw::elicit(&form_request(message, schema))
}

/// Sends the user to `url` for an interaction outside the client (sign-in,
/// payment, …), and waits until they are done or decline.
pub fn elicit_url(message: &str, url: &str) -> Result<ElicitationResponse, InputError> {
    raw::elicit(&ElicitationRequest {
        message: message.to_owned(),
        mode: ElicitationMode::Url(url.to_owned()),
    })
}

fn form_request(message: &str, schema: &serde_json::Value) -> ElicitationRequest {
    ElicitationRequest {
        message: message.to_owned(),
        mode: ElicitationMode::Form(schema.to_string()),
    }
}

fn text_sampling(prompt: &str, max_tokens: u32) -> SamplingRequest {
    SamplingRequest {
        messages: vec![SamplingMessage {
            role: crate::bindings::wasm_mcp::plugin::types::Role::User,
            content: crate::text(prompt),
        }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: Vec::new(),
        extra: None,
    }
}

/// Asks the client's model for a reply to a single user message, and waits.
pub fn sample_text(prompt: &str, max_tokens: u32) -> Result<SamplingResponse, InputError> {
    raw::sample(&text_sampling(prompt, max_tokens))
}

/// A form for the user, to ask with [`ask`].
pub fn form(message: &str, schema: &serde_json::Value) -> Question {
    Question::Elicit(form_request(message, schema))
}

/// A one-message question for the client's model, to ask with [`ask`].
pub fn sampling(prompt: &str, max_tokens: u32) -> Question {
    Question::Sample(text_sampling(prompt, max_tokens))
}

/// Asks several questions at once, each under a key of the plugin's choice,
/// and waits for all the answers (in the same order).
///
/// On the stateless revision (2026-07-28) the keys name the questions in
/// the client's `inputRequests`.
pub fn ask(questions: Vec<(&str, Question)>) -> Vec<Result<Answer, InputError>> {
    let questions: Vec<(String, Question)> = questions
        .into_iter()
        .map(|(key, q)| (key.to_owned(), q))
        .collect();
    raw::ask(&questions)
}

/// Asks the client for its filesystem roots, and waits.
pub fn roots() -> Result<Vec<Root>, InputError> {
    raw::roots()
}

pub use crate::bindings::wasm_mcp::plugin::tool_calls::{CallError as ToolCallError, ToolInfo};

/// Calls tool `name` with `arguments` (a JSON object) for the client of the
/// current request, and waits for it (code mode; only for a plugin the
/// operator granted `call_tools`, and only the tools that grant names and
/// the client may use). The result is MCP's `CallToolResult` as JSON
/// (`content`, `structuredContent`, `isError`); an error when the call did
/// not run (not granted, refused, unknown tool, bad arguments, a bound).
pub fn call_tool(
    name: &str,
    arguments: &serde_json::Value,
) -> Result<serde_json::Value, ToolCallError> {
    use crate::bindings::wasm_mcp::plugin::tool_calls as raw_calls;
    let text = raw_calls::call_tool(name, &arguments.to_string())?;
    serde_json::from_str(&text).map_err(|e| ToolCallError {
        code: -32603,
        message: format!("the host's result is not JSON: {e}"),
    })
}

/// The tools this plugin may call for the current request that best fit
/// `query` (an empty query: every one), at most `limit` (code mode).
pub fn search_tools(query: &str, limit: u32) -> Vec<ToolInfo> {
    crate::bindings::wasm_mcp::plugin::tool_calls::search_tools(query, limit)
}
