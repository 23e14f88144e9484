//! The server's side of one plugin call: progress and log notifications
//! for the request, its cancellation, and the plugin's change notices.

use super::convert::{log_level_name, severity};
use super::{Outbox, ServerEvent};
use crate::runtime::host_types::{
    ElicitationRequest, ElicitationResponse, InputError, ListKind, Root, SamplingRequest,
    SamplingResponse,
};
use crate::runtime::{types::LogLevel, BoxFuture, CallContext};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// One request's view of its connection.
pub struct RequestScope {
    /// The plugin being called.
    pub plugin: String,
    /// Where notifications for this request go.
    pub out: Outbox,
    /// The lowest level sent as `notifications/message`; `None` sends none.
    pub log_level: Option<LogLevel>,
    /// The request's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// Becomes `true` when the client cancels the request.
    pub cancelled: watch::Receiver<bool>,
    /// Server-wide change events.
    pub events: broadcast::Sender<ServerEvent>,
    /// The client's roots, when it declared them.
    pub client_roots: Option<Arc<Vec<PathBuf>>>,
}

fn unsupported<T: Send + 'static>(what: &str) -> BoxFuture<Result<T, InputError>> {
    let why = format!("{what} is not available on this connection yet");
    Box::pin(async move { Err(InputError::Unsupported(why)) })
}

impl CallContext for RequestScope {
    fn log(&self, level: LogLevel, message: String) {
        tracing::debug!(plugin = %self.plugin, level = log_level_name(level), "{message}");
        if self
            .log_level
            .is_some_and(|min| severity(level) >= severity(min))
        {
            self.out.notify(
                "notifications/message",
                json!({ "level": log_level_name(level), "logger": self.plugin, "data": message }),
            );
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.out.notify("notifications/progress", params);
    }

    fn client_roots(&self) -> Option<Arc<Vec<PathBuf>>> {
        self.client_roots.clone()
    }

    fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }

    fn cancelled(&self) -> BoxFuture<()> {
        let mut rx = self.cancelled.clone();
        Box::pin(async move {
            if rx.wait_for(|c| *c).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }

    fn list_changed(&self, kind: ListKind) {
        let _ = self.events.send(ServerEvent::PluginListChanged {
            plugin: self.plugin.clone(),
            kind,
        });
    }

    fn resource_updated(&self, uri: String) {
        let _ = self.events.send(ServerEvent::ResourceUpdated(uri));
    }

    fn elicit(&self, _: ElicitationRequest) -> BoxFuture<Result<ElicitationResponse, InputError>> {
        unsupported("elicitation")
    }

    fn sample(&self, _: SamplingRequest) -> BoxFuture<Result<SamplingResponse, InputError>> {
        unsupported("sampling")
    }

    fn roots(&self) -> BoxFuture<Result<Vec<Root>, InputError>> {
        unsupported("roots")
    }
}
