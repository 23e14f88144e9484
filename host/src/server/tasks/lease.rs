//! What keeps the tasks running here in step with hosts sharing the
//! store: this host's hold on them renewed, the tasks of hosts that
//! stopped failed, and what another host did to a task running here (a
//! cancel, the client's answers) acted on.

use super::{store_error, Live, Status, Tasks};
use crate::protocol::RpcError;
use crate::server::bus::{Answers, Operation, Relayed};
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
                    self.events
                        .publish(ServerEvent::task_now(id, Status::Failed, None));
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

    /// Stops task `id`'s call here if another host said it is now
    /// `status` and that is terminal; when it did not say, if the store says
    /// the task is over.
    async fn stop_if_over(&self, id: &str, status: Option<Status>) {
        if self.live_task(id).is_none() {
            return;
        }
        match status {
            Some(status) if status.is_terminal() => return self.ended_elsewhere(id).await,
            Some(_) => return,
            None => {}
        }
        match self.store().get(id).await {
            Ok(Some(record)) if !record.status.is_terminal() => {}
            Ok(_) => self.ended_elsewhere(id).await,
            Err(error) => {
                store_error(error);
            }
        }
    }

    /// Stops task `id`'s call: another host ended it (and told the other
    /// hosts), so only this host's listeners hear it from here: no echo.
    async fn ended_elsewhere(&self, id: &str) {
        if let Some(live) = self.live_task(id) {
            tracing::debug!(task = %id, "task ended through another host: its call stops");
            self.stop(&live);
            self.events.publish_here(ServerEvent::task_changed(id));
            self.tell_home(&live).await;
        }
    }

    /// Decides an operation another host relayed here (the task runs
    /// here, or ran here), and sends the decision back.
    async fn decide(&self, relayed: Relayed) {
        let decision = match &relayed.operation {
            Operation::Cancel => {
                let cancelled = self.cancel_here(&relayed.task).await;
                if matches!(cancelled, Ok(true)) {
                    tracing::debug!(task = %relayed.task, from = %relayed.from, "task ended through another host (a cancel it relayed here): its call stops");
                }
                cancelled
            }
            Operation::Update(responses) => match self.live_task(&relayed.task) {
                Some(live) => live.take(responses.clone()).await.map(|()| true),
                // It no longer runs here: nothing waits for answers.
                None => Ok(false),
            },
        };
        tracing::debug!(task = %relayed.task, from = %relayed.from, ok = decision.is_ok(), "a relayed task operation decided");
        self.events
            .decide(&relayed, &decision.map_err(|error| error.to_json()));
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
        if let Some(record) = &record {
            let update = Operation::Update(responses.clone());
            if let Some(decided) = self.relay(record, update).await {
                return decided.map(|_| ());
            }
        }
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
    let (mut events, mut answers, mut relayed, every) = match tasks.upgrade() {
        Some(tasks) => (
            tasks.events.subscribe(),
            tasks.events.answers(),
            tasks.events.relayed(),
            (tasks.options.lease / 3).max(Duration::from_millis(100)),
        ),
        None => return,
    };
    let deciding = std::sync::Arc::new(tokio::sync::Semaphore::new(
        crate::server::bus::MAX_RELAYS_WAITING,
    ));
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
            Some(relayed) = next_relayed(&mut relayed) => {
                let Some(tasks) = tasks.upgrade() else { return };
                // At most MAX_RELAYS_WAITING decided at once; beyond, the
                // bus's queue fills and refuses more.
                let Ok(permit) = deciding.clone().acquire_owned().await else { return };
                tokio::spawn(async move {
                    tasks.decide(relayed).await;
                    drop(permit);
                });
                continue;
            }
        };
        let Some(tasks) = tasks.upgrade() else { return };
        match heard {
            None | Some(Heard::Missed(_)) => tasks.renew().await,
            Some(Heard::Closed) => return,
            // Only another host ends a task here without stopping it.
            Some(Heard::Event(ServerEvent::TaskChanged { id, status, .. }))
                if tasks.replica.is_some() =>
            {
                tasks.stop_if_over(&id, status).await
            }
            Some(Heard::Event(_)) => {}
        }
    }
}

/// The next operation relayed here (never, without a receiver).
async fn next_relayed(
    relayed: &mut Option<tokio::sync::mpsc::Receiver<Relayed>>,
) -> Option<Relayed> {
    match relayed {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
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
