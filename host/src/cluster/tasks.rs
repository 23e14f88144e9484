//! [`TaskStore`] on the shared PostgreSQL database. Each unfinished task
//! is held by the replica running it for a lease it renews; once a lease
//! lapses (its replica stopped), any replica fails the task.

use super::database::{column, connection, unsigned, within_store};
use crate::server::tasks::{
    now_ms, outcome_text, parse_outcome, Record, Status, StoredRerun, TaskStore, Usage, Wire,
};
use anyhow::Result;
use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde_json::{Map, Value};
use std::time::Duration;
use tokio_postgres::Row;

/// The tasks every replica sees.
#[derive(Clone)]
pub struct PgTasks {
    pool: Pool,
    replica: String,
    lease: Duration,
    timeout: Duration,
    /// Whether this replica runs the calls of stopped replicas again
    /// (else it fails their tasks).
    rerun: bool,
}

const COLUMNS: &str = "id, owner, wire, method, target, status, status_message, created_ms, \
                       updated_ms, ttl_ms, outcome, input_requests, rerun, replica";

/// Unfinished, in SQL.
const RUNNING: &str = "status IN ('working', 'input_required')";

/// Now in ms, by the database's clock: leases are given and checked by one
/// clock, whatever the replicas' clocks say.
const DB_NOW: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// A task's row read back. A column that does not read (a wrong type, a
/// null where none may be, a negative time) is [`StoreError::Corrupt`]
/// naming the task and the column. The rules of what does read: a status
/// this version does not know reads as working ([`Status::parse`]), a wire
/// other than 2025-11-25 as 2026-07-28 ([`Wire::parse`]); an outcome or
/// input requests that are not the JSON stored read as none (the task
/// still lists, `tasks/result` says it ended without a result), with a
/// warning; a rerun call by the rule of its version ([`StoredRerun::read`]).
///
/// [`StoreError::Corrupt`]: crate::server::StoreError::Corrupt
fn record(row: &Row) -> Result<Record> {
    let id: String = column(row, 0, &"a task row")?;
    let task = format!("task {id}");
    let whose: &dyn std::fmt::Display = &task;
    let outcome: Option<String> = column(row, 10, whose)?;
    let requests: Option<String> = column(row, 11, whose)?;
    let rerun: Option<String> = column(row, 12, whose)?;
    let outcome = outcome.and_then(|text| {
        let outcome = parse_outcome(&text);
        if outcome.is_none() {
            tracing::warn!("{task}: its stored outcome does not read back: it reads as none");
        }
        outcome
    });
    let input_requests = requests.and_then(|text| match serde_json::from_str(&text) {
        Ok(Value::Object(requests)) => Some(requests),
        _ => {
            tracing::warn!("{task}: its stored input requests do not read back: they read as none");
            None
        }
    });
    Ok(Record {
        owner: column(row, 1, whose)?,
        wire: Wire::parse(column(row, 2, whose)?),
        method: column(row, 3, whose)?,
        target: column(row, 4, whose)?,
        status: Status::parse(column(row, 5, whose)?),
        status_message: column(row, 6, whose)?,
        created_ms: unsigned(row, 7, whose)?,
        updated_ms: unsigned(row, 8, whose)?,
        ttl_ms: unsigned(row, 9, whose)?,
        outcome,
        input_requests,
        // Read by the rule of its version (a newer one is refused).
        rerun: rerun.as_deref().map(StoredRerun::read),
        holder: Some(column(row, 13, whose)?),
        id,
    })
}

/// The ids a query returned (its first column).
fn ids_of(rows: &[Row]) -> Result<Vec<String>> {
    rows.iter().map(|r| column(r, 0, &"a task row")).collect()
}

fn ms(value: u64) -> i64 {
    value.min(i64::MAX as u64) as i64
}

impl PgTasks {
    /// The store of replica `replica`, whose holds last `lease`, running
    /// the calls of stopped replicas again when `rerun` allows. Fails the
    /// tasks a replica of the same name left unfinished (a restart: they
    /// cannot run in this new process).
    pub async fn open(
        pool: Pool,
        replica: &str,
        lease: Duration,
        timeout: Duration,
        rerun: bool,
    ) -> Result<Self> {
        let store = Self::new(pool, replica, lease, timeout, rerun);
        store.fail_left_behind().await?;
        Ok(store)
    }

    /// The store of replica `replica` (see [`PgTasks::open`]), without
    /// reaching the database yet.
    pub fn new(pool: Pool, replica: &str, lease: Duration, timeout: Duration, rerun: bool) -> Self {
        PgTasks {
            pool,
            replica: replica.to_owned(),
            lease,
            timeout,
            rerun,
        }
    }

