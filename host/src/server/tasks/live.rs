//! The tasks whose calls run in this process: the registry of them, their
//! supervisor (questions and answers, cancellation, expiry, the call's
//! end), the changes of a running task's status, and the routing of a
//! 2025-11-25 task's messages to a `tasks/result` stream.

use super::store;
use super::{conclusion, keepable, store_error, Record, Status, Tasks, Wire};
use crate::protocol::RpcError;
use crate::server::call::{CallEvent, Ended, Execution, Link, Round};
use crate::server::{Outbox, Outcome as CallOutcome, ServerEvent};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// The message of a task cancelled by request.
const CANCELLED: &str = "The task was cancelled by request.";

/// The client's answers to a task's outstanding questions (2026-07-28
/// `tasks/update`), and where to say whether they were taken.
pub(super) struct Update {
    pub(super) responses: Map<String, Value>,
    pub(super) done: oneshot::Sender<Result<(), RpcError>>,
}

/// A task whose call runs in this process.
pub struct Live {
    pub(super) id: String,
    pub(super) wire: Wire,
    /// Who may see it.
    pub(super) owner: Option<String>,
    /// The questions the client has not answered yet (2026-07-28).
    pub(super) requests: Mutex<Map<String, Value>>,
    pub(super) updates: mpsc::UnboundedSender<Update>,
    /// Cancelled to stop the call.
    pub(super) stop: CancellationToken,
    /// Becomes `true` when the task is over.
    pub(super) over: watch::Sender<bool>,
    /// Where the session that made a 2025-11-25 task hears of it.
    pub(super) home: Option<Outbox>,
    /// Where the call sends its messages (a 2025-11-25 task's go to a
    /// `tasks/result` stream while one is open).
    pub(super) link: Arc<Link>,
}

/// The tasks running in this process, by id.
#[derive(Default)]
pub(super) struct LiveTasks(Mutex<HashMap<String, Arc<Live>>>);

impl LiveTasks {
    /// Task `id`, if it runs here.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.0.lock().get(id).cloned()
    }

    /// Knows `live` as running here.
    pub(super) fn insert(&self, live: Arc<Live>) {
        self.0.lock().insert(live.id.clone(), live);
    }

    /// Task `id` no longer runs here.
    pub(super) fn remove(&self, id: &str) {
        self.0.lock().remove(id);
    }

    /// The ids of the tasks running here.
    pub(super) fn ids(&self) -> Vec<String> {
        self.0.lock().keys().cloned().collect()
    }

    /// How many tasks run here.
    pub(super) fn count(&self) -> usize {
        self.0.lock().len()
    }

    /// How many tasks run here, and how many of them are `owner`'s (both
    /// counted at once).
    pub(super) fn counts(&self, owner: Option<&str>) -> (usize, usize) {
        let live = self.0.lock();
        let theirs = live
            .values()
            .filter(|l| l.owner.as_deref() == owner)
            .count();
        (live.len(), theirs)
    }

    /// The tasks of `owner` running here.
    pub(super) fn owned_by(&self, owner: Option<&str>) -> Vec<Arc<Live>> {
        self.0
            .lock()
            .values()
            .filter(|l| l.owner.as_deref() == owner)
            .cloned()
            .collect()
    }
}

/// Knows task `id` as running here, and supervises its call to the end.
pub(super) fn run_here(
    tasks: &Arc<Tasks>,
    id: String,
    wire: Wire,
    owner: Option<String>,
    home: Option<Outbox>,
    execution: Execution,
) {
    let (live, updates) = Live::new(id, wire, owner, home, execution.link().clone());
    let live = Arc::new(live);
    tasks.live.insert(live.clone());
    tokio::spawn(supervise(tasks.clone(), live, execution, updates));
}

/// Stores that task `live` is now `status` (with its questions while it
/// waits for input), and announces it when that changed it.
pub(super) async fn set_status(tasks: &Tasks, live: &Live, status: Status) {
    let requests = (status == Status::InputRequired).then(|| live.requests.lock().clone());
    let requests = requests.filter(|r| !r.is_empty());
    let changed = tasks
        .store()
        .set_status(&live.id, status, None, requests.as_ref())
        .await;
    match changed {
        Ok(true) => announce(tasks, live, status, None).await,
        Ok(false) => {}
        Err(error) => {
            store_error(error);
        }
    }
}

/// Tells whoever listens that task `live` is now `status`.
pub(super) async fn announce(tasks: &Tasks, live: &Live, status: Status, message: Option<&str>) {
    let event = ServerEvent::task_now(live.id.clone(), status, message.map(str::to_owned));
    tasks.events.publish(event);
    tell_home(tasks, live).await;
}

