//! Serving MCP: one [`Server`] shared by every connection, and one
//! [`Connection`] per client that dispatches its messages concurrently.
//! Knows nothing of how bytes arrive.

mod admission;
mod context;
pub mod convert;
mod handlers;
mod input;
mod mrtr;
mod notices;
mod outbox;
mod roots;
mod session;
pub mod tasks;
mod waiting;

use crate::protocol::{meta, parse_message, Incoming, RequestId, RpcError};
use crate::registry::{Change, Registry, Reload};
use crate::runtime::host_types::InputError;
use crate::runtime::host_types::ListKind;
use crate::runtime::types::LogLevel;
use crate::runtime::BoxFuture;
use serde_json::{json, Map, Value};
use session::{Era, Session};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot, watch};

/// Something that changed server-wide, fanned out to every connection.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// The catalogue's list of `kind` changed.
    ListChanged(ListKind),
    /// The contents of the resource at this URI changed.
    ResourceUpdated(String),
    /// A new version of this plugin replaced the old one: every subscribed
    /// URI it serves may read differently now.
    PluginReplaced(String),
    /// A message for the log of every session that set a log level.
    Log {
        /// Its level.
        level: LogLevel,
        /// Who says it.
        logger: String,
        /// What it says.
        message: String,
    },
    /// The status of this task changed.
    TaskChanged(String),
    /// The server is shutting down.
    Shutdown,
}

/// How long a plugin waits for the client's answer by default.
pub const DEFAULT_INPUT_TIMEOUT: Duration = Duration::from_secs(300);

/// How long clients may cache list results by default (2026-07-28 `ttlMs`).
pub const DEFAULT_LIST_TTL_MS: u64 = 10_000;

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
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            name: "wasm-mcp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: None,
            page_size: crate::registry::pagination::DEFAULT_PAGE_SIZE,
            list_ttl_ms: DEFAULT_LIST_TTL_MS,
            input_timeout: DEFAULT_INPUT_TIMEOUT,
            tasks: tasks::TaskOptions::default(),
            admission: AdmissionLimits::default(),
            max_waiting_per_principal: waiting::DEFAULT_MAX_WAITING_PER_PRINCIPAL,
            handshake_only: false,
            notices: Arc::default(),
        }
    }
}

/// What every connection shares: the registry, the settings, and the
/// channel of server-wide events.
pub struct Server {
    registry: Arc<Registry>,
    options: ServerOptions,
    events: broadcast::Sender<ServerEvent>,
    /// Calls parked until the client's input arrives (2026-07-28).
    parking: Arc<mrtr::Parking>,
    /// Tasks, stored and running.
    tasks: Arc<tasks::Tasks>,
    /// Re-listings of plugins that said a list changed: one at a time per
    /// plugin, a burst coalesced.
    relists: Arc<crate::coalesce::Coalescer>,
    /// Requests in progress, counted against their caps.
    admission: Arc<admission::Admission>,
    /// Calls waiting for their client's answers, counted against a cap.
    waiting: Arc<waiting::Waiting>,
}

impl Server {
    /// A server over `registry`.
    pub fn new(registry: Arc<Registry>, options: ServerOptions) -> Arc<Self> {
        let (events, _) = broadcast::channel(1024);
        let waiting = waiting::Waiting::new(options.max_waiting_per_principal);
        let parking = mrtr::Parking::new(options.input_timeout, waiting.clone());
        let tasks = tasks::Tasks::open(options.tasks.clone(), events.clone());
        Arc::new(Server {
            registry,
            events,
            parking,
            tasks,
            relists: Arc::default(),
            waiting,
            admission: Arc::new(admission::Admission::new(options.admission.clone())),
            options,
        })
    }

