//! One SSE stream of a session as a bounded log of numbered events, so a
//! client that lost the connection can resume with `Last-Event-ID`. Among
//! replicas, each event is also kept in the shared store before it is
//! sent ([`Keeper`]), so that another replica can replay it.

use crate::server::Outgoing;
use axum::response::sse::Event;
use futures_util::Stream;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Events kept per stream for resumption; older ones are dropped.
pub(super) const MAX_BUFFERED: usize = 1024;

/// How often a stream that cannot keep its events says so.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Bytes of events kept per stream.
pub(super) const MAX_BUFFERED_BYTES: usize = 32 << 20;

/// A stream's events, numbered from 1, with at most one reader at a time.
pub(super) struct EventLog {
    /// The stream's number within its session.
    pub id: u64,
    /// The number of its first event.
    first: u64,
    state: Mutex<State>,
    wake: Notify,
    abandon: Mutex<Option<Abandon>>,
}

/// What to do when a stream is abandoned before it finished.
struct Abandon {
    grace: Duration,
    then: Box<dyn FnOnce() + Send>,
}

struct State {
    /// Number, text, and whether it is a notification (which may be dropped).
    events: VecDeque<(u64, Arc<str>, bool)>,
    /// The bytes of `events`.
    bytes: usize,
    /// Notifications dropped before anyone read them.
    dropped: u64,
    /// The number the next event gets.
    next: u64,
    /// The first event no reader has taken yet.
    undelivered: u64,
    /// No more events will come.
    closed: bool,
    /// Bumped by each new reader; an older reader stops.
    reader: u64,
    /// Readers alive now.
    readers: usize,
    /// Closed because a reader fell too far behind.
    overflowed: bool,
}

impl State {
    fn over(&self) -> bool {
        self.events.len() > MAX_BUFFERED || self.bytes > MAX_BUFFERED_BYTES
    }

    fn remove(&mut self, index: usize) {
        if let Some((_, text, _)) = self.events.remove(index) {
            self.bytes -= text.len();
        }
    }

    /// Brings the log within its bounds.
    fn shrink(&mut self) {
        while self.over() {
            if self
                .events
                .front()
                .is_some_and(|(seq, _, _)| *seq < self.undelivered)
            {
                self.remove(0);
            } else if let Some(i) = self.events.iter().position(|(_, _, n)| *n) {
                self.remove(i);
                if self.dropped == 0 {
                    tracing::warn!(
                        "a client reads a stream slowly: notifications to it are dropped"
                    );
                }
                self.dropped += 1;
            } else {
                tracing::warn!("a client does not read its responses: the stream is closed");
                self.closed = true;
                self.overflowed = true;
                return;
            }
        }
    }
}

/// Where a log's events are kept for other hosts: the store, and the
/// session the stream belongs to.
#[derive(Clone)]
pub(super) struct Keeper {
    /// The store.
    pub store: Arc<dyn crate::server::StreamEvents>,
    /// The session's id.
    pub session: String,
}

impl EventLog {
    /// An empty, open log.
    #[cfg(test)]
    pub(crate) fn new(id: u64) -> Arc<Self> {
        Self::starting_at(id, 1)
    }

    /// An empty, open log whose first event is numbered `first` (a stream
    /// taken up from another host goes on with its numbers).
    pub(super) fn starting_at(id: u64, first: u64) -> Arc<Self> {
        Arc::new(EventLog {
            id,
            first,
            state: Mutex::new(State {
                events: VecDeque::new(),
                bytes: 0,
                dropped: 0,
                next: first,
                undelivered: first,
                closed: false,
                reader: 0,
                readers: 0,
                overflowed: false,
            }),
            wake: Notify::new(),
            abandon: Mutex::new(None),
        })
    }

    /// Calls `then` once if the stream is abandoned before it finished: no
    /// reader for `grace` (a client may resume meanwhile), or closed
    /// because its reader fell too far behind.
    pub(super) fn on_abandoned(&self, grace: Duration, then: impl FnOnce() + Send + 'static) {
        *self.abandon.lock() = Some(Abandon {
            grace,
            then: Box::new(then),
        });
    }

    fn abandoned(&self) {
        let abandon = self.abandon.lock().take();
        if let Some(abandon) = abandon {
            (abandon.then)();
        }
    }

