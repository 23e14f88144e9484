//! [`Bus`] across replicas: events are heard at once in this process (a
//! [`LocalBus`]) and sent to the other replicas with PostgreSQL's
//! `NOTIFY`, which a connection of each replica `LISTEN`s for. An event
//! too big for a notification is written to `wasm_mcp_events` and the
//! notification names its row. Log lines, alerts and shutdown stay in
//! their process.
//!
//! The client's answers to a task's questions go to the replica running
//! the task only: a row of `wasm_mcp_answers` addressed to it (the replica
//! the task's lease names), and a small notification saying so, which
//! only that replica acts on: it takes the row (deleting it, so the
//! answers are heard once) and hands them to the task. No other replica
//! reads them, and no connection's events carry them.

use super::database::{connection, within, Target};
use crate::runtime::host_types::ListKind;
use crate::server::bus::{Answers, Mailbox};
use crate::server::tasks::now_ms;
use crate::server::{Bus, LocalBus, ServerEvent, Subscription};
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use deadpool_postgres::Pool;
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;

/// The notification channel.
const CHANNEL: &str = "wasm_mcp_events";
/// The largest payload sent in the notification itself (PostgreSQL's limit
/// is 8000 bytes).
const MAX_NOTIFY_BYTES: usize = 7_000;
/// Events waiting to be sent to the other replicas, at most; beyond, new
/// ones are dropped (with a warning) while the database is slow or down.
pub const MAX_OUTGOING: usize = 1024;
/// How long a spilled event, or answers not taken, are kept for the
/// replicas to read them.
const SPILL_KEEP: Duration = Duration::from_secs(60);
/// Answers waiting for one task, at most: more are refused until the
/// replica running it takes them.
const MAX_ANSWERS_PER_TASK: i64 = 16;
/// Answers a replica takes at once after it may have missed notifications.
const TAKE_MISSED: i64 = 64;

/// Events heard by every replica sharing the database.
pub struct PgBus {
    local: Arc<LocalBus>,
    outgoing: mpsc::Sender<String>,
    replica: String,
    pool: Pool,
    timeout: Duration,
    mailbox: Arc<Mailbox>,
    /// When old answers were last deleted.
    swept: parking_lot::Mutex<std::time::Instant>,
}

impl PgBus {
    /// A bus for replica `replica` over `pool` (sending) and a connection
    /// of its own to `target` (listening, reconnecting when lost). Its
    /// loops run until the bus is dropped.
    pub fn start(pool: Pool, target: Target, replica: &str) -> Arc<Self> {
        let local = Arc::new(LocalBus::new());
        let (outgoing, queue) = mpsc::channel(MAX_OUTGOING);
        let mailbox = Arc::new(Mailbox::new());
        let bus = Arc::new(PgBus {
            local: local.clone(),
            outgoing,
            replica: replica.to_owned(),
            pool: pool.clone(),
            timeout: target.timeout,
            mailbox: mailbox.clone(),
            swept: parking_lot::Mutex::new(std::time::Instant::now()),
        });
        tokio::spawn(send(pool.clone(), target.timeout, queue));
        tokio::spawn(listen(
            pool,
            target,
            Listener {
                replica: replica.to_owned(),
                local: Arc::downgrade(&local),
                mailbox,
            },
        ));
        bus
    }

    /// Deletes the answers nobody took for [`SPILL_KEEP`], at most once per
    /// that period.
    async fn sweep_answers(&self, db: &deadpool_postgres::Object) -> Result<()> {
        {
            let mut swept = self.swept.lock();
            if swept.elapsed() < SPILL_KEEP {
                return Ok(());
            }
            *swept = std::time::Instant::now();
        }
        let before = now_ms().saturating_sub(SPILL_KEEP.as_millis() as u64) as i64;
        db.execute("DELETE FROM wasm_mcp_answers WHERE at_ms < $1", &[&before])
            .await?;
        Ok(())
    }
}

#[async_trait]
impl Bus for PgBus {
    fn publish(&self, event: ServerEvent) {
        if let Some(encoded) = encode(&event) {
            let message = json!({ "from": self.replica, "event": encoded }).to_string();
            if self.outgoing.try_send(message).is_err() {
                tracing::warn!(
                    "an event was not sent to the other replicas: {MAX_OUTGOING} are waiting for the shared database"
                );
            }
        }
        self.local.publish(event);
    }

    fn subscribe(&self) -> Subscription {
        self.local.subscribe()
    }

