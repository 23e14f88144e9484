//! The key-value store of one machine: an SQLite file (by default
//! `keyvalue.db` in the host's state folder, beside `tasks.db`:
//! `$XDG_STATE_HOME/wasm-mcp/keyvalue.db`, else
//! `~/.local/state/wasm-mcp/keyvalue.db`; `[state] keyvalue_store` names
//! another, see [`crate::settings::keyvalue_store_path`]). Made mode 0600:
//! it holds every tenant's data.
//!
//! Schema (the layout and rules are the module's parent's):
//!
//! ```sql
//! kv       (tenant, plugin, bucket, key TEXT, value BLOB, version INTEGER,
//!           PRIMARY KEY (tenant, plugin, bucket, key))
//! kv_usage (tenant, plugin, keys INTEGER, bytes INTEGER, PRIMARY KEY (tenant, plugin))
//! kv_versions (last INTEGER)   -- the one counter versions are drawn from
//! ```
//!
//! One connection, used by one operation at a time, each on a blocking
//! thread (never an async worker); every write is an `IMMEDIATE`
//! transaction, so hosts sharing the file take turns too. WAL with
//! synchronous NORMAL: a write that returned survives the process dying.

use super::{each_once, entry_bytes, incremented, last_of_each, within_quota};
use crate::runtime::keyvalue::{Backend, Entry, Namespace, Quota, StoreError, Usage, Versioned};
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use std::path::Path;
use std::sync::Arc;

const SCHEMA: &str = "
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS kv (
    tenant TEXT NOT NULL,
    plugin TEXT NOT NULL,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (tenant, plugin, bucket, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_usage (
    tenant TEXT NOT NULL,
    plugin TEXT NOT NULL,
    keys INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (tenant, plugin)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_versions (last INTEGER NOT NULL);
INSERT INTO kv_versions (last) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM kv_versions);
COMMIT;
";

/// The SQLite store of plugin data: one connection, used by one
/// operation at a time, each on a blocking thread.
#[derive(Clone)]
pub struct SqliteStore(Arc<Mutex<Connection>>);

impl SqliteStore {
    /// Opens (creating) the store at `path`, or an in-memory one for
    /// `None`. Blocks: call it off the async workers.
    pub fn open(path: Option<&Path>) -> Result<Self> {
        let db = match path {
            None => Connection::open_in_memory()?,
            Some(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                // Private from the start: it holds every tenant's data.
                {
                    use std::os::unix::fs::OpenOptionsExt as _;
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .mode(0o600)
                        .open(path)
                        .with_context(|| format!("opening {}", path.display()))?;
                }
                Connection::open(path).with_context(|| format!("opening {}", path.display()))?
            }
        };
        db.busy_timeout(std::time::Duration::from_secs(5))?;
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "synchronous", "NORMAL")?;
        db.execute_batch(SCHEMA)
            .context("creating the key-value tables")?;
        Ok(SqliteStore(Arc::new(Mutex::new(db))))
    }

    /// Runs `work` on a blocking thread with the connection; an error that
    /// is no [`StoreError`] is the store's failure.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        let db = self.0.clone();
        let done = tokio::task::spawn_blocking(move || work(&mut db.lock()))
            .await
            .map_err(|e| StoreError::Failed(format!("its thread failed: {e}")))?;
        done.map_err(|e| match e.downcast::<StoreError>() {
            Ok(refused) => refused,
            Err(e) => StoreError::Failed(format!("{e:#}")),
        })
    }

    /// Runs `work` in one write transaction (committed when it succeeds).
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.run(move |db| {
            let tx = db.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let done = work(&tx)?;
            tx.commit()?;
            Ok(done)
        })
        .await
    }
}

/// What a namespace holds: its keys and bytes.
fn usage_of(tx: &Transaction<'_>, ns: &Namespace) -> Result<(u64, u64)> {
    let found = tx
        .prepare_cached("SELECT keys, bytes FROM kv_usage WHERE tenant = ?1 AND plugin = ?2")?
        .query_row(params![&*ns.tenant, &*ns.plugin], |row| {
            Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
        })
        .optional()?;
    Ok(found.unwrap_or((0, 0)))
}