/// Tells the session that made 2025-11-25 task `live` of its status.
pub(super) async fn tell_home(tasks: &Tasks, live: &Live) {
    if let (Wire::Handshake, Some(home)) = (live.wire, &live.home) {
        let record = tasks.store().get(&live.id).await;
        if let Ok(Some(record)) = record {
            home.notify(
                crate::protocol::notification::TASK_STATUS,
                crate::protocol::model::to_json(&tasks.summary(&record, Wire::Handshake)),
            );
        }
    }
}

/// Stores how a task's call ended (unless the task is already over).
pub(super) async fn conclude(tasks: &Tasks, live: &Live, outcome: CallOutcome) {
    let concluded = keepable(tasks, live.owner.as_deref(), conclusion(live.wire, outcome)).await;
    let (status, message, outcome) = concluded;
    let text = outcome.as_ref().map(store::outcome_text);
    let finished = tasks
        .store()
        .finish(&live.id, status, message.as_deref(), text.as_deref())
        .await;
    match finished {
        Ok(true) => {
            tracing::debug!(task = %live.id, status = status.as_str(), "task over");
            announce(tasks, live, status, message.as_deref()).await;
        }
        Ok(false) => {}
        Err(error) => {
            store_error(error);
        }
    }
}

/// Stops task `live`'s call: from now on it no longer runs here (nor
/// counts against its owner's running tasks).
pub(super) fn stop(tasks: &Tasks, live: &Live) {
    tasks.live.remove(&live.id);
    live.stop.cancel();
}

/// Cancels task `id` by this host's own decision: it runs here, or its
/// host does not decide relayed operations.
pub(super) async fn cancel_here(tasks: &Tasks, id: &str) -> Result<bool, RpcError> {
    let cancelled = tasks
        .store()
        .finish(id, Status::Cancelled, Some(CANCELLED), None)
        .await
        .map_err(store_error)?;
    if cancelled {
        tracing::debug!(task = %id, "task cancelled");
        if let Some(live) = tasks.live.get(id) {
            stop(tasks, &live);
            announce(tasks, &live, Status::Cancelled, Some(CANCELLED)).await;
        } else {
            tasks.events.publish(ServerEvent::task_now(
                id,
                Status::Cancelled,
                Some(CANCELLED.into()),
            ));
        }
    }
    Ok(cancelled)
}

/// Answers a task's outstanding questions with the client's `responses`:
/// the ones it is asking are taken (and checked), others ignored. `true`
/// once every question is answered.
pub(super) fn take_answers(
    pending: &mut Pending,
    responses: Map<String, Value>,
) -> Result<bool, RpcError> {
    let mut taken = Map::new();
    for (key, response) in responses {
        let Some(request) = pending.requests.get(&key) else {
            continue;
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if let Err(why) = crate::server::call::input::check_response(method, &response) {
            return Err(crate::protocol::params::invalid(format!(
                "inputResponses.{key}: {why}"
            )));
        }
        taken.insert(key, response);
    }
    for (key, response) in taken {
        pending.requests.remove(&key);
        pending.answers.insert(key, response);
    }
    Ok(pending.requests.is_empty())
}

/// The round of questions a task waits on.
pub(super) struct Pending {
    requests: Map<String, Value>,
    answers: Map<String, Value>,
    answered: oneshot::Sender<Map<String, Value>>,
}

impl Pending {
    /// A round of `requests` that only checks answers (nobody waits).
    pub(super) fn checking(requests: Map<String, Value>) -> Self {
        Pending {
            requests,
            answers: Map::new(),
            answered: oneshot::channel().0,
        }
    }

    /// Whether the answer to question `key` was taken.
    pub(super) fn was_asked(&self, key: &str) -> bool {
        self.answers.contains_key(key)
    }
}

/// Runs a task's call to its end: records its questions and the client's
/// answers (2026-07-28 rounds, and `updates`), marks it `input_required`
/// while a question sent as a request waits (2025-11-25), stops it when
/// the task is cancelled or expires, and stores how it ended (a crash
/// fails the task).
async fn supervise(
    tasks: Arc<Tasks>,
    live: Arc<Live>,
    mut execution: Execution,
    mut updates: mpsc::UnboundedReceiver<Update>,
) {
    let mut pending: Option<Pending> = None;
    // Questions sent as requests that wait for their answers.
    let mut asking = 0usize;
    loop {
        tokio::select! {
            biased;
            () = live.stop.cancelled() => break,
            ended = &mut execution.task => {
                let outcome = match ended {
                    Ended::Outcome(outcome) => outcome,
                    Ended::Crashed(why) => Err(RpcError::internal(why)),
                };
                // No longer running here once anyone can see it ended.
                tasks.live.remove(&live.id);
                conclude(&tasks, &live, outcome).await;
                break;
            }
            Some(event) = execution.events.recv() => match event {
                CallEvent::Asked(Round { requests, answered }) => {
                    live.show_requests(&requests);
                    pending = Some(Pending { requests, answers: Map::new(), answered });
                    set_status(&tasks, &live, Status::InputRequired).await;
                }
                CallEvent::Waiting(true) => {
                    asking += 1;
                    if asking == 1 {
                        set_status(&tasks, &live, Status::InputRequired).await;
                    }
                }
                CallEvent::Waiting(false) => {
                    asking = asking.saturating_sub(1);
                    if asking == 0 {
                        set_status(&tasks, &live, Status::Working).await;
                    }
                }
                CallEvent::WantsTask => {}
            },
            Some(update) = updates.recv() => {
                let taken = match &mut pending {
                    None => Ok(false),
                    Some(p) => take_answers(p, update.responses),
                };
                if let Some(p) = &pending {
                    live.show_requests(&p.requests);
                }
                if taken == Ok(true) {
                    let p = pending.take().expect("a round is pending");
                    let _ = p.answered.send(p.answers);
                    set_status(&tasks, &live, Status::Working).await;
                }
                let _ = update.done.send(taken.map(|_| ()));
            }
            () = round_closed(&mut pending) => {
                // The call stopped waiting (its time for input ran out).
                pending = None;
                live.show_requests(&Map::new());
                set_status(&tasks, &live, Status::Working).await;
            }
        }
    }
    drop(execution);
    live.over.send_replace(true);
    tasks.live.remove(&live.id);
}

/// Resolves when the call stops waiting for the pending round's answers.
async fn round_closed(pending: &mut Option<Pending>) {
    match pending {
        Some(p) => p.answered.closed().await,
        None => std::future::pending().await,
    }
}

/// A `tasks/result` stream a task's messages go to, while it lasts.
pub struct Attached {
    link: Arc<Link>,
    home: Outbox,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.link.detach(self.home.clone());
    }
}

