//! One client connection: its session (kept in the session store, read
//! again when another host changed it), the server-wide events forwarded
//! to it, its requests in flight (each run concurrently, cancellable) and
//! the requests it sent the client. What it is sent is dispatched by
//! `dispatch.rs`, which sits above the methods; this file knows nothing
//! of them.

use super::call::{Client, WaitSlot};
use super::events::{self, Listener};
use super::session::Session;
use super::session_store::SessionRecord;
use super::{roots, Caller, Outbox, Server, ServerEvent};
use crate::protocol::RequestId;
use crate::registry::Catalogue;
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What reading a session again found ([`Connection::reread`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reread {
    /// This copy was brought up to the stored session.
    Changed,
    /// Nothing changed here (or nothing is kept for this connection).
    Same,
    /// The store does not keep the session any more, or keeps it in a
    /// form this host does not serve: this copy should go.
    Gone,
    /// The store did not answer: this copy is as it was.
    Failed,
}

/// Cancels one request; a no-op once it ended.
pub struct Canceller(CancellationToken);

impl Canceller {
    /// Cancels the request: it stops, and gets no response.
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

/// How the owner of a session's tasks is named (when no principal owns
/// them): the prefix, then a random id.
const SESSION_OWNER: &str = "session:";

/// Whose tasks a session sees: its principal's, else its own.
fn task_owner(principal: Option<&str>) -> String {
    match principal {
        Some(p) => format!("principal:{p}"),
        None => format!("{SESSION_OWNER}{}", crate::protocol::random_id()),
    }
}

/// One client connection: its session state and its requests in flight.
pub struct Connection {
    pub(super) server: Arc<Server>,
    pub(super) out: Outbox,
    session: Mutex<Session>,
    /// The id its session is kept under in the server's session store.
    kept_as: Option<String>,
    /// Held while the session is saved or read again: saves run one at a
    /// time, each of the session as it is then (so the last one is of the
    /// newest).
    saving: tokio::sync::Mutex<()>,
    /// The session as the store keeps it, as far as this host knows: as
    /// it last saved or read it (`None` until then). What another host
    /// changed is told from it ([`Connection::reread`]).
    stored: Mutex<Option<SessionRecord>>,
    pub(super) in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// Requests this server sent the client, by id, awaiting an answer.
    pub(super) asked: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_ask: AtomicU64,
    /// Cancelled when the connection is closed.
    pub(super) closed: CancellationToken,
    /// The requests being served, until each has sent its answer.
    pub(super) answering: TaskTracker,
    /// Set when the client stopped sending ([`Connection::finish`]): a
    /// request cancelled from then on is answered with an error saying so,
    /// instead of not at all.
    pub(super) ending: AtomicBool,
    /// Who the connection acts for, when the transport authenticated it.
    pub(super) principal: Option<String>,
    /// Who opened it (the caller of a message without one of its own).
    pub(super) caller: Arc<Caller>,
    /// Whose tasks this connection sees: its principal's, else its
    /// session's; `None` (stateless and anonymous) sees any task by id.
    pub(super) task_owner: Option<String>,
    /// Counts it among the open sessions while it lives (not a stateless
    /// request's connection).
    _counted: Option<crate::metrics::Open>,
}

impl Connection {
    /// A new session whose messages go to `out`, acting for `principal`
    /// when the transport authenticated one. Starts forwarding server-wide
    /// events to it.
    pub fn new(server: Arc<Server>, out: Outbox, caller: Arc<Caller>) -> Arc<Self> {
        let owner = Some(task_owner(caller.principal.as_deref()));
        Self::open_session(server, out, caller, owner, None, Session::default())
    }

    /// A handshake session's connection that a transport names `id`: what
    /// its session settles is kept in the server's session store
    /// ([`Connection::persist`]), so a host sharing the store can go on
    /// with it ([`Connection::restored`]).
    pub fn kept(
        server: Arc<Server>,
        out: Outbox,
        principal: Option<String>,
        id: String,
    ) -> Arc<Self> {
        let owner = Some(task_owner(principal.as_deref()));
        let caller = Arc::new(Caller::with_token(principal, Map::new()));
        Self::open_session(server, out, caller, owner, Some(id), Session::default())
    }

    /// The connection of a kept session, as `record` left it.
    pub fn restored(server: Arc<Server>, out: Outbox, record: &SessionRecord) -> Arc<Self> {
        let caller = Arc::new(Caller::with_token(record.principal.clone(), Map::new()));
        let (owner, id) = (record.task_owner.clone(), Some(record.id.clone()));
        Self::open_session(server, out, caller, owner, id, record.session())
    }

    fn open_session(
        server: Arc<Server>,
        out: Outbox,
        caller: Arc<Caller>,
        task_owner: Option<String>,
        kept_as: Option<String>,
        session: Session,
    ) -> Arc<Self> {
        let counted = crate::metrics::metrics().session_opened();
        let conn = Self::build(
            server,
            out,
            caller,
            task_owner,
            Some(counted),
            kept_as,
            session,
        );
        tokio::spawn(events::forward_handshake_events(
            Arc::downgrade(&conn),
            conn.server.subscribe(),
            conn.closed.clone(),
        ));
        conn
    }

    /// A connection for requests of the stateless revision only: nothing
    /// is forwarded to it but the answers to its own requests. `caller` is
    /// who it acts for.
    pub fn stateless(server: Arc<Server>, out: Outbox, caller: Arc<Caller>) -> Arc<Self> {
        let owner = caller.principal.as_ref().map(|p| format!("principal:{p}"));
        Self::build(server, out, caller, owner, None, None, Session::default())
    }

    fn build(
        server: Arc<Server>,
        out: Outbox,
        caller: Arc<Caller>,
        task_owner: Option<String>,
        counted: Option<crate::metrics::Open>,
        kept_as: Option<String>,
        session: Session,
    ) -> Arc<Self> {
        Arc::new(Connection {
            server,
            out,
            session: Mutex::new(session),
            kept_as,
            saving: tokio::sync::Mutex::new(()),
            stored: Mutex::new(None),
            in_flight: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            closed: CancellationToken::new(),
            answering: TaskTracker::new(),
            ending: AtomicBool::new(false),
            principal: caller.principal.clone(),
            caller,
            task_owner,
            _counted: counted,
        })
    }

    /// Saves what the session settled in the server's session store, if
    /// it is kept there; a failure is logged (the session goes on here).
    /// Among replicas, a saved change is announced
    /// ([`ServerEvent::SessionChanged`]): the others holding a copy read
    /// it again ([`Connection::reread`]).
    pub async fn persist(&self) {
        let Some(id) = &self.kept_as else { return };
        let _one_at_a_time = self.saving.lock().await;
        if self.closed.is_cancelled() {
            return;
        }
        let mut record = SessionRecord::of(
            id,
            self.principal.as_deref(),
            self.task_owner.as_deref(),
            &self.session(),
        );
        let before = self.stored.lock().clone();
        if let Some(before) = &before {
            // What a newer host added to this version's record stays.
            record.unknown = before.unknown.clone();
        }
        if let Err(error) = self.server.sessions.save(&record).await {
            // What the store keeps is not known now.
            *self.stored.lock() = None;
            return tracing::warn!("the session store failed to save a session: {error:#}");
        }
        let changed = before.as_ref().is_some_and(|before| before != &record);
        *self.stored.lock() = Some(record);
        if changed && self.server.shares_sessions() {
            self.server.publish(ServerEvent::SessionChanged(id.clone()));
        }
    }

    /// Notes that the session store keeps this connection's session as
    /// `record` (it was taken up from there).
    pub fn stored_as(&self, record: &SessionRecord) {
        *self.stored.lock() = Some(record.clone());
    }

    /// Reads the session again from the session store, after another host
    /// changed it, and brings this copy up to it: what the other host
    /// changed is applied (its log level, subscriptions, roots and
    /// capabilities), what changed here and is not saved yet stays.
    pub async fn reread(&self) -> Reread {
        let Some(id) = &self.kept_as else {
            return Reread::Same;
        };
        let _one_at_a_time = self.saving.lock().await;
        if self.closed.is_cancelled() {
            return Reread::Same;
        }
        let theirs = match self.server.sessions.load(id).await {
            Ok(Some(theirs)) => theirs,
            // Ended, or of a version this host does not serve.
            Ok(None) => return Reread::Gone,
            Err(error) => {
                tracing::warn!("the session store failed to read a changed session: {error:#}");
                return Reread::Failed;
            }
        };
        if theirs.principal != self.principal {
            return Reread::Gone;
        }
        let base = self.stored.lock().take();
        let mut session = self.session();
        let base = base.unwrap_or_else(|| {
            // Not known: as this copy is (what differs is theirs).
            SessionRecord::of(
                id,
                self.principal.as_deref(),
                self.task_owner.as_deref(),
                &session,
            )
        });
        let changed = SessionRecord::update(&mut session, &base, &theirs);
        drop(session);
        *self.stored.lock() = Some(theirs);
        if changed {
            tracing::debug!("session changed through another host: taken up here");
            Reread::Changed
        } else {
            Reread::Same
        }
    }

    /// Forgets the session in the server's session store, if it is kept
    /// there, after any save under way (call it once the connection is
    /// closed: it saves nothing more then).
    pub async fn forget_kept(&self) {
        let Some(id) = &self.kept_as else { return };
        let _one_at_a_time = self.saving.lock().await;
        if let Err(error) = self.server.sessions.remove(id).await {
            tracing::warn!("the session store failed to forget a session: {error:#}");
        }
    }

    /// The revision this connection's handshake settled, if any.
    pub fn negotiated_version(&self) -> Option<crate::protocol::Revision> {
        self.session().version
    }

    /// Ends every request and subscription of this connection, and the
    /// tasks only its session could see.
    pub fn close(&self) {
        self.release();
        if let Some(owner) = self
            .task_owner
            .as_deref()
            .filter(|o| o.starts_with(SESSION_OWNER))
        {
            let (tasks, owner) = (self.server.tasks.clone(), owner.to_owned());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { tasks.cancel_owned(&owner).await });
            }
        }
    }

    /// Ends every request and subscription of this connection, and saves
    /// its session no more, but leaves the session itself be: this host
    /// lets go of its copy of a session another host may still serve
    /// (its tasks run on, and the session store keeps it).
    pub fn release(&self) {
        self.closed.cancel();
        for (_, cancel) in self.in_flight.lock().drain() {
            cancel.cancel();
        }
    }

    /// Ends the connection of a client that will send nothing more (stdin
    /// closed), once every request it sent has its answer: those still
    /// running after `grace` are cancelled and answered with an error
    /// saying so. Questions to the client fail at once (nothing can answer
    /// them now). The grace starts once requests no longer wait for the
    /// plugins' first load ([`Server::until_loaded`]). Returns after at most
    /// the rest of that wait, `grace` and one second more.
    pub async fn finish(&self, grace: Duration) {
        self.asked.lock().clear();
        self.answering.close();
        let answered = tokio::select! {
            () = self.answering.wait() => true,
            () = self.server.until_loaded() => false,
        };
        if !answered
            && tokio::time::timeout(grace, self.answering.wait())
                .await
                .is_err()
        {
            tracing::warn!(
                requests = self.in_flight_count(),
                "the client closed its input; cancelling the requests still running after {} ms",
                grace.as_millis()
            );
            self.ending.store(true, Ordering::Release);
            for cancel in self.in_flight.lock().values() {
                cancel.cancel();
            }
            let _ = tokio::time::timeout(Duration::from_secs(1), self.answering.wait()).await;
        }
        self.close();
    }

    /// Whether requests are being cancelled because the client stopped
    /// sending (they are answered, unlike those the client cancelled).
    pub(super) fn is_ending(&self) -> bool {
        self.ending.load(Ordering::Acquire)
    }

    pub(super) fn in_flight_count(&self) -> usize {
        self.in_flight.lock().len()
    }

    pub(super) fn track(&self, id: &RequestId) -> CancellationToken {
        let token = CancellationToken::new();
        self.in_flight.lock().insert(id.to_string(), token.clone());
        token
    }

    /// What cancels the request `id` now in progress (and no later request
    /// that reuses its id), if there is one.
    pub fn canceller(&self, id: &RequestId) -> Option<Canceller> {
        self.in_flight
            .lock()
            .get(&id.to_string())
            .map(|token| Canceller(token.clone()))
    }

    pub(super) fn untrack(&self, id: &RequestId) {
        self.in_flight.lock().remove(&id.to_string());
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
        self.asked.lock().insert(id.to_string(), tx);
        out.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        (id, rx)
    }

    /// Stops waiting for the answer to request `id`.
    pub(super) fn forget(&self, id: &Value) {
        self.asked.lock().remove(&id.to_string());
    }

    /// The client's answer to one of this server's requests.
    pub(super) fn answered(&self, id: RequestId, outcome: Result<Value, Value>) {
        let waiting = self.asked.lock().remove(&id.to_string());
        match waiting {
            Some(answer) => {
                let _ = answer.send(outcome);
            }
            None => tracing::debug!(%id, "ignoring a response to no request of this server"),
        }
    }

    /// Asks the client for its roots (`roots/list`) and keeps them in the
    /// session. Until an answer arrives the previous roots stay (none at
    /// first: nothing visible).
    pub(super) async fn refresh_roots(self: Arc<Self>) {
        let answer = self.ask_client("roots/list", json!({}));
        let roots = match tokio::time::timeout(roots::ANSWER_TIMEOUT, answer).await {
            Ok(Ok(Ok(result))) => roots::folders(&result),
            Ok(Ok(Err(error))) => {
                return tracing::warn!("the client answered roots/list with an error: {error}")
            }
            Ok(Err(_)) => return,
            Err(_) => return tracing::warn!("the client did not answer roots/list in time"),
        };
        let roots = Arc::new(roots);
        self.session().client_roots = Some(roots.clone());
        self.persist().await;
        tracing::debug!(?roots, "client roots");
    }

    pub(super) fn session(&self) -> parking_lot::MutexGuard<'_, Session> {
        self.session.lock()
    }
}

impl Listener for Connection {
    fn settled(&self) -> parking_lot::MutexGuard<'_, Session> {
        self.session()
    }

    fn outbox(&self) -> &Outbox {
        &self.out
    }

    fn catalogue(&self) -> Arc<Catalogue> {
        self.server.registry.catalogue()
    }
}

impl Client for Connection {
    fn wait_slot(&self) -> Result<WaitSlot, String> {
        self.server.waiting.take(self.principal.as_deref())
    }

    fn request(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
    ) -> (Value, oneshot::Receiver<Result<Value, Value>>) {
        self.ask(out, method, params)
    }

    fn forget(&self, id: &Value) {
        Connection::forget(self, id);
    }
}