    /// Re-asks plugin `plugin` for its lists (it said one changed), swaps
    /// the catalogue and announces the lists that really changed. At most
    /// one re-listing per plugin runs at a time; requests meanwhile make it
    /// run once more.
    pub fn relist(self: &Arc<Self>, plugin: &str) {
        let server = Arc::downgrade(self);
        let name = plugin.to_owned();
        self.relists.request(plugin, move || {
            let (server, plugin) = (server.clone(), name.clone());
            async move {
                if let Some(server) = server.upgrade() {
                    handlers::relist(&server, &plugin).await;
                }
            }
        });
    }

    /// Whether plugin `plugin` serves the resource at `uri` (a listed
    /// resource or one of its templates).
    pub fn serves(&self, plugin: &str, uri: &str) -> bool {
        self.registry
            .catalogue()
            .resource_owner(uri)
            .is_some_and(|p| p.name() == plugin)
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The input schema of the tool clients call `name`, if there is one.
    pub fn tool_input_schema(&self, name: &str) -> Option<Arc<Value>> {
        self.registry
            .catalogue()
            .tool(name)
            .map(|t| t.input_schema.clone())
    }

    /// Publishes a server-wide event to every connection.
    pub fn publish(&self, event: ServerEvent) {
        let _ = self.events.send(event);
    }

    /// Tells every connection which lists a registry change changed.
    pub fn announce(&self, change: &Change) {
        for kind in &change.lists {
            self.publish(ServerEvent::ListChanged(*kind));
        }
    }

    /// Announces a plugin file's reload: changed lists, and for a replaced
    /// plugin, the subscribed resources it serves.
    pub fn announce_reload(&self, plugin: &str, reload: &Reload) {
        match reload {
            Reload::Unchanged => {}
            Reload::Added(change) | Reload::Removed(change) => self.announce(change),
            Reload::Replaced(change) => {
                self.announce(change);
                self.publish(ServerEvent::PluginReplaced(plugin.to_owned()));
            }
        }
    }

    /// Logs an error server-side (`detail`, which may name host paths) and
    /// tells every session that set a log level `summary` (which must not).
    pub fn log_error(&self, logger: &str, detail: String, summary: String) {
        tracing::error!(logger, "{detail}");
        self.publish(ServerEvent::Log {
            level: LogLevel::Error,
            logger: logger.to_owned(),
            message: summary,
        });
    }

    /// Listens to server-wide events.
    pub fn subscribe(&self) -> broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }

    /// What clients are told of plugins not served as their files stand.
    pub fn notices(&self) -> &Notices {
        &self.options.notices
    }

    /// `instructions`: the configured ones, then the plugins' notices.
    fn instructions(&self) -> Option<String> {
        let base = self.options.instructions.as_deref();
        self.options.notices.instructions(base)
    }

    /// `serverInfo`.
    fn server_info(&self) -> Value {
        json!({ "name": self.options.name, "version": self.options.version })
    }
}

/// Asks the client questions for one request: on that request's outbox
/// (over HTTP, the SSE stream of the POST that made it).
#[derive(Clone)]
pub struct Asker {
    conn: Weak<Connection>,
    link: Arc<mrtr::Link>,
    timeout: Duration,
    /// Told when the call starts (`true`) and stops (`false`) waiting for an
    /// answer: a task is `input_required` meanwhile.
    on_wait: Option<Arc<dyn Fn(bool) + Send + Sync>>,
}

/// Calls `on_wait(false)` when dropped.
struct Waiting(Option<Arc<dyn Fn(bool) + Send + Sync>>);

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(on_wait) = &self.0 {
            on_wait(false);
        }
    }
}

