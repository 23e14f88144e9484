//! A plugin call running on a tokio task of its own, so a request can
//! answer before it ends (parked, or gone on as a task).

use super::{Link, Round};
use crate::protocol::RpcError;
use crate::server::Outcome;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// A plugin call running on its own task, possibly waiting for answers.
pub struct Execution {
    /// The call.
    pub task: JoinHandle<Outcome>,
    /// Its rounds of questions.
    pub rounds: mpsc::UnboundedReceiver<Round>,
    pub(super) waiting: Option<oneshot::Sender<Map<String, Value>>>,
    pub(super) link: Arc<Link>,
    /// Becomes `true` when the plugin asks to go on as a task.
    pub(super) detach: Option<watch::Receiver<bool>>,
}

impl Execution {
    /// Runs `call` on a task of its own; `detach` says when the plugin asks
    /// to go on as a task (when the request allows it to).
    pub fn start(
        call: impl std::future::Future<Output = Outcome> + Send + 'static,
        rounds: mpsc::UnboundedReceiver<Round>,
        link: Arc<Link>,
        detach: Option<watch::Receiver<bool>>,
    ) -> Self {
        Execution {
            task: tokio::spawn(call),
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
        self.link.cancel.cancel();
        self.task.abort();
    }
}
