//! One SSE stream of a session as a bounded log of numbered events, so a
//! client that lost the connection can resume with `Last-Event-ID`.

use axum::response::sse::Event;
use futures_util::Stream;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, Notify};

/// Events kept per stream for resumption; older ones are dropped.
pub const MAX_BUFFERED: usize = 1024;

/// A stream's events, numbered from 1, with at most one reader at a time.
pub struct EventLog {
    /// The stream's number within its session.
    pub id: u64,
    state: Mutex<State>,
    wake: Notify,
}

struct State {
    events: VecDeque<(u64, Arc<str>)>,
    /// The number the next event gets.
    next: u64,
    /// The first event no reader has taken yet.
    undelivered: u64,
    /// No more events will come.
    closed: bool,
    /// Bumped by each new reader; an older reader stops.
    reader: u64,
}

impl EventLog {
    /// An empty, open log.
    pub fn new(id: u64) -> Arc<Self> {
        Arc::new(EventLog {
            id,
            state: Mutex::new(State {
                events: VecDeque::new(),
                next: 1,
                undelivered: 1,
                closed: false,
                reader: 0,
            }),
            wake: Notify::new(),
        })
    }

    /// The log of `first` and then `messages`, until their sender is dropped.
    pub fn pumped(
        id: u64,
        first: Option<Value>,
        mut messages: mpsc::UnboundedReceiver<Value>,
    ) -> Arc<Self> {
        let log = Self::new(id);
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
        log
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends a message.
    pub fn push(&self, message: &Value) {
        let text: Arc<str> = message.to_string().into();
        {
            let mut state = self.state();
            let seq = state.next;
            state.next += 1;
            state.events.push_back((seq, text));
            if state.events.len() > MAX_BUFFERED {
                state.events.pop_front();
            }
        }
        self.wake.notify_waiters();
    }

    /// Marks the end of the stream.
    pub fn close(&self) {
        self.state().closed = true;
        self.wake.notify_waiters();
    }

    /// Whether the stream ended and a reader took every event.
    pub fn finished(&self) -> bool {
        let state = self.state();
        state.closed && state.undelivered == state.next
    }

    /// The SSE id of event `seq`.
    pub fn event_id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.id)
    }

    /// Parses an SSE id into (stream, event number).
    pub fn parse_event_id(text: &str) -> Option<(u64, u64)> {
        let (stream, seq) = text.trim().split_once('-')?;
        Some((stream.parse().ok()?, seq.parse().ok()?))
    }

    /// Reads the log as SSE events, starting after event `after` (`None`:
    /// from the first event no reader has taken). A newer reader ends this
    /// one; the log's end ends it.
    pub fn read(
        self: &Arc<Self>,
        after: Option<u64>,
    ) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
        let (me, cursor) = {
            let mut state = self.state();
            state.reader += 1;
            let cursor = after.map_or(state.undelivered, |n| n + 1);
            (state.reader, cursor)
        };
        self.wake.notify_waiters();
        let log = self.clone();
        futures_util::stream::unfold((log, cursor), move |(log, mut cursor)| async move {
            let event = loop {
                let notified = log.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let mut state = log.state();
                    if state.reader != me {
                        return None;
                    }
                    let next = state.events.iter().find(|(seq, _)| *seq >= cursor);
                    if let Some((seq, text)) = next {
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
            Some((Ok(event), (log, cursor)))
        })
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
            log.push(&json!({ "n": n }));
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
    async fn a_new_reader_gets_only_what_nobody_took_and_ends_the_old_one() {
        let log = EventLog::new(0);
        log.push(&json!(1));
        let mut first = Box::pin(log.read(None));
        assert!(first.next().await.is_some());
        log.push(&json!(2));
        let mut second = Box::pin(log.read(None));
        assert!(second.next().await.is_some());
        assert!(first.next().await.is_none(), "the old reader ends");
        log.close();
        assert!(second.next().await.is_none());
    }
}
