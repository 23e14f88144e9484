//! Where the handshake sessions a transport names by id are kept
//! ([`SessionStore`]), so that a host sharing the store can serve a
//! session's next request: what the session settled (its revision, the
//! client's capabilities, `initialized`, its log level, subscriptions and
//! roots), keyed by the transport's session id and bound to the principal
//! that opened it. Today's one implementation is in-process
//! ([`MemorySessions`]); any other must pass the same contract
//! (`contract::check`). A session's live parts (its requests in flight,
//! its streams) are not kept: they belong to the host serving them.

use super::convert::{log_level_name, parse_log_level};
use super::session::Session;
use crate::protocol::Revision;
use anyhow::Result;
use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One session as it is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The transport's id for it (`Mcp-Session-Id`).
    pub id: String,
    /// Who opened it; only they may use it.
    pub principal: Option<String>,
    /// Whose tasks it sees (its principal's, else its own).
    pub task_owner: Option<String>,
    /// The negotiated revision, once `initialize` was answered.
    pub version: Option<String>,
    /// The client's declared capabilities.
    pub client_capabilities: Value,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The level set by `logging/setLevel`.
    pub log_level: Option<String>,
    /// URIs subscribed to, sorted.
    pub subscriptions: Vec<String>,
    /// The client's roots as local folders, when it declared the `roots`
    /// capability (`None`: it did not, and plugins see every granted
    /// folder). A folder whose path is not UTF-8 is left out (seeing less,
    /// never more).
    pub client_roots: Option<Vec<String>>,
}

impl SessionRecord {
    /// What `session` (of transport session `id`, opened by `principal`,
    /// seeing the tasks of `task_owner`) settled.
    pub fn of(
        id: &str,
        principal: Option<&str>,
        task_owner: Option<&str>,
        session: &Session,
    ) -> Self {
        let mut subscriptions: Vec<String> = session.subscriptions.iter().cloned().collect();
        subscriptions.sort();
        SessionRecord {
            id: id.to_owned(),
            principal: principal.map(str::to_owned),
            task_owner: task_owner.map(str::to_owned),
            version: session.version.map(|v| v.as_str().to_owned()),
            client_capabilities: session.client_capabilities.clone(),
            initialized: session.initialized,
            log_level: session.log_level.map(|l| log_level_name(l).to_owned()),
            subscriptions,
            client_roots: session.client_roots.as_ref().map(|roots| {
                roots
                    .iter()
                    .filter_map(|p| p.to_str().map(str::to_owned))
                    .collect()
            }),
        }
    }

    /// The session it records.
    pub fn session(&self) -> Session {
        Session {
            version: self.version.as_deref().and_then(Revision::parse),
            client_capabilities: self.client_capabilities.clone(),
            initialized: self.initialized,
            log_level: self.log_level.as_deref().and_then(parse_log_level),
            subscriptions: self.subscriptions.iter().cloned().collect(),
            client_roots: self
                .client_roots
                .as_ref()
                .map(|roots| Arc::new(roots.iter().map(PathBuf::from).collect())),
        }
    }
}

/// The sessions every host sharing the store can serve.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Keeps `record`, replacing the one with its id; an error when the
    /// store is full. A store shared by hosts writes what changed since
    /// this host last saved or loaded the session (a subscription more is
    /// one small write, whatever the session holds).
    async fn save(&self, record: &SessionRecord) -> Result<()>;
    /// The session `id`, if it is kept.
    async fn load(&self, id: &str) -> Result<Option<SessionRecord>>;
    /// Forgets session `id`; whether it was kept.
    async fn remove(&self, id: &str) -> Result<bool>;
    /// Notes that sessions `ids` are in use (held by a host, whether or not
    /// they changed).
    async fn touch(&self, ids: &[String]) -> Result<()>;
    /// Forgets the sessions neither saved nor touched for `idle`; how many.
    async fn forget_idle(&self, idle: Duration) -> Result<usize>;
}

