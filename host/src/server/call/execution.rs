//! A plugin call that can outlive the request that started it (parked,
//! or gone on as a task). Whoever holds it drives it: the request, then
//! the retry that resumes it, or the task's supervisor. A call that ends
//! within its request so needs no tokio task of its own.

use super::{Link, Round};
use crate::protocol::RpcError;
use crate::server::Outcome;
use futures_util::FutureExt as _;
use serde_json::{Map, Value};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot, watch};

/// The call's future: its outcome, or why it failed (it panicked).
pub struct Call(Pin<Box<dyn Future<Output = Result<Outcome, String>> + Send>>);

impl Future for Call {
    type Output = Result<Outcome, String>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

/// A plugin call, possibly waiting for answers.
pub struct Execution {
    /// The call.
    pub task: Call,
    /// Its rounds of questions.
    pub rounds: mpsc::UnboundedReceiver<Round>,
    pub(super) waiting: Option<oneshot::Sender<Map<String, Value>>>,
    pub(super) link: Arc<Link>,
    /// Becomes `true` when the plugin asks to go on as a task.
    pub(super) detach: Option<watch::Receiver<bool>>,
}

impl Execution {
    /// The execution of `call`, to be driven by its holder; `detach` says
    /// when the plugin asks to go on as a task (when the request allows it
    /// to).
    pub fn start(
        call: impl Future<Output = Outcome> + Send + 'static,
        rounds: mpsc::UnboundedReceiver<Round>,
        link: Arc<Link>,
        detach: Option<watch::Receiver<bool>>,
    ) -> Self {
        // A panic stays in the call, as it would on a task of its own.
        let call = AssertUnwindSafe(call).catch_unwind().map(|ended| {
            ended.map_err(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                format!("it panicked: {why}")
            })
        });
        Execution {
            task: Call(Box::pin(call)),
            rounds,
            waiting: None,
            link,
            detach,
        }
    }

    /// Where the call sends its messages.
    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// Marks the call as running as a task from now on.
    pub fn mark_task(&self) {
        self.link.mark_task();
    }
}

/// What driving a call for one request came to.
pub enum Driven {
    /// It finished (or was cancelled: no response).
    Done(Outcome),
    /// It waits for the client's input: the input-required result.
    Parked(Value),
    /// It goes on as a task: the request is answered with a task handle.
    Detached(Execution),
}

impl Driven {
    /// The answer to a request whose call could not go on as a task.
    pub fn into_outcome(self) -> Outcome {
        match self {
            Driven::Done(outcome) => outcome,
            Driven::Parked(result) => Ok(Some(result)),
            Driven::Detached(_) => Err(RpcError::internal(
                "the call went on as a task, which this request does not allow",
            )),
        }
    }
}

/// When a call that may run as a task becomes one.
#[derive(Debug, Clone, Copy)]
pub struct Escalation {
    /// Still running after this long.
    pub after: std::time::Duration,
}

impl Drop for Execution {
    fn drop(&mut self) {
        // The call's future goes with the execution.
        self.link.cancel.cancel();
    }
}
