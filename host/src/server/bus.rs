//! How server-wide events ([`ServerEvent`]: list changes, resource
//! updates, task status, log lines, shutdown) reach every connection
//! ([`Bus`]). Today's one implementation is in-process ([`LocalBus`]); one
//! shared between replicas must pass the same contract
//! (`contract::check`).

use super::ServerEvent;
use tokio::sync::broadcast;

/// Events published for every connection to hear.
pub trait Bus: Send + Sync {
    /// Sends `event` to every subscription (none is fine).
    fn publish(&self, event: ServerEvent);
    /// A subscription to the events published from now on.
    fn subscribe(&self) -> Subscription;
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
pub struct LocalBus(broadcast::Sender<ServerEvent>);

impl LocalBus {
    /// Events unread by a subscriber, at most (beyond, it misses the
    /// oldest).
    pub const CAPACITY: usize = 1024;

    /// An in-process bus.
    pub fn new() -> Self {
        LocalBus(broadcast::channel(Self::CAPACITY).0)
    }
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus for LocalBus {
    fn publish(&self, event: ServerEvent) {
        let _ = self.0.send(event);
    }

    fn subscribe(&self) -> Subscription {
        Subscription(self.0.subscribe())
    }
}

/// What every [`Bus`] must do, as one check to run against each
/// implementation.
#[cfg(test)]
pub(crate) mod contract {
    use super::*;
    use std::time::Duration;

    fn task(i: usize) -> ServerEvent {
        ServerEvent::TaskChanged(format!("t{i}"))
    }

    async fn next(subscription: &mut Subscription) -> Heard {
        tokio::time::timeout(Duration::from_secs(10), subscription.recv())
            .await
            .expect("an event within 10 s")
    }

    /// Runs every check against `bus`, whose subscribers may hold
    /// `capacity` unread events.
    pub async fn check(bus: &dyn Bus, capacity: usize) {
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

    #[tokio::test]
    async fn the_local_bus_keeps_the_contract() {
        let bus = LocalBus::new();
        check(&bus, LocalBus::CAPACITY).await;
    }
}
