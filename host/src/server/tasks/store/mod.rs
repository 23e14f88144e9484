//! Where tasks are kept ([`TaskStore`]), so that a task outlives the
//! request, the connection and the process that made it. Today's one
//! implementation is SQLite ([`Sqlite`]: one machine, one file that
//! several hosts may share). Any other must pass the same contract
//! (`contract::check`, run against each implementation by its tests).
//!
//! A store keeps records only: which tasks run in this process, and their
//! calls, are [`super::Tasks`]' business.

mod database;
mod sqlite;

pub use super::quota::Usage;
pub(crate) use super::record::Outcome;
pub use super::record::{Record, Status, Wire};
pub use sqlite::Sqlite;

use crate::protocol::model::StoredOutcome;
use anyhow::Result;
use async_trait::async_trait;
use serde_json::{Map, Value};

/// The tasks every host sharing the store can see. A status change is
/// stored before anyone can observe it; an unfinished task moves to a
/// terminal status once, and stays there.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Stores a new task.
    async fn insert(&self, task: &Record) -> Result<()>;
    /// The task `id`, if it exists (expired or not).
    async fn get(&self, id: &str) -> Result<Option<Record>>;
    /// Moves an unfinished task to `status` (non-terminal), with the
    /// questions it now waits on (`None` clears them); `false` if it is
    /// already over or gone.
    async fn set_status(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        requests: Option<&Map<String, Value>>,
    ) -> Result<bool>;
    /// Ends an unfinished task with its outcome as stored text
    /// (`outcome_text`); `false` if it was already over (a cancelled task
    /// stays cancelled) or is gone.
    async fn finish(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool>;
    /// The tasks `owner` keeps and the bytes of their results.
    async fn usage(&self, owner: Option<&str>) -> Result<Usage>;
    /// The tasks everyone keeps and the bytes of their results.
    async fn usage_all(&self) -> Result<Usage>;
    /// How many tasks are kept, by status name, sorted by name.
    async fn count_by_status(&self) -> Result<Vec<(String, u64)>>;
    /// Up to `limit` tasks of `owner` (exactly: `None` lists the tasks
    /// nobody owns), oldest first, after the task `(created_ms, id)` when
    /// given.
    async fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>>;
    /// Deletes the tasks whose time to live has passed at `now_ms`; their
    /// ids.
    async fn purge_expired(&self, now_ms: u64) -> Result<Vec<String>>;
    /// Says that the tasks `ids` still run in this process (renewing this
    /// host's hold on them, where the store keeps one); the ones still
    /// unfinished in the store (the others were ended elsewhere: cancelled
    /// through another host).
    async fn renew(&self, ids: &[String]) -> Result<Vec<String>>;
    /// Fails the unfinished tasks of hosts that stopped (their hold lapsed,
    /// or their lock is free); their ids.
    async fn fail_orphans(&self) -> Result<Vec<String>>;
    /// Hands back this host's hold on the unfinished tasks `ids` (it is
    /// stopping), so that other hosts fail them at once.
    async fn release(&self, ids: &[String]) -> Result<()>;
    /// Takes over, for this host, up to `limit` unfinished tasks of hosts
    /// that stopped whose call may run again (`rerun`), as `working`: they
    /// are this host's to run now.
    async fn claim_orphans(&self, limit: usize) -> Result<Vec<Record>>;
}

/// An outcome as stored ([`outcome_text`]) read back; `None` when it is
/// not one.
pub fn parse_outcome(text: &str) -> Option<Outcome> {
    match serde_json::from_str(text).ok()? {
        Value::Object(mut o) => match (o.remove("result"), o.remove("error")) {
            (Some(result), _) => Some(Ok(result)),
            (None, Some(error)) => Some(Err(error)),
            _ => None,
        },
        _ => None,
    }
}

/// An outcome as stored.
pub fn outcome_text(outcome: &Outcome) -> String {
    let stored = match outcome {
        Ok(result) => StoredOutcome::Result(result),
        Err(error) => StoredOutcome::Error(error),
    };
    serde_json::to_string(&stored).expect("an outcome always serializes")
}

/// What every [`TaskStore`] must do, as one check to run against each
/// implementation (on an empty store).
#[cfg(test)]
pub(crate) mod contract {
    use super::*;
    use serde_json::json;

    /// A working task of `owner`, made at `created_ms`, living 1 s.
    pub(crate) fn task(id: &str, owner: Option<&str>, created_ms: u64) -> Record {
        Record {
            id: id.into(),
            owner: owner.map(str::to_owned),
            wire: Wire::Stateless,
            method: "tools/call".into(),
            target: "slow".into(),
            status: Status::Working,
            status_message: None,
            created_ms,
            updated_ms: created_ms,
            ttl_ms: 1000,
            outcome: None,
            input_requests: None,
            rerun: None,
            holder: None,
        }
    }

    /// Runs every check against `store`, which must start empty.
    pub(crate) async fn check(store: &dyn TaskStore) {
        round_trips(store).await;
        a_finished_task_stays_finished(store).await;
        lists_page_by_owner(store).await;
        counts_usage(store).await;
        renews_the_unfinished(store).await;
        purges_the_expired(store).await;
    }

    async fn renews_the_unfinished(store: &dyn TaskStore) {
        // u1 is completed, u2 working, "gone" unknown.
        let ids = ["u1", "u2", "gone"].map(String::from);
        assert_eq!(store.renew(&ids).await.unwrap(), ["u2"]);
        assert!(store.renew(&[]).await.unwrap().is_empty());
        // Every task here is held by this live host: none is an orphan.
        assert!(store.fail_orphans().await.unwrap().is_empty());
        assert_eq!(
            store.get("u2").await.unwrap().unwrap().status,
            Status::Working
        );
    }

