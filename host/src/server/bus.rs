//! How server-wide events ([`ServerEvent`]: list changes, resource
//! updates, task status, log lines, shutdown) reach every connection
//! ([`Bus`]), and how the client's answers to a task's questions reach the
//! one host running it ([`Answers`]). Today's one implementation is
//! in-process ([`LocalBus`]); one shared between replicas must pass the
//! same contract (`contract::check`).

use super::ServerEvent;
use anyhow::Result;
use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc};

/// Events published for every connection to hear, and answers addressed
/// to the host running their task.
#[async_trait]
pub trait Bus: Send + Sync {
    /// Sends `event` to every subscription (none is fine). Events are
    /// small: each subscription holds its own copy.
    fn publish(&self, event: ServerEvent);
    /// A subscription to the events published from now on.
    fn subscribe(&self) -> Subscription;
    /// Sends the client's answers to the host running their task (a task
    /// that does not run here), to be heard there once, by [`Bus::answers`]
    /// and nowhere else: no subscription hears them. Answers to a task
    /// that no longer waits for any are dropped. An error when they cannot
    /// be sent.
    async fn send_answers(&self, answers: Answers) -> Result<()>;
    /// The answers sent to the tasks running here, for the one part that
    /// hands them on (the first to ask; later calls get `None`). It holds
    /// at most [`MAX_ANSWERS_WAITING`] unread; beyond, new ones are dropped
    /// with a warning.
    fn answers(&self) -> Option<mpsc::Receiver<Answers>>;
    /// Sends `event` to this host's subscriptions only (a task stopped here
    /// because another host ended it: the other hosts heard that already,
    /// from the host that ended it, so it is not echoed back to them).
    fn publish_here(&self, event: ServerEvent) {
        self.publish(event);
    }
    /// Whether host `replica` decides the operations relayed to it
    /// ([`Bus::relay`]); `false` for a host of an earlier version (it
    /// never answers one) or one not heard from.
    fn speaks_relay(&self, _replica: &str) -> bool {
        false
    }
    /// Relays `operation` on task `task` to host `owner`, which holds the
    /// task's lease, and waits (at most [`RELAY_WAIT`]) for its decision.
    /// At most [`MAX_RELAYS_WAITING`] wait at once on this host.
    async fn relay(
        &self,
        _owner: &str,
        _task: &str,
        _operation: Operation,
    ) -> Result<Decision, RelayError> {
        Err(RelayError::NotSpoken)
    }
    /// The operations other hosts relayed to this one, for the one part
    /// that decides them (the first to ask; later calls get `None`).
    fn relayed(&self) -> Option<mpsc::Receiver<Relayed>> {
        None
    }
    /// Sends the decision on `relayed` back to the host that relayed it.
    fn decide(&self, _relayed: &Relayed, _decision: &Decision) {}
}

/// How long a host waits for the decision of the host running a task on
/// an operation it relayed to it (`tasks/cancel`, `tasks/update` received
/// by another host): past it, the request is answered with -32603 "the
/// host running the task did not answer".
pub const RELAY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Relayed operations waiting for their decision on one host, at most:
/// beyond, a request that needs one is refused with -32603 at once.
pub const MAX_RELAYS_WAITING: usize = 256;

