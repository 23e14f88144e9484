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
use std::sync::{Arc, Mutex};
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
    /// The capabilities the client declared.
    pub client_capabilities: Value,
    /// The first client capability the plugin needed and the client had
    /// not declared.
    pub missing_capability: Mutex<Option<&'static str>>,
}

impl RequestScope {
    /// Whether the client declared `capability`; if not, remembers that the
    /// request needed it.
    fn client_has(&self, capability: &'static str) -> bool {
        if self.client_capabilities.get(capability).is_some() {
            return true;
        }
        self.missing_capability
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(capability);
        false
    }

    /// The client capability the request needed and did not have, if any.
    pub fn missing_capability(&self) -> Option<&'static str> {
        *self
            .missing_capability
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

fn unsupported<T: Send + 'static>(why: String) -> BoxFuture<Result<T, InputError>> {
    Box::pin(async move { Err(InputError::Unsupported(why)) })
}

impl RequestScope {
    /// Refuses a question to the client: it lacks `capability`, or this
    /// connection cannot carry the question yet.
    fn cannot_ask<T: Send + 'static>(
        &self,
        capability: &'static str,
    ) -> BoxFuture<Result<T, InputError>> {
        if self.client_has(capability) {
            unsupported(format!(
                "asking the client ({capability}) is not available on this connection yet"
            ))
        } else {
            unsupported(format!(
                "the client did not declare the {capability} capability"
            ))
        }
    }
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
        self.cannot_ask("elicitation")
    }

    fn sample(&self, _: SamplingRequest) -> BoxFuture<Result<SamplingResponse, InputError>> {
        self.cannot_ask("sampling")
    }

    fn roots(&self) -> BoxFuture<Result<Vec<Root>, InputError>> {
        self.cannot_ask("roots")
    }
}
