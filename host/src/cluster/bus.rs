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
//!
//! A `tasks/cancel` or `tasks/update` received by a replica that does not
//! run the task is relayed to the one that does (when it speaks the
//! relay: it said `hello`), which decides and replies; see
//! [`Bus::relay`]. Every payload is a [`Note`] (`wire.rs`), versioned.

use super::database::{connection, within, Target};
use super::wire::{Meaning, Note, BUS_VERSION};
use crate::runtime::host_types::ListKind;
use crate::server::bus::{
    Answers, Decision, Mailbox, Operation, RelayError, Relayed, MAX_RELAYS_WAITING, RELAY_WAIT,
};
use crate::server::tasks::now_ms;
use crate::server::{Bus, LocalBus, ServerEvent, Subscription};
use anyhow::{Context as _, Result};
use async_trait::async_trait;
use deadpool_postgres::Pool;
use futures_util::StreamExt as _;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::AsyncMessage;

/// The notification channel.
const CHANNEL: &str = "wasm_mcp_events";
/// The largest payload sent in the notification itself (PostgreSQL's limit
/// is 8000 bytes).
const MAX_NOTIFY_BYTES: usize = 7_000;
/// Events waiting to be sent to the other replicas, at most; beyond, new
/// ones are dropped (with a warning) while the database is slow or down.
pub(super) const MAX_OUTGOING: usize = 1024;
/// How long a spilled event, or answers not taken, are kept for the
/// replicas to read them.
const SPILL_KEEP: Duration = Duration::from_secs(60);
/// Answers waiting for one task, at most: more are refused until the
/// replica running it takes them.
const MAX_ANSWERS_PER_TASK: i64 = 16;
/// Answers a replica takes at once after it may have missed notifications.
const TAKE_MISSED: i64 = 64;
/// How often a replica says `hello` (it decides relayed operations).
const HELLO_EVERY: Duration = Duration::from_secs(10);
/// A replica not heard saying `hello` for this long is taken not to
/// decide relayed operations (the ones sent to it are done the old way).
const HELLO_LAPSES: Duration = Duration::from_secs(30);
/// Replicas remembered as deciding relayed operations, at most (more are
/// dealt with the old way).
const MAX_PEERS: usize = 1024;

/// Events heard by every replica sharing the database.
pub struct PgBus {
    local: Arc<LocalBus>,
    outgoing: mpsc::Sender<String>,
    replica: String,
    pool: Pool,
    timeout: Duration,
    mailbox: Arc<Mailbox>,
    /// When old answers were last deleted.
    swept: Mutex<Instant>,
    peers: Arc<Peers>,
    /// This replica's relays waiting for their decision.
    waiting: Arc<Waiting>,
    /// The operations relayed here, until taken.
    relayed: Mutex<Option<mpsc::Receiver<Relayed>>>,
}

/// The replicas heard saying `hello` (they decide relayed operations),
/// with when.
#[derive(Default)]
struct Peers(Mutex<HashMap<String, Instant>>);

impl Peers {
    /// Notes what replica `from` sent at version `v`: a note of version 1
    /// comes from a replica that does not decide relayed operations (one
    /// rolled back under the same name). `true` for a `hello` from a
    /// replica not known (or lapsed) until now.
    fn heard(&self, from: &str, v: u32, hello: bool) -> bool {
        let mut peers = self.0.lock();
        if v < 2 {
            if peers.remove(from).is_some() {
                tracing::info!(replica = from, "a replica of an earlier version speaks under this name: task operations for it are done the old way");
            }
            return false;
        }
        if !hello {
            return false;
        }
        if peers.len() >= MAX_PEERS && !peers.contains_key(from) {
            peers.retain(|_, at| at.elapsed() < HELLO_LAPSES);
        }
        if peers.len() >= MAX_PEERS && !peers.contains_key(from) {
            return false;
        }
        let before = peers.insert(from.to_owned(), Instant::now());
        let new = before.is_none_or(|at| at.elapsed() >= HELLO_LAPSES);
        if new {
            tracing::info!(
                replica = from,
                "replica {from} takes relayed task operations"
            );
        }
        new
    }

