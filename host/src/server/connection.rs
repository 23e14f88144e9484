//! One client connection: its session, its requests in flight (each run
//! concurrently, cancellable), and the requests it was sent.

use super::session::{self, Era, Session};
use super::{events, methods, roots, Outbox, Outcome, Server};
use crate::protocol::{meta, notification, parse_message, Caching, Incoming, Method, RequestId};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{oneshot, watch};

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
    pub(super) server: Arc<Server>,
    pub(super) out: Outbox,
    session: Mutex<Session>,
    in_flight: Mutex<HashMap<String, Arc<watch::Sender<bool>>>>,
    /// Requests this server sent the client, by id, awaiting an answer.
    asked: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_ask: AtomicU64,
    /// Becomes `true` when the connection is closed.
    closed: watch::Sender<bool>,
    /// Who the connection acts for, when the transport authenticated it.
    pub(super) principal: Option<String>,
    /// Whose tasks this connection sees: its principal's, else its
    /// session's; `None` (stateless and anonymous) sees any task by id.
    pub(super) task_owner: Option<String>,
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
        tokio::spawn(events::forward_legacy_events(
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
                let parsed = Method::parse(&method);
                if parsed == Some(Method::Initialize) && !era.is_modern() {
                    let outcome = methods::lifecycle::initialize(self, &params);
                    if let Some(response) = self.respond(&id, &era, parsed, outcome) {
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
                    let request = super::request::Request {
                        conn: &this,
                        id: &id,
                        params: &params,
                        era: &era,
                        cancel: cancel.clone(),
                        reply: &reply,
                    };
                    let outcome = methods::handle(request, &method, parsed).await;
                    let response = this.respond(&id, &era, parsed, outcome);
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
    pub fn negotiated_version(&self) -> Option<crate::protocol::Revision> {
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
    pub(super) fn ask_client(
        &self,
        method: &str,
        params: Value,
    ) -> oneshot::Receiver<Result<Value, Value>> {
        self.ask(&self.out, method, params).1
    }

    /// Sends the client a request on `out`: its id, and where its answer
    /// (result or error object) will arrive.
    pub(super) fn ask(
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
    pub(super) fn forget(&self, id: &Value) {
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id.to_string());
    }

    fn notification(self: &Arc<Self>, method: &str, params: &Map<String, Value>) {
        match method {
            notification::CANCELLED => {
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
            notification::INITIALIZED => {
                let wants_roots = {
                    let mut session = self.session();
                    session.initialized = true;
                    session.client_roots.is_some()
                };
                if wants_roots {
                    tokio::spawn(roots::refresh(self.clone()));
                }
            }
            notification::ROOTS_LIST_CHANGED => {
                if self.session().client_roots.is_some() {
                    tokio::spawn(roots::refresh(self.clone()));
                }
            }
            notification::PROGRESS => {}
            other => tracing::debug!(method = other, "ignoring notification"),
        }
    }

    pub(super) fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The response to request `id`, shaped for its era; `None` means no
    /// response (a cancelled request).
    fn respond(
        &self,
        id: &RequestId,
        era: &Era,
        method: Option<Method>,
        outcome: Outcome,
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
fn shape_result(server: &Server, era: &Era, method: Option<Method>, mut result: Value) -> Value {
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
    let ttl = match method.map_or(Caching::None, Method::caching) {
        Caching::List => Some((server.options.list_ttl_ms, "public")),
        Caching::Private => Some((0, "private")),
        Caching::None => None,
    };
    if let Some((ttl, scope)) = ttl {
        obj.entry("ttlMs").or_insert_with(|| json!(ttl));
        obj.entry("cacheScope").or_insert_with(|| json!(scope));
    }
    result
}
