//! Sessions of the handshake revisions: ids from the OS's secure random
//! source, each bound to the principal that opened it, ended by DELETE or
//! by idling. What a session settles is kept in the server's session
//! store: a session this host does not hold but the store keeps (one a
//! host sharing the store opened) is taken up where it was.
//!
//! Among replicas, several may hold a copy of one session: a change saved
//! through one (its log level, subscriptions, roots) is announced on the
//! bus, and every other replica holding a copy reads the session again
//! from the store (one read at a time per session, changes heard meanwhile
//! coalesced into one more read: [`SessionTable::follow_changes`]). A
//! replica's copy idling out, or giving way to a new session at a cap,
//! only lets go of the copy: the session's idleness is the store's.

use super::event_log::{EventLog, Keeper};
use crate::protocol::random_id;
use crate::server::{Connection, Outbox, Server, SessionRecord};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Finished streams kept per session for a late resume.
const KEPT_STREAMS: usize = 64;

/// One session: its connection, its standalone (GET) stream, and the
/// response streams that may still be resumed.
pub(super) struct HttpSession {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// Who opened it (`None` without authentication).
    pub principal: Option<String>,
    /// The server side of the session.
    pub conn: Arc<Connection>,
    /// Server-initiated messages (list changes, logs, requests to the
    /// client), read by GET.
    pub standalone: Arc<EventLog>,
    streams: Mutex<Vec<Arc<EventLog>>>,
    next_stream: AtomicU64,
    /// Where its streams' events are kept for other hosts, if anywhere.
    keeper: Option<Keeper>,
    last_seen: Mutex<Instant>,
    /// Requests and streams open now; a busy session never idles out.
    busy: AtomicUsize,
    /// Whether the session is being read again from the store
    /// ([`IDLE`], [`READING`], or [`READ_AGAIN`]: changed again meanwhile).
    rereading: AtomicU8,
}

/// No read of the session from the store under way.
const IDLE: u8 = 0;
/// A read of the session from the store is under way.
const READING: u8 = 1;
/// A read is under way, and the session changed again since it began.
const READ_AGAIN: u8 = 2;

impl HttpSession {
    /// Notes activity.
    pub(super) fn touch(&self) {
        *self.last_seen.lock() = Instant::now();
    }

    /// A new response stream of this session: `first`, then `messages`
    /// until they end.
    pub(super) fn open_stream(
        &self,
        first: crate::server::Outgoing,
        messages: crate::server::OutboxReceiver,
    ) -> Arc<EventLog> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let log = EventLog::pumped(id, 1, Some(first), messages, self.keeper.clone());
        let mut streams = self.streams.lock();
        streams.retain(|s| !s.finished());
        if streams.len() >= KEPT_STREAMS {
            streams.remove(0);
        }
        streams.push(log.clone());
        log
    }

    /// Where its streams' events are kept for other hosts, if anywhere.
    pub(super) fn keeper(&self) -> Option<&Keeper> {
        self.keeper.as_ref()
    }

    /// The stream with this number, if it can still be resumed here.
    pub(super) fn stream(&self, id: u64) -> Option<Arc<EventLog>> {
        if id == self.standalone.id {
            return Some(self.standalone.clone());
        }
        let streams = self.streams.lock();
        streams.iter().find(|s| s.id == id).cloned()
    }

    /// Marks a request or stream as open until the guard drops.
    pub(super) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.touch();
        Busy(self.clone())
    }

    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Relaxed) > 0 {
            return None;
        }
        Some(self.last_seen.lock().elapsed())
    }
}

/// Keeps a session from idling out while alive.
pub(super) struct Busy(Arc<HttpSession>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Why a session could not be used.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// No such session (never was, ended, expired, or someone else's).
    Unknown,
    /// Not held here, and the session store, which may keep it, does not
    /// answer: the client may retry.
    StoreDown,
}