/// Records what a namespace now holds (no row when nothing).
fn set_usage(tx: &Transaction<'_>, ns: &Namespace, (keys, bytes): (u64, u64)) -> Result<()> {
    if keys == 0 {
        tx.prepare_cached("DELETE FROM kv_usage WHERE tenant = ?1 AND plugin = ?2")?
            .execute(params![&*ns.tenant, &*ns.plugin])?;
    } else {
        tx.prepare_cached(
            "INSERT INTO kv_usage (tenant, plugin, keys, bytes) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (tenant, plugin) DO UPDATE SET keys = excluded.keys, bytes = excluded.bytes",
        )?
        .execute(params![&*ns.tenant, &*ns.plugin, keys as i64, bytes as i64])?;
    }
    Ok(())
}

/// `n` new versions: the first of them (the rest follow it).
fn new_versions(tx: &Transaction<'_>, n: usize) -> Result<i64> {
    let last: i64 = tx
        .prepare_cached("UPDATE kv_versions SET last = last + ?1 RETURNING last")?
        .query_row([n as i64], |row| row.get(0))?;
    Ok(last - n as i64 + 1)
}

/// The length of `key`'s value and its version, when it has one.
fn current(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bucket: &str,
    key: &str,
) -> Result<Option<(usize, i64)>> {
    let found = tx
        .prepare_cached(
            "SELECT length(value), version FROM kv
             WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4",
        )?
        .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |row| {
            Ok((row.get::<_, i64>(0)? as usize, row.get(1)?))
        })
        .optional()?;
    Ok(found)
}

fn put(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bucket: &str,
    key: &str,
    value: &[u8],
    version: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO kv (tenant, plugin, bucket, key, value, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (tenant, plugin, bucket, key)
         DO UPDATE SET value = excluded.value, version = excluded.version",
    )?
    .execute(params![&*ns.tenant, &*ns.plugin, bucket, key, value, version])?;
    Ok(())
}

/// Writes `entries` (each key once) in `bucket` within `quota`, all or
/// none.
fn set_all(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bucket: &str,
    entries: &[(String, Vec<u8>)],
    quota: Quota,
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let (mut more_keys, mut more_bytes) = (0i64, 0i64);
    for (key, value) in entries {
        let new = entry_bytes(bucket, key, value.len()) as i64;
        match current(tx, ns, bucket, key)? {
            Some((old, _)) => more_bytes += new - entry_bytes(bucket, key, old) as i64,
            None => (more_keys, more_bytes) = (more_keys + 1, more_bytes + new),
        }
    }
    let after = within_quota(quota, usage_of(tx, ns)?, (more_keys, more_bytes))?;
    let first = new_versions(tx, entries.len())?;
    for (n, (key, value)) in entries.iter().enumerate() {
        put(tx, ns, bucket, key, value, first + n as i64)?;
    }
    set_usage(tx, ns, after)
}