impl Asker {
    /// Sends `method` and waits for the client's result, until `timeout`
    /// or `cancelled`; then the client is told the request is cancelled.
    pub async fn ask(
        &self,
        method: &str,
        params: Value,
        mut cancelled: BoxFuture<()>,
    ) -> Result<Value, InputError> {
        let _slot = {
            let Some(conn) = self.conn.upgrade() else {
                return Err(InputError::Cancelled);
            };
            conn.server
                .waiting
                .take(conn.principal.as_deref())
                .map_err(InputError::Unsupported)?
        };
        if let Some(on_wait) = &self.on_wait {
            on_wait(true);
        }
        let _waiting = Waiting(self.on_wait.clone());
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        // A task's question waits for a stream to go on (its tasks/result).
        let out = tokio::select! {
            out = self.link.request_route() => out,
            () = &mut deadline => return Err(InputError::Timeout),
            () = &mut cancelled => return Err(InputError::Cancelled),
        };
        let Some(conn) = self.conn.upgrade() else {
            return Err(InputError::Cancelled);
        };
        let (id, answer) = conn.ask(&out, method, self.link.tag(params));
        drop(conn);
        // Withdrawn unless answered, even when this future is dropped.
        let mut pending = Withdraw {
            asker: self,
            id,
            reason: Some("the request was cancelled"),
        };
        tokio::select! {
            answer = answer => {
                pending.reason = None;
                match answer {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(InputError::ClientError(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the client answered with an error")
                            .to_owned(),
                    )),
                    Err(_) => Err(InputError::Cancelled),
                }
            }
            () = &mut deadline => {
                pending.reason = Some("no answer in time");
                Err(InputError::Timeout)
            }
            () = cancelled => Err(InputError::Cancelled),
        }
    }
}

/// Tells the client a question is withdrawn, unless it was answered.
struct Withdraw<'a> {
    asker: &'a Asker,
    id: Value,
    reason: Option<&'static str>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(reason) = self.reason else { return };
        if let Some(conn) = self.asker.conn.upgrade() {
            conn.forget(&self.id);
        }
        self.asker.link.notify(
            "notifications/cancelled",
            json!({ "requestId": self.id, "reason": reason }),
        );
    }
}

/// Cancels one request; a no-op once it ended.
pub struct Canceller(Arc<watch::Sender<bool>>);

impl Canceller {
    /// Cancels the request: it stops, and gets no response.
    pub fn cancel(&self) {
        let _ = self.0.send(true);
    }
}

/// How the owner of a session's tasks is named (when no principal owns
/// them): the prefix, then a random id.
const SESSION_OWNER: &str = "session:";

/// One client connection: its session state and its requests in flight.
pub struct Connection {
    server: Arc<Server>,
    out: Outbox,
    session: Mutex<Session>,
    in_flight: Mutex<HashMap<String, Arc<watch::Sender<bool>>>>,
    /// Requests this server sent the client, by id, awaiting an answer.
    asked: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_ask: AtomicU64,
    /// Becomes `true` when the connection is closed.
    closed: watch::Sender<bool>,
    /// Who the connection acts for, when the transport authenticated it.
    principal: Option<String>,
    /// Whose tasks this connection sees: its principal's, else its
    /// session's; `None` (stateless and anonymous) sees any task by id.
    task_owner: Option<String>,
}

impl Connection {
    /// A new session whose messages go to `out`, acting for `principal`
    /// when the transport authenticated one. Starts forwarding server-wide
    /// events to it.
    pub fn new(server: Arc<Server>, out: Outbox, principal: Option<String>) -> Arc<Self> {
        let owner = match &principal {
            Some(p) => format!("principal:{p}"),
            None => format!("{SESSION_OWNER}{}", crate::protocol::random_id()),
        };
        let conn = Self::build(server, out, principal, Some(owner));
        tokio::spawn(handlers::forward_legacy_events(
            Arc::downgrade(&conn),
            conn.server.subscribe(),
            conn.closed.subscribe(),
        ));
        conn
    }

    /// A connection for requests of the stateless revision only: nothing
    /// is forwarded to it but the answers to its own requests. `principal`
    /// is who it acts for, when the transport authenticated it.
    pub fn stateless(server: Arc<Server>, out: Outbox, principal: Option<String>) -> Arc<Self> {
        let owner = principal.as_ref().map(|p| format!("principal:{p}"));
        Self::build(server, out, principal, owner)
    }