/// How many sessions may be open.
#[derive(Debug, Clone)]
pub struct SessionLimits {
    /// In total.
    pub max_sessions: usize,
    /// For one principal (all unauthenticated clients are one).
    pub max_per_principal: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: 10_000,
            max_per_principal: 1_000,
        }
    }
}

/// No session could be opened: every open one (of the principal, or in
/// all) has a request or stream in progress.
#[derive(Debug)]
pub(super) struct Full;

/// Every live session. At a cap, a new session takes the place of the
/// longest-idle one that has nothing in progress (its client gets 404 on
/// its next request and initializes again, as for an expired session).
#[derive(Default)]
pub(super) struct SessionTable {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    limits: SessionLimits,
}

impl SessionTable {
    fn map(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock()
    }

    /// A table with these limits.
    pub(super) fn new(limits: SessionLimits) -> Self {
        SessionTable {
            sessions: Mutex::default(),
            limits,
        }
    }

    /// Makes room for one more session of `principal`: ends the
    /// longest-idle session where a cap is reached.
    async fn make_room(&self, server: &Server, principal: &Option<String>) -> Result<(), Full> {
        let evicted = {
            let map = self.map();
            let longest_idle = |mine: bool, but: Option<&String>| {
                map.values()
                    .filter(|s| !mine || &s.principal == principal)
                    .filter(|s| Some(&s.id) != but)
                    .filter_map(|s| Some((s.idle_for()?, s.id.clone())))
                    .max()
                    .map(|(_, id)| id)
            };
            let mut evicted = Vec::new();
            let theirs = map.values().filter(|s| &s.principal == principal).count();
            if theirs >= self.limits.max_per_principal {
                evicted.push(longest_idle(true, None).ok_or(Full)?);
            }
            if map.len() - evicted.len() >= self.limits.max_sessions {
                evicted.push(longest_idle(false, evicted.first()).ok_or(Full)?);
            }
            evicted
        };
        for id in evicted {
            // Not one that got a request meanwhile. Among replicas, only
            // this host's copy goes: another may be serving the session.
            let idle = |s: &HttpSession| s.idle_for().is_some();
            if server.shares_sessions() {
                if self.release_held(&id, idle) {
                    tracing::info!("a session's copy let go of to make room (at the session cap)");
                }
            } else if self.end_held(&id, idle).await {
                tracing::info!("session ended to make room for a new one (at the session cap)");
            }
        }
        let map = self.map();
        let theirs = map.values().filter(|s| &s.principal == principal).count();
        let room = theirs < self.limits.max_per_principal && map.len() < self.limits.max_sessions;
        room.then_some(()).ok_or(Full)
    }

    /// Ends session `id` if this host holds it and `still(session)` holds:
    /// its connection is closed (its requests are cancelled, and it saves
    /// its session no more), it is forgotten in the session store (so no
    /// host takes it up again), then it leaves the table and its streams
    /// end.
    async fn end_held(&self, id: &str, still: impl Fn(&HttpSession) -> bool) -> bool {
        let held = match self.map().get(id) {
            Some(session) if still(session) => session.clone(),
            _ => return false,
        };
        held.conn.close();
        held.conn.forget_kept().await;
        self.map().remove(id);
        end(&held);
        true
    }

    /// Opens a session for `principal`, ending the longest-idle session
    /// where a cap is reached.
    pub(super) async fn open(
        &self,
        server: &Arc<Server>,
        principal: Option<String>,
    ) -> Result<Arc<HttpSession>, Full> {
        let id = random_id();
        self.make_room(server, &principal).await?;
        let (out, messages) = Outbox::new();
        let conn = Connection::kept(server.clone(), out, principal.clone(), id.clone());
        let keeper = keeper(server, &id);
        Ok(self.insert(id, principal, conn, messages, keeper, (1, 1)))
    }