    /// A reader went away: if none is left and the stream has not
    /// finished, it is abandoned unless one comes back within the grace.
    fn reader_gone(self: &Arc<Self>) {
        let idle = {
            let mut state = self.state();
            state.readers -= 1;
            state.readers == 0 && !(state.closed && state.undelivered == state.next)
        };
        let grace = self.abandon.lock().as_ref().map(|a| a.grace);
        let (true, Some(grace), Ok(runtime)) = (idle, grace, tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let log = Arc::downgrade(self);
        runtime.spawn(async move {
            tokio::time::sleep(grace).await;
            let Some(log) = log.upgrade() else { return };
            let still = {
                let state = log.state();
                state.readers == 0 && !(state.closed && state.undelivered == state.next)
            };
            if still {
                log.abandoned();
            }
        });
    }

    /// The log of `first` and then `messages`, until their sender is
    /// dropped; its first event is numbered `first_seq`. With a `keeper`,
    /// each event is kept there before it can be read (a store that fails
    /// is logged, and the event sent all the same).
    pub(super) fn pumped(
        id: u64,
        first_seq: u64,
        first: Option<Outgoing>,
        mut messages: crate::server::OutboxReceiver,
        keeper: Option<Keeper>,
    ) -> Arc<Self> {
        let log = Self::starting_at(id, first_seq);
        let Some(keeper) = keeper else {
            if let Some(first) = first {
                log.push(&first);
            }
            let writer = log.clone();
            tokio::spawn(async move {
                while let Some(message) = messages.recv().await {
                    writer.push(&message);
                }
                writer.close();
            });
            return log;
        };
        let writer = log.clone();
        tokio::spawn(async move {
            let mut first = first;
            let mut warned = None;
            loop {
                let message = match first.take() {
                    Some(message) => message,
                    None => match messages.recv().await {
                        Some(message) => message,
                        None => break,
                    },
                };
                // The pump is the log's one writer: this is the number
                // `push` gives the message.
                let seq = writer.state().next;
                let kept = keeper
                    .store
                    .append(&keeper.session, writer.id, seq, &message.text())
                    .await;
                if let Err(error) = kept {
                    // Said once in a while, not for every event of an outage.
                    if warned.is_none_or(|at: std::time::Instant| at.elapsed() > WARN_EVERY) {
                        warned = Some(std::time::Instant::now());
                        tracing::warn!("SSE events are not kept for other replicas: {error:#}");
                    }
                }
                writer.push(&message);
            }
            writer.close();
        });
        log
    }

    /// The number of the first event this log held.
    pub(super) fn first_seq(&self) -> u64 {
        self.first
    }

    fn state(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Unread notifications dropped so far.
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.state().dropped
    }

    /// Appends a message. Over the log's bounds, events already read go
    /// first, then unread notifications (counted); a stream that would
    /// have to lose an unread response or request is closed instead.
    pub(super) fn push(&self, message: &Outgoing) {
        let text: Arc<str> = message.text().into();
        let notification = message.is_notification();
        let overflowed = {
            let mut state = self.state();
            if state.closed {
                return;
            }
            let seq = state.next;
            state.next += 1;
            state.bytes += text.len();
            state.events.push_back((seq, text, notification));
            state.shrink();
            state.overflowed
        };
        if overflowed {
            self.abandoned();
        }
        self.wake.notify_waiters();
    }

    /// Marks the end of the stream.
    pub(super) fn close(&self) {
        self.state().closed = true;
        self.wake.notify_waiters();
    }

    /// Whether the stream ended and a reader took every event.
    pub(super) fn finished(&self) -> bool {
        let state = self.state();
        state.closed && state.undelivered == state.next
    }

    /// The SSE id of event `seq`.
    pub(super) fn event_id(&self, seq: u64) -> String {
        Self::event_id_of(self.id, seq)
    }

    /// The SSE id of event `seq` of stream `stream`.
    pub(super) fn event_id_of(stream: u64, seq: u64) -> String {
        format!("{stream}-{seq}")
    }

    /// Parses an SSE id into (stream, event number).
    pub(super) fn parse_event_id(text: &str) -> Option<(u64, u64)> {
        let (stream, seq) = text.trim().split_once('-')?;
        Some((stream.parse().ok()?, seq.parse().ok()?))
    }

    /// Reads the log as SSE events, starting after event `after` (`None`:
    /// from the first event no reader has taken). A newer reader ends this
    /// one; the log's end ends it.
    pub(super) fn read(
        self: &Arc<Self>,
        after: Option<u64>,
    ) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
        let (me, cursor) = {
            let mut state = self.state();
            state.reader += 1;
            state.readers += 1;
            let cursor = after.map_or(state.undelivered, |n| n + 1);
            (state.reader, cursor)
        };
        self.wake.notify_waiters();
        let reading = Reading(self.clone());
        futures_util::stream::unfold((reading, cursor), move |(reading, mut cursor)| async move {
            let log = &reading.0;
            let event = loop {
                let notified = log.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let mut state = log.state();
                    if state.reader != me {
                        return None;
                    }
                    let next = state.events.iter().find(|(seq, _, _)| *seq >= cursor);
                    if let Some((seq, text, _)) = next {
                        let event = Event::default().id(log.event_id(*seq)).data(&**text);
                        cursor = seq + 1;
                        state.undelivered = state.undelivered.max(cursor);
                        break event;
                    }
                    if state.closed {
                        state.undelivered = state.next;
                        return None;
                    }
                }
                notified.await;
            };
            Some((Ok(event), (reading, cursor)))
        })
    }
}