    /// Fails the tasks a replica of this name left unfinished (a restart:
    /// they cannot run in this new process).
    pub async fn fail_left_behind(&self) -> Result<()> {
        let failed = self.fail_where("replica = $3", &[&self.replica]).await?;
        if !failed.is_empty() {
            tracing::warn!(
                failed = failed.len(),
                "tasks left running by this replica's previous run are marked failed"
            );
        }
        Ok(())
    }

    /// The lease, in ms, to add to the database's clock.
    fn lease_ms(&self) -> i64 {
        ms(self.lease.as_millis() as u64)
    }

    /// Fails the unfinished tasks matching `condition` (with `$3`.. bound
    /// to `more`): their replica stopped. Their ids.
    async fn fail_where(
        &self,
        condition: &str,
        more: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<String>> {
        let error = crate::protocol::RpcError::internal(
            "the replica running this task stopped (it was restarted or crashed), so the task did not finish",
        )
        .to_json();
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        let outcome = outcome_text(&Err(error));
        let sql = format!(
            "UPDATE wasm_mcp_tasks SET status = 'failed', status_message = $1, outcome = $2,
             size = length($2), input_requests = NULL, updated_ms = {now}
             WHERE {RUNNING} AND {condition} RETURNING id",
            now = ms(now_ms())
        );
        let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&message, &outcome];
        params.extend_from_slice(more);
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            ids_of(&db.query(&sql, &params).await?)
        })
        .await
    }
}