    /// Takes up the kept session `record` (see the module's doc).
    async fn restore(
        &self,
        server: &Arc<Server>,
        record: &SessionRecord,
    ) -> Result<Arc<HttpSession>, Full> {
        self.make_room(server, &record.principal).await?;
        // Its streams go on with the numbers they had on the other host.
        let keeper = keeper(server, &record.id);
        let numbers = match &keeper {
            Some(k) => match k.store.last(&record.id).await {
                Ok((stream, seq)) => (stream + 1, seq + 1),
                Err(error) => {
                    tracing::warn!("the session's kept events could not be read: {error:#}");
                    (1, 1)
                }
            },
            None => (1, 1),
        };
        let (out, messages) = Outbox::new();
        let conn = Connection::restored(server.clone(), out, record);
        conn.stored_as(record);
        tracing::debug!("session taken up from the session store");
        let (id, principal) = (record.id.clone(), record.principal.clone());
        Ok(self.insert(id, principal, conn, messages, keeper, numbers))
    }

    /// Holds session `id` here; `(next stream, next standalone event)`
    /// are the numbers its streams go on with.
    fn insert(
        &self,
        id: String,
        principal: Option<String>,
        conn: Arc<Connection>,
        messages: crate::server::OutboxReceiver,
        keeper: Option<Keeper>,
        (next_stream, next_event): (u64, u64),
    ) -> Arc<HttpSession> {
        let session = Arc::new(HttpSession {
            id,
            conn,
            principal,
            standalone: EventLog::pumped(0, next_event, None, messages, keeper.clone()),
            streams: Mutex::new(Vec::new()),
            next_stream: AtomicU64::new(next_stream),
            keeper,
            last_seen: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            rereading: AtomicU8::new(IDLE),
        });
        let open = {
            let mut map = self.map();
            map.insert(session.id.clone(), session.clone());
            map.len()
        };
        tracing::debug!(open, "session opened");
        session
    }

    /// The session `id`, if it exists and belongs to `principal`: held
    /// here, or kept in the server's session store.
    pub(super) async fn find(
        &self,
        server: &Arc<Server>,
        id: &str,
        principal: &Option<String>,
    ) -> Result<Arc<HttpSession>, Lookup> {
        if let Ok(session) = self.get(id, principal) {
            return Ok(session);
        }
        let kept = match server.session_store().load(id).await {
            Ok(kept) => kept,
            Err(error) => {
                tracing::warn!("the session store failed to load a session: {error:#}");
                return Err(Lookup::StoreDown);
            }
        };
        let record = kept
            .filter(|r| &r.principal == principal)
            .ok_or(Lookup::Unknown)?;
        // Another request may have taken it up meanwhile.
        if let Ok(session) = self.get(id, principal) {
            return Ok(session);
        }
        self.restore(server, &record)
            .await
            .map_err(|Full| Lookup::Unknown)
    }

    /// The session `id`, if this host holds it and it belongs to
    /// `principal`.
    pub(super) fn get(
        &self,
        id: &str,
        principal: &Option<String>,
    ) -> Result<Arc<HttpSession>, Lookup> {
        let session = self.map().get(id).cloned().ok_or(Lookup::Unknown)?;
        if &session.principal != principal {
            return Err(Lookup::Unknown);
        }
        session.touch();
        Ok(session)
    }

    /// Ends a session (see [`SessionTable::end_held`]); whether this host
    /// held it.
    pub(super) async fn close(&self, id: &str) -> bool {
        let closed = self.end_held(id, |_| true).await;
        if closed {
            tracing::debug!(open = self.len(), "session closed");
        }
        closed
    }

    /// How many sessions are open.
    pub(super) fn len(&self) -> usize {
        self.map().len()
    }

