//! Where a connection's (or a stream's) outgoing messages wait for the
//! transport to write them: bounded, so a client that reads slowly or not
//! at all cannot grow the host.
//!
//! - Notifications beyond [`MAX_QUEUED_NOTIFICATIONS`] waiting are dropped
//!   and counted; once the reader catches up it is told, once, with a
//!   `notifications/message` (level warning), how many it missed.
//! - Responses and requests are never dropped silently: when
//!   [`MAX_QUEUED`] messages or [`MAX_QUEUED_BYTES`] are waiting, the
//!   outbox is closed instead (the transport ends that stream or
//!   connection) and nothing more is queued.

use crate::protocol::model::to_json;
use crate::protocol::RequestId;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Notifications waiting, at most; more are dropped.
pub(super) const MAX_QUEUED_NOTIFICATIONS: usize = 256;

/// Messages of any kind waiting, at most; more close the outbox.
pub(super) const MAX_QUEUED: usize = 1024;

/// Bytes of messages (as JSON) waiting, at most; more close the outbox.
pub(super) const MAX_QUEUED_BYTES: usize = 64 << 20;

/// A message on its way to the client.
#[derive(Debug)]
pub enum Outgoing {
    /// A message built as JSON, serialized by the transport.
    Json(Value),
    /// A successful response, serialized once where it was made (a list
    /// page is spliced from JSON prepared once per catalogue).
    Text {
        /// The request it answers.
        id: RequestId,
        /// The whole response.
        text: String,
    },
}

impl Outgoing {
    /// The message as JSON text.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Outgoing::Json(value) => Cow::Owned(value.to_string()),
            Outgoing::Text { text, .. } => Cow::Borrowed(text),
        }
    }

    /// The message as JSON text, owned.
    pub fn into_text(self) -> String {
        match self {
            Outgoing::Json(value) => value.to_string(),
            Outgoing::Text { text, .. } => text,
        }
    }

    /// The message as JSON, when it was built as JSON.
    pub fn json(&self) -> Option<&Value> {
        match self {
            Outgoing::Json(value) => Some(value),
            Outgoing::Text { .. } => None,
        }
    }

    /// Whether it is the response to request `id`.
    pub fn is_response_to(&self, id: &RequestId) -> bool {
        match self {
            Outgoing::Json(m) => m.get("method").is_none() && m.get("id") == Some(id),
            Outgoing::Text { id: answered, .. } => answered == id,
        }
    }

    /// Whether it is a request to the client.
    pub fn is_request(&self) -> bool {
        self.json()
            .is_some_and(|m| m.get("method").is_some() && m.get("id").is_some())
    }

    /// Whether it is a notification.
    pub fn is_notification(&self) -> bool {
        self.json()
            .is_some_and(|m| m.get("method").is_some() && m.get("id").is_none())
    }

    fn size(&self) -> usize {
        match self {
            Outgoing::Json(value) => json_size(value),
            Outgoing::Text { text, .. } => text.len(),
        }
    }
}

impl From<Value> for Outgoing {
    fn from(value: Value) -> Self {
        Outgoing::Json(value)
    }
}

/// The sending side of an outbox.
#[derive(Clone)]
pub struct Outbox {
    /// Unbounded as a channel only: [`Outbox::send`] counts every message
    /// and its bytes against [`MAX_QUEUED`] and [`MAX_QUEUED_BYTES`] (and
    /// notifications against [`MAX_QUEUED_NOTIFICATIONS`]) before it goes.
    /// `None` for an outbox that discards what it is given.
    tx: Option<mpsc::UnboundedSender<(Outgoing, usize)>>,
    queue: Arc<Queue>,
}

#[derive(Default)]
struct Queue {
    waiting: AtomicUsize,
    bytes: AtomicUsize,
    dropped: AtomicU64,
    /// Dropped since the reader was last told.
    untold: AtomicU64,
    closed: AtomicBool,
    /// Woken when the outbox closes.
    on_close: tokio::sync::Notify,
}

/// The transport's side of an outbox.
pub struct OutboxReceiver {
    /// Holds at most what [`Outbox::send`] counted in (see [`Outbox`]).
    rx: mpsc::UnboundedReceiver<(Outgoing, usize)>,
    queue: Arc<Queue>,
}

impl Outbox {
    /// An outbox and the receiver the transport writes from.
    pub fn new() -> (Self, OutboxReceiver) {
        // Unbounded as a channel only: every push is counted (messages and
        // bytes) and refused past MAX_QUEUED_NOTIFICATIONS / MAX_QUEUED /
        // MAX_QUEUED_BYTES before it is sent, so sending never blocks.
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = Arc::new(Queue::default());
        (
            Outbox {
                tx: Some(tx),
                queue: queue.clone(),
            },
            OutboxReceiver { rx, queue },
        )
    }

    /// An outbox nobody reads: what it is given is dropped, and it is never
    /// closed. It costs no channel (one is made per request otherwise).
    pub fn discard() -> Self {
        static QUEUE: std::sync::OnceLock<Arc<Queue>> = std::sync::OnceLock::new();
        Outbox {
            tx: None,
            queue: QUEUE.get_or_init(Arc::default).clone(),
        }
    }

