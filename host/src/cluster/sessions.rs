//! [`SessionStore`] on the shared PostgreSQL database: any replica can
//! take up a handshake session another one opened. A session is a row (its
//! record as JSON, without its subscriptions, and when a replica last held
//! it) and a row per subscription (keyed by the URI's SHA-256); a change
//! writes what changed: the
//! session's row only when its own fields change, one row per URI
//! subscribed or unsubscribed. Its subscriptions, stream events and their
//! counter go with it (`ON DELETE CASCADE`); rows nobody held for the idle
//! timeout are deleted, a bounded batch per sweep.
//!
//! Replicas of two versions share these rows during an upgrade or a
//! rollback. A record is read by [`SessionRecord::read`]: one of a newer
//! version than this replica reads is not served here (the session is
//! not found here: its client initializes again elsewhere or later) and
//! counted; every write of a record's row checks that the row is not of
//! a newer version, so this replica never writes a newer record back with
//! fewer fields.

use super::database::{column, connection, unsigned, within_store};
use crate::server::session_store::{Unreadable, SESSION_RECORD_VERSION};
use crate::server::tasks::now_ms;
use crate::server::{SessionRecord, SessionStore, StoreError, StreamEvents};
use anyhow::Result;
use async_trait::async_trait;
use deadpool_postgres::Pool;
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;
use tokio_postgres::error::SqlState;

/// What a write of a session's row adds to its condition: the row kept is
/// of a version this replica writes (`$4`; a row without `v` is of
/// version 1). A `v` that is not a number sorts below every number in
/// PostgreSQL's `jsonb` order: such a row is written over.
const NOT_NEWER: &str = "COALESCE(record::jsonb -> 'v', '1'::jsonb) <= to_jsonb($4::int)";

/// The version this replica writes, as a query parameter.
const VERSION: i32 = SESSION_RECORD_VERSION as i32;

/// Idle sessions deleted per sweep, at most (with their subscriptions and
/// events); the rest go at the next sweeps.
const SWEEP_BATCH: i64 = 1_000;

/// The handshake sessions every replica can serve, at most `capacity`.
pub struct PgSessions {
    pool: Pool,
    capacity: usize,
    timeout: Duration,
    /// What this replica last read or wrote of each session (at most
    /// `capacity`): a save writes its difference from it.
    known: Mutex<HashMap<String, SessionRecord>>,
}

impl PgSessions {
    /// The sessions kept in the database of `pool`, at most `capacity`.
    pub fn new(pool: Pool, capacity: usize, timeout: Duration) -> Self {
        PgSessions {
            pool,
            capacity,
            timeout,
            known: Mutex::default(),
        }
    }

    fn remember(&self, record: &SessionRecord) {
        let mut known = self.known.lock();
        if known.len() >= self.capacity && !known.contains_key(&record.id) {
            // Full (sessions this replica no longer holds): start again.
            known.clear();
        }
        known.insert(record.id.clone(), record.clone());
    }

    fn forget(&self, ids: &[String]) {
        let mut known = self.known.lock();
        for id in ids {
            known.remove(id);
        }
    }