/// The SSE events of the sessions' streams, kept where hosts sharing the
/// session store can replay them: a client that lost its host resumes a
/// stream with `Last-Event-ID` on another one. (A host on its own has
/// none: its streams' own logs serve resumption.) Bounded per session,
/// however appends from hosts interleave; only the events of sessions the
/// session store keeps, and a session's events go with it.
#[async_trait]
pub trait StreamEvents: Send + Sync {
    /// Keeps event `seq` (`text`, one JSON-RPC message) of stream `stream`
    /// of session `session`; beyond the bound, the session's oldest go. An
    /// event of a session the store does not keep is not kept.
    async fn append(&self, session: &str, stream: u64, seq: u64, text: &str) -> Result<()>;
    /// Up to `limit` events of the stream after event `seq`, in order.
    async fn after(
        &self,
        session: &str,
        stream: u64,
        seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>>;
    /// Where the session's streams stand: the highest stream number kept,
    /// and the highest event number of stream 0 (its standalone stream).
    async fn last(&self, session: &str) -> Result<(u64, u64)>;
}

/// The sessions of one process, at most `capacity` of them.
pub struct MemorySessions {
    sessions: Mutex<HashMap<String, (SessionRecord, Instant)>>,
    capacity: usize,
}

impl MemorySessions {
    /// An empty store for at most `capacity` sessions.
    pub fn new(capacity: usize) -> Self {
        MemorySessions {
            sessions: Mutex::default(),
            capacity,
        }
    }
}

#[async_trait]
impl SessionStore for MemorySessions {
    async fn save(&self, record: &SessionRecord) -> Result<()> {
        let mut sessions = self.sessions.lock();
        if sessions.len() >= self.capacity && !sessions.contains_key(&record.id) {
            anyhow::bail!("the session store is full ({} sessions)", self.capacity);
        }
        sessions.insert(record.id.clone(), (record.clone(), Instant::now()));
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Option<SessionRecord>> {
        Ok(self.sessions.lock().get(id).map(|(r, _)| r.clone()))
    }

    async fn remove(&self, id: &str) -> Result<bool> {
        Ok(self.sessions.lock().remove(id).is_some())
    }

    async fn touch(&self, ids: &[String]) -> Result<()> {
        let mut sessions = self.sessions.lock();
        let now = Instant::now();
        for id in ids {
            if let Some((_, touched)) = sessions.get_mut(id) {
                *touched = now;
            }
        }
        Ok(())
    }

    async fn forget_idle(&self, idle: Duration) -> Result<usize> {
        let mut sessions = self.sessions.lock();
        let before = sessions.len();
        sessions.retain(|_, (_, touched)| touched.elapsed() <= idle);
        Ok(before - sessions.len())
    }
}

/// What every [`SessionStore`] must do, as one check to run against each
/// implementation (empty, with room for `capacity` sessions).
#[cfg(test)]
pub(crate) mod contract {
    use super::*;
    use serde_json::json;

    fn record(id: &str) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            principal: Some("ada".into()),
            task_owner: Some("principal:ada".into()),
            version: Some("2025-11-25".into()),
            client_capabilities: json!({ "roots": {}, "elicitation": { "form": {} } }),
            initialized: true,
            log_level: Some("warning".into()),
            subscriptions: vec!["file:///a".into(), "file:///b".into()],
            client_roots: Some(vec!["/data".into()]),
        }
    }

    /// Runs every check against `store`.
    pub async fn check(store: &dyn SessionStore, capacity: usize) {
        let kept = record("s1");
        store.save(&kept).await.unwrap();
        assert_eq!(store.load("s1").await.unwrap(), Some(kept.clone()));
        assert_eq!(store.load("nobody").await.unwrap(), None);
        // Saving again replaces.
        let mut changed = kept.clone();
        changed.log_level = None;
        changed.subscriptions.clear();
        changed.client_roots = None;
        store.save(&changed).await.unwrap();
        assert_eq!(store.load("s1").await.unwrap(), Some(changed));
        assert!(store.remove("s1").await.unwrap());
        assert!(!store.remove("s1").await.unwrap());
        assert_eq!(store.load("s1").await.unwrap(), None);
        // Full: a new session is refused, a kept one still saves.
        for i in 0..capacity {
            store.save(&record(&format!("f{i}"))).await.unwrap();
        }
        assert!(store.save(&record("one-too-many")).await.is_err());
        store.save(&record("f0")).await.unwrap();
        assert!(store.remove("f0").await.unwrap());
        store.save(&record("one-too-many")).await.unwrap();
        // Idle sessions are forgotten, touched ones kept.
        tokio::time::sleep(Duration::from_millis(30)).await;
        store.touch(&["f1".into(), "gone".into()]).await.unwrap();
        let forgotten = store.forget_idle(Duration::from_millis(20)).await.unwrap();
        assert_eq!(forgotten, capacity - 1);
        assert!(store.load("f1").await.unwrap().is_some());
        assert!(store.load("f2").await.unwrap().is_none());
        assert!(store.remove("f1").await.unwrap());
    }

