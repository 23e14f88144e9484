//! [`TaskStore`] on the SQLite database of one machine
//! (`database.rs`): one connection, used by one query at a time, each on
//! a blocking thread.

use super::database::Store;
use super::{Record, Status, TaskStore, Usage};
use crate::server::StoreError;
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The SQLite store as a [`TaskStore`]: one connection, used by one query
/// at a time, each on a blocking thread. It may still be opening (see
/// [`Sqlite::open_in_background`]): a query waits for it.
pub struct Sqlite(Arc<OnceLock<Option<Mutex<Store>>>>);

impl Sqlite {
    /// Opens (or creates) the store at `path` (in memory when `None`) for
    /// host `instance`, failing the tasks of hosts that died.
    pub fn open(path: Option<&Path>, instance: &str) -> Result<Self> {
        let store = Mutex::new(Store::open(path, instance)?);
        Ok(Sqlite(Arc::new(OnceLock::from(Some(store)))))
    }

    /// [`Sqlite::open`] on a thread of its own, so a host starts serving
    /// without waiting for the file (an SQLite open, its schema, failing
    /// the tasks of hosts that died: a few ms). A store that does not open
    /// is replaced by one in memory, with an error in the log, and sets
    /// `failed`.
    pub fn open_in_background(
        path: Option<PathBuf>,
        instance: String,
        failed: Arc<AtomicBool>,
    ) -> Self {
        let cell = Arc::new(OnceLock::new());
        let work = {
            let (cell, failed) = (cell.clone(), failed.clone());
            let (path, instance) = (path.clone(), instance.clone());
            move || fill(&cell, &failed, path.as_deref(), &instance)
        };
        let spawned = std::thread::Builder::new()
            .name("tasks-store".into())
            .spawn(move || {
                // Nothing waits for it yet: behind the plugins' first load.
                crate::runtime::lower_this_thread();
                work();
            });
        if spawned.is_err() {
            fill(&cell, &failed, path.as_deref(), &instance);
        }
        Sqlite(cell)
    }

    async fn run<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let store = store
                .wait()
                .as_ref()
                .context("the tasks store did not open, even in memory")?;
            query(&store.lock()).map_err(classify)
        })
        .await
        .context("the tasks store's thread failed")?
    }
}

/// Opens the store at `path` into `cell` ([`open_or_memory`]), setting
/// `failed` if it is a stand-in (or none).
fn fill(
    cell: &OnceLock<Option<Mutex<Store>>>,
    failed: &AtomicBool,
    path: Option<&Path>,
    instance: &str,
) {
    let opened = std::panic::catch_unwind(|| open_or_memory(path, instance));
    let (store, fell_back) = opened.unwrap_or((None, true));
    failed.store(fell_back, Ordering::Release);
    let _ = cell.set(store.map(Mutex::new));
}

/// The store at `path`, or one in memory if it does not open (then
/// `true`); none if neither opens.
fn open_or_memory(path: Option<&Path>, instance: &str) -> (Option<Store>, bool) {
    match Store::open(path, instance) {
        Ok(store) => {
            if let Some(path) = path {
                tracing::debug!(store = %path.display(), "tasks store open");
            }
            (Some(store), false)
        }
        Err(error) => {
            tracing::error!(
                "cannot open the tasks store: {error:#}; tasks are kept in memory and will not survive a restart"
            );
            let memory = Store::open(None, instance)
                .map_err(|e| tracing::error!("nor can one in memory: {e:#}"))
                .ok();
            (memory, true)
        }
    }
}

/// What kind of failure an error of the database is ([`StoreError`]): a
/// constraint a write broke is a conflict, a value or file that does not
/// read is corrupt, anything else (a busy or full database, I/O) is
/// unreachable.
fn classify(error: anyhow::Error) -> anyhow::Error {
    use rusqlite::ErrorCode as Code;
    let kind = match error.downcast_ref::<rusqlite::Error>() {
        Some(rusqlite::Error::SqliteFailure(e, _)) => match e.code {
            Code::ConstraintViolation => Some(StoreError::Conflict(format!("{error:#}"))),
            Code::DatabaseCorrupt | Code::NotADatabase => {
                Some(StoreError::Corrupt(format!("{error:#}")))
            }
            _ => None,
        },
        Some(
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..),
        ) => Some(StoreError::Corrupt(format!("{error:#}"))),
        _ => None,
    };
    kind.map_or(error, anyhow::Error::new)
}

#[async_trait]
impl TaskStore for Sqlite {
    async fn insert(&self, task: &Record) -> Result<()> {
        let task = task.clone();
        self.run(move |s| s.insert(&task)).await
    }

    async fn get(&self, id: &str) -> Result<Option<Record>> {
        let id = id.to_owned();
        self.run(move |s| s.get(&id)).await
    }

    async fn set_status(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        requests: Option<&Map<String, Value>>,
    ) -> Result<bool> {
        let (id, message) = (id.to_owned(), message.map(str::to_owned));
        let requests = requests.map(|r| Value::Object(r.clone()).to_string());
        self.run(move |s| s.set_status(&id, status, message.as_deref(), requests.as_deref()))
            .await
    }

    async fn finish(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool> {
        let id = id.to_owned();
        let (message, outcome) = (message.map(str::to_owned), outcome.map(str::to_owned));
        self.run(move |s| s.finish(&id, status, message.as_deref(), outcome.as_deref()))
            .await
    }

    async fn usage(&self, owner: Option<&str>) -> Result<Usage> {
        let owner = owner.map(str::to_owned);
        self.run(move |s| s.usage(owner.as_deref())).await
    }

    async fn usage_all(&self) -> Result<Usage> {
        self.run(|s| s.usage_all()).await
    }

    async fn count_by_status(&self) -> Result<Vec<(String, u64)>> {
        self.run(|s| s.count_by_status()).await
    }

    async fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>> {
        let owner = owner.map(str::to_owned);
        let after = after.map(|(created, id)| (created, id.to_owned()));
        self.run(move |s| {
            let after = after.as_ref().map(|(created, id)| (*created, id.as_str()));
            s.list(owner.as_deref(), after, limit)
        })
        .await
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<Vec<String>> {
        self.run(move |s| s.purge_expired(now_ms)).await
    }

    /// SQLite keeps no lease: a host holds a file lock while it lives.
    async fn renew(&self, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.run(move |s| s.unfinished(&ids)).await
    }

    async fn fail_orphans(&self) -> Result<Vec<String>> {
        self.run(|s| s.fail_orphans()).await
    }

    /// A host on its own runs nothing again: its orphans are failed.
    async fn claim_orphans(&self, _limit: usize) -> Result<Vec<Record>> {
        Ok(Vec::new())
    }

    /// The hold is the instance lock, released when this store is dropped
    /// with its process: nothing to do before.
    async fn release(&self, _ids: &[String]) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_the_task_store_contract() {
        super::super::contract::check(&Sqlite::open(None, "me").unwrap()).await;
        let dir = tempfile::tempdir().unwrap();
        let on_disk = Sqlite::open(Some(&dir.path().join("tasks.db")), "me").unwrap();
        super::super::contract::check(&on_disk).await;
    }

    #[tokio::test]
    async fn a_taken_id_is_a_conflict() {
        let store = Sqlite::open(None, "me").unwrap();
        let task = super::super::contract::task("t1", None, 1);
        store.insert(&task).await.unwrap();
        let error = store.insert(&task).await.unwrap_err();
        assert!(matches!(StoreError::of(error), StoreError::Conflict(_)));
    }
}