    /// Writes what changed from `before` (as this replica last knew the
    /// session) to `after`; `false` when the session is not kept any more.
    async fn save_change(&self, before: &SessionRecord, after: &SessionRecord) -> Result<bool> {
        let fields = own_fields(after);
        let fields_changed = own_fields(before) != fields;
        let (was, is): (BTreeSet<&String>, BTreeSet<&String>) = (
            before.subscriptions.iter().collect(),
            after.subscriptions.iter().collect(),
        );
        let added: Vec<&String> = is.difference(&was).copied().collect();
        let removed: Vec<&String> = was.difference(&is).copied().collect();
        if !fields_changed && added.is_empty() && removed.is_empty() {
            return Ok(true);
        }
        let text = serde_json::to_string(&fields)?;
        within_store(self.timeout, async {
            let mut db = connection(&self.pool).await?;
            let tx = db.transaction().await?;
            if fields_changed {
                let update = tx
                    .prepare_cached(&format!(
                        "UPDATE wasm_mcp_sessions SET record = $2, touched_ms = $3
                         WHERE id = $1 AND {NOT_NEWER}"
                    ))
                    .await?;
                if tx
                    .execute(&update, &[&after.id, &text, &now(), &VERSION])
                    .await?
                    == 0
                {
                    // Gone, or of a newer version now: see `save_whole`.
                    return Ok(false);
                }
            }
            if !removed.is_empty() {
                let delete = tx
                    .prepare_cached(
                        "DELETE FROM wasm_mcp_session_subscriptions
                         WHERE session = $1 AND key IN (
                             SELECT sha256(convert_to(u, 'UTF8')) FROM unnest($2::text[]) u)",
                    )
                    .await?;
                tx.execute(&delete, &[&after.id, &removed]).await?;
            }
            if !added.is_empty() {
                let insert = tx
                    .prepare_cached(
                        "INSERT INTO wasm_mcp_session_subscriptions (session, key, uri)
                         SELECT $1, sha256(convert_to(u, 'UTF8')), u FROM unnest($2::text[]) u
                         ON CONFLICT DO NOTHING",
                    )
                    .await?;
                match tx.execute(&insert, &[&after.id, &added]).await {
                    Ok(_) => {}
                    // Its session is gone.
                    Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => {
                        return Ok(false)
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    /// Writes all of `record`: its row, and its subscriptions (only the
    /// ones added or removed are written).
    async fn save_whole(&self, record: &SessionRecord) -> Result<()> {
        let text = serde_json::to_string(&own_fields(record))?;
        within_store(self.timeout, async {
            let mut db = connection(&self.pool).await?;
            let tx = db.transaction().await?;
            let update = tx
                .prepare_cached(&format!(
                    "UPDATE wasm_mcp_sessions SET record = $2, touched_ms = $3
                     WHERE id = $1 AND {NOT_NEWER}"
                ))
                .await?;
            if tx
                .execute(&update, &[&record.id, &text, &now(), &VERSION])
                .await?
                == 0
            {
                // A new session: only while there is room. (Replicas saving
                // at once may overshoot by a few; the sweep brings it back.)
                let count = tx
                    .prepare_cached("SELECT COUNT(*) FROM wasm_mcp_sessions")
                    .await?;
                let kept: i64 = column(
                    &tx.query_one(&count, &[]).await?,
                    0,
                    &"the count of sessions",
                )?;
                anyhow::ensure!(
                    (kept as usize) < self.capacity,
                    "the session store is full ({} sessions)",
                    self.capacity
                );
                let insert = tx
                    .prepare_cached(&format!(
                        "INSERT INTO wasm_mcp_sessions AS s (id, record, touched_ms)
                         VALUES ($1, $2, $3)
                         ON CONFLICT (id) DO UPDATE SET record = $2, touched_ms = $3
                         WHERE {}",
                        NOT_NEWER.replace("record", "s.record")
                    ))
                    .await?;
                let written = tx
                    .execute(&insert, &[&record.id, &text, &now(), &VERSION])
                    .await?;
                if written != 1 {
                    return Err(StoreError::Conflict(format!(
                        "not saved: the session's stored record is of a newer version than \
                         this host writes ({SESSION_RECORD_VERSION})"
                    ))
                    .into());
                }
            }
            let stale = tx
                .prepare_cached(
                    "DELETE FROM wasm_mcp_session_subscriptions
                     WHERE session = $1 AND NOT (uri = ANY($2))",
                )
                .await?;
            tx.execute(&stale, &[&record.id, &record.subscriptions])
                .await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO wasm_mcp_session_subscriptions (session, key, uri)
                     SELECT $1, sha256(convert_to(u, 'UTF8')), u FROM unnest($2::text[]) u
                     ON CONFLICT DO NOTHING",
                )
                .await?;
            tx.execute(&insert, &[&record.id, &record.subscriptions])
                .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}

/// `record` as its row keeps it: without its subscriptions.
fn own_fields(record: &SessionRecord) -> SessionRecord {
    SessionRecord {
        subscriptions: Vec::new(),
        ..record.clone()
    }
}

fn now() -> i64 {
    now_ms() as i64
}

#[async_trait]
impl SessionStore for PgSessions {
    async fn save(&self, record: &SessionRecord) -> Result<()> {
        let before = self.known.lock().get(&record.id).cloned();
        let saved = match &before {
            Some(before) => self.save_change(before, record).await,
            None => Ok(false),
        };
        match saved {
            Ok(true) => {}
            Ok(false) => self.save_whole(record).await?,
            Err(error) => {
                // What is kept is not known now.
                self.forget(std::slice::from_ref(&record.id));
                return Err(error);
            }
        }
        self.remember(record);
        Ok(())
    }

    async fn load(&self, id: &str) -> Result<Option<SessionRecord>> {
        let row: Option<(String, Vec<String>)> = within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let query = db
                .prepare_cached(
                    "SELECT s.record, ARRAY(SELECT uri FROM wasm_mcp_session_subscriptions
                                            WHERE session = s.id)
                     FROM wasm_mcp_sessions s WHERE s.id = $1",
                )
                .await?;
            let whose = format!("session {id}");
            db.query_opt(&query, &[&id])
                .await?
                .map(|row| Ok((column(&row, 0, &whose)?, column(&row, 1, &whose)?)))
                .transpose()
        })
        .await?;
        let Some((text, subscriptions)) = row else {
            self.forget(&[id.to_owned()]);
            return Ok(None);
        };
        let mut record = match SessionRecord::read(&text) {
            Ok(record) => record,
            Err(why) => {
                if matches!(why, Unreadable::Newer(_)) {
                    crate::metrics::metrics().unknown_record("session");
                }
                tracing::warn!("a stored session is not served here: {why}");
                self.forget(&[id.to_owned()]);
                return Ok(None);
            }
        };
        // A replica of the previous version keeps them in the record.
        let legacy = !record.subscriptions.is_empty();
        record.subscriptions.extend(subscriptions);
        record.subscriptions.sort();
        record.subscriptions.dedup();
        if legacy {
            // Its next save writes it whole, in today's form.
            self.forget(&[id.to_owned()]);
        } else {
            self.remember(&record);
        }
        Ok(Some(record))
    }

    async fn remove(&self, id: &str) -> Result<bool> {
        self.forget(&[id.to_owned()]);
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            // Its subscriptions and events go with it.
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
        within_store(self.timeout, async {
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
        let deleted: Vec<String> = within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            // Their subscriptions and events go with them.
            let rows = db
                .query(
                    "DELETE FROM wasm_mcp_sessions WHERE id IN (
                         SELECT id FROM wasm_mcp_sessions WHERE touched_ms < $1
                         ORDER BY touched_ms LIMIT $2)
                     RETURNING id",
                    &[&before, &SWEEP_BATCH],
                )
                .await?;
            rows.iter()
                .map(|row| column(row, 0, &"a session row"))
                .collect()
        })
        .await?;
        self.forget(&deleted);
        Ok(deleted.len())
    }
}

/// The sessions' SSE events every replica can replay, at most `per_session`
/// of each session (its oldest go first); only of sessions the store keeps,
/// and gone with them.
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

    /// Keeps one event of a session the store keeps, and deletes the
    /// session's events past its newest `per_session`, in one transaction:
    /// the session's counter row numbers its events (`k`) and is locked
    /// until the end, so appends to one session take turns and the bound
    /// holds however replicas interleave them.
    async fn keep(&self, session: &str, stream: u64, seq: u64, text: &str) -> Result<()> {
        within_store(self.timeout, async {
            let mut db = connection(&self.pool).await?;
            let tx = db.transaction().await?;
            let count = tx
                .prepare_cached(
                    "INSERT INTO wasm_mcp_stream_counters (session, last)
                     SELECT $1, 1 WHERE EXISTS (SELECT 1 FROM wasm_mcp_sessions WHERE id = $1)
                     ON CONFLICT (session) DO UPDATE SET last = wasm_mcp_stream_counters.last + 1
                     RETURNING last",
                )
                .await?;
            let Some(row) = tx.query_opt(&count, &[&session]).await? else {
                // Not a session the store keeps (ended, or not saved yet).
                return Ok(());
            };
            let k: i64 = column(&row, 0, &format_args!("the events of session {session}"))?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO wasm_mcp_stream_events (session, stream, seq, text, k)
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                )
                .await?;
            tx.execute(
                &insert,
                &[&session, &(stream as i64), &(seq as i64), &text, &k],
            )
            .await?;
            // (Events a replica of the previous version kept have no `k`.)
            let trim = tx
                .prepare_cached(
                    "DELETE FROM wasm_mcp_stream_events
                     WHERE session = $1 AND (k <= $2 OR k IS NULL)",
                )
                .await?;
            let oldest_kept = k - self.per_session as i64 + 1;
            tx.execute(&trim, &[&session, &(oldest_kept - 1)]).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}

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
        within_store(self.timeout, async {
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
            let whose = format!("an event of session {session}");
            rows.iter()
                .map(|r| Ok((unsigned(r, 0, &whose)?, column(r, 1, &whose)?)))
                .collect()
        })
        .await
    }

    async fn last(&self, session: &str) -> Result<(u64, u64)> {
        within_store(self.timeout, async {
            let db = connection(&self.pool).await?;
            let row = db
                .query_one(
                    "SELECT COALESCE(MAX(stream), 0)::bigint,
                            COALESCE(MAX(seq) FILTER (WHERE stream = 0), 0)::bigint
                     FROM wasm_mcp_stream_events WHERE session = $1",
                    &[&session],
                )
                .await?;
            let whose = format!("the events of session {session}");
            Ok((unsigned(&row, 0, &whose)?, unsigned(&row, 1, &whose)?))
        })
        .await
    }
}
