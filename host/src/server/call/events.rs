//! What a running call tells whoever drives it: a round of questions it
//! waits on (2026-07-28), that it waits for an answer to a question sent
//! as a request (a 2025-11-25 task is `input_required` meanwhile), and that
//! the plugin asked to go on as a task. The call sends; its driver (the
//! request, then the retry that resumes it, then a task's supervisor)
//! receives. Nothing else passes between them.

use super::Round;
use tokio::sync::mpsc;

/// One thing a running call says.
pub enum CallEvent {
    /// The plugin asked questions the client has not answered; the call
    /// waits on the round's answers.
    Asked(Round),
    /// A question went to the client as a request (`true`), or its wait
    /// ended (`false`).
    Waiting(bool),
    /// The plugin asked to go on as a task (sent once per call).
    WantsTask,
}

/// The call's side of its events.
///
/// Unbounded as a channel only: a call has at most one round outstanding
/// (it waits on its answers), sends [`CallEvent::WantsTask`] once (its
/// `TaskRole` sees to that), and each `Waiting(true)` is paired with one
/// `Waiting(false)` for a question counted against its principal's
/// waiting calls.
#[derive(Clone)]
pub(crate) struct Events {
    tx: mpsc::UnboundedSender<CallEvent>,
}

/// The driver's side of a call's events.
pub(super) type EventReceiver = mpsc::UnboundedReceiver<CallEvent>;

impl Events {
    /// A call's events and their receiver.
    pub(crate) fn new() -> (Self, EventReceiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Events { tx }, rx)
    }

    /// Sends `round`; `false` when nobody drives the call any more.
    pub(crate) fn asked(&self, round: Round) -> bool {
        self.tx.send(CallEvent::Asked(round)).is_ok()
    }

    /// Says the call started (`true`) or stopped waiting for an answer.
    pub(crate) fn waiting(&self, waiting: bool) {
        let _ = self.tx.send(CallEvent::Waiting(waiting));
    }

    /// Says the plugin asked to go on as a task.
    pub(crate) fn wants_task(&self) {
        let _ = self.tx.send(CallEvent::WantsTask);
    }
}
