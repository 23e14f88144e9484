//! A plugin call that can outlive the request that started it (parked,
//! or gone on as a task). Whoever holds it drives it: the request, then
//! the retry that resumes it, or the task's supervisor. It runs only while
//! polled: a call that ends within its request needs no tokio task of its
//! own, and a task's call starts when its supervisor first polls it (after
//! the task is stored).

use super::events::EventReceiver;
use super::Link;
use crate::protocol::RpcError;
use crate::server::Outcome;
use futures_util::FutureExt as _;
use serde_json::{Map, Value};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// What a plugin call ended with.
#[derive(Debug)]
pub enum Ended {
    /// Its outcome: a result, no response (cancelled), or a JSON-RPC error.
    Outcome(Outcome),
    /// The plugin crashed (a trap, a timeout, too much memory): a tool
    /// error for a request, a failed task for a task.
    Crashed(String),
}

impl From<Outcome> for Ended {
    fn from(outcome: Outcome) -> Self {
        Ended::Outcome(outcome)
    }
}

/// The call's future; a panic in it is caught and ends it with -32603.
pub struct Call(Pin<Box<dyn Future<Output = Ended> + Send>>);

impl Future for Call {
    type Output = Ended;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

/// A plugin call, possibly waiting for answers.
pub struct Execution {
    /// The call.
    pub task: Call,
    /// What the call says while it runs.
    pub events: EventReceiver,
    /// Where the answers to the round it is parked on go.
    pub(super) waiting: Option<oneshot::Sender<Map<String, Value>>>,
    pub(super) link: Arc<Link>,
}

impl Execution {
    /// The execution of `call`, to be driven by its holder, which hears
    /// the call's `events`; its messages go through `link`.
    pub(super) fn new(
        call: impl Future<Output = Ended> + Send + 'static,
        events: EventReceiver,
        link: Arc<Link>,
    ) -> Self {
        Execution {
            task: Call(Box::pin(catching_panics(call))),
            events,
            waiting: None,
            link,
        }
    }

    /// Where the call sends its messages.
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }
}

/// `call`, ending with -32603 if it panics (as it would on a task of its
/// own).
pub(super) fn catching_panics(
    call: impl Future<Output = Ended> + Send,
) -> impl Future<Output = Ended> + Send {
    AssertUnwindSafe(call).catch_unwind().map(|ended| {
        ended.unwrap_or_else(|panic| {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Ended::Outcome(Err(RpcError::internal(format!(
                "the call failed: it panicked: {why}"
            ))))
        })
    })
}

impl Drop for Execution {
    fn drop(&mut self) {
        // The call's future goes with the execution.
        self.link.cancel.cancel();
    }
}
