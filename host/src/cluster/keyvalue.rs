//! Plugins' key-value data in the shared PostgreSQL database, the same for
//! every replica (the layout and rules are `crate::plugin_data`'s):
//!
//! ```sql
//! wasm_mcp_kv       (tenant text, plugin text, bucket bytea, key bytea, value bytea,
//!                    version bigint, PRIMARY KEY (tenant, plugin, bucket, key))
//! wasm_mcp_kv_usage (tenant text, plugin text, keys bigint, bytes bigint,
//!                    PRIMARY KEY (tenant, plugin))
//! wasm_mcp_kv_versions  -- the sequence versions are drawn from
//! ```
//!
//! Buckets and keys are kept as their UTF-8 bytes: any name a plugin may
//! use (NUL included, which `text` refuses) is stored, and keys sort in
//! byte order whatever the database's collation.
//!
//! Replicas write at once, so every write of a namespace first takes its
//! usage row (`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`, which
//! creates or locks it): a namespace's writes take turns across replicas,
//! each reads what the one before committed, and checks the quota against
//! it in the same transaction. Compare-and-swap compares the version under
//! that lock, so two replicas swapping from one version cannot both win;
//! `increment` reads and writes under it, so none is lost. Reads take no
//! lock (one statement, one snapshot). Every operation is bounded by
//! `[state] timeout_ms`.

use super::database::{connection, within};
use crate::plugin_data::{each_once, entry_bytes, incremented, last_of_each, within_quota};
use crate::runtime::keyvalue::{Backend, Entry, Namespace, Quota, StoreError, Usage, Versioned};
use anyhow::Result;
use async_trait::async_trait;
use deadpool_postgres::{Pool, Transaction};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The key-value store every replica shares.
#[derive(Clone)]
pub struct PgKeyValue {
    pool: Pool,
    timeout: Duration,
    /// Set once the schema is up to date; until then every operation is
    /// refused, instead of failing on tables that are not there yet.
    reached: Arc<AtomicBool>,
}

/// Runs `work` within `timeout`, an error that is no [`StoreError`] being
/// the store's failure.
async fn bounded<T>(
    timeout: Duration,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T, StoreError> {
    within(timeout, work)
        .await
        .map_err(|e| match e.downcast::<StoreError>() {
            Ok(refused) => refused,
            Err(e) => StoreError::Failed(format!("{e:#}")),
        })
}

fn text(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("a stored name is not UTF-8"))
}

/// Creates or locks `ns`'s usage row, until the transaction ends: what
/// it holds.
async fn lock(tx: &Transaction<'_>, ns: &Namespace) -> Result<(u64, u64)> {
    let query = tx
        .prepare_cached(
            "INSERT INTO wasm_mcp_kv_usage (tenant, plugin, keys, bytes) VALUES ($1, $2, 0, 0)
             ON CONFLICT (tenant, plugin) DO UPDATE SET keys = wasm_mcp_kv_usage.keys
             RETURNING keys, bytes",
        )
        .await?;
    let row = tx.query_one(&query, &[&&*ns.tenant, &&*ns.plugin]).await?;
    Ok((row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64))
}

/// Records what a locked namespace now holds (no row when nothing).
async fn set_usage(tx: &Transaction<'_>, ns: &Namespace, (keys, bytes): (u64, u64)) -> Result<()> {
    if keys == 0 {
        let query = tx
            .prepare_cached("DELETE FROM wasm_mcp_kv_usage WHERE tenant = $1 AND plugin = $2")
            .await?;
        tx.execute(&query, &[&&*ns.tenant, &&*ns.plugin]).await?;
    } else {
        let query = tx
            .prepare_cached(
                "UPDATE wasm_mcp_kv_usage SET keys = $3, bytes = $4 WHERE tenant = $1 AND plugin = $2",
            )
            .await?;
        tx.execute(
            &query,
            &[&&*ns.tenant, &&*ns.plugin, &(keys as i64), &(bytes as i64)],
        )
        .await?;
    }
    Ok(())
}

