//! The tasks whose calls run in this process: their supervisor (questions
//! and answers, cancellation, expiry, the call's end), and the routing of
//! a 2025-11-25 task's messages to a `tasks/result` stream.

use super::store;
use super::{conclusion, store_error, NewTask, Record, Status, Tasks, Wire};
use crate::protocol::RpcError;
use crate::server::call::{CallEvent, Ended, Execution, Link, Round};
use crate::server::{Outbox, Outcome as CallOutcome, ServerEvent};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

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

impl Tasks {
    /// Stores task `id` for `new`, then supervises `execution` (a call not
    /// started yet, or one already running) to its end: the record as
    /// created. The task is stored, and known as running here, before its
    /// call can change it (the call runs only while its supervisor polls
    /// it). `home` is where a 2025-11-25 session hears of the task.
    pub async fn launch(
        self: &Arc<Self>,
        id: String,
        new: NewTask,
        home: Option<Outbox>,
        execution: Execution,
    ) -> Result<Record, RpcError> {
        self.room_for(new.owner.as_deref()).await?;
        let record = self.record(&id, &new, Status::Working);
        self.store().insert(&record).await.map_err(store_error)?;
        tracing::debug!(task = %id, tool = %new.target, "task created");
        self.run_here(id, new.wire, new.owner, home, execution);
        Ok(record)
    }

    /// Supervises `execution`, the call of `record` run again here (the
    /// task was claimed from a host that stopped), until it ends.
    pub fn resume(self: &Arc<Self>, record: Record, execution: Execution) {
        let id = record.id.clone();
        let message = record.status_message.clone();
        self.run_here(record.id, record.wire, record.owner, None, execution);
        self.events
            .publish(ServerEvent::task_now(id, Status::Working, message));
    }

    /// Knows task `id` as running here, and supervises its call to the end.
    fn run_here(
        self: &Arc<Self>,
        id: String,
        wire: Wire,
        owner: Option<String>,
        home: Option<Outbox>,
        execution: Execution,
    ) {
        let (live, updates) = Live::new(id, wire, owner, home, execution.link().clone());
        let live = Arc::new(live);
        self.live.lock().insert(live.id.clone(), live.clone());
        tokio::spawn(supervise(self.clone(), live, execution, updates));
    }

    /// Ends claimed task `record` (run again here) with `outcome`.
    pub async fn conclude_claimed(&self, record: &Record, outcome: CallOutcome) {
        let live = self.detached(record);
        self.conclude(&live, outcome).await;
    }

    /// Fails claimed task `record`, which cannot run again here.
    pub async fn fail_claimed(&self, record: &Record, why: &str) {
        tracing::warn!(task = %record.id, "a task could not run again: {why}");
        let error = RpcError::internal(format!("The task could not run again: {why}"));
        self.conclude_claimed(record, Err(error)).await;
    }

