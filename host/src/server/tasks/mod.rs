//! Tasks: tool calls that run on after their request is answered, polled
//! for with `tasks/get`, on both wires (the 2025-11-25 `task` param, and
//! the 2026-07-28 extension `io.modelcontextprotocol/tasks`).
//!
//! A task is stored (SQLite) before it is announced, and every change of
//! its status is stored before anyone can observe it. The running call is
//! a [`Execution`] owned by a supervisor task, which ends it when the task
//! is cancelled or expires (dropping the call stops the plugin and frees
//! its instance).

mod adopt;
mod quota;
mod store;
mod wire;

pub use quota::TaskQuotas;
pub use store::{Record, Status, Wire};

use super::call::{Execution, Link, Round};
use super::Outcome as CallOutcome;
use super::{Outbox, ServerEvent};
use crate::config::defaults;
use crate::protocol::{random_id, RpcError};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use store::Store;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// How tasks are kept and when calls become tasks.
#[derive(Debug, Clone)]
pub struct TaskOptions {
    /// The SQLite database; `None` keeps tasks in memory only.
    pub store: Option<PathBuf>,
    /// How long a task is kept after it is created, unless the client asks
    /// for less (2025-11-25 `task.ttl`).
    pub ttl: Duration,
    /// The longest time to live a client may ask for.
    pub max_ttl: Duration,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
    /// On 2026-07-28, a call of a task-supporting tool that is still running
    /// after this long becomes a task.
    pub after: Duration,
    /// Tasks that may run at once; beyond it, calls run without a task
    /// (2026-07-28) or are refused (2025-11-25).
    pub max_running: usize,
    /// What one owner, and everyone, may keep and run.
    pub quotas: TaskQuotas,
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions {
            store: None,
            ttl: Duration::from_millis(defaults::TASK_TTL_MS),
            max_ttl: Duration::from_millis(defaults::TASK_MAX_TTL_MS),
            poll_interval: Duration::from_millis(defaults::TASK_POLL_INTERVAL_MS),
            after: Duration::from_millis(defaults::TASK_AFTER_MS),
            max_running: defaults::TASKS_RUNNING,
            quotas: TaskQuotas::default(),
        }
    }
}

/// The client's answers to a task's outstanding questions (2026-07-28
/// `tasks/update`), and where to say whether they were taken.
struct Update {
    responses: Map<String, Value>,
    done: oneshot::Sender<Result<(), RpcError>>,
}

/// A task whose call runs in this process.
pub struct Live {
    id: String,
    wire: Wire,
    /// Who may see it.
    owner: Option<String>,
    /// The questions the client has not answered yet (2026-07-28).
    requests: Mutex<Map<String, Value>>,
    updates: mpsc::UnboundedSender<Update>,
    /// Set to stop the call.
    stop: watch::Sender<bool>,
    /// Becomes `true` when the task is over.
    over: watch::Sender<bool>,
    /// Where the session that made a 2025-11-25 task hears of it.
    home: Option<Outbox>,
    /// Questions of a 2025-11-25 task waiting for the client.
    asking: AtomicUsize,
    /// The receiving end of `updates`, until the supervisor takes it.
    updates_rx: Mutex<Option<mpsc::UnboundedReceiver<Update>>>,
    /// Where a 2025-11-25 task's call sends its messages.
    link: OnceLock<Arc<Link>>,
}

/// Every task: the store, and the ones running here.
pub struct Tasks {
    store: Mutex<Store>,
    live: Mutex<HashMap<String, Arc<Live>>>,
    options: TaskOptions,
    events: broadcast::Sender<ServerEvent>,
}

/// What a new task is.
pub struct NewTask {
    /// Who may see it.
    pub owner: Option<String>,
    /// The wire that asked for it.
    pub wire: Wire,
    /// The tool it calls.
    pub target: String,
    /// The time to live the client asked for (2025-11-25).
    pub ttl_ms: Option<u64>,
}

fn store_error(error: anyhow::Error) -> RpcError {
    tracing::error!("the tasks store failed: {error:#}");
    RpcError::internal(format!("the tasks store failed: {error}"))
}