/// Writes `entries` (each key once) in `bucket` of the locked namespace
/// holding `usage`, within `quota`, all or none.
async fn set_all(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bucket: &str,
    entries: &[(String, Vec<u8>)],
    quota: Quota,
    usage: (u64, u64),
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_bytes()).collect();
    let values: Vec<&[u8]> = entries.iter().map(|(_, v)| v.as_slice()).collect();
    let sizes = tx
        .prepare_cached(
            "SELECT key, octet_length(value) FROM wasm_mcp_kv
             WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = ANY($4)",
        )
        .await?;
    let old: std::collections::HashMap<Vec<u8>, i32> = tx
        .query(
            &sizes,
            &[&&*ns.tenant, &&*ns.plugin, &bucket.as_bytes(), &keys],
        )
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let (mut more_keys, mut more_bytes) = (0i64, 0i64);
    for (key, value) in entries {
        let new = entry_bytes(bucket, key, value.len()) as i64;
        match old.get(key.as_bytes()) {
            Some(&len) => more_bytes += new - entry_bytes(bucket, key, len as usize) as i64,
            None => (more_keys, more_bytes) = (more_keys + 1, more_bytes + new),
        }
    }
    let after = within_quota(quota, usage, (more_keys, more_bytes))?;
    let write = tx
        .prepare_cached(
            "INSERT INTO wasm_mcp_kv (tenant, plugin, bucket, key, value, version)
             SELECT $1, $2, $3, k, v, nextval('wasm_mcp_kv_versions')
             FROM unnest($4::bytea[], $5::bytea[]) AS t (k, v)
             ON CONFLICT (tenant, plugin, bucket, key)
             DO UPDATE SET value = excluded.value, version = excluded.version",
        )
        .await?;
    tx.execute(
        &write,
        &[
            &&*ns.tenant,
            &&*ns.plugin,
            &bucket.as_bytes(),
            &keys,
            &values,
        ],
    )
    .await?;
    set_usage(tx, ns, after).await
}

/// `key`'s value and version, read under the namespace's lock.
async fn current(
    tx: &Transaction<'_>,
    ns: &Namespace,
    bucket: &str,
    key: &str,
) -> Result<Option<(Vec<u8>, i64)>> {
    let query = tx
        .prepare_cached(
            "SELECT value, version FROM wasm_mcp_kv
             WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = $4",
        )
        .await?;
    let row = tx
        .query_opt(
            &query,
            &[
                &&*ns.tenant,
                &&*ns.plugin,
                &bucket.as_bytes(),
                &key.as_bytes(),
            ],
        )
        .await?;
    Ok(row.map(|row| (row.get(0), row.get(1))))
}

impl PgKeyValue {
    /// The store in the database of `pool`, its schema already brought up
    /// to date by `database::migrate`, each operation bounded by `timeout`.
    pub fn new(pool: Pool, timeout: Duration) -> Self {
        Self::once_reached(pool, timeout, Arc::new(AtomicBool::new(true)))
    }

    /// The store in the database of `pool`, which answers only once
    /// `reached` is set (the schema brought up to date, as every replica
    /// does in the background at start); until then each operation fails
    /// with "the shared database has not been reached yet".
    pub fn once_reached(pool: Pool, timeout: Duration, reached: Arc<AtomicBool>) -> Self {
        PgKeyValue {
            pool,
            timeout,
            reached,
        }
    }

    /// A connection of the pool, once the schema is there.
    async fn connection(&self) -> Result<deadpool_postgres::Object> {
        if !self.reached.load(Ordering::Relaxed) {
            return Err(
                StoreError::Failed("the shared database has not been reached yet".into()).into(),
            );
        }
        connection(&self.pool).await
    }

    /// Runs `work` in one transaction on a connection of the pool,
    /// committed when it succeeds.
    async fn write<T, F>(&self, work: F) -> Result<T, StoreError>
    where
        F: for<'t> FnOnce(
                &'t Transaction<'t>,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = Result<T>> + Send + 't>,
            > + Send,
    {
        bounded(self.timeout, async {
            let mut db = self.connection().await?;
            let tx = db.transaction().await?;
            let done = work(&tx).await?;
            tx.commit().await?;
            Ok(done)
        })
        .await
    }
}