    async fn round_trips(store: &dyn TaskStore) {
        let mut stored = task("rt", Some("ada"), 5);
        stored.wire = Wire::Handshake;
        stored.status_message = Some("started".into());
        store.insert(&stored).await.unwrap();
        // The holder is the store's to say (the replica that inserted it).
        let mut read = store.get("rt").await.unwrap().unwrap();
        read.holder = None;
        assert_eq!(read, stored);
        assert_eq!(store.get("nobody").await.unwrap(), None);
        // Ids are unique.
        assert!(store.insert(&stored).await.is_err());
        let asking = Map::from_iter([("q".into(), json!({ "method": "elicitation/create" }))]);
        assert!(store
            .set_status("rt", Status::InputRequired, Some("asking"), Some(&asking))
            .await
            .unwrap());
        let now = store.get("rt").await.unwrap().unwrap();
        assert_eq!(now.status, Status::InputRequired);
        assert_eq!(now.status_message.as_deref(), Some("asking"));
        assert_eq!(now.input_requests.as_ref(), Some(&asking));
        assert!(now.updated_ms >= stored.updated_ms);
        assert!(!store
            .set_status("nobody", Status::Working, None, None)
            .await
            .unwrap());
    }

    async fn a_finished_task_stays_finished(store: &dyn TaskStore) {
        store.insert(&task("fin", None, 6)).await.unwrap();
        let error = Err(json!({ "code": -32603, "message": "crashed" }));
        let text = outcome_text(&error);
        assert!(store
            .finish("fin", Status::Failed, Some("crashed"), Some(&text))
            .await
            .unwrap());
        assert!(!store
            .finish("fin", Status::Cancelled, None, None)
            .await
            .unwrap());
        assert!(!store
            .set_status("fin", Status::Working, None, None)
            .await
            .unwrap());
        let stored = store.get("fin").await.unwrap().unwrap();
        assert_eq!(stored.status, Status::Failed);
        assert_eq!(stored.status_message.as_deref(), Some("crashed"));
        assert_eq!(stored.outcome, Some(error));
        store.insert(&task("can", None, 7)).await.unwrap();
        assert!(store
            .finish("can", Status::Cancelled, None, None)
            .await
            .unwrap());
        let result = outcome_text(&Ok(json!({ "content": [] })));
        assert!(!store
            .finish("can", Status::Completed, None, Some(&result))
            .await
            .unwrap());
        let cancelled = store.get("can").await.unwrap().unwrap();
        assert_eq!(
            (cancelled.status, cancelled.outcome),
            (Status::Cancelled, None)
        );
    }

    async fn lists_page_by_owner(store: &dyn TaskStore) {
        let owners = [Some("bea"), Some("cy"), Some("bea"), None, Some("bea")];
        for (i, owner) in owners.into_iter().enumerate() {
            let id = format!("l{i}");
            store
                .insert(&task(&id, owner, 100 + i as u64))
                .await
                .unwrap();
        }
        let ids = |records: Vec<Record>| records.into_iter().map(|r| r.id).collect::<Vec<_>>();
        let first = store.list(Some("bea"), None, 2).await.unwrap();
        let last = (first[1].created_ms, first[1].id.clone());
        assert_eq!(ids(first), ["l0", "l2"]);
        let rest = store.list(Some("bea"), Some((last.0, &last.1)), 2).await;
        assert_eq!(ids(rest.unwrap()), ["l4"]);
        // `None` is the tasks nobody owns, not everyone's.
        let unowned = ids(store.list(None, None, 10).await.unwrap());
        assert_eq!(unowned, ["fin", "can", "l3"]);
        // Ties on the creation time are broken by id.
        store.insert(&task("l9", Some("cy"), 101)).await.unwrap();
        assert_eq!(
            ids(store.list(Some("cy"), None, 10).await.unwrap()),
            ["l1", "l9"]
        );
    }

    async fn counts_usage(store: &dyn TaskStore) {
        store.insert(&task("u1", Some("dee"), 200)).await.unwrap();
        store.insert(&task("u2", Some("dee"), 201)).await.unwrap();
        let result = outcome_text(&Ok(json!({ "content": "x".repeat(100) })));
        assert!(store
            .finish("u1", Status::Completed, None, Some(&result))
            .await
            .unwrap());
        let dee = store.usage(Some("dee")).await.unwrap();
        assert_eq!((dee.tasks, dee.bytes), (2, result.len()));
        let all = store.usage_all().await.unwrap();
        assert_eq!(all.tasks, 11);
        assert!(all.bytes >= result.len());
        let counts = store.count_by_status().await.unwrap();
        let count = |status: &str| counts.iter().find(|(s, _)| s == status).map_or(0, |c| c.1);
        assert_eq!(count("completed"), 1);
        assert_eq!(count("cancelled"), 1);
        assert_eq!(count("failed"), 1);
        assert_eq!(count("input_required"), 1);
        assert_eq!(count("working"), 7);
        let names: Vec<&str> = counts.iter().map(|(s, _)| s.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    async fn purges_the_expired(store: &dyn TaskStore) {
        // Every task so far lives 1000 ms from its creation (5..=201).
        let mut purged = store.purge_expired(1100).await.unwrap();
        purged.sort();
        assert_eq!(purged, ["can", "fin", "l0", "rt"]);
        assert!(store.get("rt").await.unwrap().is_none());
        assert!(store.get("l1").await.unwrap().is_some());
        assert_eq!(store.usage_all().await.unwrap().tasks, 7);
        store.purge_expired(u64::MAX / 2).await.unwrap();
        assert_eq!(store.usage_all().await.unwrap(), Usage::default());
    }
}