    fn speaks(&self, replica: &str) -> bool {
        self.0
            .lock()
            .get(replica)
            .is_some_and(|at| at.elapsed() < HELLO_LAPSES)
    }

    fn forget(&self, replica: &str) {
        self.0.lock().remove(replica);
    }
}

/// Relays waiting for their decision, by number.
#[derive(Default)]
struct Waiting {
    next: AtomicU64,
    decisions: Mutex<HashMap<u64, oneshot::Sender<Decision>>>,
}

impl Waiting {
    /// A number and where its decision arrives; `None` at the bound.
    fn open(self: &Arc<Self>) -> Option<(Pending, oneshot::Receiver<Decision>)> {
        let mut decisions = self.decisions.lock();
        if decisions.len() >= MAX_RELAYS_WAITING {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        decisions.insert(id, sender);
        Some((
            Pending {
                id,
                waiting: self.clone(),
            },
            receiver,
        ))
    }

    fn decided(&self, id: u64, decision: Decision) {
        if let Some(sender) = self.decisions.lock().remove(&id) {
            let _ = sender.send(decision);
        }
    }
}

/// A relay's place among the waiting, given up when dropped.
struct Pending {
    id: u64,
    waiting: Arc<Waiting>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.waiting.decisions.lock().remove(&self.id);
    }
}

impl PgBus {
    /// A bus for replica `replica` over `pool` (sending) and a connection
    /// of its own to `target` (listening, reconnecting when lost). Its
    /// loops run until the bus is dropped.
    pub fn start(pool: Pool, target: Target, replica: &str) -> Arc<Self> {
        let local = Arc::new(LocalBus::new());
        let (outgoing, queue) = mpsc::channel(MAX_OUTGOING);
        let mailbox = Arc::new(Mailbox::new());
        let (relay_in, relayed) = mpsc::channel(MAX_RELAYS_WAITING);
        let peers = Arc::new(Peers::default());
        let waiting = Arc::new(Waiting::default());
        let bus = Arc::new(PgBus {
            local: local.clone(),
            outgoing: outgoing.clone(),
            replica: replica.to_owned(),
            pool: pool.clone(),
            timeout: target.timeout,
            mailbox: mailbox.clone(),
            swept: Mutex::new(Instant::now()),
            peers: peers.clone(),
            waiting: waiting.clone(),
            relayed: Mutex::new(Some(relayed)),
        });
        tokio::spawn(send(pool.clone(), target.timeout, queue));
        tokio::spawn(say_hello(outgoing.downgrade(), replica.to_owned()));
        tokio::spawn(listen(
            pool,
            target,
            Listener {
                replica: replica.to_owned(),
                local: Arc::downgrade(&local),
                mailbox,
                outgoing: outgoing.downgrade(),
                peers,
                waiting,
                relay_in,
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
            *swept = Instant::now();
        }
        let before = now_ms().saturating_sub(SPILL_KEEP.as_millis() as u64) as i64;
        db.execute("DELETE FROM wasm_mcp_answers WHERE at_ms < $1", &[&before])
            .await?;
        Ok(())
    }

    /// Stores `answers` for the replica running their task and tells it
    /// (as relay `relay` of this replica when given); `false` when the
    /// task no longer waits for answers.
    async fn store_answers(&self, answers: &Answers, relay: Option<u64>) -> Result<bool> {
        let text = Value::Object(answers.responses.clone()).to_string();
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
                return Ok(false);
            };
            let (n, to): (i64, String) = (row.get(0), row.get(1));
            let relay = relay.map(|id| (self.replica.as_str(), id));
            let note = Note::answers(&to, n, relay).text();
            // Sent when the row is there to take.
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &note])
                .await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    /// Sends `note` at once (a relay: its sender waits).
    async fn notify(&self, note: &Note) -> Result<()> {
        let text = note.text();
        within(self.timeout, async {
            let db = connection(&self.pool).await?;
            db.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &text])
                .await?;
            Ok(())
        })
        .await
    }
}