/// One reader of a log, alive while its stream is.
struct Reading(Arc<EventLog>);

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.reader_gone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use serde_json::json;

    #[tokio::test]
    async fn a_reader_resumes_after_the_last_event_it_saw() {
        let log = EventLog::new(3);
        for n in 0..3 {
            log.push(&Outgoing::Json(json!({ "n": n })));
        }
        log.close();
        let all: Vec<_> = log.read(Some(0)).collect().await;
        assert_eq!(all.len(), 3);
        let rest: Vec<_> = log.read(Some(2)).collect().await;
        assert_eq!(rest.len(), 1);
        assert!(log.finished());
        assert_eq!(EventLog::parse_event_id("3-2"), Some((3, 2)));
        assert_eq!(EventLog::parse_event_id("x"), None);
    }

    #[tokio::test]
    async fn over_its_bounds_a_log_drops_read_events_then_notifications_then_closes() {
        let log = EventLog::new(0);
        log.push(&Outgoing::Json(
            json!({ "jsonrpc": "2.0", "id": 1, "result": {} }),
        ));
        let mut reader = Box::pin(log.read(None));
        assert!(reader.next().await.is_some());
        drop(reader);
        for n in 0..MAX_BUFFERED {
            log.push(&Outgoing::Json(json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": { "n": n } })));
        }
        // The response already read made room first.
        assert_eq!(log.dropped(), 0);
        log.push(&Outgoing::Json(
            json!({ "jsonrpc": "2.0", "id": 2, "result": {} }),
        ));
        assert_eq!(log.dropped(), 1);
        for id in 3..(MAX_BUFFERED as u64 + 10) {
            log.push(&Outgoing::Json(
                json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
            ));
        }
        // Only unread responses left and still too many: closed, not lost silently.
        assert!(log.state().closed);
        assert!(log.state().events.len() <= MAX_BUFFERED + 1);
    }

    #[tokio::test]
    async fn a_new_reader_gets_only_what_nobody_took_and_ends_the_old_one() {
        let log = EventLog::new(0);
        log.push(&Outgoing::Json(json!(1)));
        let mut first = Box::pin(log.read(None));
        assert!(first.next().await.is_some());
        log.push(&Outgoing::Json(json!(2)));
        let mut second = Box::pin(log.read(None));
        assert!(second.next().await.is_some());
        assert!(first.next().await.is_none(), "the old reader ends");
        log.close();
        assert!(second.next().await.is_none());
    }

    #[tokio::test]
    async fn a_stream_without_a_reader_past_its_grace_is_abandoned_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let log = EventLog::new(0);
        let abandoned = Arc::new(AtomicUsize::new(0));
        let count = abandoned.clone();
        log.on_abandoned(Duration::from_millis(200), move || {
            count.fetch_add(1, Ordering::SeqCst);
        });
        log.push(&Outgoing::Json(
            json!({ "jsonrpc": "2.0", "method": "notifications/progress" }),
        ));
        let mut first = Box::pin(log.read(None));
        assert!(first.next().await.is_some());
        // Lost and resumed at once: not abandoned.
        drop(first);
        let resumed = Box::pin(log.read(Some(1)));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(abandoned.load(Ordering::SeqCst), 0);
        // Lost for good: abandoned after the grace, once.
        drop(resumed);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(abandoned.load(Ordering::SeqCst), 1);
        drop(Box::pin(log.read(None)));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(abandoned.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_finished_stream_is_never_abandoned() {
        let log = EventLog::new(0);
        let (tx, rx) = std::sync::mpsc::channel();
        log.on_abandoned(Duration::from_millis(10), move || tx.send(()).unwrap());
        log.push(&Outgoing::Json(
            json!({ "jsonrpc": "2.0", "id": 1, "result": {} }),
        ));
        log.close();
        let read: Vec<_> = log.read(None).collect().await;
        assert_eq!(read.len(), 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(rx.try_recv().is_err());
    }
}
