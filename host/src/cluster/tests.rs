//! The shared stores and bus against a real PostgreSQL server (Debian's,
//! started in a throwaway folder by `scripts/throwaway-postgres`; the
//! tests fail when it is not installed: `scripts/test-servers`).

use super::*;
use crate::server::tasks::{Status, TaskStore};
use crate::server::{
    Bus, Heard, ServerEvent, SessionRecord, SessionStore, StoreError, StreamEvents,
};
use std::path::PathBuf;
use std::process::Command;

/// A PostgreSQL server, stopped when dropped.
pub(super) struct Postgres {
    dir: tempfile::TempDir,
    url: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/throwaway-postgres")
}

impl Postgres {
    pub(super) fn start() -> Postgres {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(script())
            .arg("start")
            .arg(dir.path())
            .output()
            .expect("scripts/throwaway-postgres runs");
        assert!(
            out.status.success(),
            "PostgreSQL did not start (scripts/test-servers installs it): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        Postgres { dir, url }
    }

    /// A new database on it, its schema up to date.
    pub(super) async fn database(&self, name: &str) -> Target {
        let target = self.empty_database(name).await;
        database::migrate(&target.pool().unwrap()).await.unwrap();
        target
    }

    /// A new empty database on it.
    async fn empty_database(&self, name: &str) -> Target {
        let admin = Target::new(&self.url, None, "test", 2, Duration::from_secs(10), None).unwrap();
        let pool = admin.pool().unwrap();
        database::connection(&pool)
            .await
            .unwrap()
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let url = self.url.rsplit_once('/').unwrap().0.to_owned() + "/" + name;
        Target::new(&url, None, "test", 4, Duration::from_secs(10), None).unwrap()
    }
}

impl Postgres {
    /// Stops the server, keeping its data (an outage).
    fn down(&self) {
        self.run("down");
    }

    /// Starts it again where it was.
    fn up(&self) {
        self.run("up");
    }

