//! The server's side of one plugin call: progress and log notifications
//! for the request, its cancellation, and the plugin's change notices.

use super::convert::{log_level_name, severity};
use super::{input, Asker, Outbox, ServerEvent};
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
    /// Sends the client requests, when the connection can carry them.
    pub asker: Option<Asker>,
}

impl RequestScope {
    /// Whether the client declared `capability` (a path into its
    /// capabilities); if not, remembers that the request needed it.
    fn client_has(&self, capability: &[&'static str]) -> bool {
        let declared = capability
            .iter()
            .try_fold(&self.client_capabilities, |caps, key| caps.get(key))
            .is_some();
        if !declared {
            self.missing_capability
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(capability[0]);
        }
        declared
    }

    /// The client capability the request needed and did not have, if any.
    pub fn missing_capability(&self) -> Option<&'static str> {
        *self
            .missing_capability
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

/// A fresh id for a URL elicitation: 128 random bits, as hex.
fn uuid_like() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unsupported<T: Send + 'static>(why: String) -> BoxFuture<Result<T, InputError>> {
    Box::pin(async move { Err(InputError::Unsupported(why)) })
}

impl RequestScope {
    /// Asks the client `method`, if it declared `capability` and the
    /// connection can carry the question.
    fn ask<T: Send + 'static>(
        &self,
        capability: &[&'static str],
        method: &'static str,
        params: Result<Value, String>,
        parse: fn(Value) -> Result<T, String>,
    ) -> BoxFuture<Result<T, InputError>> {
        let name = capability.join(".");
        if !self.client_has(capability) {
            return unsupported(format!("the client did not declare the {name} capability"));
        }
        let Some(asker) = self.asker.clone() else {
            return unsupported(format!(
                "asking the client ({name}) is not available on this connection yet"
            ));
        };
        let params = match params {
            Ok(params) => params,
            Err(why) => return unsupported(format!("the request cannot be sent: {why}")),
        };
        let cancelled = self.cancelled();
        let plugin = self.plugin.clone();
        Box::pin(async move {
            tracing::debug!(plugin, method, "asking the client");
            let answer = asker.ask(method, params, cancelled).await?;
            parse(answer).map_err(InputError::ClientError)
        })
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

    fn elicit(
        &self,
        request: ElicitationRequest,
    ) -> BoxFuture<Result<ElicitationResponse, InputError>> {
        let id = format!("{}-{}", self.plugin, uuid_like());
        self.ask(
            input::elicitation_capability(&request),
            "elicitation/create",
            input::elicitation_params(&request, &id),
            input::elicitation_result,
        )
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<Result<SamplingResponse, InputError>> {
        self.ask(
            &["sampling"],
            "sampling/createMessage",
            input::sampling_params(&request),
            input::sampling_result,
        )
    }

    fn roots(&self) -> BoxFuture<Result<Vec<Root>, InputError>> {
        self.ask(&["roots"], "roots/list", Ok(json!({})), input::roots_result)
    }
}
