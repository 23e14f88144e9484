//! What a call needs from whoever made it: where logs, progress and change
//! notices go, whether it was cancelled, and how to ask the client for input.

use super::host_types::{Answer, InputError, ListKind, Question};
use super::tool_call_types::{CallError as ToolCallError, ToolInfo};
use super::types::LogLevel;
use super::ToolCallGrant;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The caller's side of one plugin call. The runtime calls these when the
/// plugin calls the matching `host` import.
pub trait CallContext: Send + Sync + 'static {
    /// The plugin logged a message.
    fn log(&self, level: LogLevel, message: String);
    /// The plugin reported progress.
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
    /// Whether the call was cancelled.
    fn is_cancelled(&self) -> bool;
    /// Resolves when the call is cancelled.
    fn cancelled(&self) -> BoxFuture<()>;
    /// The plugin says one of its lists changed.
    fn list_changed(&self, kind: ListKind);
    /// The plugin says a resource changed.
    fn resource_updated(&self, uri: String);
    /// The plugin asks the client questions (the user, the model, the
    /// roots), each under its own key; the answers come in the same order.
    fn ask(&self, questions: Vec<(String, Question)>)
        -> BoxFuture<Vec<Result<Answer, InputError>>>;
    /// The plugin asks to go on as an MCP task; whether it will (or already
    /// does).
    fn continue_as_task(&self) -> bool {
        false
    }
    /// The client's roots as local folders, when the client declared any:
    /// the call then sees only the granted folders inside them. `None`
    /// shows every granted folder.
    fn client_roots(&self) -> Option<Arc<Vec<PathBuf>>> {
        None
    }
    /// Who the client authenticated as, if anyone: an instance kept warm
    /// between calls serves only calls of the same principal.
    fn principal(&self) -> Option<&str> {
        None
    }
    /// Whose data the call reaches: its tenant's folder in each `{tenant}`
    /// root, its tenant's namespace in the key-value store. `None` (a call
    /// the host makes itself, such as a plugin's lists at load, which every
    /// tenant shares): no tenant's data.
    fn tenant(&self) -> Option<&crate::tenant::Tenant> {
        None
    }
    /// The tools a plugin granted `grant` may call for this call's caller
    /// whose name or description holds every word of `query`, at most
    /// `limit` (`tool-calls.search-tools`). None without a caller.
    fn search_tools(&self, grant: &ToolCallGrant, query: &str, limit: usize) -> Vec<ToolInfo> {
        let _ = (grant, query, limit);
        Vec::new()
    }
    /// A tool call of the plugin's (of tool `name`, when it was read) was
    /// refused before it reached the caller's side: not granted, or over a
    /// bound. For the record.
    fn tool_call_refused(&self, name: &str, message: &str) {
        let _ = (name, message);
    }
    /// The plugin calls a tool (`tool-calls.call-tool`): the result's JSON
    /// text, or why it did not run. Refused without a caller.
    fn call_tool(&self, call: ToolCall) -> BoxFuture<Result<String, ToolCallError>> {
        let _ = call;
        Box::pin(async {
            Err(ToolCallError {
                code: super::tool_calls::REFUSED,
                message:
                    "no request is being served: a plugin calls tools only while it serves a call"
                        .into(),
            })
        })
    }
}

/// One tool call a plugin makes (code mode).
#[derive(Debug)]
pub struct ToolCall {
    /// The name clients call the tool by.
    pub name: String,
    /// Its arguments, JSON text (not yet checked).
    pub arguments: String,
    /// What the calling plugin was granted.
    pub grant: ToolCallGrant,
    /// How deep calls from plugins may nest, counted from the client's
    /// call (the calling plugin's `tool_call_depth`).
    pub depth: u32,
}

/// A context with no client behind it (used when the host itself calls a
/// plugin, e.g. for its lists at load): logs go to the host log only, and
/// every question to the client is unsupported.
pub struct Quiet {
    /// The plugin's name, for the host log.
    pub plugin: String,
}

impl CallContext for Quiet {
    fn log(&self, level: LogLevel, message: String) {
        tracing::info!(plugin = %self.plugin, ?level, "{message}");
    }
    fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
    fn is_cancelled(&self) -> bool {
        false
    }
    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(std::future::pending())
    }
    fn list_changed(&self, _: ListKind) {}
    fn resource_updated(&self, _: String) {}
    fn ask(
        &self,
        questions: Vec<(String, Question)>,
    ) -> BoxFuture<Vec<Result<Answer, InputError>>> {
        let refused = questions
            .iter()
            .map(|_| {
                Err(InputError::Unsupported(
                    "no client is attached to this call".into(),
                ))
            })
            .collect();
        Box::pin(async move { refused })
    }
}