#[async_trait]
impl Bus for PgBus {
    fn publish(&self, event: ServerEvent) {
        if let Some(note) = Note::event(&self.replica, &event) {
            if self.outgoing.try_send(note.text()).is_err() {
                tracing::warn!(
                    "an event was not sent to the other replicas: {MAX_OUTGOING} are waiting for the shared database"
                );
            }
        }
        self.local.publish(event);
    }

    fn publish_here(&self, event: ServerEvent) {
        self.local.publish(event);
    }

    fn subscribe(&self) -> Subscription {
        self.local.subscribe()
    }

    async fn send_answers(&self, answers: Answers) -> Result<()> {
        self.store_answers(&answers, None).await.map(|_| ())
    }

    fn answers(&self) -> Option<mpsc::Receiver<Answers>> {
        self.mailbox.take()
    }

    fn speaks_relay(&self, replica: &str) -> bool {
        replica != self.replica && self.peers.speaks(replica)
    }

    async fn relay(
        &self,
        owner: &str,
        task: &str,
        operation: Operation,
    ) -> Result<Decision, RelayError> {
        if !self.speaks_relay(owner) {
            return Err(RelayError::NotSpoken);
        }
        let (pending, decision) = self.waiting.open().ok_or(RelayError::Busy)?;
        match operation {
            Operation::Cancel => {
                let note = Note::cancel(&self.replica, owner, task, pending.id);
                self.notify(&note).await.map_err(RelayError::Failed)?;
            }
            Operation::Update(responses) => {
                let answers = Answers {
                    task: task.to_owned(),
                    responses,
                };
                let stored = self.store_answers(&answers, Some(pending.id)).await;
                if !stored.map_err(RelayError::Failed)? {
                    // Nothing waits for answers: nothing to decide.
                    return Ok(Ok(false));
                }
            }
        }
        match tokio::time::timeout(RELAY_WAIT, decision).await {
            Ok(Ok(decision)) => Ok(decision),
            Ok(Err(_)) => Err(RelayError::Failed(anyhow::anyhow!("the bus closed"))),
            Err(_) => {
                // Until it says hello again, its tasks are dealt with the
                // old way (it may have been rolled back).
                tracing::warn!(replica = owner, task, "the replica running a task did not decide an operation relayed to it within {RELAY_WAIT:?}");
                self.peers.forget(owner);
                Err(RelayError::Timeout)
            }
        }
    }

    fn relayed(&self) -> Option<mpsc::Receiver<Relayed>> {
        self.relayed.lock().take()
    }

    fn decide(&self, relayed: &Relayed, decision: &Decision) {
        let note = Note::reply(&self.replica, &relayed.from, relayed.id, decision);
        if self.outgoing.try_send(note.text()).is_err() {
            tracing::warn!(
                "a decision was not sent to the replica waiting for it: {MAX_OUTGOING} notes are waiting for the shared database"
            );
        }
    }
}

/// What the listening connection serves: this replica's local bus, the
/// answers and relayed operations addressed to it, and the decisions on
/// its relays.
struct Listener {
    replica: String,
    local: std::sync::Weak<LocalBus>,
    mailbox: Arc<Mailbox>,
    outgoing: mpsc::WeakSender<String>,
    peers: Arc<Peers>,
    waiting: Arc<Waiting>,
    relay_in: mpsc::Sender<Relayed>,
}

impl Listener {
    /// Queues `note` for sending.
    fn say(&self, note: &Note) {
        if let Some(outgoing) = self.outgoing.upgrade() {
            let _ = outgoing.try_send(note.text());
        }
    }