#[async_trait]
impl Backend for SqliteStore {
    async fn get_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        let (ns, bucket, keys) = (ns.clone(), bucket.to_owned(), keys.to_vec());
        self.run(move |db| {
            // One read transaction: the values as of one moment.
            let tx = db.transaction()?;
            let mut values = Vec::with_capacity(keys.len());
            {
                let mut query = tx.prepare_cached(
                    "SELECT value FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4",
                )?;
                for key in &keys {
                    values.push(
                        query
                            .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |row| {
                                row.get::<_, Vec<u8>>(0)
                            })
                            .optional()?,
                    );
                }
            }
            tx.commit()?;
            Ok(values)
        })
        .await
    }

    async fn get_versioned(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
    ) -> Result<Versioned, StoreError> {
        let (ns, bucket, key) = (ns.clone(), bucket.to_owned(), key.to_owned());
        self.run(move |db| {
            let found = db
                .prepare_cached(
                    "SELECT value, version FROM kv
                     WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4",
                )?
                .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |row| {
                    Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?))
                })
                .optional()?;
            Ok(match found {
                Some((value, version)) => Versioned {
                    value: Some(value),
                    version,
                },
                None => Versioned {
                    value: None,
                    version: 0,
                },
            })
        })
        .await
    }

    async fn set_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        entries: Vec<(String, Vec<u8>)>,
        quota: Quota,
    ) -> Result<(), StoreError> {
        let (ns, bucket, entries) = (ns.clone(), bucket.to_owned(), last_of_each(entries));
        self.write(move |tx| set_all(tx, &ns, &bucket, &entries, quota))
            .await
    }

    async fn delete_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: Vec<String>,
    ) -> Result<(), StoreError> {
        let (ns, bucket, keys) = (ns.clone(), bucket.to_owned(), each_once(keys));
        self.write(move |tx| {
            let (mut keys_gone, mut bytes_gone) = (0u64, 0u64);
            {
                let mut delete = tx.prepare_cached(
                    "DELETE FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4
                     RETURNING length(value)",
                )?;
                for key in &keys {
                    let gone: Option<i64> = delete
                        .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |row| {
                            row.get(0)
                        })
                        .optional()?;
                    if let Some(len) = gone {
                        keys_gone += 1;
                        bytes_gone += entry_bytes(&bucket, key, len as usize);
                    }
                }
            }
            if keys_gone > 0 {
                let (keys, bytes) = usage_of(tx, &ns)?;
                set_usage(
                    tx,
                    &ns,
                    (
                        keys.saturating_sub(keys_gone),
                        bytes.saturating_sub(bytes_gone),
                    ),
                )?;
            }
            Ok(())
        })
        .await
    }

    async fn exists(&self, ns: &Namespace, bucket: &str, key: &str) -> Result<bool, StoreError> {
        let (ns, bucket, key) = (ns.clone(), bucket.to_owned(), key.to_owned());
        self.run(move |db| {
            let found = db
                .prepare_cached(
                    "SELECT 1 FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4",
                )?
                .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |_| Ok(()))
                .optional()?;
            Ok(found.is_some())
        })
        .await
    }

    async fn list_keys(
        &self,
        ns: &Namespace,
        bucket: &str,
        after: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>), StoreError> {
        let (ns, bucket) = (ns.clone(), bucket.to_owned());
        // One more than asked: whether there is another page.
        let fetch = limit.saturating_add(1).min(i64::MAX as usize) as i64;
        self.run(move |db| {
            let mut keys: Vec<String> = match &after {
                None => db
                    .prepare_cached(
                        "SELECT key FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3
                         ORDER BY key LIMIT ?4",
                    )?
                    .query_map(params![&*ns.tenant, &*ns.plugin, bucket, fetch], |row| {
                        row.get(0)
                    })?
                    .collect::<rusqlite::Result<_>>()?,
                Some(after) => db
                    .prepare_cached(
                        "SELECT key FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3
                         AND key > ?4 ORDER BY key LIMIT ?5",
                    )?
                    .query_map(
                        params![&*ns.tenant, &*ns.plugin, bucket, after, fetch],
                        |row| row.get(0),
                    )?
                    .collect::<rusqlite::Result<_>>()?,
            };
            let more = keys.len() > limit;
            keys.truncate(limit);
            let cursor = more.then(|| keys.last().cloned().or(after)).flatten();
            Ok((keys, cursor))
        })
        .await
    }

    async fn increment(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        delta: i64,
        quota: Quota,
    ) -> Result<i64, StoreError> {
        let (ns, bucket, key) = (ns.clone(), bucket.to_owned(), key.to_owned());
        self.write(move |tx| {
            let old: Option<Vec<u8>> = tx
                .prepare_cached(
                    "SELECT value FROM kv WHERE tenant = ?1 AND plugin = ?2 AND bucket = ?3 AND key = ?4",
                )?
                .query_row(params![&*ns.tenant, &*ns.plugin, bucket, key], |row| {
                    row.get(0)
                })
                .optional()?;
            let sum = incremented(&key, old.as_deref(), delta)?;
            set_all(tx, &ns, &bucket, &[(key, sum.to_string().into_bytes())], quota)?;
            Ok(sum)
        })
        .await
    }

    async fn swap(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        version: i64,
        value: Vec<u8>,
        quota: Quota,
    ) -> Result<bool, StoreError> {
        let (ns, bucket, key) = (ns.clone(), bucket.to_owned(), key.to_owned());
        self.write(move |tx| {
            let now = current(tx, &ns, &bucket, &key)?.map_or(0, |(_, version)| version);
            if now != version {
                return Ok(false);
            }
            set_all(tx, &ns, &bucket, &[(key, value)], quota)?;
            Ok(true)
        })
        .await
    }

    async fn usage(&self) -> Result<Vec<Usage>, StoreError> {
        self.run(|db| {
            let rows = db
                .prepare_cached(
                    "SELECT tenant, plugin, keys, bytes FROM kv_usage WHERE keys > 0
                     ORDER BY tenant, plugin",
                )?
                .query_map([], |row| {
                    Ok(Usage {
                        namespace: Namespace {
                            tenant: Arc::from(row.get::<_, String>(0)?),
                            plugin: Arc::from(row.get::<_, String>(1)?),
                        },
                        keys: row.get::<_, i64>(2)? as u64,
                        bytes: row.get::<_, i64>(3)? as u64,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
        .await
    }

    async fn export(&self, tenant: &str, limit: u64) -> Result<Vec<Entry>, StoreError> {
        let tenant = tenant.to_owned();
        self.run(move |db| {
            let mut query = db.prepare_cached(
                "SELECT plugin, bucket, key, value FROM kv WHERE tenant = ?1
                 ORDER BY plugin, bucket, key",
            )?;
            let mut rows = query.query([&tenant])?;
            let (mut entries, mut total) = (Vec::new(), 0u64);
            while let Some(row) = rows.next()? {
                let value: Vec<u8> = row.get(3)?;
                total += value.len() as u64;
                if total > limit {
                    return Err(over_export_limit(limit));
                }
                entries.push(Entry {
                    plugin: row.get(0)?,
                    bucket: row.get(1)?,
                    key: row.get(2)?,
                    value,
                });
            }
            Ok(entries)
        })
        .await
    }

    async fn delete_tenant(&self, tenant: &str) -> Result<(u64, u64), StoreError> {
        let tenant = tenant.to_owned();
        self.write(move |tx| {
            let (keys, bytes): (i64, i64) = tx.query_row(
                "SELECT coalesce(sum(keys), 0), coalesce(sum(bytes), 0) FROM kv_usage WHERE tenant = ?1",
                [&tenant],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            tx.execute("DELETE FROM kv WHERE tenant = ?1", [&tenant])?;
            tx.execute("DELETE FROM kv_usage WHERE tenant = ?1", [&tenant])?;
            Ok((keys as u64, bytes as u64))
        })
        .await
    }
}

/// The refusal of an export past `limit` bytes of values.
pub(crate) fn over_export_limit(limit: u64) -> anyhow::Error {
    StoreError::Failed(format!(
        "the tenant's key-value data is over the export's limit of {limit} bytes of values \
         (wasm-mcp tenant export --max-mb); nothing was exported"
    ))
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keeps_the_store_contract_in_memory_and_on_disk() {
        let store = SqliteStore::open(None).unwrap();
        super::super::contract::check(&store).await;
        super::super::contract::concurrent(Arc::new(store)).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("keyvalue.db");
        let on_disk = SqliteStore::open(Some(&path)).unwrap();
        super::super::contract::check(&on_disk).await;
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn data_and_versions_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keyvalue.db");
        let ns = Namespace {
            plugin: "memory".into(),
            tenant: "alice".into(),
        };
        let quota = Quota {
            max_keys: 10,
            max_bytes: 1000,
        };
        let before = {
            let store = SqliteStore::open(Some(&path)).unwrap();
            store
                .set_many(&ns, "b", vec![("k".into(), b"v".to_vec())], quota)
                .await
                .unwrap();
            store.get_versioned(&ns, "b", "k").await.unwrap()
        };
        let store = SqliteStore::open(Some(&path)).unwrap();
        assert_eq!(store.get_versioned(&ns, "b", "k").await.unwrap(), before);
        store.delete_many(&ns, "b", vec!["k".into()]).await.unwrap();
        store
            .set_many(&ns, "b", vec![("k".into(), b"v".to_vec())], quota)
            .await
            .unwrap();
        assert!(store.get_versioned(&ns, "b", "k").await.unwrap().version > before.version);
    }
}