    /// Checks that sessions handed between two hosts sharing one store
    /// (`a` and `b`: two handles on it, or the same one) read back as the
    /// last save left them, subscriptions added and removed one by one.
    pub async fn check_shared(a: &dyn SessionStore, b: &dyn SessionStore) {
        let mut kept = record("moving");
        a.save(&kept).await.unwrap();
        for i in 0..40 {
            kept.subscriptions.push(format!("file:///{i:02}"));
            kept.subscriptions.sort();
            a.save(&kept).await.unwrap();
        }
        assert_eq!(b.load("moving").await.unwrap(), Some(kept.clone()));
        // b changes it: one fewer, one more, another log level.
        kept.subscriptions.retain(|uri| uri != "file:///07");
        kept.subscriptions.push("file:///zz".into());
        b.save(&kept).await.unwrap();
        kept.log_level = Some("debug".into());
        b.save(&kept).await.unwrap();
        // a takes it up again, and changes it again.
        assert_eq!(a.load("moving").await.unwrap(), Some(kept.clone()));
        kept.subscriptions.retain(|uri| uri != "file:///zz");
        kept.initialized = false;
        a.save(&kept).await.unwrap();
        assert_eq!(b.load("moving").await.unwrap(), Some(kept.clone()));
        assert_eq!(a.load("moving").await.unwrap(), Some(kept.clone()));
        // Saved again unchanged, by either.
        b.save(&kept).await.unwrap();
        assert_eq!(a.load("moving").await.unwrap(), Some(kept));
        // Removed through b, it is gone for a, even saved anew.
        assert!(b.remove("moving").await.unwrap());
        assert_eq!(a.load("moving").await.unwrap(), None);
        let fresh = record("moving");
        a.save(&fresh).await.unwrap();
        assert_eq!(b.load("moving").await.unwrap(), Some(fresh));
        assert!(a.remove("moving").await.unwrap());
    }

    /// Checks `events` (`a` and `b`: two hosts' handles on one store),
    /// kept for the sessions of `sessions`, at most `cap` per session.
    pub async fn check_events(
        a: &dyn StreamEvents,
        b: &dyn StreamEvents,
        sessions: &dyn SessionStore,
        cap: usize,
    ) {
        for id in ["e1", "e2", "e3"] {
            sessions.save(&record(id)).await.unwrap();
        }
        for seq in 1..=5 {
            a.append("e1", 0, seq, &format!("e{seq}")).await.unwrap();
        }
        b.append("e1", 3, 1, "r1").await.unwrap();
        // The same event again is kept once.
        a.append("e1", 0, 5, "again").await.unwrap();
        assert_eq!(b.last("e1").await.unwrap(), (3, 5));
        assert_eq!(a.last("nobody").await.unwrap(), (0, 0));
        let after = b.after("e1", 0, 2, 2).await.unwrap();
        assert_eq!(after, [(3, "e3".to_owned()), (4, "e4".to_owned())]);
        assert_eq!(
            a.after("e1", 3, 0, 10).await.unwrap(),
            [(1, "r1".to_owned())]
        );
        // Not a kept session: nothing is kept.
        a.append("nobody", 0, 1, "x").await.unwrap();
        assert!(a.after("nobody", 0, 0, 10).await.unwrap().is_empty());
        // Past the bound, the oldest go: in order, however two hosts
        // interleave their appends (each on its own streams).
        let total = cap as u64 * 3;
        let appends = (1..=total).map(|seq| {
            let (store, stream) = if seq % 2 == 0 { (a, 1) } else { (b, 2) };
            store.append("e2", stream + seq % 3, seq, "x")
        });
        for appended in futures_util::future::join_all(appends).await {
            appended.unwrap();
        }
        let mut count = 0;
        for stream in 1..=4 {
            count += a.after("e2", stream, 0, 10 * cap).await.unwrap().len();
        }
        assert!(count <= cap, "{count} events kept, the bound is {cap}");
        // One after the other, the newest `cap` are kept.
        for seq in 1..=total {
            a.append("e3", 0, seq, "y").await.unwrap();
        }
        let newest = b.after("e3", 0, 0, 10 * cap).await.unwrap();
        let seqs: Vec<u64> = newest.iter().map(|(seq, _)| *seq).collect();
        assert_eq!(seqs, (total - cap as u64 + 1..=total).collect::<Vec<_>>());
        // A session's events go with it.
        assert!(sessions.remove("e1").await.unwrap());
        assert!(a.after("e1", 0, 0, 10).await.unwrap().is_empty());
        assert_eq!(b.last("e1").await.unwrap(), (0, 0));
        assert!(sessions.remove("e2").await.unwrap());
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(
            sessions
                .forget_idle(Duration::from_millis(20))
                .await
                .unwrap()
                >= 1
        );
        assert!(a.after("e3", 0, 0, 10).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn memory_sessions_keep_the_contract() {
        check(&MemorySessions::new(8), 8).await;
        let store = MemorySessions::new(8);
        check_shared(&store, &store).await;
    }

    #[test]
    fn a_record_gives_back_the_session_it_was_made_of() {
        let session = record("s").session();
        assert_eq!(
            session.version,
            Some(Revision::parse("2025-11-25").unwrap())
        );
        let again = SessionRecord::of("s", Some("ada"), Some("principal:ada"), &session);
        assert_eq!(again, record("s"));
    }
}