    /// Hands a relayed operation to the part that decides it; refuses it
    /// at once when too many wait.
    fn relayed(&self, relayed: Relayed) {
        if let Err(mpsc::error::TrySendError::Full(relayed)) = self.relay_in.try_send(relayed) {
            let refusal = crate::protocol::RpcError::internal(format!(
                "{MAX_RELAYS_WAITING} operations already wait for the replica running the task"
            ))
            .to_json();
            let note = Note::reply(&self.replica, &relayed.from, relayed.id, &Err(refusal));
            self.say(&note);
        }
    }
}

/// Says `hello` every [`HELLO_EVERY`] until the bus is dropped.
async fn say_hello(outgoing: mpsc::WeakSender<String>, replica: String) {
    let hello = Note::hello(&replica).text();
    loop {
        tokio::time::sleep(HELLO_EVERY).await;
        let Some(outgoing) = outgoing.upgrade() else {
            return;
        };
        let _ = outgoing.try_send(hello.clone());
    }
}

/// Sends the queued events, in order, until the bus is dropped.
async fn send(pool: Pool, timeout: Duration, mut queue: mpsc::Receiver<String>) {
    let mut swept = Instant::now();
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
                Note::spilled(row.get::<_, i64>(0)).text()
            };
            db.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
                .await?;
            if swept.elapsed() > SPILL_KEEP {
                swept = Instant::now();
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
    // Heard now, the others relay to this replica at once.
    listener.say(&Note::hello(replica));
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
        if let Err(error) = received(pool, target.timeout, &payload, listener, &bus).await {
            tracing::warn!("an event from another replica was lost: {error:#}");
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

/// Whether a note of a newer version was logged already.
static NEWER_NOTE: AtomicBool = AtomicBool::new(false);

/// Acts on a notification: an event unless this replica sent it, answers
/// or a relayed operation if addressed here, a decision on a relay of
/// this replica.
async fn received(
    pool: &Pool,
    timeout: Duration,
    payload: &str,
    listener: &Listener,
    bus: &LocalBus,
) -> Result<()> {
    let replica = listener.replica.as_str();
    let mut note = Note::parse(payload).context("not a note")?;
    if let Some(row) = note
        .spilled
        .filter(|_| note.v <= BUS_VERSION && note.to.is_none())
    {
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
        note = Note::parse(&text).context("not a note")?;
        // A note is spilled once.
        note.spilled = None;
    }
    if let Some(from) = note.from.as_deref().filter(|f| *f != replica) {
        if listener.peers.heard(from, note.v, note.hello) {
            // A replica new here may not know this one yet either.
            listener.say(&Note::hello(replica));
        }
    }
    match note.meaning(replica) {
        Meaning::Nothing | Meaning::Hello(_) | Meaning::Spilled(_) => {}
        Meaning::Newer(v) => {
            crate::metrics::metrics().unknown_record("bus_event");
            crate::server::tasks::warn_once(
                &NEWER_NOTE,
                &format!("a note from another replica is of version {v}, newer than this replica reads ({BUS_VERSION}): it is ignored"),
            );
        }
        Meaning::Event(event) => bus.publish(event),
        Meaning::OldAnswers { task, responses } => {
            listener.mailbox.deliver(Answers { task, responses });
        }
        Meaning::Answers { row, relay } => {
            let taken = take_answers(pool, timeout, replica, Some(row)).await?.pop();
            match (taken, relay) {
                (Some(answers), None) => listener.mailbox.deliver(answers),
                (Some(answers), Some((from, id))) => listener.relayed(Relayed {
                    task: answers.task,
                    operation: Operation::Update(answers.responses),
                    from,
                    id,
                }),
                // Taken already (after a lost connection): nothing to decide.
                (None, Some((from, id))) => {
                    listener.say(&Note::reply(replica, &from, id, &Ok(false)));
                }
                (None, None) => {}
            }
        }
        Meaning::Cancel { task, from, id } => listener.relayed(Relayed {
            task,
            operation: Operation::Cancel,
            from,
            id,
        }),
        Meaning::Reply { id, decision } => listener.waiting.decided(id, decision),
    }
    Ok(())
}