    async fn send_answers(&self, answers: Answers) -> Result<()> {
        let text = Value::Object(answers.responses).to_string();
        within(self.timeout, async {
            let mut db = connection(&self.pool).await?;
            self.sweep_answers(&db).await?;
            let tx = db.transaction().await?;
            // Addressed to the replica whose lease the task is under, while
            // it waits for answers and has room for more.
            let insert = tx
                .prepare_cached(
                    "INSERT INTO wasm_mcp_answers (task, replica, responses, at_ms)
                     SELECT id, replica, $2, $3 FROM wasm_mcp_tasks
                     WHERE id = $1 AND status = 'input_required'
                       AND (SELECT COUNT(*) FROM wasm_mcp_answers WHERE task = $1) < $4
                     RETURNING n, replica",
                )
                .await?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
                &answers.task,
                &text,
                &(now_ms() as i64),
                &MAX_ANSWERS_PER_TASK,
            ];
            let Some(row) = tx.query_opt(&insert, &params).await? else {
                let waiting = tx
                    .query_opt(
                        "SELECT 1 FROM wasm_mcp_tasks WHERE id = $1 AND status = 'input_required'",
                        &[&answers.task],
                    )
                    .await?;
                anyhow::ensure!(
                    waiting.is_none(),
                    "{MAX_ANSWERS_PER_TASK} answers already wait for the task's host to take them"
                );
                // The task no longer waits for answers.
                return Ok(());
            };
            let (n, to): (i64, String) = (row.get(0), row.get(1));
            let note = json!({ "to": to, "answers": n }).to_string();
            // Sent when the row is there to take.
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &note])
                .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    fn answers(&self) -> Option<mpsc::Receiver<Answers>> {
        self.mailbox.take()
    }
}

/// What the listening connection serves: this replica's local bus and the
/// answers addressed to it.
struct Listener {
    replica: String,
    local: std::sync::Weak<LocalBus>,
    mailbox: Arc<Mailbox>,
}

/// What a notification says.
enum Heard {
    /// An event for this replica's connections.
    Event(ServerEvent),
    /// Answers for a task running here.
    Answers(Answers),
}

/// Sends the queued events, in order, until the bus is dropped.
async fn send(pool: Pool, timeout: Duration, mut queue: mpsc::Receiver<String>) {
    let mut swept = std::time::Instant::now();
    while let Some(message) = queue.recv().await {
        let sent = within(timeout, async {
            let db = connection(&pool).await?;
            let payload = if message.len() <= MAX_NOTIFY_BYTES {
                message
            } else {
                let row = db
                    .query_one(
                        "INSERT INTO wasm_mcp_events (payload, at_ms) VALUES ($1, $2) RETURNING id",
                        &[&message, &(now_ms() as i64)],
                    )
                    .await?;
                json!({ "spilled": row.get::<_, i64>(0) }).to_string()
            };
            db.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                .await?;
            if swept.elapsed() > SPILL_KEEP {
                swept = std::time::Instant::now();
                let before = now_ms().saturating_sub(SPILL_KEEP.as_millis() as u64) as i64;
                db.execute("DELETE FROM wasm_mcp_events WHERE at_ms < $1", &[&before])
                    .await?;
            }
            Ok(())
        })
        .await;
        if let Err(error) = sent {
            tracing::warn!("an event was not sent to the other replicas: {error:#}");
        }
    }
}

/// Listens for the other replicas' events and publishes them here, until
/// the local bus is gone; reconnects when the connection is lost.
async fn listen(pool: Pool, target: Target, listener: Listener) {
    let mut pause = Duration::from_millis(250);
    let mut lost = false;
    loop {
        if listener.local.strong_count() == 0 {
            return;
        }
        match listen_once(&pool, &target, &listener, lost).await {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(
                    "not hearing the other replicas' events ({error:#}); retrying in {pause:?}"
                );
                lost = true;
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// One listening connection, until it fails (`Err`) or the bus is gone.
/// After a lost connection (`missed`), every list is said to have changed
/// and the answers addressed here meanwhile are taken: events may have
/// been missed.
async fn listen_once(
    pool: &Pool,
    target: &Target,
    listener: &Listener,
    missed: bool,
) -> Result<()> {
    let (replica, local) = (listener.replica.as_str(), &listener.local);
    let (client, mut connection) =
        tokio::time::timeout(target.timeout, target.config.connect(target.tls.clone()))
            .await
            .map_err(|_| anyhow::anyhow!("connecting timed out"))?
            .context("connecting to listen")?;
    // Bounded: while this replica is behind, the connection is not read, and
    // the server holds the notifications.
    let (notes, mut heard) = mpsc::channel(MAX_OUTGOING);
    // The connection is driven here; what it hears goes to `heard`.
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(note)) => {
                    if notes.send(note.payload().to_owned()).await.is_err() {
                        return Ok(());
                    }
                }
                Ok(_) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    });
    within(target.timeout, async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        Ok(())
    })
    .await?;
    tracing::debug!("hearing the other replicas' events");
    if missed {
        let Some(bus) = local.upgrade() else {
            return Ok(());
        };
        for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
            bus.publish(ServerEvent::ListChanged(kind));
        }
        match take_answers(pool, target.timeout, replica, None).await {
            Ok(taken) => taken.into_iter().for_each(|a| listener.mailbox.deliver(a)),
            Err(error) => tracing::warn!("answers sent here could not be taken: {error:#}"),
        }
    }
    loop {
        let Some(payload) = heard.recv().await else {
            // The connection ended.
            return match driver.await {
                Ok(Err(error)) => Err(error.into()),
                _ => Err(anyhow::anyhow!("the listening connection closed")),
            };
        };
        let Some(bus) = local.upgrade() else {
            return Ok(());
        };
        match received(pool, target.timeout, &payload, replica).await {
            Ok(Some(Heard::Event(event))) => bus.publish(event),
            Ok(Some(Heard::Answers(answers))) => listener.mailbox.deliver(answers),
            Ok(None) => {}
            Err(error) => tracing::warn!("an event from another replica was lost: {error:#}"),
        }
    }
}