    /// A stand-in for a task that does not run here.
    fn detached(&self, record: &Record) -> Live {
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

    /// Takes over, to run them again here, tasks of hosts that stopped
    /// whose calls may run again (as many as may start here).
    pub async fn claim_reruns(&self) -> Vec<Record> {
        if !self.options.rerun_idempotent {
            return Vec::new();
        }
        let room = self.options.max_running.saturating_sub(self.running());
        match self.store().claim_orphans(room.min(16)).await {
            Ok(claimed) => claimed,
            Err(error) => {
                store_error(error);
                Vec::new()
            }
        }
    }

    /// Takes over a running 2026-07-28 call as a task of `new`: stored,
    /// then supervised until it ends.
    pub async fn adopt(
        self: &Arc<Self>,
        execution: Execution,
        new: NewTask,
    ) -> Result<Record, RpcError> {
        self.launch(self.new_id(), new, None, execution).await
    }

    /// The outstanding questions of task `id` (2026-07-28), if it runs here.
    pub fn input_requests(&self, id: &str) -> Option<Map<String, Value>> {
        let live = self.live_task(id)?;
        let requests = live.requests.lock();
        Some(requests.clone())
    }

    /// Notes that the client asked about task `id`: a 2025-11-25 task's
    /// questions wait for that.
    pub fn known(&self, id: &str) {
        if let Some(live) = self.live_task(id) {
            live.link.known();
        }
    }

    /// Sends the messages of 2025-11-25 task `id`'s call to `out` (a
    /// `tasks/result` stream) until the returned guard is dropped.
    pub fn attach(&self, id: &str, out: &Outbox) -> Option<Attached> {
        let live = self.live_task(id)?;
        let link = live.link.clone();
        link.attach(out.clone());
        Some(Attached {
            link,
            home: live.home.clone().unwrap_or_else(Outbox::discard),
        })
    }

    /// Waits until task `id` is over (it may run here or in another host
    /// sharing the store).
    pub async fn wait_over(&self, id: &str) {
        match self.live_task(id) {
            Some(live) => {
                let mut over = live.over.subscribe();
                let _ = over.wait_for(|o| *o).await;
            }
            None => loop {
                let terminal = self
                    .store()
                    .get(id)
                    .await
                    .ok()
                    .flatten()
                    .is_none_or(|r| r.status.is_terminal());
                if terminal {
                    return;
                }
                tokio::time::sleep(self.options.poll_interval).await;
            },
        }
    }

    pub(super) async fn set_status(&self, live: &Live, status: Status) {
        let requests = (status == Status::InputRequired).then(|| live.requests.lock().clone());
        let requests = requests.filter(|r| !r.is_empty());
        let changed = self
            .store()
            .set_status(&live.id, status, None, requests.as_ref())
            .await;
        match changed {
            Ok(true) => self.announce(live, status, None).await,
            Ok(false) => {}
            Err(error) => {
                store_error(error);
            }
        }
    }

    /// Tells whoever listens that task `live` is now `status`.
    pub(super) async fn announce(&self, live: &Live, status: Status, message: Option<&str>) {
        let event = ServerEvent::task_now(live.id.clone(), status, message.map(str::to_owned));
        self.events.publish(event);
        self.tell_home(live).await;
    }

    /// Tells the session that made 2025-11-25 task `live` of its status.
    pub(super) async fn tell_home(&self, live: &Live) {
        if let (Wire::Handshake, Some(home)) = (live.wire, &live.home) {
            let record = self.store().get(&live.id).await;
            if let Ok(Some(record)) = record {
                home.notify(
                    crate::protocol::notification::TASK_STATUS,
                    crate::protocol::model::to_json(&self.summary(&record, Wire::Handshake)),
                );
            }
        }
    }

    /// Stores how a task's call ended (unless the task is already over).
    pub(super) async fn conclude(&self, live: &Live, outcome: CallOutcome) {
        let concluded = self
            .keepable(live.owner.as_deref(), conclusion(live.wire, outcome))
            .await;
        let (status, message, outcome) = concluded;
        let text = outcome.as_ref().map(store::outcome_text);
        let finished = self
            .store()
            .finish(&live.id, status, message.as_deref(), text.as_deref())
            .await;
        match finished {
            Ok(true) => {
                tracing::debug!(task = %live.id, status = status.as_str(), "task over");
                self.announce(live, status, message.as_deref()).await;
            }
            Ok(false) => {}
            Err(error) => {
                store_error(error);
            }
        }
    }

    /// Stops task `live`'s call: from now on it no longer runs here (nor
    /// counts against its owner's running tasks).
    pub(super) fn stop(&self, live: &Live) {
        self.forget(&live.id);
        live.stop.cancel();
    }

    pub(super) fn forget(&self, id: &str) {
        self.live.lock().remove(id);
    }
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
                tasks.forget(&live.id);
                tasks.conclude(&live, outcome).await;
                break;
            }
            Some(event) = execution.events.recv() => match event {
                CallEvent::Asked(Round { requests, answered }) => {
                    live.show_requests(&requests);
                    pending = Some(Pending { requests, answers: Map::new(), answered });
                    tasks.set_status(&live, Status::InputRequired).await;
                }
                CallEvent::Waiting(true) => {
                    asking += 1;
                    if asking == 1 {
                        tasks.set_status(&live, Status::InputRequired).await;
                    }
                }
                CallEvent::Waiting(false) => {
                    asking = asking.saturating_sub(1);
                    if asking == 0 {
                        tasks.set_status(&live, Status::Working).await;
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
                    tasks.set_status(&live, Status::Working).await;
                }
                let _ = update.done.send(taken.map(|_| ()));
            }
            () = round_closed(&mut pending) => {
                // The call stopped waiting (its time for input ran out).
                pending = None;
                live.show_requests(&Map::new());
                tasks.set_status(&live, Status::Working).await;
            }
        }
    }
    drop(execution);
    live.over.send_replace(true);
    tasks.forget(&live.id);
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

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn show_requests(&self, requests: &Map<String, Value>) {
        *self.requests.lock() = requests.clone();
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