impl Live {
    /// Task `id`, whose call sends its messages by `link`, and where its
    /// `tasks/update`s arrive. Each update is a request waiting for its
    /// reply (or, from another host, one at a time), so admission's caps on
    /// requests in progress bound this queue.
    fn new(
        id: String,
        wire: Wire,
        owner: Option<String>,
        home: Option<Outbox>,
        link: Arc<Link>,
    ) -> (Live, mpsc::UnboundedReceiver<Update>) {
        let (updates, updates_rx) = mpsc::unbounded_channel();
        let live = Live {
            id,
            wire,
            owner,
            requests: Mutex::new(Map::new()),
            updates,
            stop: CancellationToken::new(),
            over: watch::channel(false).0,
            home,
            link,
        };
        (live, updates_rx)
    }

    /// A stand-in for task `record`, which does not run here.
    pub(super) fn detached(record: &Record) -> Live {
        let link = Link::new(Outbox::discard()).0;
        Live::new(
            record.id.clone(),
            record.wire,
            record.owner.clone(),
            None,
            link,
        )
        .0
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn show_requests(&self, requests: &Map<String, Value>) {
        *self.requests.lock() = requests.clone();
    }

    /// Hands `responses` to the call's supervisor; whether they were taken.
    pub(super) async fn take(&self, responses: Map<String, Value>) -> Result<(), RpcError> {
        let (done, taken) = oneshot::channel();
        if self.updates.send(Update { responses, done }).is_err() {
            return Ok(());
        }
        taken.await.unwrap_or(Ok(()))
    }

    /// Sends the messages of this 2025-11-25 task's call to `out` (a
    /// `tasks/result` stream) until the returned guard is dropped.
    pub(super) fn attach(&self, out: &Outbox) -> Attached {
        let link = self.link.clone();
        link.attach(out.clone());
        Attached {
            link,
            home: self.home.clone().unwrap_or_else(Outbox::discard),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_taken_one_question_at_a_time() {
        let ask = |message: &str| json!({ "method": "elicitation/create", "params": { "message": message, "requestedSchema": { "type": "object" } } });
        let (answered, _rx) = oneshot::channel();
        let mut pending = Pending {
            requests: Map::from_iter([("a".into(), ask("A")), ("b".into(), ask("B"))]),
            answers: Map::new(),
            answered,
        };
        let accept = json!({ "action": "accept", "content": { "x": 1 } });
        let first = Map::from_iter([("a".into(), accept.clone()), ("zzz".into(), json!(1))]);
        assert_eq!(take_answers(&mut pending, first), Ok(false));
        assert_eq!(pending.requests.keys().collect::<Vec<_>>(), ["b"]);
        let malformed = Map::from_iter([("b".into(), json!({ "action": "maybe" }))]);
        assert!(take_answers(&mut pending, malformed).is_err());
        assert_eq!(pending.requests.len(), 1);
        let second = Map::from_iter([("b".into(), accept)]);
        assert_eq!(take_answers(&mut pending, second), Ok(true));
        assert_eq!(pending.answers.len(), 2);
    }
}