    /// Lets go of the sessions idle here for longer than `idle`. A host on
    /// its own ends them. Among replicas (`shared`), only this host's copy
    /// goes: the session may be in use through another replica, and the
    /// shared store forgets it once no replica has used it for `idle`
    /// (see [`SessionTable::start_expiry`]); a client that comes back here
    /// before then has it taken up again.
    pub(super) async fn expire(&self, idle: Duration, shared: bool) -> usize {
        let idle_ones: Vec<String> = self
            .map()
            .values()
            .filter(|s| s.idle_for().is_some_and(|t| t > idle))
            .map(|s| s.id.clone())
            .collect();
        let mut expired = 0;
        for id in idle_ones {
            // Not one a client came back to meanwhile.
            let still_idle = |s: &HttpSession| s.idle_for().is_some_and(|t| t > idle);
            let gone = if shared {
                self.release_held(&id, still_idle)
            } else {
                self.end_held(&id, still_idle).await
            };
            expired += usize::from(gone);
        }
        if expired > 0 {
            tracing::debug!(expired, open = self.len(), shared, "sessions expired here");
        }
        expired
    }

    /// Reads session `id` again from the store if this host holds a copy,
    /// and brings the copy up to it ([`Connection::reread`]); a copy whose
    /// session the store no longer serves here is let go of. At most one
    /// read per session is under way: changes heard meanwhile make one
    /// more read once it ends, however many they are.
    fn follow_changes(self: &Arc<Self>, id: &str) {
        let Some(held) = self.map().get(id).cloned() else {
            return;
        };
        // Start a read, or have the one under way read once more.
        let was = held
            .rereading
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |state| {
                Some(if state == IDLE { READING } else { READ_AGAIN })
            });
        if was != Ok(IDLE) {
            return;
        }
        let table = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                match held.conn.reread().await {
                    crate::server::Reread::Gone => {
                        if let Some(table) = table.upgrade() {
                            let this = |s: &HttpSession| std::ptr::eq(s, &*held);
                            if table.release_held(&held.id, this) {
                                tracing::info!(
                                    "a session's copy let go of: the store no longer serves it here"
                                );
                            }
                        }
                        held.rereading.store(IDLE, Ordering::Release);
                        return;
                    }
                    _ => {
                        // Once more if it changed again meanwhile.
                        let done = held.rereading.compare_exchange(
                            READING,
                            IDLE,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        );
                        if done.is_ok() {
                            return;
                        }
                        held.rereading.store(READING, Ordering::Release);
                    }
                }
            }
        });
    }

    /// Lets go of this host's copy of session `id` if it holds it and
    /// `still(session)` holds: its requests and streams here end, the
    /// session stays in the store and its tasks run on.
    fn release_held(&self, id: &str, still: impl Fn(&HttpSession) -> bool) -> bool {
        let held = {
            let mut map = self.map();
            match map.get(id) {
                Some(session) if still(session) => map.remove(id),
                _ => None,
            }
        };
        let Some(held) = held else { return false };
        held.conn.release();
        held.standalone.close();
        true
    }

    /// Ends the sessions clients ended through other hosts (DELETE), and
    /// brings up to date the copies of sessions changed through other
    /// hosts ([`SessionTable::follow_changes`]), for as long as the table
    /// lives.
    pub(super) fn follow_ended(self: &Arc<Self>, server: &Arc<Server>) {
        let table = Arc::downgrade(self);
        let mut events = server.subscribe();
        let shared = server.shares_sessions();
        tokio::spawn(async move {
            use crate::server::{Heard, ServerEvent};
            loop {
                match events.recv().await {
                    Heard::Event(ServerEvent::SessionEnded(id)) => {
                        let Some(table) = table.upgrade() else { return };
                        if table.close(&id).await {
                            tracing::debug!("session ended through another host");
                        }
                    }
                    Heard::Event(ServerEvent::SessionChanged(id)) => {
                        let Some(table) = table.upgrade() else { return };
                        table.follow_changes(&id);
                    }
                    Heard::Missed(_) => {
                        // A change may have been missed: every copy is
                        // read again (once each).
                        let Some(table) = table.upgrade() else { return };
                        if shared {
                            let ids: Vec<String> = table.map().keys().cloned().collect();
                            for id in ids {
                                table.follow_changes(&id);
                            }
                        }
                    }
                    Heard::Closed => return,
                    _ => {
                        if table.strong_count() == 0 {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// Expires idle sessions every so often, for as long as the table
    /// lives ([`SessionTable::expire`]); tells the session store which
    /// sessions were used here since it was last told (a request, or a
    /// stream open now), and has it forget the ones nobody used for
    /// `idle`. So among replicas a session's idleness is the store's,
    /// counted from its last use through any of them: a replica's idle
    /// copy never ends a session another replica serves.
    pub(super) fn start_expiry(self: &Arc<Self>, server: &Arc<Server>, idle: Duration) {
        let table = Arc::downgrade(self);
        let store = server.session_store().clone();
        let shared = server.shares_sessions();
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            // When the store last heard which sessions were used here.
            let mut told = Instant::now();
            loop {
                tokio::time::sleep(every).await;
                let Some(table) = table.upgrade() else { return };
                table.expire(idle, shared).await;
                let sweep = Instant::now();
                let since = told.elapsed();
                let used: Vec<String> = table
                    .map()
                    .values()
                    .filter(|s| s.idle_for().is_none_or(|t| t <= since))
                    .map(|s| s.id.clone())
                    .collect();
                drop(table);
                let kept = match store.touch(&used).await {
                    Ok(()) => {
                        told = sweep;
                        store.forget_idle(idle).await.map(drop)
                    }
                    Err(error) => Err(error),
                };
                if let Err(error) = kept {
                    tracing::warn!("the session store failed to keep sessions: {error:#}");
                }
            }
        });
    }
}

/// Where session `id`'s stream events are kept for other hosts, if
/// anywhere.
fn keeper(server: &Server, id: &str) -> Option<Keeper> {
    server.stream_events().map(|store| Keeper {
        store: store.clone(),
        session: id.to_owned(),
    })
}

/// Ends a session here: its requests are cancelled, its streams end.
fn end(session: &HttpSession) {
    session.conn.close();
    session.standalone.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::tests::empty_server;

    #[tokio::test]
    async fn a_session_ended_here_stays_forgotten_in_the_store() {
        let server = empty_server();
        let table = SessionTable::new(SessionLimits::default());
        let session = table.open(&server, None).await.ok().unwrap();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        crate::server::handle_text(&session.conn, init);
        session.conn.persist().await;
        let store = server.session_store();
        assert!(store.load(&session.id).await.unwrap().is_some());
        assert!(table.close(&session.id).await);
        // A save still under way when it ended (a roots answer, a setLevel)
        // does not bring it back.
        session.conn.persist().await;
        assert_eq!(store.load(&session.id).await.unwrap(), None);
        assert!(table.find(&server, &session.id, &None).await.is_err());
    }

    #[tokio::test]
    async fn an_idle_copy_among_replicas_goes_but_the_session_stays() {
        let server = empty_server();
        let table = SessionTable::new(SessionLimits::default());
        let store = server.session_store();
        let mut ids = Vec::new();
        for _ in 0..2 {
            let session = table.open(&server, None).await.ok().unwrap();
            session.conn.persist().await;
            ids.push(session.id.clone());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        // Among replicas, only this host's copy goes: the session is still
        // in the store, and taken up again when its client comes back.
        assert_eq!(table.expire(Duration::from_millis(1), true).await, 2);
        assert_eq!(table.len(), 0);
        assert!(store.load(&ids[0]).await.unwrap().is_some());
        assert!(table.find(&server, &ids[0], &None).await.is_ok());
        assert_eq!(table.len(), 1);
        // A host on its own ends an idle session: gone from the store too.
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(table.expire(Duration::from_millis(1), false).await, 1);
        assert_eq!(store.load(&ids[0]).await.unwrap(), None);
        assert!(table.find(&server, &ids[0], &None).await.is_err());
        // The other one was only let go of: it is still kept.
        assert!(store.load(&ids[1]).await.unwrap().is_some());
    }

    #[test]
    fn session_ids_are_128_random_bits() {
        let a = random_id();
        let b = random_id();
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }
}