    /// Queues a response or a request; when too many messages wait, closes
    /// the outbox instead (the reader's stream ends).
    pub fn send(&self, message: impl Into<Outgoing>) {
        if self.tx.is_none() || self.queue.closed.load(Ordering::Relaxed) {
            return;
        }
        let message = message.into();
        let size = message.size();
        let full = self.queue.waiting.load(Ordering::Relaxed) >= MAX_QUEUED
            || self.queue.bytes.load(Ordering::Relaxed) + size > MAX_QUEUED_BYTES;
        if full {
            if !self.queue.closed.swap(true, Ordering::Relaxed) {
                tracing::warn!("a client does not read its messages: its stream is closed");
                self.queue.on_close.notify_waiters();
            }
            return;
        }
        self.push(message, size);
    }

    /// Queues a notification; dropped (and counted) when the reader is
    /// behind.
    pub fn notify(&self, method: &str, params: Value) {
        if self.tx.is_none() {
            return;
        }
        if self.queue.waiting.load(Ordering::Relaxed) >= MAX_QUEUED_NOTIFICATIONS {
            self.queue.untold.fetch_add(1, Ordering::Relaxed);
            crate::metrics::metrics().dropped(crate::metrics::Dropped::SlowClient, 1);
            if self.queue.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!("a client reads slowly: notifications to it are dropped");
            }
            return;
        }
        self.send(to_json(&Notification::new(method, params)));
    }

    fn push(&self, message: Outgoing, size: usize) {
        let Some(tx) = &self.tx else {
            return;
        };
        // Counted first, so the reader never takes more than was counted.
        self.queue.waiting.fetch_add(1, Ordering::Relaxed);
        self.queue.bytes.fetch_add(size, Ordering::Relaxed);
        if tx.send((message, size)).is_err() {
            self.queue.waiting.fetch_sub(1, Ordering::Relaxed);
            self.queue.bytes.fetch_sub(size, Ordering::Relaxed);
        }
    }

    /// Notifications dropped so far.
    pub fn dropped(&self) -> u64 {
        self.queue.dropped.load(Ordering::Relaxed)
    }

    /// Whether the outbox was closed because its reader fell too far behind.
    pub fn is_closed(&self) -> bool {
        self.queue.closed.load(Ordering::Relaxed)
    }

    /// Resolves when the outbox is closed because its reader fell behind.
    pub async fn closed(&self) {
        loop {
            let notified = self.queue.on_close.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_closed() {
                return;
            }
            notified.await;
        }
    }
}

impl OutboxReceiver {
    /// The next message; `None` when every sender is gone or the outbox
    /// was closed.
    pub async fn recv(&mut self) -> Option<Outgoing> {
        if self.queue.closed.load(Ordering::Relaxed) {
            return None;
        }
        let untold = self.queue.untold.load(Ordering::Relaxed);
        if untold > 0 && self.queue.waiting.load(Ordering::Relaxed) < MAX_QUEUED_NOTIFICATIONS / 2 {
            self.queue.untold.fetch_sub(untold, Ordering::Relaxed);
            let data = format!("{untold} notifications were dropped: the client read too slowly");
            let params = HostWarning {
                level: "warning",
                logger: "wasm-mcp",
                data: &data,
            };
            return Some(Outgoing::Json(to_json(&Notification::new(
                "notifications/message",
                params,
            ))));
        }
        let (message, size) = self.rx.recv().await?;
        self.queue.waiting.fetch_sub(1, Ordering::Relaxed);
        self.queue.bytes.fetch_sub(size, Ordering::Relaxed);
        if self.queue.closed.load(Ordering::Relaxed) {
            return None;
        }
        Some(message)
    }
}

/// The length of `value` as JSON, without building the text.
pub(super) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// A JSON-RPC notification.
#[derive(Serialize)]
struct Notification<'a, P> {
    /// Always `2.0`.
    jsonrpc: &'static str,
    /// The notification's method.
    method: &'a str,
    /// Its params.
    params: P,
}

impl<'a, P: Serialize> Notification<'a, P> {
    fn new(method: &'a str, params: P) -> Self {
        Self {
            jsonrpc: "2.0",
            method,
            params,
        }
    }
}

/// The params of the host's own `notifications/message`.
#[derive(Serialize)]
struct HostWarning<'a> {
    level: &'static str,
    logger: &'static str,
    data: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn notifications_are_dropped_and_told_responses_close_the_outbox() {
        let (out, mut rx) = Outbox::new();
        for i in 0..MAX_QUEUED_NOTIFICATIONS + 10 {
            out.notify("notifications/progress", json!({ "progress": i }));
        }
        assert_eq!(out.dropped(), 10);
        for _ in 0..MAX_QUEUED_NOTIFICATIONS / 2 + 1 {
            rx.recv().await.unwrap();
        }
        let told = rx.recv().await.unwrap();
        let told = told.json().unwrap();
        assert_eq!(told["method"], "notifications/message");
        assert!(told["params"]["data"].as_str().unwrap().starts_with("10 "));
        while out.queue.waiting.load(Ordering::Relaxed) > 0 {
            rx.recv().await.unwrap();
        }
        // Responses are queued past the notification bound ...
        for i in 0..MAX_QUEUED {
            out.send(json!({ "id": i }));
        }
        assert!(!out.is_closed());
        // ... and one too many closes the outbox: its reader sees the end.
        out.send(json!({ "id": "last" }));
        assert!(out.is_closed());
        assert!(rx.recv().await.is_none());
        // Bytes count too: two large responses fill an outbox.
        let (out, _rx) = Outbox::new();
        let big = "x".repeat(MAX_QUEUED_BYTES / 2);
        out.send(json!({ "id": 1, "result": big }));
        assert!(!out.is_closed());
        out.send(json!({ "id": 2, "result": big }));
        assert!(out.is_closed());
    }
}