impl Tasks {
    /// Opens the store (falling back to memory, with an error in the log,
    /// when it cannot be opened) and starts the sweeper of expired tasks.
    pub fn open(options: TaskOptions, events: broadcast::Sender<ServerEvent>) -> Arc<Self> {
        let instance = random_id();
        let store = match Store::open(options.store.as_deref(), &instance) {
            Ok(store) => store,
            Err(error) => {
                tracing::error!(
                    "cannot open the tasks store: {error:#}; tasks are kept in memory and will not survive a restart"
                );
                Store::open(None, &instance).expect("an in-memory database opens")
            }
        };
        if let Some(path) = &options.store {
            tracing::debug!(store = %path.display(), "tasks store open");
        }
        let tasks = Arc::new(Tasks {
            store: Mutex::new(store),
            live: Mutex::new(HashMap::new()),
            options,
            events,
        });
        tokio::spawn(sweep(Arc::downgrade(&tasks)));
        tasks
    }

    fn store(&self) -> std::sync::MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn live_task(&self, id: &str) -> Option<Arc<Live>> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// The settings.
    pub fn options(&self) -> &TaskOptions {
        &self.options
    }

    /// Whether `owner` may start another task now; the refusal says why not.
    pub fn room_for(&self, owner: Option<&str>) -> Result<(), RpcError> {
        let running = {
            let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            if live.len() >= self.options.max_running {
                return Err(RpcError::internal(
                    "too many tasks are running; try again later",
                ));
            }
            live.values()
                .filter(|l| l.owner.as_deref() == owner)
                .count()
        };
        let (theirs, all) = {
            let store = self.store();
            (
                store.usage(owner).map_err(store_error)?,
                store.usage_all().map_err(store_error)?,
            )
        };
        match self.options.quotas.refuse_new(running, theirs, all) {
            Some(why) => Err(RpcError::internal(format!("no task can start: {why}"))),
            None => Ok(()),
        }
    }

    /// A fresh task id and its live state, before its call starts (a
    /// 2025-11-25 call needs the id to tag its messages). `home` is where a
    /// 2025-11-25 session hears of the task; `owner` who may see it.
    pub fn prepare(&self, wire: Wire, home: Option<Outbox>, owner: Option<String>) -> Arc<Live> {
        let (updates, updates_rx) = mpsc::unbounded_channel();
        Arc::new(Live {
            id: random_id(),
            wire,
            owner,
            requests: Mutex::new(Map::new()),
            updates,
            stop: watch::channel(false).0,
            over: watch::channel(false).0,
            home,
            asking: AtomicUsize::new(0),
            updates_rx: Mutex::new(Some(updates_rx)),
            link: OnceLock::new(),
        })
    }

    fn record(&self, id: &str, new: &NewTask, status: Status) -> Record {
        let now = now_ms();
        let max = self.options.max_ttl.as_millis() as u64;
        let ttl = new
            .ttl_ms
            .unwrap_or(self.options.ttl.as_millis() as u64)
            .clamp(1000, max.max(1000));
        Record {
            id: id.to_owned(),
            owner: new.owner.clone(),
            wire: new.wire,
            method: "tools/call".into(),
            target: new.target.clone(),
            status,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: ttl,
            outcome: None,
        }
    }

    /// Stores the task `live` for `new`, then hands it its call (`start`
    /// starts it, or gives the one already running): its record as
    /// created. The task is stored before its call can change it.
    pub fn launch(
        self: &Arc<Self>,
        live: Arc<Live>,
        new: NewTask,
        start: impl FnOnce() -> Execution,
    ) -> Result<Record, RpcError> {
        self.room_for(new.owner.as_deref())?;
        let record = self.record(&live.id, &new, Status::Working);
        self.store().insert(&record).map_err(store_error)?;
        let execution = start();
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(live.id.clone(), live.clone());
        tracing::debug!(task = %live.id, tool = %new.target, "task created");
        tokio::spawn(supervise(self.clone(), live, execution));
        Ok(record)
    }

    /// Stores a task whose call already finished with `outcome` (a tool that
    /// only runs as a task but finished at once).
    pub fn finished(&self, new: NewTask, outcome: CallOutcome) -> Result<Record, RpcError> {
        self.room_for(new.owner.as_deref())?;
        let (status, message, outcome) = conclusion(new.wire, outcome);
        let (status, message, outcome) =
            self.keepable(new.owner.as_deref(), (status, message, outcome));
        let mut record = self.record(&random_id(), &new, status);
        record.status_message = message;
        record.outcome = outcome;
        self.store().insert(&record).map_err(store_error)?;
        Ok(record)
    }

