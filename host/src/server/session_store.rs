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
use crate::runtime::types::LogLevel;
use anyhow::Result;
use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The version of [`SessionRecord`] this host writes, and the newest it
/// reads (`v`; a record without one, as 317a478 and earlier wrote them,
/// is version 1).
///
/// The rule between versions: a field a reader of an older version may
/// ignore (and drop when it writes the record back) is added with
/// `#[serde(default)]` and keeps the version; a change an older reader
/// would misread, or whose loss on its write-back would serve the session
/// wrongly, makes the next version. A host meeting a record of a version
/// newer than this one does not serve that session (to it the session is
/// not kept: the client initializes again), logs it once per read and
/// counts it in `wasm_mcp_cluster_unknown_records_total{record="session"}`,
/// and never writes over it (the shared store's writes check the stored
/// version). Every field 317a478 reads is written, with its meaning and
/// type, so a replica of that version reads what this one writes.
pub const SESSION_RECORD_VERSION: u32 = 1;

/// One session as it is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The version of the record ([`SESSION_RECORD_VERSION`] when written
    /// here; absent in older records: 1).
    #[serde(default = "first_version")]
    pub v: u32,
    /// The transport's id for it (`Mcp-Session-Id`).
    pub id: String,
    /// Who opened it; only they may use it.
    #[serde(default)]
    pub principal: Option<String>,
    /// Whose tasks it sees (its principal's, else its own).
    #[serde(default)]
    pub task_owner: Option<String>,
    /// The negotiated revision, once `initialize` was answered (by its
    /// name on the wire).
    #[serde(default, with = "revision_name")]
    pub version: Option<Revision>,
    /// The client's declared capabilities.
    #[serde(default)]
    pub client_capabilities: Value,
    /// Whether `notifications/initialized` arrived.
    #[serde(default)]
    pub initialized: bool,
    /// The level set by `logging/setLevel` (by its MCP name).
    #[serde(default, with = "level_name")]
    pub log_level: Option<LogLevel>,
    /// URIs subscribed to, sorted.
    #[serde(default)]
    pub subscriptions: Vec<String>,
    /// The client's roots as local folders, when it declared the `roots`
    /// capability (`None`: it did not, and plugins see every granted
    /// folder). A folder whose path is not UTF-8 is left out (seeing less,
    /// never more).
    #[serde(default)]
    pub client_roots: Option<Vec<String>>,
    /// Fields of this version a newer host added that this one does not
    /// know: kept, and written back as they were.
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

fn first_version() -> u32 {
    1
}

/// Why a stored session record is not served here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// It is of a newer version than this host knows (see
    /// [`SESSION_RECORD_VERSION`]).
    Newer(u32),
    /// It does not read as a session record (what is wrong).
    Corrupt(String),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Newer(v) => write!(
                f,
                "its record is of version {v}, newer than this host reads \
                 ({SESSION_RECORD_VERSION}): a host of a newer version serves it"
            ),
            Unreadable::Corrupt(why) => write!(f, "its record does not read back: {why}"),
        }
    }
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
            v: SESSION_RECORD_VERSION,
            id: id.to_owned(),
            principal: principal.map(str::to_owned),
            task_owner: task_owner.map(str::to_owned),
            version: session.version,
            client_capabilities: session.client_capabilities.clone(),
            initialized: session.initialized,
            log_level: session.log_level,
            subscriptions,
            client_roots: session.client_roots.as_ref().map(|roots| {
                roots
                    .iter()
                    .filter_map(|p| p.to_str().map(str::to_owned))
                    .collect()
            }),
            unknown: Map::new(),
        }
    }

    /// The session it records.
    pub fn session(&self) -> Session {
        Session {
            version: self.version,
            client_capabilities: self.client_capabilities.clone(),
            initialized: self.initialized,
            log_level: self.log_level,
            subscriptions: self.subscriptions.iter().cloned().collect(),
            client_roots: self.client_roots.as_deref().map(roots_of),
        }
    }

    /// Reads a stored record (`text`, JSON): one of this version or an
    /// older one, else why it is not served here (see
    /// [`SESSION_RECORD_VERSION`]). Its version is read first, so a newer
    /// record whose fields changed shape is told apart from a corrupt one.
    pub fn read(text: &str) -> Result<SessionRecord, Unreadable> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| Unreadable::Corrupt(e.to_string()))?;
        let v = match value.get("v") {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| Unreadable::Corrupt(format!("its version is {v}")))?,
        };
        if v > SESSION_RECORD_VERSION {
            return Err(Unreadable::Newer(v));
        }
        serde_json::from_value(value).map_err(|e| Unreadable::Corrupt(e.to_string()))
    }

    /// Brings `session` (this host's copy, saved or read last as `base`)
    /// up to `theirs` (the record as the store keeps it now, changed
    /// through another host): what changed between `base` and `theirs` is
    /// applied, and what changed here since `base` stays (a change of this
    /// host not saved yet is saved next). Whether anything changed here.
    pub fn update(session: &mut Session, base: &SessionRecord, theirs: &SessionRecord) -> bool {
        let mut changed = false;
        if base.version != theirs.version {
            session.version = theirs.version;
            changed = true;
        }
        if base.client_capabilities != theirs.client_capabilities {
            session.client_capabilities = theirs.client_capabilities.clone();
            changed = true;
        }
        if base.initialized != theirs.initialized {
            session.initialized = theirs.initialized;
            changed = true;
        }
        if base.log_level != theirs.log_level {
            session.log_level = theirs.log_level;
            changed = true;
        }
        if base.client_roots != theirs.client_roots {
            session.client_roots = theirs.client_roots.as_deref().map(roots_of);
            changed = true;
        }
        let was: BTreeSet<&String> = base.subscriptions.iter().collect();
        let is: BTreeSet<&String> = theirs.subscriptions.iter().collect();
        for added in is.difference(&was) {
            changed |= session.subscriptions.insert((*added).clone());
        }
        for removed in was.difference(&is) {
            changed |= session.subscriptions.remove(*removed);
        }
        changed
    }
}