    fn run(&self, command: &str) {
        let out = Command::new(script())
            .arg(command)
            .arg(self.dir.path())
            .output()
            .expect("scripts/throwaway-postgres runs");
        assert!(
            out.status.success(),
            "throwaway-postgres {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

async fn next(subscription: &mut crate::server::Subscription) -> Heard {
    tokio::time::timeout(Duration::from_secs(10), subscription.recv())
        .await
        .expect("an event within 10 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_state_keeps_every_contract_on_postgres() {
    let pg = Postgres::start();
    let lease = Duration::from_secs(3);

    // Tasks: the store's contract; migrations run again are a no-op.
    let tasks = pg.database("tasks").await;
    let pool = tasks.pool().unwrap();
    database::migrate(&pool).await.unwrap();
    let store = PgTasks::open(pool.clone(), "r1", lease, tasks.timeout, false)
        .await
        .unwrap();
    crate::server::tasks::store_contract(&store).await;

    // A replica that stops: once its lease lapses, another fails its task;
    // a restarted replica of the same name fails its own at once.
    let leases = pg.database("leases").await;
    let pool = leases.pool().unwrap();
    let short = Duration::from_millis(300);
    let dead = PgTasks::open(pool.clone(), "dead", short, leases.timeout, false)
        .await
        .unwrap();
    let alive = PgTasks::open(pool.clone(), "alive", short, leases.timeout, false)
        .await
        .unwrap();
    let task = |id: &str| {
        let mut task =
            crate::server::tasks::contract_task(id, None, crate::server::tasks::now_ms());
        task.ttl_ms = 60_000;
        task
    };
    dead.insert(&task("dead.1")).await.unwrap();
    alive.insert(&task("alive.1")).await.unwrap();
    assert!(alive.fail_orphans().await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    // alive renews its own task in time; dead does not.
    assert_eq!(alive.renew(&["alive.1".into()]).await.unwrap(), ["alive.1"]);
    assert_eq!(alive.fail_orphans().await.unwrap(), ["dead.1"]);
    let failed = alive.get("dead.1").await.unwrap().unwrap();
    assert_eq!(failed.status, Status::Failed);
    assert!(failed
        .status_message
        .unwrap()
        .contains("the replica running this task stopped"));
    assert_eq!(
        alive.get("alive.1").await.unwrap().unwrap().status,
        Status::Working
    );
    let restarted = PgTasks::open(pool.clone(), "alive", short, leases.timeout, false)
        .await
        .unwrap();
    let again = restarted.get("alive.1").await.unwrap().unwrap();
    assert_eq!(again.status, Status::Failed);

    // A task whose call may run again: a replica that allows it claims it
    // (once), one that does not fails it.
    let reruns = pg.database("reruns").await;
    let pool = reruns.pool().unwrap();
    let gone = PgTasks::open(pool.clone(), "gone", short, reruns.timeout, true)
        .await
        .unwrap();
    let mut again = task("gone.1");
    again.rerun = Some(crate::server::tasks::StoredRerun::read(
        r#"{ "tool": "t", "arguments": {} }"#,
    ));
    gone.insert(&again).await.unwrap();
    gone.insert(&task("gone.2")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let strict = PgTasks::open(pool.clone(), "strict", short, reruns.timeout, false)
        .await
        .unwrap();
    assert!(strict.claim_orphans(10).await.unwrap().is_empty());
    let taker = PgTasks::open(pool.clone(), "taker", lease, reruns.timeout, true)
        .await
        .unwrap();
    // The taker fails what may not run again, and leaves the rest to claim.
    assert_eq!(taker.fail_orphans().await.unwrap(), ["gone.2"]);
    let claimed = taker.claim_orphans(10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, "gone.1");
    assert_eq!(claimed[0].status, Status::Working);
    assert_eq!(claimed[0].rerun, again.rerun);
    assert!(taker.claim_orphans(10).await.unwrap().is_empty());
    assert_eq!(taker.renew(&["gone.1".into()]).await.unwrap(), ["gone.1"]);

    // Sessions: the store's contract.
    let sessions = pg.database("sessions").await;
    let store = PgSessions::new(sessions.pool().unwrap(), 8, sessions.timeout);
    crate::server::session_store_contract(&store, 8).await;

    // Sessions handed between two replicas, changed by each.
    let a = PgSessions::new(sessions.pool().unwrap(), 8, sessions.timeout);
    let b = PgSessions::new(sessions.pool().unwrap(), 8, sessions.timeout);
    crate::server::session_store::contract::check_shared(&a, &b).await;

    // Stream events: in order per stream, bounded per session however two
    // replicas interleave, gone with their session.
    let events = pg.database("streams").await;
    let pool = events.pool().unwrap();
    let store = PgSessions::new(pool.clone(), 8, events.timeout);
    let a = PgStreamEvents::new(pool.clone(), 20, events.timeout);
    let b = PgStreamEvents::new(pool.clone(), 20, events.timeout);
    crate::server::session_store::contract::check_events(&a, &b, &store, 20).await;

    // The bus: the contract within a replica, and events heard by another
    // (a big one too), never twice by the replica that sent them.
    let alone = pg.database("contract").await;
    let bus = PgBus::start(alone.pool().unwrap(), alone.clone(), "a");
    crate::server::bus_contract(&*bus, crate::server::LocalBus::CAPACITY).await;
    let events = pg.database("events").await;
    let a = PgBus::start(events.pool().unwrap(), events.clone(), "a");
    let b = PgBus::start(events.pool().unwrap(), events.clone(), "b");
    let (heard_a, mut heard_b) = (a.subscribe(), b.subscribe());
    // b's listener may not be listening yet: publish until b hears.
    let mut listening = false;
    for _ in 0..100 {
        a.publish(ServerEvent::ResourceUpdated("file:///ping".into()));
        if let Ok(heard) = tokio::time::timeout(Duration::from_millis(100), heard_b.recv()).await {
            assert_eq!(
                heard,
                Heard::Event(ServerEvent::ResourceUpdated("file:///ping".into()))
            );
            listening = true;
            break;
        }
    }
    assert!(listening, "replica b hears replica a");
    let ping = Heard::Event(ServerEvent::ResourceUpdated("file:///ping".into()));
    while let Ok(heard) = tokio::time::timeout(Duration::from_millis(300), heard_b.recv()).await {
        assert_eq!(heard, ping);
    }
    // Answers go to the replica running their task only, once.
    let tasks_b = PgTasks::open(events.pool().unwrap(), "b", lease, events.timeout, false)
        .await
        .unwrap();
    tasks_b.insert(&task("b.7")).await.unwrap();
    tasks_b
        .set_status("b.7", Status::InputRequired, None, None)
        .await
        .unwrap();
    crate::server::bus::contract::check_answers(&*a, &*b, "b.7").await;
    let mut heard_a = {
        drop(heard_a);
        a.subscribe()
    };
    a.publish(ServerEvent::PluginReplaced("big".repeat(3_000)));
    let big = ServerEvent::PluginReplaced("big".repeat(3_000));
    a.publish(ServerEvent::task_changed("a.1"));
    a.publish(ServerEvent::Log {
        level: crate::runtime::types::LogLevel::Info,
        logger: "here".into(),
        message: "only here".into(),
    });
    b.publish(ServerEvent::task_changed("b.1"));
    // Each replica hears every event once, each sender's in its order.
    let mut on_b = Vec::new();
    for _ in 0..3 {
        on_b.push(next(&mut heard_b).await);
    }
    let mut on_a = Vec::new();
    for _ in 0..4 {
        on_a.push(next(&mut heard_a).await);
    }
    let from_b = Heard::Event(ServerEvent::task_changed("b.1"));
    let a_changed = Heard::Event(ServerEvent::task_changed("a.1"));
    let without_b = |heard: &[Heard]| -> Vec<String> {
        heard
            .iter()
            .filter(|h| **h != from_b)
            .map(|h| format!("{h:?}"))
            .collect()
    };
    assert!(on_b.contains(&from_b) && on_a.contains(&from_b));
    let big_then_changed = [format!("{:?}", Heard::Event(big)), format!("{a_changed:?}")];
    assert_eq!(without_b(&on_b), big_then_changed);
    assert_eq!(without_b(&on_a)[..2], big_then_changed);
    assert!(without_b(&on_a)[2].contains("only here"));
    // The log line stayed on a.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), heard_b.recv())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_moves_a_previous_versions_database_on() {
    let pg = Postgres::start();
    // A database of version 3: a session whose subscriptions are in its
    // record, and events of a session that is gone.
    let target = pg.empty_database("previous").await;
    let pool = target.pool().unwrap();
    database::migrate_to(&pool, 3).await.unwrap();
    let record = |subscriptions: &[&str]| {
        serde_json::json!({
            "id": "old", "principal": null, "task_owner": "session:old",
            "version": "2025-11-25", "client_capabilities": {}, "initialized": true,
            "log_level": null, "subscriptions": subscriptions, "client_roots": null,
        })
        .to_string()
    };
    let db = database::connection(&pool).await.unwrap();
    let now = crate::server::tasks::now_ms() as i64;
    db.execute(
        "INSERT INTO wasm_mcp_sessions VALUES ('old', $1, $2)",
        &[&record(&["file:///a", "file:///b"]), &now],
    )
    .await
    .unwrap();
    db.batch_execute(
        "INSERT INTO wasm_mcp_stream_events (session, stream, seq, text)
         VALUES ('old', 0, 1, 'kept'), ('gone', 0, 1, 'orphan')",
    )
    .await
    .unwrap();
    database::migrate(&pool).await.unwrap();
    database::migrate(&pool).await.unwrap();
    let sessions = PgSessions::new(pool.clone(), 8, target.timeout);
    let kept = sessions.load("old").await.unwrap().unwrap();
    assert_eq!(kept.subscriptions, ["file:///a", "file:///b"]);
    let moved: i64 = db
        .query_one("SELECT count(*) FROM wasm_mcp_session_subscriptions", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(moved, 2);
    let events = PgStreamEvents::new(pool.clone(), 10, target.timeout);
    assert_eq!(events.after("old", 0, 0, 10).await.unwrap().len(), 1);
    assert!(events.after("gone", 0, 0, 10).await.unwrap().is_empty());
    // A replica of the previous version, still running, saves it with one
    // more: a replica of this version sees all three, and its change
    // (one fewer) holds.
    db.execute(
        "UPDATE wasm_mcp_sessions SET record = $1 WHERE id = 'old'",
        &[&record(&["file:///a", "file:///b", "file:///c"])],
    )
    .await
    .unwrap();
    let mut kept = sessions.load("old").await.unwrap().unwrap();
    assert_eq!(kept.subscriptions, ["file:///a", "file:///b", "file:///c"]);
    kept.subscriptions.retain(|uri| uri != "file:///b");
    sessions.save(&kept).await.unwrap();
    let other = PgSessions::new(pool.clone(), 8, target.timeout);
    assert_eq!(other.load("old").await.unwrap(), Some(kept));
    // Its events (numbered or not) go with it.
    events.append("old", 0, 2, "new").await.unwrap();
    assert!(sessions.remove("old").await.unwrap());
    let left: i64 = db
        .query_one(
            "SELECT (SELECT count(*) FROM wasm_mcp_stream_events)
                  + (SELECT count(*) FROM wasm_mcp_stream_counters)
                  + (SELECT count(*) FROM wasm_mcp_session_subscriptions)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
}

/// The kind of store failure `result` failed with ([`StoreError::of`]).
fn failure<T: std::fmt::Debug>(result: Result<T>) -> StoreError {
    StoreError::of(result.expect_err("the store fails"))
}

/// The text of a `Conflict`, else a panic naming what it was.
fn conflict(error: StoreError) -> String {
    match error {
        StoreError::Conflict(why) => why,
        other => panic!("not a conflict: {other:?}"),
    }
}

/// The text of a `Corrupt`, else a panic naming what it was.
fn corrupt(error: StoreError) -> String {
    match error {
        StoreError::Corrupt(why) => why,
        other => panic!("not corrupt: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_say_which_kind_of_failure_they_met() {
    let pg = Postgres::start();
    let target = pg.database("kinds").await;
    let pool = target.pool().unwrap();
    let db = database::connection(&pool).await.unwrap();
    let tasks = PgTasks::open(
        pool.clone(),
        "r1",
        Duration::from_secs(60),
        target.timeout,
        false,
    )
    .await
    .unwrap();
    let task = |id: &str| {
        let mut task =
            crate::server::tasks::contract_task(id, Some("ada"), crate::server::tasks::now_ms());
        task.ttl_ms = 600_000;
        task
    };

    // Conflict: an id taken (SQLSTATE 23505).
    tasks.insert(&task("t.1")).await.unwrap();
    let taken = conflict(failure(tasks.insert(&task("t.1")).await));
    assert!(taken.contains("duplicate key"), "{taken}");

    // Corrupt: rows that do not read, whichever way they are read; never
    // a panic.
    for id in ["t.2", "t.3", "t.4", "t.5"] {
        tasks.insert(&task(id)).await.unwrap();
    }
    db.batch_execute(
        "ALTER TABLE wasm_mcp_tasks ALTER COLUMN created_ms DROP NOT NULL,
                                    ALTER COLUMN replica DROP NOT NULL;
         UPDATE wasm_mcp_tasks SET created_ms = NULL WHERE id = 't.2';
         UPDATE wasm_mcp_tasks SET updated_ms = -5 WHERE id = 't.3';
         UPDATE wasm_mcp_tasks SET replica = NULL WHERE id = 't.4';",
    )
    .await
    .unwrap();
    let why = corrupt(failure(tasks.get("t.2").await));
    assert!(
        why.contains("task t.2") && why.contains("created_ms"),
        "{why}"
    );
    let why = corrupt(failure(tasks.get("t.3").await));
    assert!(
        why.contains("task t.3: column updated_ms is negative"),
        "{why}"
    );
    let why = corrupt(failure(tasks.get("t.4").await));
    assert!(why.contains("task t.4") && why.contains("replica"), "{why}");
    let why = corrupt(failure(tasks.list(Some("ada"), None, 10).await));
    assert!(why.contains("task t.3"), "{why}");
    // ... and the rows that do read still do.
    assert_eq!(tasks.get("t.1").await.unwrap().unwrap().id, "t.1");
    // The rules of values that read: a status this version does not know
    // reads as working, an outcome or input requests that are not JSON
    // as none.
    db.batch_execute(
        "UPDATE wasm_mcp_tasks SET status = 'paused', outcome = 'not json',
                input_requests = '[1' WHERE id = 't.5'",
    )
    .await
    .unwrap();
    let odd = tasks.get("t.5").await.unwrap().unwrap();
    assert_eq!(odd.status, Status::Working);
    assert_eq!((odd.outcome, odd.input_requests), (None, None));

    // Sessions: one stored by a newer version is not written over
    // (Conflict); one whose record is not JSON is not served, and writing
    // it makes PostgreSQL read it as JSON: a data exception (SQLSTATE
    // 22P02), Corrupt.
    let record = |id: &str| {
        SessionRecord::read(
            &serde_json::json!({
                "id": id, "principal": null, "task_owner": format!("session:{id}"),
                "version": "2025-11-25", "client_capabilities": {}, "initialized": true,
                "log_level": null, "subscriptions": ["file:///a"], "client_roots": null,
            })
            .to_string(),
        )
        .unwrap()
    };
    let sessions = PgSessions::new(pool.clone(), 8, target.timeout);
    sessions.save(&record("newer")).await.unwrap();
    sessions.save(&record("damaged")).await.unwrap();
    db.batch_execute(
        r#"UPDATE wasm_mcp_sessions SET record = '{"v": 99, "id": "newer"}' WHERE id = 'newer';
           UPDATE wasm_mcp_sessions SET record = 'not json' WHERE id = 'damaged';"#,
    )
    .await
    .unwrap();
    let other = PgSessions::new(pool.clone(), 8, target.timeout);
    let why = conflict(failure(other.save(&record("newer")).await));
    assert!(why.contains("newer version"), "{why}");
    assert_eq!(other.load("damaged").await.unwrap(), None);
    let why = corrupt(failure(other.save(&record("damaged")).await));
    assert!(why.contains("json"), "{why}");

    // A session row whose column is not of the type read (a schema
    // changed under the host): Corrupt, naming the session and column.
    let changed = pg.database("changed").await;
    let changed_pool = changed.pool().unwrap();
    let before = PgSessions::new(changed_pool.clone(), 8, changed.timeout);
    before.save(&record("s.1")).await.unwrap();
    database::connection(&changed_pool)
        .await
        .unwrap()
        .batch_execute(
            "ALTER TABLE wasm_mcp_sessions ALTER COLUMN record TYPE jsonb USING record::jsonb",
        )
        .await
        .unwrap();
    let after = PgSessions::new(changed_pool, 8, changed.timeout);
    let why = corrupt(failure(after.load("s.1").await));
    assert!(why.contains("session s.1: column record"), "{why}");

    // Unreachable: the database stopped; once it is back, the same stores
    // read again.
    let events = PgStreamEvents::new(pool.clone(), 10, target.timeout);
    events.append("newer", 0, 1, "kept").await.unwrap();
    drop(db);
    pg.down();
    for error in [
        failure(tasks.get("t.1").await),
        failure(tasks.insert(&task("t.6")).await),
        failure(sessions.load("newer").await),
        failure(events.after("newer", 0, 0, 10).await),
    ] {
        match error {
            StoreError::Unreachable(_) => {}
            other => panic!("not unreachable: {other:?}"),
        }
    }
    pg.up();
    assert_eq!(tasks.get("t.1").await.unwrap().unwrap().id, "t.1");
    assert_eq!(events.after("newer", 0, 0, 10).await.unwrap().len(), 1);
}