/// An operation on a task, relayed to the host running it to decide.
#[derive(Debug, Clone, PartialEq)]
pub enum Operation {
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update`: the client's answers, by question key.
    Update(Map<String, Value>),
}

/// The decision of the host running a task: whether the operation took
/// effect (a cancel: the task was cancelled; `false`: it was already
/// over), or the JSON-RPC error object it was refused with.
pub type Decision = Result<bool, Value>;

/// An operation another host relayed here, to decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Relayed {
    /// The task.
    pub task: String,
    /// What to do.
    pub operation: Operation,
    /// The host that relayed it (the decision goes back there).
    pub from: String,
    /// Its number on that host.
    pub id: u64,
}

/// Why a relayed operation got no decision.
#[derive(Debug)]
pub enum RelayError {
    /// The host does not decide relayed operations (an earlier version):
    /// the caller does it itself, as hosts did before.
    NotSpoken,
    /// [`MAX_RELAYS_WAITING`] already wait on this host.
    Busy,
    /// No decision within [`RELAY_WAIT`].
    Timeout,
    /// It could not be sent.
    Failed(anyhow::Error),
}

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayError::NotSpoken => write!(
                f,
                "the host running the task does not take relayed operations"
            ),
            RelayError::Busy => write!(
                f,
                "{MAX_RELAYS_WAITING} operations already wait for the hosts running their tasks"
            ),
            RelayError::Timeout => write!(
                f,
                "the host running the task did not answer within {RELAY_WAIT:?}"
            ),
            RelayError::Failed(error) => write!(
                f,
                "the operation could not be sent to the host running the task: {error:#}"
            ),
        }
    }
}

/// The client's answers to the questions of a task another host runs
/// (2026-07-28 `tasks/update` sent to a host that does not run it).
#[derive(Debug, Clone, PartialEq)]
pub struct Answers {
    /// The task.
    pub task: String,
    /// Its answers, by question key.
    pub responses: Map<String, Value>,
}

/// Answers heard but not yet handed on, at most.
pub const MAX_ANSWERS_WAITING: usize = 64;

/// Where answers are heard: the sender, and the receiver until taken.
pub struct Mailbox {
    sender: mpsc::Sender<Answers>,
    receiver: Mutex<Option<mpsc::Receiver<Answers>>>,
}

impl Mailbox {
    /// An empty mailbox.
    pub fn new() -> Self {
        let (sender, receiver) = mpsc::channel(MAX_ANSWERS_WAITING);
        Mailbox {
            sender,
            receiver: Mutex::new(Some(receiver)),
        }
    }

    /// Puts `answers` in; dropped with a warning when it is full.
    pub fn deliver(&self, answers: Answers) {
        if self.sender.try_send(answers).is_err() {
            tracing::warn!(
                "answers to a task's questions were dropped: {MAX_ANSWERS_WAITING} are waiting to be handed on"
            );
        }
    }

    /// The receiver, the first time.
    pub fn take(&self) -> Option<mpsc::Receiver<Answers>> {
        self.receiver.lock().take()
    }
}

impl Default for Mailbox {
    fn default() -> Self {
        Self::new()
    }
}

/// What a subscription hears next.
#[derive(Debug, PartialEq)]
pub enum Heard {
    /// The next event, in the order they were published.
    Event(ServerEvent),
    /// The subscriber fell behind and missed this many events (the oldest
    /// ones): what it follows may have changed in ways it was not told.
    Missed(u64),
    /// The bus is gone: nothing more will come.
    Closed,
}

/// One subscriber's events. It holds at most the bus's capacity of events
/// it has not read; past that it misses the oldest ([`Heard::Missed`]).
pub struct Subscription(broadcast::Receiver<ServerEvent>);

impl From<broadcast::Receiver<ServerEvent>> for Subscription {
    fn from(receiver: broadcast::Receiver<ServerEvent>) -> Self {
        Subscription(receiver)
    }
}

impl Subscription {
    /// The next event, or what happened instead.
    pub async fn recv(&mut self) -> Heard {
        match self.0.recv().await {
            Ok(event) => Heard::Event(event),
            Err(broadcast::error::RecvError::Lagged(n)) => Heard::Missed(n),
            Err(broadcast::error::RecvError::Closed) => Heard::Closed,
        }
    }
}

/// The events of one process.
pub struct LocalBus(broadcast::Sender<ServerEvent>, Mailbox);

impl LocalBus {
    /// Events unread by a subscriber, at most (beyond, it misses the
    /// oldest).
    pub const CAPACITY: usize = 1024;

    /// An in-process bus.
    pub fn new() -> Self {
        LocalBus(broadcast::channel(Self::CAPACITY).0, Mailbox::new())
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Bus for LocalBus {
    fn publish(&self, event: ServerEvent) {
        let _ = self.0.send(event);
    }

    fn subscribe(&self) -> Subscription {
        Subscription(self.0.subscribe())
    }

    async fn send_answers(&self, answers: Answers) -> Result<()> {
        self.1.deliver(answers);
        Ok(())
    }

    fn answers(&self) -> Option<mpsc::Receiver<Answers>> {
        self.1.take()
    }
}

/// What every [`Bus`] must do, as one check to run against each
/// implementation.
#[cfg(test)]
pub(crate) mod contract {
    use super::*;
    use std::time::Duration;

    fn task(i: usize) -> ServerEvent {
        ServerEvent::task_changed(format!("t{i}"))
    }

    async fn next(subscription: &mut Subscription) -> Heard {
        tokio::time::timeout(Duration::from_secs(10), subscription.recv())
            .await
            .expect("an event within 10 s")
    }

    /// Runs every check against `bus`, whose subscribers may hold
    /// `capacity` unread events.
    pub(crate) async fn check(bus: &dyn Bus, capacity: usize) {
        // Nobody listens: publishing is fine, and nobody hears it later.
        bus.publish(task(0));
        let (mut a, mut b) = (bus.subscribe(), bus.subscribe());
        for i in 1..=3 {
            bus.publish(task(i));
        }
        for subscription in [&mut a, &mut b] {
            for i in 1..=3 {
                assert_eq!(next(subscription).await, Heard::Event(task(i)));
            }
        }
        // A late subscriber hears only what comes after it.
        let mut late = bus.subscribe();
        bus.publish(ServerEvent::Shutdown);
        assert_eq!(next(&mut late).await, Heard::Event(ServerEvent::Shutdown));
        assert_eq!(next(&mut a).await, Heard::Event(ServerEvent::Shutdown));
        // A subscriber that falls behind is told how many it missed, then
        // hears the newest in order: every event is heard or counted.
        let total = capacity + 10;
        for i in 0..total {
            bus.publish(task(i));
        }
        // b has not read the shutdown either.
        let Heard::Missed(missed) = next(&mut b).await else {
            panic!("a lagging subscriber is told it missed events");
        };
        let mut heard = Vec::new();
        while heard.last() != Some(&task(total - 1)) {
            match next(&mut b).await {
                Heard::Event(event) => heard.push(event),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(missed as usize + heard.len(), total + 1);
        let expected: Vec<_> = (total - heard.len()..total).map(task).collect();
        assert_eq!(heard, expected);
    }

    /// Checks that answers sent through `sender` are heard once, by
    /// `receiver`'s taker, and by no subscription of either. (`receiver` is
    /// `sender` within one process, or the bus of the replica running
    /// `task`, which waits for answers in the shared store.)
    pub(crate) async fn check_answers(sender: &dyn Bus, receiver: &dyn Bus, task: &str) {
        let mut taken = receiver.answers().expect("the answers, the first time");
        assert!(receiver.answers().is_none(), "taken once");
        let (mut here, mut there) = (sender.subscribe(), receiver.subscribe());
        let answers = Answers {
            task: task.into(),
            responses: Map::from_iter([("q".into(), Value::from("x".repeat(20_000)))]),
        };
        sender.send_answers(answers.clone()).await.unwrap();
        let heard = tokio::time::timeout(Duration::from_secs(10), taken.recv()).await;
        assert_eq!(heard.expect("answers within 10 s"), Some(answers));
        // Once, and not as an event.
        let quiet = Duration::from_millis(500);
        assert!(tokio::time::timeout(quiet, taken.recv()).await.is_err());
        assert!(tokio::time::timeout(quiet, here.recv()).await.is_err());
        assert!(tokio::time::timeout(quiet, there.recv()).await.is_err());
    }

    #[tokio::test]
    async fn the_local_bus_keeps_the_contract() {
        let bus = LocalBus::new();
        check(&bus, LocalBus::CAPACITY).await;
        check_answers(&bus, &bus, "t1").await;
    }
}