    /// The conclusion of an owner's task as it may be kept: a result over
    /// a quota fails the task with the reason instead.
    fn keepable(&self, owner: Option<&str>, concluded: Conclusion) -> Conclusion {
        let size = concluded
            .2
            .as_ref()
            .map_or(0, |outcome| store::outcome_text(outcome).len());
        let usage = {
            let store = self.store();
            store.usage(owner).and_then(|u| Ok((u, store.usage_all()?)))
        };
        let refusal = match usage {
            Ok((theirs, all)) => self.options.quotas.refuse_result(size, theirs, all),
            Err(error) => {
                store_error(error);
                None
            }
        };
        let Some(why) = refusal else {
            return concluded;
        };
        tracing::warn!(owner, size, "a task result was not kept: {why}");
        let error = RpcError::internal(why);
        (
            Status::Failed,
            Some(error.message.clone()),
            Some(Err(error.to_json())),
        )
    }

    /// The task `id` as `owner` may see it: -32602 when it does not exist,
    /// has expired (it is deleted soon after) or belongs to someone else.
    pub fn get(&self, id: &str, owner: Option<&str>) -> Result<Record, RpcError> {
        let record = self.store().get(id).map_err(store_error)?;
        match record {
            Some(record) if record.owner.is_none() || record.owner.as_deref() == owner => {
                if record.created_ms + record.ttl_ms <= now_ms() {
                    return Err(RpcError::invalid_params(format!(
                        "Failed to retrieve task: Task has expired: {id}"
                    )));
                }
                Ok(record)
            }
            _ => Err(RpcError::invalid_params(format!(
                "Failed to retrieve task: Task not found: {id}"
            ))),
        }
    }

    /// The outstanding questions of task `id` (2026-07-28), if it runs here.
    pub fn input_requests(&self, id: &str) -> Option<Map<String, Value>> {
        let live = self.live_task(id)?;
        let requests = live.requests.lock().unwrap_or_else(|p| p.into_inner());
        Some(requests.clone())
    }

    /// The task as `tasks/get` of `wire` shows it.
    pub fn render(&self, record: &Record, wire: Wire) -> Map<String, Value> {
        let poll = self.options.poll_interval.as_millis() as u64;
        match wire {
            Wire::V1 => wire::task(record, wire, poll),
            Wire::V2 => wire::detailed(record, poll, self.input_requests(&record.id)),
        }
    }

    /// The task's common fields on `wire` (a 2025-11-25 `Task`, or a
    /// 2026-07-28 `CreateTaskResult` without its `resultType`).
    pub fn summary(&self, record: &Record, wire: Wire) -> Map<String, Value> {
        wire::task(record, wire, self.options.poll_interval.as_millis() as u64)
    }

    /// Notes that the client asked about task `id`: a 2025-11-25 task's
    /// questions wait for that.
    pub fn known(&self, id: &str) {
        if let Some(link) = self.live_task(id).and_then(|l| l.link.get().cloned()) {
            link.known();
        }
    }

    /// Sends the messages of 2025-11-25 task `id`'s call to `out` (a
    /// `tasks/result` stream) until the returned guard is dropped.
    pub fn attach(&self, id: &str, out: &Outbox) -> Option<Attached> {
        let live = self.live_task(id)?;
        let link = live.link.get()?.clone();
        link.attach(out.clone());
        Some(Attached {
            link,
            home: live.home.clone().unwrap_or_else(|| Outbox::new().0),
        })
    }