    fn build(
        server: Arc<Server>,
        out: Outbox,
        principal: Option<String>,
        task_owner: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Connection {
            server,
            out,
            session: Mutex::new(Session::default()),
            in_flight: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            closed: watch::channel(false).0,
            principal,
            task_owner,
        })
    }

    /// Handles one line of stdio: responses and request-related messages go
    /// to the connection's own outbox.
    pub fn handle_text(self: &Arc<Self>, text: &str) {
        match parse_message(text) {
            Ok(message) => self.handle(message, text.len(), self.out.clone()),
            Err((id, error)) => {
                tracing::warn!("bad message: {}", error.message);
                self.out.send(error.response(&id));
            }
        }
    }

    /// Handles one message, `size` bytes as received. A request runs
    /// concurrently; its response and the notifications about it go to
    /// `reply`, which is dropped when the request is done.
    pub fn handle(self: &Arc<Self>, message: Incoming, size: usize, reply: Outbox) {
        match message {
            Incoming::Request { id, method, params } => {
                // The era and the handshake are settled in arrival order;
                // everything else runs concurrently.
                let handshake_only = self.server.options.handshake_only;
                let era = match session::era_of(&params, &self.session(), handshake_only) {
                    Ok(era) => era,
                    Err(error) => return reply.send(error.response(&id)),
                };
                if method == "initialize" && !era.is_modern() {
                    let outcome = handlers::initialize(self, &params);
                    if let Some(response) = self.respond(&id, &era, &method, outcome) {
                        reply.send(response);
                    }
                    return;
                }
                let on_connection = self.in_flight_count();
                let admitted = match self.server.admission.admit(
                    self.principal.as_deref(),
                    on_connection,
                    size,
                ) {
                    Ok(admitted) => admitted,
                    Err(error) => {
                        tracing::warn!(method, "request refused: {}", error.message);
                        return reply.send(error.response(&id));
                    }
                };
                let this = self.clone();
                let cancel = self.track(&id);
                tokio::spawn(async move {
                    let _admitted = admitted;
                    let request = handlers::Request {
                        conn: &this,
                        id: &id,
                        params: &params,
                        era: &era,
                        cancel: cancel.clone(),
                        reply: &reply,
                    };
                    let outcome = handlers::handle(request, &method).await;
                    let response = this.respond(&id, &era, &method, outcome);
                    this.untrack(&id);
                    // A cancelled request gets no response.
                    if *cancel.borrow() {
                        tracing::debug!(%id, method, "request cancelled");
                    } else if let Some(response) = response {
                        reply.send(response);
                    }
                });
            }
            Incoming::Notification { method, params } => self.notification(&method, &params),
            Incoming::Response { id, outcome } => {
                let waiting = self
                    .asked
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id.to_string());
                match waiting {
                    Some(answer) => {
                        let _ = answer.send(outcome);
                    }
                    None => {
                        tracing::debug!(%id, "ignoring a response to no request of this server")
                    }
                }
            }
        }
    }

    /// The revision this connection's handshake settled, if any.
    pub fn negotiated_version(&self) -> Option<&'static str> {
        self.session().version
    }

    /// Ends every request and subscription of this connection, and the
    /// tasks only its session could see.
    pub fn close(&self) {
        let _ = self.closed.send(true);
        if let Some(owner) = self
            .task_owner
            .as_deref()
            .filter(|o| o.starts_with(SESSION_OWNER))
        {
            self.server.tasks.cancel_owned(owner);
        }
        for (_, cancel) in self
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
        {
            let _ = cancel.send(true);
        }
    }

    fn in_flight_count(&self) -> usize {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    fn track(&self, id: &RequestId) -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(false);
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), Arc::new(tx));
        rx
    }

    /// What cancels the request `id` now in progress (and no later request
    /// that reuses its id), if there is one.
    pub fn canceller(&self, id: &RequestId) -> Option<Canceller> {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id.to_string())
            .map(|tx| Canceller(tx.clone()))
    }

    fn untrack(&self, id: &RequestId) {
        self.in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id.to_string());
    }

    /// Sends the client a request on the connection's own outbox; its
    /// answer (result or error object) arrives on the returned receiver.
    fn ask_client(&self, method: &str, params: Value) -> oneshot::Receiver<Result<Value, Value>> {
        self.ask(&self.out, method, params).1
    }

    /// Sends the client a request on `out`: its id, and where its answer
    /// (result or error object) will arrive.
    fn ask(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
    ) -> (Value, oneshot::Receiver<Result<Value, Value>>) {
        let id = json!(format!(
            "wasm-mcp-{}",
            self.next_ask.fetch_add(1, Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), tx);
        out.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        (id, rx)
    }

    /// Stops waiting for the answer to request `id`.
    fn forget(&self, id: &Value) {
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id.to_string());
    }

    fn notification(self: &Arc<Self>, method: &str, params: &Map<String, Value>) {
        match method {
            "notifications/cancelled" => {
                let Some(id) = params.get("requestId") else {
                    return;
                };
                if let Some(cancel) = self
                    .in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(&id.to_string())
                {
                    tracing::debug!(%id, "request cancelled by the client");
                    let _ = cancel.send(true);
                }
            }
            "notifications/initialized" => {
                let wants_roots = {
                    let mut session = self.session();
                    session.initialized = true;
                    session.client_roots.is_some()
                };
                if wants_roots {
                    tokio::spawn(roots::refresh(self.clone()));
                }
            }
            "notifications/roots/list_changed" => {
                if self.session().client_roots.is_some() {
                    tokio::spawn(roots::refresh(self.clone()));
                }
            }
            "notifications/progress" => {}
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The response to request `id`, shaped for its era; `None` means no
    /// response (a cancelled request).
    fn respond(
        &self,
        id: &RequestId,
        era: &Era,
        method: &str,
        outcome: Result<Option<Value>, RpcError>,
    ) -> Option<Value> {
        match outcome {
            Ok(None) => None,
            Ok(Some(result)) => Some(json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": shape_result(&self.server, era, method, result),
            })),
            Err(error) => Some(error.response(id)),
        }
    }
}

