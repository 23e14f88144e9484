//! [`Bus`] across replicas: events are heard at once in this process (a
//! [`LocalBus`]) and sent to the other replicas with PostgreSQL's
//! `NOTIFY`, which a connection of each replica `LISTEN`s for. An event
//! too big for a notification is written to `wasm_mcp_events` and the
//! notification names its row. Log lines, alerts and shutdown stay in
//! their process.

use super::database::{connection, within, Target};
use crate::runtime::host_types::ListKind;
use crate::server::tasks::now_ms;
use crate::server::{Bus, LocalBus, ServerEvent, Subscription};
use anyhow::{Context as _, Result};
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
/// How long a spilled event is kept for the replicas to read it.
const SPILL_KEEP: Duration = Duration::from_secs(60);

/// Events heard by every replica sharing the database.
pub struct PgBus {
    local: Arc<LocalBus>,
    outgoing: mpsc::Sender<String>,
    replica: String,
}

impl PgBus {
    /// A bus for replica `replica` over `pool` (sending) and a connection
    /// of its own to `target` (listening, reconnecting when lost). Its
    /// loops run until the bus is dropped.
    pub fn start(pool: Pool, target: Target, replica: &str) -> Arc<Self> {
        let local = Arc::new(LocalBus::new());
        let (outgoing, queue) = mpsc::channel(MAX_OUTGOING);
        let bus = Arc::new(PgBus {
            local: local.clone(),
            outgoing,
            replica: replica.to_owned(),
        });
        tokio::spawn(send(pool.clone(), target.timeout, queue));
        tokio::spawn(listen(
            pool,
            target,
            replica.to_owned(),
            Arc::downgrade(&local),
        ));
        bus
    }
}

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
async fn listen(pool: Pool, target: Target, replica: String, local: std::sync::Weak<LocalBus>) {
    let mut pause = Duration::from_millis(250);
    let mut lost = false;
    loop {
        if local.strong_count() == 0 {
            return;
        }
        match listen_once(&pool, &target, &replica, &local, lost).await {
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
/// After a lost connection (`missed`), every list is said to have changed:
/// events may have been missed meanwhile.
async fn listen_once(
    pool: &Pool,
    target: &Target,
    replica: &str,
    local: &std::sync::Weak<LocalBus>,
    missed: bool,
) -> Result<()> {
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
            Ok(Some(event)) => bus.publish(event),
            Ok(None) => {}
            Err(error) => tracing::warn!("an event from another replica was lost: {error:#}"),
        }
    }
}

/// The event a notification carries, unless this replica sent it.
async fn received(
    pool: &Pool,
    timeout: Duration,
    payload: &str,
    replica: &str,
) -> Result<Option<ServerEvent>> {
    let mut message: Value = serde_json::from_str(payload).context("not JSON")?;
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
    Ok(message.get("event").and_then(decode))
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
        ServerEvent::TaskAnswered { id, responses } => {
            json!({ "answered": id, "responses": responses })
        }
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
    if let Some(id) = text("answered") {
        let responses = value.get("responses")?.as_object()?.clone();
        return Some(ServerEvent::TaskAnswered { id, responses });
    }
    None
}
