//! [`SessionStore`] on the shared PostgreSQL database: any replica can
//! take up a handshake session another one opened. A row is the session's
//! record as JSON and when a replica last held it; rows nobody held for
//! the idle timeout are deleted.

use super::database::{connection, within};
use crate::server::tasks::now_ms;
use crate::server::{SessionRecord, SessionStore, StreamEvents};
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
            let removed = db.execute(&delete, &[&id]).await? == 1;
            db.execute(
                "DELETE FROM wasm_mcp_stream_events WHERE session = $1",
                &[&id],
            )
            .await?;
            Ok(removed)
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
            let deleted: Vec<String> = db
                .query(
                    "DELETE FROM wasm_mcp_sessions WHERE touched_ms < $1 RETURNING id",
                    &[&before],
                )
                .await?
                .iter()
                .map(|row| row.get(0))
                .collect();
            if !deleted.is_empty() {
                db.execute(
                    "DELETE FROM wasm_mcp_stream_events WHERE session = ANY($1)",
                    &[&deleted],
                )
                .await?;
            }
            Ok(deleted.len())
        })
        .await
    }
}

/// The sessions' SSE events every replica can replay, at most `per_session`
/// of each session (its oldest go first).
pub struct PgStreamEvents {
    pool: Pool,
    per_session: usize,
    timeout: Duration,
    /// When keeping an event last failed: for [`PAUSE`] after, events are
    /// not kept (a stream does not wait on a database that is down).
    failed_at: parking_lot::Mutex<Option<std::time::Instant>>,
}

/// How long events are not kept after keeping one failed.
const PAUSE: Duration = Duration::from_secs(1);

impl PgStreamEvents {
    /// The events kept in the database of `pool`.
    pub fn new(pool: Pool, per_session: usize, timeout: Duration) -> Self {
        PgStreamEvents {
            pool,
            per_session,
            timeout,
            failed_at: parking_lot::Mutex::new(None),
        }
    }

    /// Keeps one event, and now and then trims the session's oldest.
    async fn keep(&self, session: &str, stream: u64, seq: u64, text: &str) -> Result<()> {
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let insert = db
                .prepare_cached(
                    "INSERT INTO wasm_mcp_stream_events (session, stream, seq, text)
                     VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING n",
                )
                .await?;
            let row = db
                .query_opt(&insert, &[&session, &(stream as i64), &(seq as i64), &text])
                .await?;
            let Some(row) = row else { return Ok(()) };
            let n: i64 = row.get(0);
            if (n as u64).is_multiple_of(TRIM_EVERY) {
                // The session's events past its newest `per_session`.
                let trim = db
                    .prepare_cached(
                        "DELETE FROM wasm_mcp_stream_events WHERE session = $1 AND n <= (
                             SELECT n FROM wasm_mcp_stream_events WHERE session = $1
                             ORDER BY n DESC OFFSET $2 LIMIT 1)",
                    )
                    .await?;
                db.execute(&trim, &[&session, &(self.per_session as i64)])
                    .await?;
            }
            Ok(())
        })
        .await
    }
}

/// Trims a session's events every this many appends.
const TRIM_EVERY: u64 = 32;

#[async_trait]
impl StreamEvents for PgStreamEvents {
    async fn append(&self, session: &str, stream: u64, seq: u64, text: &str) -> Result<()> {
        if self.failed_at.lock().is_some_and(|at| at.elapsed() < PAUSE) {
            anyhow::bail!("not kept: the shared database failed less than {PAUSE:?} ago");
        }
        let kept = self.keep(session, stream, seq, text).await;
        if kept.is_err() {
            *self.failed_at.lock() = Some(std::time::Instant::now());
        }
        kept
    }

    async fn after(
        &self,
        session: &str,
        stream: u64,
        seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, String)>> {
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached(
                    "SELECT seq, text FROM wasm_mcp_stream_events
                     WHERE session = $1 AND stream = $2 AND seq > $3 ORDER BY seq LIMIT $4",
                )
                .await?;
            let rows = db
                .query(
                    &query,
                    &[&session, &(stream as i64), &(seq as i64), &(limit as i64)],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, i64>(0) as u64, r.get(1)))
                .collect())
        })
        .await
    }

    async fn last(&self, session: &str) -> Result<(u64, u64)> {
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            let row = db
                .query_one(
                    "SELECT COALESCE(MAX(stream), 0)::bigint,
                            COALESCE(MAX(seq) FILTER (WHERE stream = 0), 0)::bigint
                     FROM wasm_mcp_stream_events WHERE session = $1",
                    &[&session],
                )
                .await?;
            Ok((row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64))
        })
        .await
    }
}