/// Adds what 2026-07-28 requires on every result (`resultType`, server
/// identity, and caching hints on cacheable ones).
fn shape_result(server: &Server, era: &Era, method: &str, mut result: Value) -> Value {
    let Era::Modern { .. } = era else {
        return result;
    };
    let Some(obj) = result.as_object_mut() else {
        return result;
    };
    obj.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(meta::SERVER_INFO.into(), server.server_info());
    }
    let ttl = match method {
        "tools/list"
        | "prompts/list"
        | "resources/list"
        | "resources/templates/list"
        | "server/discover" => Some((server.options.list_ttl_ms, "public")),
        "resources/read" => Some((0, "private")),
        _ => None,
    };
    if let Some((ttl, scope)) = ttl {
        obj.entry("ttlMs").or_insert_with(|| json!(ttl));
        obj.entry("cacheScope").or_insert_with(|| json!(scope));
    }
    result
}

pub use admission::{AdmissionLimits, RETRY_AFTER_MS};
pub use notices::Notices;
/// Notice keys.
pub use notices::{build_key as build_notice_key, load_key as load_notice_key};
pub use outbox::{Outbox, OutboxReceiver};
pub use session::all_versions;
pub use waiting::DEFAULT_MAX_WAITING_PER_PRINCIPAL;

impl Server {
    /// Checks the `_meta` of a stateless request (its revision and the
    /// client's capabilities) without serving it.
    pub fn check_stateless_meta(&self, params: &Map<String, Value>) -> Result<(), RpcError> {
        session::era_of(params, &Session::default(), self.options.handshake_only).map(|_| ())
    }

    /// Whether the stateless revision is offered.
    pub fn offers_stateless(&self) -> bool {
        !self.options.handshake_only
    }

    /// -32022 for a request of `requested`, listing the revisions offered.
    pub fn unsupported_version(&self, requested: &Value) -> RpcError {
        session::unsupported_version(requested, self.options.handshake_only)
    }
}

/// Shorthand for a `-32602` error.
fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::invalid_params(message)
}