#[async_trait]
impl Backend for PgKeyValue {
    async fn get_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        bounded(self.timeout, async {
            let db = self.connection().await?;
            let query = db
                .prepare_cached(
                    "SELECT key, value FROM wasm_mcp_kv
                     WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = ANY($4)",
                )
                .await?;
            let asked: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
            let found: std::collections::HashMap<Vec<u8>, Vec<u8>> = db
                .query(
                    &query,
                    &[&&*ns.tenant, &&*ns.plugin, &bucket.as_bytes(), &asked],
                )
                .await?
                .into_iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect();
            Ok(keys
                .iter()
                .map(|k| found.get(k.as_bytes()).cloned())
                .collect())
        })
        .await
    }

    async fn get_versioned(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
    ) -> Result<Versioned, StoreError> {
        bounded(self.timeout, async {
            let db = self.connection().await?;
            let query = db
                .prepare_cached(
                    "SELECT value, version FROM wasm_mcp_kv
                     WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = $4",
                )
                .await?;
            let row = db
                .query_opt(
                    &query,
                    &[
                        &&*ns.tenant,
                        &&*ns.plugin,
                        &bucket.as_bytes(),
                        &key.as_bytes(),
                    ],
                )
                .await?;
            Ok(match row {
                Some(row) => Versioned {
                    value: Some(row.get(0)),
                    version: row.get(1),
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
        let entries = last_of_each(entries);
        if entries.is_empty() {
            return Ok(());
        }
        let (ns, bucket) = (ns.clone(), bucket.to_owned());
        self.write(move |tx| {
            Box::pin(async move {
                let usage = lock(tx, &ns).await?;
                set_all(tx, &ns, &bucket, &entries, quota, usage).await
            })
        })
        .await
    }

    async fn delete_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: Vec<String>,
    ) -> Result<(), StoreError> {
        let keys = each_once(keys);
        if keys.is_empty() {
            return Ok(());
        }
        let (ns, bucket) = (ns.clone(), bucket.to_owned());
        self.write(move |tx| {
            Box::pin(async move {
                let (held_keys, held_bytes) = lock(tx, &ns).await?;
                let delete = tx
                    .prepare_cached(
                        "DELETE FROM wasm_mcp_kv
                         WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = ANY($4)
                         RETURNING key, octet_length(value)",
                    )
                    .await?;
                let asked: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
                let gone = tx
                    .query(
                        &delete,
                        &[&&*ns.tenant, &&*ns.plugin, &bucket.as_bytes(), &asked],
                    )
                    .await?;
                let mut bytes_gone = 0u64;
                for row in &gone {
                    let key: &[u8] = row.get(0);
                    let len: i32 = row.get(1);
                    bytes_gone += (bucket.len() + key.len() + len as usize) as u64;
                }
                set_usage(
                    tx,
                    &ns,
                    (
                        held_keys.saturating_sub(gone.len() as u64),
                        held_bytes.saturating_sub(bytes_gone),
                    ),
                )
                .await
            })
        })
        .await
    }

    async fn exists(&self, ns: &Namespace, bucket: &str, key: &str) -> Result<bool, StoreError> {
        bounded(self.timeout, async {
            let db = self.connection().await?;
            let query = db
                .prepare_cached(
                    "SELECT 1 FROM wasm_mcp_kv
                     WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key = $4",
                )
                .await?;
            let row = db
                .query_opt(
                    &query,
                    &[
                        &&*ns.tenant,
                        &&*ns.plugin,
                        &bucket.as_bytes(),
                        &key.as_bytes(),
                    ],
                )
                .await?;
            Ok(row.is_some())
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
        // One more than asked: whether there is another page.
        let fetch = limit.saturating_add(1).min(i64::MAX as usize) as i64;
        bounded(self.timeout, async {
            let db = self.connection().await?;
            let rows = match &after {
                None => {
                    let query = db
                        .prepare_cached(
                            "SELECT key FROM wasm_mcp_kv
                             WHERE tenant = $1 AND plugin = $2 AND bucket = $3
                             ORDER BY key LIMIT $4",
                        )
                        .await?;
                    db.query(
                        &query,
                        &[&&*ns.tenant, &&*ns.plugin, &bucket.as_bytes(), &fetch],
                    )
                    .await?
                }
                Some(after) => {
                    let query = db
                        .prepare_cached(
                            "SELECT key FROM wasm_mcp_kv
                             WHERE tenant = $1 AND plugin = $2 AND bucket = $3 AND key > $4
                             ORDER BY key LIMIT $5",
                        )
                        .await?;
                    db.query(
                        &query,
                        &[
                            &&*ns.tenant,
                            &&*ns.plugin,
                            &bucket.as_bytes(),
                            &after.as_bytes(),
                            &fetch,
                        ],
                    )
                    .await?
                }
            };
            let mut keys = rows
                .into_iter()
                .map(|row| text(row.get(0)))
                .collect::<Result<Vec<String>>>()?;
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
            Box::pin(async move {
                let usage = lock(tx, &ns).await?;
                let old = current(tx, &ns, &bucket, &key).await?;
                let sum = incremented(&key, old.as_ref().map(|(v, _)| v.as_slice()), delta)?;
                let entry = [(key, sum.to_string().into_bytes())];
                set_all(tx, &ns, &bucket, &entry, quota, usage).await?;
                Ok(sum)
            })
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
            Box::pin(async move {
                let usage = lock(tx, &ns).await?;
                let now = current(tx, &ns, &bucket, &key)
                    .await?
                    .map_or(0, |(_, version)| version);
                if now != version {
                    return Ok(false);
                }
                set_all(tx, &ns, &bucket, &[(key, value)], quota, usage).await?;
                Ok(true)
            })
        })
        .await
    }

    async fn usage(&self) -> Result<Vec<Usage>, StoreError> {
        bounded(self.timeout, async {
            let db = self.connection().await?;
            let rows = db
                .query(
                    "SELECT tenant, plugin, keys, bytes FROM wasm_mcp_kv_usage WHERE keys > 0
                     ORDER BY tenant, plugin",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|row| Usage {
                    namespace: Namespace {
                        tenant: Arc::from(row.get::<_, &str>(0)),
                        plugin: Arc::from(row.get::<_, &str>(1)),
                    },
                    keys: row.get::<_, i64>(2) as u64,
                    bytes: row.get::<_, i64>(3) as u64,
                })
                .collect())
        })
        .await
    }

    async fn export(&self, tenant: &str, limit: u64) -> Result<Vec<Entry>, StoreError> {
        bounded(self.timeout, async {
            let mut db = self.connection().await?;
            // One snapshot: the size checked is the size read.
            let tx = db
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let total: i64 = tx
                .query_one(
                    "SELECT coalesce(sum(octet_length(value)), 0)::bigint FROM wasm_mcp_kv
                     WHERE tenant = $1",
                    &[&tenant],
                )
                .await?
                .get(0);
            if total as u64 > limit {
                return Err(crate::plugin_data::sqlite::over_export_limit(limit));
            }
            let rows = tx
                .query(
                    "SELECT plugin, bucket, key, value FROM wasm_mcp_kv WHERE tenant = $1
                     ORDER BY plugin, bucket, key",
                    &[&tenant],
                )
                .await?;
            tx.commit().await?;
            rows.into_iter()
                .map(|row| {
                    Ok(Entry {
                        plugin: row.get(0),
                        bucket: text(row.get(1))?,
                        key: text(row.get(2))?,
                        value: row.get(3),
                    })
                })
                .collect()
        })
        .await
    }

    async fn delete_tenant(&self, tenant: &str) -> Result<(u64, u64), StoreError> {
        let tenant = tenant.to_owned();
        self.write(move |tx| {
            Box::pin(async move {
                // Every namespace of the tenant, locked in one order (a
                // writer holds one at most, so none waits on another).
                let held = tx
                    .query(
                        "SELECT keys, bytes FROM wasm_mcp_kv_usage WHERE tenant = $1
                         ORDER BY plugin FOR UPDATE",
                        &[&tenant],
                    )
                    .await?;
                let keys: i64 = held.iter().map(|r| r.get::<_, i64>(0)).sum();
                let bytes: i64 = held.iter().map(|r| r.get::<_, i64>(1)).sum();
                tx.execute("DELETE FROM wasm_mcp_kv WHERE tenant = $1", &[&tenant])
                    .await?;
                tx.execute(
                    "DELETE FROM wasm_mcp_kv_usage WHERE tenant = $1",
                    &[&tenant],
                )
                .await?;
                Ok((keys as u64, bytes as u64))
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keeps_the_store_contract_on_postgres() {
        let pg = super::super::tests::Postgres::start();
        let target = pg.database("keyvalue").await;
        let pool = target.pool().unwrap();
        // Before the schema is known to be there, every operation says so.
        let reached = Arc::new(AtomicBool::new(false));
        let early = PgKeyValue::once_reached(pool.clone(), target.timeout, reached.clone());
        let ns = Namespace {
            plugin: "memory".into(),
            tenant: "early".into(),
        };
        let refused = early.exists(&ns, "b", "k").await.unwrap_err();
        assert!(
            refused.to_string().contains("not been reached yet"),
            "{refused}"
        );
        reached.store(true, Ordering::Relaxed);
        assert!(!early.exists(&ns, "b", "k").await.unwrap());
        // Migrating again changes nothing.
        super::super::database::migrate(&pool).await.unwrap();
        let store = PgKeyValue::new(pool, target.timeout);
        crate::plugin_data::contract::check(&store).await;
        // Two replicas (pools of their own): one's write is the other's read,
        // and their swaps from one version cannot both win.
        let other = PgKeyValue::new(target.pool().unwrap(), target.timeout);
        let ns = Namespace {
            plugin: "memory".into(),
            tenant: "shared".into(),
        };
        let quota = Quota {
            max_keys: 10,
            max_bytes: 1000,
        };
        store
            .set_many(&ns, "b", vec![("k".into(), b"from a".to_vec())], quota)
            .await
            .unwrap();
        let seen = other.get_versioned(&ns, "b", "k").await.unwrap();
        assert_eq!(seen.value.as_deref(), Some(&b"from a"[..]));
        let (a, b) = tokio::join!(
            store.swap(&ns, "b", "k", seen.version, b"a".to_vec(), quota),
            other.swap(&ns, "b", "k", seen.version, b"b".to_vec(), quota),
        );
        assert!(a.unwrap() ^ b.unwrap(), "exactly one swap wins");
        crate::plugin_data::contract::concurrent(Arc::new(store)).await;
    }
}