#[async_trait]
impl TaskStore for PgTasks {
    async fn insert(&self, task: &Record) -> Result<()> {
        let outcome = task.outcome.as_ref().map(outcome_text);
        let size = outcome.as_ref().map_or(0, String::len) as i64;
        let requests = task
            .input_requests
            .as_ref()
            .map(|r| Value::Object(r.clone()).to_string());
        let expires = ms(task.created_ms.saturating_add(task.ttl_ms));
        let rerun = task.rerun.as_ref().and_then(StoredRerun::text);
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let insert = db
                .prepare_cached(&format!(
                    "INSERT INTO wasm_mcp_tasks ({COLUMNS}, lease_until_ms, expires_ms, size)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, {DB_NOW} + $15, $16, $17)"
                ))
                .await?;
            db.execute(
                &insert,
                &[
                    &task.id,
                    &task.owner,
                    &task.wire.as_str(),
                    &task.method,
                    &task.target,
                    &task.status.as_str(),
                    &task.status_message,
                    &ms(task.created_ms),
                    &ms(task.updated_ms),
                    &ms(task.ttl_ms),
                    &outcome,
                    &requests,
                    &rerun,
                    &self.replica,
                    &self.lease_ms(),
                    &expires,
                    &size,
                ],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn get(&self, id: &str) -> Result<Option<Record>> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM wasm_mcp_tasks WHERE id = $1"
                ))
                .await?;
            db.query_opt(&query, &[&id])
                .await?
                .as_ref()
                .map(record)
                .transpose()
        })
        .await
    }

    async fn set_status(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        requests: Option<&Map<String, Value>>,
    ) -> Result<bool> {
        let requests = requests.map(|r| Value::Object(r.clone()).to_string());
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let update = db
                .prepare_cached(&format!(
                    "UPDATE wasm_mcp_tasks SET status = $1, status_message = $2, updated_ms = $3,
                     input_requests = $4 WHERE id = $5 AND {RUNNING}"
                ))
                .await?;
            let changed = db
                .execute(
                    &update,
                    &[&status.as_str(), &message, &ms(now_ms()), &requests, &id],
                )
                .await?;
            Ok(changed == 1)
        })
        .await
    }

    async fn finish(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let update = db
                .prepare_cached(&format!(
                    "UPDATE wasm_mcp_tasks SET status = $1, status_message = $2, outcome = $3,
                     updated_ms = $4, size = $5, input_requests = NULL WHERE id = $6 AND {RUNNING}"
                ))
                .await?;
            let size = outcome.map_or(0, str::len) as i64;
            let changed = db
                .execute(
                    &update,
                    &[
                        &status.as_str(),
                        &message,
                        &outcome,
                        &ms(now_ms()),
                        &size,
                        &id,
                    ],
                )
                .await?;
            Ok(changed == 1)
        })
        .await
    }

    async fn usage(&self, owner: Option<&str>) -> Result<Usage> {
        let sql = match owner {
            Some(_) => "SELECT COUNT(*), COALESCE(SUM(size), 0)::bigint FROM wasm_mcp_tasks WHERE owner = $1",
            None => "SELECT COUNT(*), COALESCE(SUM(size), 0)::bigint FROM wasm_mcp_tasks WHERE owner IS NULL AND $1::text IS NULL",
        };
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db.prepare_cached(sql).await?;
            usage(&db.query_one(&query, &[&owner]).await?)
        })
        .await
    }

    async fn usage_all(&self) -> Result<Usage> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached(
                    "SELECT COUNT(*), COALESCE(SUM(size), 0)::bigint FROM wasm_mcp_tasks",
                )
                .await?;
            usage(&db.query_one(&query, &[]).await?)
        })
        .await
    }

    async fn count_by_status(&self) -> Result<Vec<(String, u64)>> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached(
                    "SELECT status, COUNT(*) FROM wasm_mcp_tasks GROUP BY status ORDER BY status",
                )
                .await?;
            let rows = db.query(&query, &[]).await?;
            rows.iter()
                .map(|r| {
                    Ok((
                        column(r, 0, &"a task row")?,
                        unsigned(r, 1, &"a task count")?,
                    ))
                })
                .collect()
        })
        .await
    }

    async fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>> {
        let (created, id) = after.unwrap_or((0, ""));
        let whose = match owner {
            Some(_) => "owner = $1",
            None => "owner IS NULL AND $1::text IS NULL",
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM wasm_mcp_tasks WHERE {whose} AND (created_ms, id) > ($2, $3)
             ORDER BY created_ms, id LIMIT $4"
        );
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db.prepare_cached(&sql).await?;
            let rows = db
                .query(&query, &[&owner, &ms(created), &id, &(limit as i64)])
                .await?;
            rows.iter().map(record).collect()
        })
        .await
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<Vec<String>> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let rows = db
                .query(
                    "DELETE FROM wasm_mcp_tasks WHERE expires_ms <= $1 RETURNING id",
                    &[&ms(now_ms)],
                )
                .await?;
            ids_of(&rows)
        })
        .await
    }

    async fn renew(&self, ids: &[String]) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let rows = db
                .query(
                    &format!(
                        "UPDATE wasm_mcp_tasks SET lease_until_ms = {DB_NOW} + $1, replica = $2
                         WHERE id = ANY($3) AND {RUNNING} RETURNING id"
                    ),
                    &[&self.lease_ms(), &self.replica, &ids],
                )
                .await?;
            ids_of(&rows)
        })
        .await
    }

    async fn release(&self, ids: &[String]) -> Result<()> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            db.execute(
                &format!(
                    "UPDATE wasm_mcp_tasks SET lease_until_ms = 0
                     WHERE id = ANY($1) AND replica = $2 AND {RUNNING}"
                ),
                &[&ids, &self.replica],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn fail_orphans(&self) -> Result<Vec<String>> {
        // The ones to run again are claimed instead, where allowed.
        self.fail_where(
            &format!("lease_until_ms < {DB_NOW} AND (rerun IS NULL OR NOT $3)"),
            &[&self.rerun],
        )
        .await
    }

    async fn claim_orphans(&self, limit: usize) -> Result<Vec<Record>> {
        if !self.rerun || limit == 0 {
            return Ok(Vec::new());
        }
        let message = format!(
            "Run again on replica {}: the one running it stopped",
            self.replica
        );
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let rows = db
                .query(
                    &format!(
                        "UPDATE wasm_mcp_tasks SET replica = $1, lease_until_ms = {DB_NOW} + $2,
                         status = 'working', status_message = $3, input_requests = NULL,
                         updated_ms = $4
                         WHERE id IN (
                             SELECT id FROM wasm_mcp_tasks
                             WHERE {RUNNING} AND lease_until_ms < {DB_NOW} AND rerun IS NOT NULL
                             ORDER BY lease_until_ms LIMIT $5 FOR UPDATE SKIP LOCKED)
                         RETURNING {COLUMNS}"
                    ),
                    &[
                        &self.replica,
                        &self.lease_ms(),
                        &message,
                        &ms(now_ms()),
                        &(limit as i64),
                    ],
                )
                .await?;
            rows.iter().map(record).collect()
        })
        .await
    }
}

fn usage(row: &Row) -> Result<Usage> {
    Ok(Usage {
        tasks: unsigned(row, 0, &"the tasks' usage")? as usize,
        bytes: unsigned(row, 1, &"the tasks' usage")? as usize,
    })
}
