//! What keeps the tasks running here in step with hosts sharing the
//! store: this host's hold on them renewed, the tasks of hosts that
//! stopped failed, and what another host did to a task running here (a
//! cancel, the client's answers) acted on.

use super::{store_error, Live, Status, Tasks};
use crate::protocol::RpcError;
use crate::server::bus::Answers;
use crate::server::{Heard, ServerEvent};
use serde_json::{Map, Value};
use std::sync::Weak;
use std::time::Duration;

impl Tasks {
    /// Renews this host's hold on the tasks running here; stops the ones
    /// the store says are over (cancelled through another host). Fails the
    /// tasks of hosts that stopped.
    async fn renew(&self) {
        let mut running: Vec<String> = self.live.lock().keys().cloned().collect();
        if self.handed_back.load(std::sync::atomic::Ordering::Relaxed) {
            running.clear();
        }
        match self.store().renew(&running).await {
            Ok(unfinished) => {
                for id in running.iter().filter(|id| !unfinished.contains(id)) {
                    self.ended_elsewhere(id).await;
                }
            }
            Err(error) => {
                tracing::debug!("renewing the tasks running here: {error:#}");
                self.store_answered(false);
                return;
            }
        }
        match self.store().fail_orphans().await {
            Ok(failed) => {
                self.store_answered(true);
                for id in failed {
                    tracing::warn!(task = %id, "the host running this task stopped: the task failed");
                    self.events.publish(ServerEvent::TaskChanged(id));
                }
            }
            Err(error) => {
                tracing::debug!("looking for tasks of hosts that stopped: {error:#}");
                self.store_answered(false);
            }
        }
    }

    /// How many tasks run here.
    pub fn running(&self) -> usize {
        self.live.lock().len()
    }

    /// Hands back this host's hold on the tasks still running here (it
    /// stops): another host sharing the store fails them at once.
    pub async fn hand_back(&self) {
        self.handed_back
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let running: Vec<String> = self.live.lock().keys().cloned().collect();
        if running.is_empty() {
            return;
        }
        match self.store().release(&running).await {
            Ok(()) => tracing::info!(tasks = running.len(), "running tasks handed back"),
            Err(error) => {
                store_error(error);
            }
        }
    }

    /// Stops task `id`'s call here if the store says the task is over.
    async fn stop_if_over(&self, id: &str) {
        if self.live_task(id).is_none() {
            return;
        }
        match self.store().get(id).await {
            Ok(Some(record)) if !record.status.is_terminal() => {}
            Ok(_) => self.ended_elsewhere(id).await,
            Err(error) => {
                store_error(error);
            }
        }
    }

    async fn ended_elsewhere(&self, id: &str) {
        if let Some(live) = self.live_task(id) {
            tracing::debug!(task = %id, "task ended through another host: its call stops");
            self.stop(&live);
            self.announce(&live).await;
        }
    }

    /// Hands the client's answers to task `id`'s questions on: to its call
    /// when it runs here, else to the host running it (after checking them
    /// against the questions the store has). Answers to questions it is not
    /// asking are ignored.
    pub async fn update(&self, id: &str, responses: Map<String, Value>) -> Result<(), RpcError> {
        if let Some(live) = self.live_task(id) {
            return live.take(responses).await;
        }
        let record = self.store().get(id).await.map_err(store_error)?;
        let Some(record) = record.filter(|r| r.status == Status::InputRequired) else {
            return Ok(());
        };
        let asked = record.input_requests.unwrap_or_default();
        let mut pending = super::live::Pending::checking(asked);
        // Only the answers to questions asked travel on.
        super::live::take_answers(&mut pending, responses.clone())?;
        let responses: Map<String, Value> = responses
            .into_iter()
            .filter(|(key, _)| pending.was_asked(key))
            .collect();
        if responses.is_empty() {
            return Ok(());
        }
        let answers = Answers {
            task: id.to_owned(),
            responses,
        };
        self.events.send_answers(answers).await.map_err(|error| {
            tracing::warn!(task = %id, "answers not sent to the host running the task: {error:#}");
            RpcError::internal(format!(
                "the answers could not be sent to the host running the task: {error}"
            ))
        })
    }
}

impl Live {
    /// Hands `responses` to the call's supervisor; whether they were taken.
    async fn take(&self, responses: Map<String, Value>) -> Result<(), RpcError> {
        let (done, taken) = tokio::sync::oneshot::channel();
        if self
            .updates
            .send(super::live::Update { responses, done })
            .is_err()
        {
            return Ok(());
        }
        taken.await.unwrap_or(Ok(()))
    }
}

/// Keeps the running tasks in step with hosts sharing the store, for as
/// long as the tasks exist (the server spawns it): renews every third of
/// the lease, acts at once on what other hosts say, and hands the answers
/// other hosts sent to the tasks running here to their calls.
pub async fn tend(tasks: Weak<Tasks>) {
    let (mut events, mut answers, every) = match tasks.upgrade() {
        Some(tasks) => (
            tasks.events.subscribe(),
            tasks.events.answers(),
            (tasks.options.lease / 3).max(Duration::from_millis(100)),
        ),
        None => return,
    };
    // The first round after one period, as for the sweep.
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let heard = tokio::select! {
            _ = tick.tick() => None,
            heard = events.recv() => Some(heard),
            Some(sent) = next_answers(&mut answers) => {
                let Some(tasks) = tasks.upgrade() else { return };
                match tasks.live_task(&sent.task) {
                    Some(live) => {
                        tracing::debug!(task = %sent.task, "answers from another host handed to the task");
                        let _ = live.take(sent.responses).await;
                    }
                    None => tracing::debug!(task = %sent.task, "answers for a task that no longer runs here"),
                }
                continue;
            }
        };
        let Some(tasks) = tasks.upgrade() else { return };
        match heard {
            None | Some(Heard::Missed(_)) => tasks.renew().await,
            Some(Heard::Closed) => return,
            // Only another host ends a task here without stopping it.
            Some(Heard::Event(ServerEvent::TaskChanged(id))) if tasks.replica.is_some() => {
                tasks.stop_if_over(&id).await
            }
            Some(Heard::Event(_)) => {}
        }
    }
}

/// The next answers sent to the tasks running here (never, without a
/// receiver).
async fn next_answers(
    answers: &mut Option<tokio::sync::mpsc::Receiver<Answers>>,
) -> Option<Answers> {
    match answers {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}