fn roots_of(roots: &[String]) -> Arc<Vec<PathBuf>> {
    Arc::new(roots.iter().map(PathBuf::from).collect())
}

/// A revision as its wire name (`"2025-11-25"`), as records always kept it.
mod revision_name {
    use super::Revision;
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(r: &Option<Revision>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => s.serialize_str(r.as_str()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Revision>, D::Error> {
        let Some(name) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        Revision::parse(&name)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("unknown revision {name:?}")))
    }
}

/// A log level as its MCP name (`"warning"`), as records always kept it.
mod level_name {
    use super::{log_level_name, parse_log_level, LogLevel};
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(l: &Option<LogLevel>, s: S) -> Result<S::Ok, S::Error> {
        match l {
            Some(l) => s.serialize_str(log_level_name(*l)),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<LogLevel>, D::Error> {
        let Some(name) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        parse_log_level(&name)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("unknown log level {name:?}")))
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
            v: SESSION_RECORD_VERSION,
            id: id.into(),
            principal: Some("ada".into()),
            task_owner: Some("principal:ada".into()),
            version: Some(Revision::V2025_11_25),
            client_capabilities: json!({ "roots": {}, "elicitation": { "form": {} } }),
            initialized: true,
            log_level: Some(LogLevel::Warning),
            subscriptions: vec!["file:///a".into(), "file:///b".into()],
            client_roots: Some(vec!["/data".into()]),
            unknown: Map::new(),
        }
    }

    /// Runs every check against `store`.
    pub(crate) async fn check(store: &dyn SessionStore, capacity: usize) {
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
    pub(crate) async fn check_shared(a: &dyn SessionStore, b: &dyn SessionStore) {
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
        kept.log_level = Some(LogLevel::Debug);
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
    pub(crate) async fn check_events(
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

/// The record's shape between versions: golden payloads written by this
/// version and by 317a478, read back; a newer one told apart.
#[cfg(test)]
mod versions {
    use super::*;
    use serde_json::json;

    const V1: &str = include_str!("../../tests/golden/session-v1.json");
    const OLD: &str = include_str!("../../tests/golden/session-317a478.json");
    const V99: &str = include_str!("../../tests/golden/session-v99.json");

    /// The record as 317a478 declares it (no version, every field
    /// required but the `Option`s, unknown fields ignored): what a replica
    /// of that version reads of a row this version writes.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Record317a478 {
        id: String,
        principal: Option<String>,
        task_owner: Option<String>,
        version: Option<String>,
        client_capabilities: Value,
        initialized: bool,
        log_level: Option<String>,
        subscriptions: Vec<String>,
        client_roots: Option<Vec<String>>,
    }

    fn golden_v1() -> SessionRecord {
        SessionRecord {
            v: 1,
            id: "4f1c0e8a9b2d4c6e8f0a1b2c3d4e5f60".into(),
            principal: Some("ada".into()),
            task_owner: Some("principal:ada".into()),
            version: Some(Revision::V2025_11_25),
            client_capabilities: json!({ "roots": { "listChanged": true }, "elicitation": { "form": {} } }),
            initialized: true,
            log_level: Some(LogLevel::Warning),
            subscriptions: Vec::new(),
            client_roots: Some(vec!["/data".into(), "/srv/my notes".into()]),
            unknown: Map::new(),
        }
    }

    #[test]
    fn this_versions_golden_record_reads_back_and_is_written_the_same() {
        let record = SessionRecord::read(V1).unwrap();
        assert_eq!(record, golden_v1());
        let written: Value = serde_json::to_value(&record).unwrap();
        assert_eq!(written, serde_json::from_str::<Value>(V1).unwrap());
    }

    #[test]
    fn a_replica_of_317a478_reads_what_this_version_writes() {
        let text = serde_json::to_string(&golden_v1()).unwrap();
        let old: Record317a478 = serde_json::from_str(&text).unwrap();
        assert_eq!(old.version.as_deref(), Some("2025-11-25"));
        assert_eq!(old.log_level.as_deref(), Some("warning"));
        assert_eq!(old.task_owner.as_deref(), Some("principal:ada"));
        assert!(old.initialized);
        // Every level and revision is written as 317a478 names them.
        for name in [
            "debug", "info", "notice", "warning", "error", "critical", "alert",
        ] {
            let record = SessionRecord {
                log_level: parse_log_level(name),
                ..golden_v1()
            };
            let old: Record317a478 =
                serde_json::from_str(&serde_json::to_string(&record).unwrap()).unwrap();
            assert_eq!(old.log_level.as_deref(), Some(name));
        }
        for revision in Revision::ALL {
            let record = SessionRecord {
                version: Some(revision),
                ..golden_v1()
            };
            let text = serde_json::to_string(&record).unwrap();
            let old: Record317a478 = serde_json::from_str(&text).unwrap();
            assert_eq!(old.version.as_deref(), Some(revision.as_str()));
        }
        // A session with nothing set yet, too.
        let empty = SessionRecord::of("e", None, None, &Session::default());
        let text = serde_json::to_string(&empty).unwrap();
        let old: Record317a478 = serde_json::from_str(&text).unwrap();
        assert_eq!((old.version, old.log_level), (None, None));
    }

    #[test]
    fn a_record_317a478_wrote_reads_as_version_1() {
        let record = SessionRecord::read(OLD).unwrap();
        assert_eq!(record.v, 1);
        assert_eq!(record.principal, None);
        assert_eq!(record.version, Some(Revision::V2025_06_18));
        assert_eq!(record.log_level, Some(LogLevel::Error));
        assert_eq!(record.client_capabilities, json!({ "sampling": {} }));
        assert_eq!(record.client_roots, None);
        assert!(record.unknown.is_empty());
        let session = record.session();
        assert!(session.initialized && session.subscriptions.is_empty());
        // Written again by this version: the same, with its version.
        let mut again: Value = serde_json::to_value(&record).unwrap();
        assert_eq!(again.as_object_mut().unwrap().remove("v"), Some(json!(1)));
        assert_eq!(again, serde_json::from_str::<Value>(OLD).unwrap());
    }

    #[test]
    fn a_record_of_a_newer_version_is_not_served_here() {
        assert_eq!(SessionRecord::read(V99), Err(Unreadable::Newer(99)));
        // Whatever its fields are, even none of this version's.
        assert_eq!(
            SessionRecord::read(r#"{"v": 2}"#),
            Err(Unreadable::Newer(2))
        );
        assert!(Unreadable::Newer(99).to_string().contains("version 99"));
    }

    #[test]
    fn a_record_that_does_not_read_is_told_apart_from_a_newer_one() {
        for text in [
            "not json",
            r#"{"v": "two", "id": "x"}"#,
            r#"{"v": -1, "id": "x"}"#,
            r#"{"principal": "ada"}"#,
            r#"{"id": "x", "version": "1999-01-01"}"#,
            r#"{"id": "x", "log_level": "loud"}"#,
            r#"{"id": "x", "initialized": "yes"}"#,
        ] {
            assert!(
                matches!(SessionRecord::read(text), Err(Unreadable::Corrupt(_))),
                "{text}"
            );
        }
        // Only its id is needed: the rest has defaults.
        let bare = SessionRecord::read(r#"{"id": "x"}"#).unwrap();
        assert_eq!((bare.v, bare.version, bare.initialized), (1, None, false));
    }

    #[test]
    fn fields_a_newer_host_added_to_this_version_are_written_back() {
        let mut value: Value = serde_json::from_str(V1).unwrap();
        value["affinity"] = json!({ "replica": "r2" });
        let record = SessionRecord::read(&value.to_string()).unwrap();
        assert_eq!(record.unknown["affinity"], json!({ "replica": "r2" }));
        assert_eq!(serde_json::to_value(&record).unwrap(), value);
    }

    #[test]
    fn a_change_made_elsewhere_is_applied_and_one_made_here_stays() {
        let base = golden_v1();
        let mut session = base.session();
        // Here: a subscription more, not saved yet.
        session.subscriptions.insert("file:///here".into());
        // Elsewhere: another level, one subscription more, roots changed.
        let theirs = SessionRecord {
            log_level: Some(LogLevel::Error),
            subscriptions: vec!["file:///there".into()],
            client_roots: Some(vec!["/other".into()]),
            ..base.clone()
        };
        assert!(SessionRecord::update(&mut session, &base, &theirs));
        assert_eq!(session.log_level, Some(LogLevel::Error));
        let mut subscriptions: Vec<&String> = session.subscriptions.iter().collect();
        subscriptions.sort();
        assert_eq!(subscriptions, ["file:///here", "file:///there"]);
        assert_eq!(
            session.client_roots.as_deref(),
            Some(&vec![PathBuf::from("/other")])
        );
        // Unsubscribed elsewhere: gone here too; the same again: nothing.
        let after = SessionRecord {
            subscriptions: Vec::new(),
            ..theirs.clone()
        };
        assert!(SessionRecord::update(&mut session, &theirs, &after));
        assert!(!session.subscriptions.contains("file:///there"));
        assert!(!SessionRecord::update(&mut session, &after, &after));
    }
}