    /// Cancels the running tasks of `owner` (a session that ended: nobody
    /// else can see them).
    pub fn cancel_owned(&self, owner: &str) {
        let owned: Vec<Arc<Live>> = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|l| l.owner.as_deref() == Some(owner))
            .cloned()
            .collect();
        for live in owned {
            let cancelled = self.store().finish(
                &live.id,
                Status::Cancelled,
                Some("The session that made the task ended."),
                None,
            );
            match cancelled {
                Ok(true) => {
                    tracing::debug!(task = %live.id, "task cancelled: its session ended");
                    live.stop.send_replace(true);
                    self.announce(&live);
                }
                Ok(false) => {}
                Err(error) => {
                    store_error(error);
                }
            }
        }
    }

    /// Cancels task `id`: stored as cancelled, then its call is stopped.
    /// `Ok(false)` when it was already over.
    pub fn cancel(&self, record: &Record) -> Result<bool, RpcError> {
        let cancelled = self
            .store()
            .finish(
                &record.id,
                Status::Cancelled,
                Some("The task was cancelled by request."),
                None,
            )
            .map_err(store_error)?;
        if cancelled {
            tracing::debug!(task = %record.id, "task cancelled");
            if let Some(live) = self.live_task(&record.id) {
                live.stop.send_replace(true);
                self.announce(&live);
            } else {
                let _ = self
                    .events
                    .send(ServerEvent::TaskChanged(record.id.clone()));
            }
        }
        Ok(cancelled)
    }

    /// Hands the client's answers to task `id`'s outstanding questions
    /// (2026-07-28); answers to questions it is not asking are ignored.
    pub async fn update(&self, id: &str, responses: Map<String, Value>) -> Result<(), RpcError> {
        let Some(live) = self.live_task(id) else {
            return Ok(());
        };
        let (done, taken) = oneshot::channel();
        if live.updates.send(Update { responses, done }).is_err() {
            return Ok(());
        }
        taken.await.unwrap_or(Ok(()))
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

    /// Up to `limit` tasks of `owner` after `(created_ms, id)`.
    pub fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>, RpcError> {
        self.store().list(owner, after, limit).map_err(store_error)
    }

    /// The hook that marks a 2025-11-25 task `input_required` while its
    /// call waits for the client's answers.
    pub fn waiting_hook(self: &Arc<Self>, live: &Arc<Live>) -> Arc<dyn Fn(bool) + Send + Sync> {
        let (tasks, live) = (Arc::downgrade(self), live.clone());
        Arc::new(move |waiting| {
            let Some(tasks) = tasks.upgrade() else { return };
            let status = if waiting {
                (live.asking.fetch_add(1, Ordering::SeqCst) == 0).then_some(Status::InputRequired)
            } else {
                (live.asking.fetch_sub(1, Ordering::SeqCst) == 1).then_some(Status::Working)
            };
            if let Some(status) = status {
                tasks.set_status(&live, status);
            }
        })
    }

    fn set_status(&self, live: &Live, status: Status) {
        let changed = self.store().set_status(&live.id, status, None);
        match changed {
            Ok(true) => self.announce(live),
            Ok(false) => {}
            Err(error) => {
                store_error(error);
            }
        }
    }

    /// Tells whoever listens that task `live` changed.
    fn announce(&self, live: &Live) {
        let _ = self.events.send(ServerEvent::TaskChanged(live.id.clone()));
        if let (Wire::V1, Some(home)) = (live.wire, &live.home) {
            let record = self.store().get(&live.id);
            if let Ok(Some(record)) = record {
                home.notify(
                    crate::protocol::notification::TASK_STATUS,
                    Value::Object(self.summary(&record, Wire::V1)),
                );
            }
        }
    }

    /// Stores how a task's call ended (unless the task is already over).
    fn conclude(&self, live: &Live, outcome: CallOutcome) {
        let concluded = self.keepable(live.owner.as_deref(), conclusion(live.wire, outcome));
        let (status, message, outcome) = concluded;
        let text = outcome.as_ref().map(store::outcome_text);
        let finished = self
            .store()
            .finish(&live.id, status, message.as_deref(), text.as_deref());
        match finished {
            Ok(true) => {
                tracing::debug!(task = %live.id, status = status.as_str(), "task over");
                self.announce(live);
            }
            Ok(false) => {}
            Err(error) => {
                store_error(error);
            }
        }
    }

    fn forget(&self, id: &str) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Deletes expired tasks, stopping the ones still running.
    fn purge(&self) {
        let purged = self.store().purge_expired(now_ms());
        let ids = match purged {
            Ok(ids) => ids,
            Err(error) => {
                store_error(error);
                return;
            }
        };
        if ids.is_empty() {
            return;
        }
        tracing::debug!(expired = ids.len(), "expired tasks deleted");
        for id in ids {
            if let Some(live) = self.live_task(&id) {
                live.stop.send_replace(true);
            }
        }
    }
}

/// A finished call's status, message and stored outcome.
type Conclusion = (Status, Option<String>, Option<store::Outcome>);

