//! What keeps the tasks running here in step with hosts sharing the
//! store: this host's hold on them renewed, the tasks of hosts that
//! stopped failed, an operation on a task another host runs relayed to
//! it, and what another host did to a task running here (a cancel, the
//! client's answers) acted on.

use super::live::{self, Pending};
use super::{store_error, Record, Status, Tasks};
use crate::protocol::RpcError;
use crate::server::bus::{Answers, Operation, RelayError, Relayed};
use crate::server::{Heard, ServerEvent};
use serde_json::{Map, Value};
use std::sync::Weak;
use std::time::Duration;

/// Notes whether the store answered (`up`), saying so in the log when
/// that changed.
fn store_answered(tasks: &Tasks, up: bool) {
    let was = tasks
        .store_up
        .swap(up, std::sync::atomic::Ordering::Relaxed);
    if was && !up {
        tracing::error!(
            "the tasks and sessions store does not answer: what needs it fails until it is back"
        );
    } else if up && !was {
        tracing::info!("the tasks and sessions store answers again");
    }
}

/// Renews this host's hold on the tasks running here; stops the ones
/// the store says are over (cancelled through another host). Fails the
/// tasks of hosts that stopped.
async fn renew(tasks: &Tasks) {
    let mut running: Vec<String> = tasks.live.ids();
    if tasks.handed_back.load(std::sync::atomic::Ordering::Relaxed) {
        running.clear();
    }
    match tasks.store().renew(&running).await {
        Ok(unfinished) => {
            for id in running.iter().filter(|id| !unfinished.contains(id)) {
                ended_elsewhere(tasks, id).await;
            }
        }
        Err(error) => {
            tracing::debug!("renewing the tasks running here: {error:#}");
            store_answered(tasks, false);
            return;
        }
    }
    match tasks.store().fail_orphans().await {
        Ok(failed) => {
            store_answered(tasks, true);
            for id in failed {
                tracing::warn!(task = %id, "the host running this task stopped: the task failed");
                tasks
                    .events
                    .publish(ServerEvent::task_now(id, Status::Failed, None));
            }
        }
        Err(error) => {
            tracing::debug!("looking for tasks of hosts that stopped: {error:#}");
            store_answered(tasks, false);
        }
    }
}

/// Stops task `id`'s call here if another host said it is now
/// `status` and that is terminal; when it did not say, if the store says
/// the task is over.
async fn stop_if_over(tasks: &Tasks, id: &str, status: Option<Status>) {
    if tasks.live.get(id).is_none() {
        return;
    }
    match status {
        Some(status) if status.is_terminal() => return ended_elsewhere(tasks, id).await,
        Some(_) => return,
        None => {}
    }
    match tasks.store().get(id).await {
        Ok(Some(record)) if !record.status.is_terminal() => {}
        Ok(_) => ended_elsewhere(tasks, id).await,
        Err(error) => {
            store_error(error);
        }
    }
}

/// Stops task `id`'s call: another host ended it (and told the other
/// hosts), so only this host's listeners hear it from here: no echo.
async fn ended_elsewhere(tasks: &Tasks, id: &str) {
    if let Some(live) = tasks.live.get(id) {
        tracing::debug!(task = %id, "task ended through another host: its call stops");
        live::stop(tasks, &live);
        tasks.events.publish_here(ServerEvent::task_changed(id));
        live::tell_home(tasks, &live).await;
    }
}

/// Decides an operation another host relayed here (the task runs
/// here, or ran here), and sends the decision back.
async fn decide(tasks: &Tasks, relayed: Relayed) {
    let decision = match &relayed.operation {
        Operation::Cancel => {
            let cancelled = live::cancel_here(tasks, &relayed.task).await;
            if matches!(cancelled, Ok(true)) {
                tracing::debug!(task = %relayed.task, from = %relayed.from, "task ended through another host (a cancel it relayed here): its call stops");
            }
            cancelled
        }
        Operation::Update(responses) => match tasks.live.get(&relayed.task) {
            Some(live) => live.take(responses.clone()).await.map(|()| true),
            // It no longer runs here: nothing waits for answers.
            None => Ok(false),
        },
    };
    tracing::debug!(task = %relayed.task, from = %relayed.from, ok = decision.is_ok(), "a relayed task operation decided");
    tasks
        .events
        .decide(&relayed, &decision.map_err(|error| error.to_json()));
}

/// `operation` on task `record`, which does not run here, decided by
/// the host running it when that host decides relayed operations;
/// `None` when it does not (a host of an earlier version, or none
/// holds the task): this host does it itself, as before.
pub(super) async fn relay(
    tasks: &Tasks,
    record: &Record,
    operation: Operation,
) -> Option<Result<bool, RpcError>> {
    let owner = record.holder.as_deref()?;
    if record.status.is_terminal() || Some(owner) == tasks.replica() {
        return None;
    }
    match tasks.events.relay(owner, &record.id, operation).await {
        Ok(Ok(applied)) => Some(Ok(applied)),
        Ok(Err(error)) => Some(Err(RpcError::from_json(&error))),
        Err(RelayError::NotSpoken) => None,
        Err(error) => {
            tracing::warn!(task = %record.id, replica = owner, "a task operation was not decided: {error}");
            Some(Err(RpcError::internal(error.to_string())))
        }
    }
}

/// Hands the client's answers to the questions of task `id`, which does
/// not run here, to the host running it (after checking them against the
/// questions the store has). Answers to questions it is not asking are
/// ignored.
pub(super) async fn answer_elsewhere(
    tasks: &Tasks,
    id: &str,
    responses: Map<String, Value>,
) -> Result<(), RpcError> {
    let record = tasks.store().get(id).await.map_err(store_error)?;
    if let Some(record) = &record {
        let update = Operation::Update(responses.clone());
        if let Some(decided) = relay(tasks, record, update).await {
            return decided.map(|_| ());
        }
    }
    let Some(record) = record.filter(|r| r.status == Status::InputRequired) else {
        return Ok(());
    };
    let asked = record.input_requests.unwrap_or_default();
    let mut pending = Pending::checking(asked);
    // Only the answers to questions asked travel on.
    live::take_answers(&mut pending, responses.clone())?;
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
    tasks.events.send_answers(answers).await.map_err(|error| {
        tracing::warn!(task = %id, "answers not sent to the host running the task: {error:#}");
        RpcError::internal(format!(
            "the answers could not be sent to the host running the task: {error}"
        ))
    })
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
                match tasks.live.get(&sent.task) {
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
                    decide(&tasks, relayed).await;
                    drop(permit);
                });
                continue;
            }
        };
        let Some(tasks) = tasks.upgrade() else { return };
        match heard {
            None | Some(Heard::Missed(_)) => renew(&tasks).await,
            Some(Heard::Closed) => return,
            // Only another host ends a task here without stopping it.
            Some(Heard::Event(ServerEvent::TaskChanged { id, status, .. }))
                if tasks.replica.is_some() =>
            {
                stop_if_over(&tasks, &id, status).await
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
