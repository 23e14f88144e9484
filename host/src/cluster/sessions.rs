//! [`SessionStore`] on the shared PostgreSQL database: any replica can
//! take up a handshake session another one opened. A row is the session's
//! record as JSON and when a replica last held it; rows nobody held for
//! the idle timeout are deleted.

use super::database::{connection, within};
use crate::server::tasks::now_ms;
use crate::server::{SessionRecord, SessionStore};
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use deadpool_postgres::Pool;
use std::time::Duration;

/// The handshake sessions every replica can serve, at most `capacity`.
pub struct PgSessions {
    pool: Pool,
    capacity: usize,
    timeout: Duration,
}

impl PgSessions {
    /// The sessions kept in the database of `pool`, at most `capacity`.
    pub fn new(pool: Pool, capacity: usize, timeout: Duration) -> Self {
        PgSessions {
            pool,
            capacity,
            timeout,
        }
    }
}

fn now() -> i64 {
    now_ms() as i64
}

#[async_trait]
impl SessionStore for PgSessions {
    async fn save(&self, record: &SessionRecord) -> Result<()> {
        let text = serde_json::to_string(record)?;
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let update = db
                .prepare_cached(
                    "UPDATE wasm_mcp_sessions SET record = $2, touched_ms = $3 WHERE id = $1",
                )
                .await?;
            if db.execute(&update, &[&record.id, &text, &now()]).await? == 1 {
                return Ok(());
            }
            // A new session: only while there is room. (Replicas saving at
            // once may overshoot by a few; the sweep brings it back.)
            let count = db
                .prepare_cached("SELECT COUNT(*) FROM wasm_mcp_sessions")
                .await?;
            let kept: i64 = db.query_one(&count, &[]).await?.get(0);
            anyhow::ensure!(
                (kept as usize) < self.capacity,
                "the session store is full ({} sessions)",
                self.capacity
            );
            let insert = db
                .prepare_cached(
                    "INSERT INTO wasm_mcp_sessions (id, record, touched_ms) VALUES ($1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET record = $2, touched_ms = $3",
                )
                .await?;
            db.execute(&insert, &[&record.id, &text, &now()]).await?;
            Ok(())
        })
        .await
    }

    async fn load(&self, id: &str) -> Result<Option<SessionRecord>> {
        let text: Option<String> = within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached("SELECT record FROM wasm_mcp_sessions WHERE id = $1")
                .await?;
            Ok(db.query_opt(&query, &[&id]).await?.map(|row| row.get(0)))
        })
        .await?;
        text.map(|t| serde_json::from_str(&t).context("a stored session does not read back"))
            .transpose()
    }

    async fn remove(&self, id: &str) -> Result<bool> {
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let delete = db
                .prepare_cached("DELETE FROM wasm_mcp_sessions WHERE id = $1")
                .await?;
            Ok(db.execute(&delete, &[&id]).await? == 1)
        })
        .await
    }

    async fn touch(&self, ids: &[String]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            db.execute(
                "UPDATE wasm_mcp_sessions SET touched_ms = $1 WHERE id = ANY($2)",
                &[&now(), &ids],
            )
            .await?;
            Ok(())
        })
        .await
    }

    async fn forget_idle(&self, idle: Duration) -> Result<usize> {
        let before = now() - idle.as_millis() as i64;
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let deleted = db
                .execute(
                    "DELETE FROM wasm_mcp_sessions WHERE touched_ms < $1",
                    &[&before],
                )
                .await?;
            Ok(deleted as usize)
        })
        .await
    }
}