/// The conclusion of a finished call. A tool error fails a 2025-11-25 task
/// (as that wire says) but completes a 2026-07-28 one (its `failed` is for
/// JSON-RPC errors only).
fn conclusion(wire: Wire, outcome: CallOutcome) -> Conclusion {
    match outcome {
        Ok(Some(result)) => {
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            if is_error && wire == Wire::V1 {
                let message = result
                    .pointer("/content/0/text")
                    .and_then(Value::as_str)
                    .map(|text| format!("The tool reported an error: {text}"));
                (Status::Failed, message, Some(Ok(result)))
            } else {
                (Status::Completed, None, Some(Ok(result)))
            }
        }
        Ok(None) => (
            Status::Cancelled,
            Some("The task was cancelled.".into()),
            None,
        ),
        Err(error) => (
            Status::Failed,
            Some(error.message.clone()),
            Some(Err(error.to_json())),
        ),
    }
}

/// Answers a task's outstanding questions with the client's `responses`:
/// the ones it is asking are taken (and checked), others ignored. `true`
/// once every question is answered.
fn take_answers(pending: &mut Pending, responses: Map<String, Value>) -> Result<bool, RpcError> {
    let mut taken = Map::new();
    for (key, response) in responses {
        let Some(request) = pending.requests.get(&key) else {
            continue;
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        if let Err(why) = super::call::input::check_response(method, &response) {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: inputResponses.{key}: {why}"
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
struct Pending {
    requests: Map<String, Value>,
    answers: Map<String, Value>,
    answered: oneshot::Sender<Map<String, Value>>,
}

/// Runs a task's call to its end: records its questions and the client's
/// answers (2026-07-28), stops it when the task is cancelled or expires,
/// and stores how it ended.
async fn supervise(tasks: Arc<Tasks>, live: Arc<Live>, mut execution: Execution) {
    let mut stop = live.stop.subscribe();
    let mut updates = live
        .updates_rx
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .expect("a task is supervised once");
    let mut pending: Option<Pending> = None;
    loop {
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            joined = &mut execution.task => {
                let outcome = joined.unwrap_or_else(|e| {
                    Err(RpcError::internal(format!("the call failed: {e}")))
                });
                tasks.conclude(&live, outcome);
                break;
            }
            Some(round) = execution.rounds.recv() => {
                let Round { requests, answered } = round;
                live.show_requests(&requests);
                pending = Some(Pending { requests, answers: Map::new(), answered });
                tasks.set_status(&live, Status::InputRequired);
            }
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
                    tasks.set_status(&live, Status::Working);
                }
                let _ = update.done.send(taken.map(|_| ()));
            }
            () = round_closed(&mut pending) => {
                // The call stopped waiting (its time for input ran out).
                pending = None;
                live.show_requests(&Map::new());
                tasks.set_status(&live, Status::Working);
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

/// Deletes expired tasks now and then, for as long as the tasks exist.
async fn sweep(tasks: Weak<Tasks>) {
    loop {
        let every = match tasks.upgrade() {
            Some(tasks) => {
                tasks.purge();
                (tasks.options.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
            }
            None => return,
        };
        tokio::time::sleep(every).await;
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
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where the call of a 2025-11-25 task sends its messages.
    pub fn set_link(&self, link: Arc<Link>) {
        let _ = self.link.set(link);
    }

    fn show_requests(&self, requests: &Map<String, Value>) {
        *self.requests.lock().unwrap_or_else(|p| p.into_inner()) = requests.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_error_fails_only_a_2025_11_25_task() {
        let tool_error = Ok(Some(
            json!({ "content": [{ "type": "text", "text": "no" }], "isError": true }),
        ));
        let (status, message, _) = conclusion(Wire::V1, tool_error.clone());
        assert_eq!(status, Status::Failed);
        assert_eq!(message.as_deref(), Some("The tool reported an error: no"));
        assert_eq!(conclusion(Wire::V2, tool_error).0, Status::Completed);
        let (status, _, outcome) = conclusion(Wire::V2, Err(RpcError::internal("crashed")));
        assert_eq!(status, Status::Failed);
        assert_eq!(outcome.unwrap().unwrap_err()["code"], -32603);
        assert_eq!(conclusion(Wire::V2, Ok(None)).0, Status::Cancelled);
    }

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