/// Takes (deletes) the answers addressed to `replica`: row `n`, else the
/// oldest [`TAKE_MISSED`].
async fn take_answers(
    pool: &Pool,
    timeout: Duration,
    replica: &str,
    n: Option<i64>,
) -> Result<Vec<Answers>> {
    let rows = within(timeout, async {
        let db = connection(pool).await?;
        let rows = match n {
            Some(n) => {
                db.query(
                    "DELETE FROM wasm_mcp_answers WHERE n = $1 AND replica = $2
                     RETURNING task, responses",
                    &[&n, &replica],
                )
                .await?
            }
            None => {
                db.query(
                    "DELETE FROM wasm_mcp_answers WHERE n IN (
                         SELECT n FROM wasm_mcp_answers WHERE replica = $1 ORDER BY n LIMIT $2)
                     RETURNING task, responses",
                    &[&replica, &TAKE_MISSED],
                )
                .await?
            }
        };
        Ok(rows)
    })
    .await?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let responses = serde_json::from_str::<Value>(row.get(1)).ok()?;
            Some(Answers {
                task: row.get(0),
                responses: responses.as_object()?.clone(),
            })
        })
        .collect())
}

/// What a notification carries for this replica: an event unless this
/// replica sent it, answers if addressed here.
async fn received(
    pool: &Pool,
    timeout: Duration,
    payload: &str,
    replica: &str,
) -> Result<Option<Heard>> {
    let mut message: Value = serde_json::from_str(payload).context("not JSON")?;
    if let Some(to) = message.get("to").and_then(Value::as_str) {
        if to != replica {
            return Ok(None);
        }
        let n = message.get("answers").and_then(Value::as_i64);
        let n = n.context("answers without their row")?;
        let mut taken = take_answers(pool, timeout, replica, Some(n)).await?;
        return Ok(taken.pop().map(Heard::Answers));
    }
    if let Some(row) = message.get("spilled").and_then(Value::as_i64) {
        let text: Option<String> = within(timeout, async {
            let db = connection(pool).await?;
            let found = db
                .query_opt("SELECT payload FROM wasm_mcp_events WHERE id = $1", &[&row])
                .await?;
            Ok(found.map(|r| r.get(0)))
        })
        .await?;
        let Some(text) = text else {
            anyhow::bail!("its row {row} is gone");
        };
        message = serde_json::from_str(&text).context("not JSON")?;
    }
    if message.get("from").and_then(Value::as_str) == Some(replica) {
        return Ok(None);
    }
    let Some(event) = message.get("event") else {
        return Ok(None);
    };
    // What a replica of the previous version sends with a task's answers
    // (every replica reads it; the one running the task takes it).
    if let (Some(task), Some(responses)) = (
        event.get("answered").and_then(Value::as_str),
        event.get("responses").and_then(Value::as_object),
    ) {
        return Ok(Some(Heard::Answers(Answers {
            task: task.to_owned(),
            responses: responses.clone(),
        })));
    }
    Ok(decode(event).map(Heard::Event))
}

fn kind_name(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
    }
}

/// `event` as sent to other replicas; `None` for what stays here.
pub fn encode(event: &ServerEvent) -> Option<Value> {
    Some(match event {
        ServerEvent::ListChanged(kind) => json!({ "list": kind_name(*kind) }),
        ServerEvent::ResourceUpdated(uri) => json!({ "resource": uri }),
        ServerEvent::PluginReplaced(plugin) => json!({ "plugin": plugin }),
        ServerEvent::TaskChanged(id) => json!({ "task": id }),
        ServerEvent::SessionEnded(id) => json!({ "session_ended": id }),
        ServerEvent::Log { .. } | ServerEvent::Alert { .. } | ServerEvent::Shutdown => return None,
    })
}

/// An event another replica sent; `None` when it is not one.
pub fn decode(value: &Value) -> Option<ServerEvent> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    if let Some(list) = text("list") {
        let kind = [ListKind::Tools, ListKind::Prompts, ListKind::Resources]
            .into_iter()
            .find(|k| kind_name(*k) == list)?;
        return Some(ServerEvent::ListChanged(kind));
    }
    if let Some(uri) = text("resource") {
        return Some(ServerEvent::ResourceUpdated(uri));
    }
    if let Some(plugin) = text("plugin") {
        return Some(ServerEvent::PluginReplaced(plugin));
    }
    if let Some(id) = text("task") {
        return Some(ServerEvent::TaskChanged(id));
    }
    if let Some(id) = text("session_ended") {
        return Some(ServerEvent::SessionEnded(id));
    }
    None
}
