//! The [`ServerOptions`]: what the operator set for the server, read by
//! every part of it.

use super::{notices, tasks, AdmissionLimits};
use crate::config::defaults;
use crate::protocol::model::ServerInfo;
use std::sync::Arc;
use std::time::Duration;

/// Settings of the server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The name in `serverInfo`.
    pub name: String,
    /// The version in `serverInfo`.
    pub version: String,
    /// Instructions for the model.
    pub instructions: Option<String>,
    /// Items per list page.
    pub page_size: usize,
    /// `ttlMs` of list results (2026-07-28).
    pub list_ttl_ms: u64,
    /// How long a plugin waits for the client to answer its question.
    pub input_timeout: Duration,
    /// How tasks are kept and when calls become tasks.
    pub tasks: tasks::TaskOptions,
    /// Requests in progress at once.
    pub admission: AdmissionLimits,
    /// Calls of one principal waiting for its answers at once.
    pub max_waiting_per_principal: usize,
    /// Offer only the handshake revisions (a client that would pick the
    /// stateless one falls back to `initialize`, and hears `list_changed`).
    pub handshake_only: bool,
    /// Plugins not served as their sources stand, added to `instructions`.
    pub notices: Arc<notices::Notices>,
    /// How long a request that arrives while the plugins first load waits
    /// for them (see `Server::until_loaded`).
    pub startup_wait: Duration,
    /// Handshake sessions kept at most (the session store's capacity).
    pub max_sessions: usize,
    /// What callers must carry to see and use each plugin and item.
    pub access: Arc<super::Policy>,
    /// Calls per second per principal, and per tool.
    pub rates: Arc<super::rates::Rates>,
    /// Where calls and refusals are recorded, if anywhere.
    pub audit: Option<Arc<super::audit::Audit>>,
    /// Whether the host offers tool search.
    pub tool_search: super::search::ToolSearch,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            name: "wasm-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            page_size: defaults::PAGE_SIZE,
            list_ttl_ms: defaults::LIST_TTL_MS,
            input_timeout: Duration::from_millis(defaults::INPUT_TIMEOUT_MS),
            tasks: tasks::TaskOptions::default(),
            admission: AdmissionLimits::default(),
            max_waiting_per_principal: defaults::MAX_WAITING_PER_PRINCIPAL,
            handshake_only: false,
            max_sessions: defaults::MAX_SESSIONS,
            notices: Arc::default(),
            startup_wait: Duration::from_millis(defaults::STARTUP_WAIT_MS),
            access: Arc::default(),
            rates: Arc::default(),
            audit: None,
            tool_search: Default::default(),
        }
    }
}

impl ServerOptions {
    /// The server's name and version (`serverInfo`).
    pub fn server_info(&self) -> ServerInfo<'_> {
        ServerInfo {
            name: &self.name,
            version: &self.version,
        }
    }
}
