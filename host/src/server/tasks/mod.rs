//! Tasks: tool calls that run on after their request is answered, polled
//! for with `tasks/get`, on both wires (the 2025-11-25 `task` param, and
//! the 2026-07-28 extension `io.modelcontextprotocol/tasks`).
//!
//! A task is stored (SQLite) before it is announced, and every change of
//! its status is stored before anyone can observe it. The running call is
//! an `Execution` owned by a supervisor task, which ends it when the task
//! is cancelled or expires (dropping the call stops the plugin and frees
//! its instance).
//!
//! [`Tasks`] holds what the rest of the server calls; the machinery is
//! by job: `live.rs` the tasks running in this process (their registry,
//! supervisor and changes of status), `lease.rs` keeping in step with
//! other hosts sharing the store.

mod lease;
mod live;
mod options;
mod quota;
mod record;
mod store;
pub(crate) mod wire;

pub use lease::tend;
pub use live::{Attached, Live};
pub use options::{now_ms, TaskOptions};
pub use quota::TaskQuotas;
pub(crate) use record::warn_once;
pub use record::{Rerun, StoredRerun, RERUN_VERSION};
#[cfg(test)]
pub(crate) use store::contract::{check as store_contract, task as contract_task};
pub use store::{outcome_text, parse_outcome, Record, Sqlite, Status, TaskStore, Usage, Wire};

use super::bus::Operation;
use super::call::{Done as CallDone, Execution};
use super::Outcome as CallOutcome;
use super::{Bus, Outbox, ServerEvent, StoreError};
use crate::protocol::model::{Task, TaskView};
use crate::protocol::{random_id, RpcError};
use live::LiveTasks;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Every task: the store, and the ones running here.
pub struct Tasks {
    store: Box<dyn TaskStore>,
    live: LiveTasks,
    options: TaskOptions,
    events: Arc<dyn Bus>,
    /// Set if the configured store did not open (tasks are kept in memory).
    store_failed: Arc<AtomicBool>,
    /// This host's name among replicas sharing the store: the prefix of
    /// the ids of the tasks it makes.
    replica: Option<String>,
    /// Whether the store answered when last asked (by [`tend`]).
    store_up: std::sync::atomic::AtomicBool,
    /// Set once the hold on the running tasks was handed back: it is not
    /// renewed any more.
    handed_back: std::sync::atomic::AtomicBool,
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
    /// The call to run again if this host stops before it ends.
    pub rerun: Option<Rerun>,
}

/// A task store's failure on the wire ([`StoreError`] says which kind).
pub(super) fn store_error(error: anyhow::Error) -> RpcError {
    StoreError::of(error).into()
}

/// Opens the SQLite store `options` name, on a thread of its own (see
/// [`Sqlite::open_in_background`]): the store at once, and a flag set if it
/// did not open (tasks are then kept in memory).
pub fn open_sqlite(options: &TaskOptions) -> (Box<dyn TaskStore>, Arc<AtomicBool>) {
    let failed = Arc::new(AtomicBool::new(false));
    let store = Sqlite::open_in_background(options.store.clone(), random_id(), failed.clone());
    (Box::new(store), failed)
}

impl Tasks {
    /// The tasks kept in `store` (`store_failed`: set if it is a stand-in
    /// for one that did not open), by host `replica` among others sharing
    /// it. [`sweep`] deletes expired tasks; [`tend`] keeps the running ones
    /// held.
    pub fn new(
        store: Box<dyn TaskStore>,
        store_failed: Arc<AtomicBool>,
        options: TaskOptions,
        events: Arc<dyn Bus>,
        replica: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Tasks {
            store,
            live: LiveTasks::default(),
            options,
            events,
            store_failed,
            replica,
            store_up: std::sync::atomic::AtomicBool::new(true),
            handed_back: Default::default(),
        })
    }

    /// This host's name among replicas sharing the store.
    pub fn replica(&self) -> Option<&str> {
        self.replica.as_deref()
    }

    /// Whether the store answered when last asked (every third of the
    /// lease).
    pub fn store_up(&self) -> bool {
        self.store_up.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A new task id: `<replica>.<random>` among replicas (a load balancer
    /// may route `tasks/*` by it), else random.
    pub fn new_id(&self) -> String {
        match &self.replica {
            Some(replica) => format!("{replica}.{}", random_id()),
            None => random_id(),
        }
    }

    /// Whether the configured store failed to open, so that tasks are kept
    /// in memory only. (While it opens, it has not failed: what needs it
    /// waits for it.)
    pub fn store_failed(&self) -> bool {
        self.store_failed.load(Ordering::Acquire)
    }

    /// Where tasks are kept.
    pub(in crate::server) fn store(&self) -> &dyn TaskStore {
        &*self.store
    }

    /// The settings.
    pub fn options(&self) -> &TaskOptions {
        &self.options
    }

    /// Whether `owner` may start another task now; the refusal says why not.
    pub async fn room_for(&self, owner: Option<&str>) -> Result<(), RpcError> {
        let (all, running) = self.live.counts(owner);
        if all >= self.options.max_running {
            return Err(RpcError::internal(
                "too many tasks are running; try again later",
            ));
        }
        let store = self.store();
        let theirs = store.usage(owner).await.map_err(store_error)?;
        let all = store.usage_all().await.map_err(store_error)?;
        match self.options.quotas.refuse_new(running, theirs, all) {
            Some(why) => Err(RpcError::internal(format!("no task can start: {why}"))),
            None => Ok(()),
        }
    }

    /// Stores a task whose call already finished with `outcome` (a tool that
    /// only runs as a task but finished at once).
    pub async fn finished(&self, new: NewTask, outcome: CallOutcome) -> Result<Record, RpcError> {
        self.room_for(new.owner.as_deref()).await?;
        let (status, message, outcome) = conclusion(new.wire, outcome);
        let (status, message, outcome) =
            keepable(self, new.owner.as_deref(), (status, message, outcome)).await;
        let mut record = new_record(self, &self.new_id(), &new, status);
        record.status_message = message;
        record.outcome = outcome;
        self.store().insert(&record).await.map_err(store_error)?;
        Ok(record)
    }

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
        let record = new_record(self, &id, &new, Status::Working);
        self.store().insert(&record).await.map_err(store_error)?;
        tracing::debug!(task = %id, tool = %new.target, "task created");
        live::run_here(self, id, new.wire, new.owner, home, execution);
        Ok(record)
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

    /// Supervises `execution`, the call of `record` run again here (the
    /// task was claimed from a host that stopped), until it ends.
    pub fn resume(self: &Arc<Self>, record: Record, execution: Execution) {
        let id = record.id.clone();
        let message = record.status_message.clone();
        live::run_here(self, record.id, record.wire, record.owner, None, execution);
        self.events
            .publish(ServerEvent::task_now(id, Status::Working, message));
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

    /// Ends claimed task `record` (run again here) with `outcome`.
    pub async fn conclude_claimed(&self, record: &Record, outcome: CallOutcome) {
        let live = Live::detached(record);
        live::conclude(self, &live, outcome).await;
    }

    /// Fails claimed task `record`, which cannot run again here.
    pub async fn fail_claimed(&self, record: &Record, why: &str) {
        tracing::warn!(task = %record.id, "a task could not run again: {why}");
        let error = RpcError::internal(format!("The task could not run again: {why}"));
        self.conclude_claimed(record, Err(error)).await;
    }

    /// The task `id` as `owner` may see it: -32602 when it does not exist,
    /// has expired (it is deleted soon after) or belongs to someone else.
    pub async fn get(&self, id: &str, owner: Option<&str>) -> Result<Record, RpcError> {
        let record = self.store().get(id).await.map_err(store_error)?;
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

    /// Up to `limit` tasks of `owner` after `(created_ms, id)`.
    pub async fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>, RpcError> {
        self.store()
            .list(owner, after, limit)
            .await
            .map_err(store_error)
    }

    /// The task as `tasks/get` of `wire` shows it.
    pub fn render(&self, record: &Record, wire: Wire) -> TaskView {
        let poll = self.options.poll_interval.as_millis() as u64;
        match wire {
            Wire::Handshake => TaskView::Task(wire::task(record, wire, poll)),
            Wire::Stateless => {
                // The questions as asked here, else as the store has them.
                let requests = self
                    .input_requests(&record.id)
                    .or_else(|| record.input_requests.clone());
                TaskView::Detailed(wire::detailed(record, poll, requests))
            }
        }
    }

    /// The task's common fields on `wire` (a 2025-11-25 `Task`, or a
    /// 2026-07-28 `CreateTaskResult` without its `resultType`).
    pub fn summary(&self, record: &Record, wire: Wire) -> Task {
        wire::task(record, wire, self.options.poll_interval.as_millis() as u64)
    }

    /// The outstanding questions of task `id` (2026-07-28), if it runs here.
    pub fn input_requests(&self, id: &str) -> Option<Map<String, Value>> {
        let live = self.live.get(id)?;
        let requests = live.requests.lock();
        Some(requests.clone())
    }

    /// Notes that the client asked about task `id`: a 2025-11-25 task's
    /// questions wait for that.
    pub fn known(&self, id: &str) {
        if let Some(live) = self.live.get(id) {
            live.link.known();
        }
    }

    /// Sends the messages of 2025-11-25 task `id`'s call to `out` (a
    /// `tasks/result` stream) until the returned guard is dropped.
    pub fn attach(&self, id: &str, out: &Outbox) -> Option<Attached> {
        let live = self.live.get(id)?;
        Some(live.attach(out))
    }

    /// Waits until task `id` is over (it may run here or in another host
    /// sharing the store).
    pub async fn wait_over(&self, id: &str) {
        match self.live.get(id) {
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

    /// Hands the client's answers to task `id`'s questions on: to its call
    /// when it runs here, else to the host running it (after checking them
    /// against the questions the store has). Answers to questions it is not
    /// asking are ignored.
    pub async fn update(&self, id: &str, responses: Map<String, Value>) -> Result<(), RpcError> {
        if let Some(live) = self.live.get(id) {
            return live.take(responses).await;
        }
        lease::answer_elsewhere(self, id, responses).await
    }

    /// Cancels task `record`: stored as cancelled, then its call is
    /// stopped. `Ok(false)` when it was already over. A task another host
    /// runs is cancelled by that host's decision (when it decides relayed
    /// operations).
    pub async fn cancel(&self, record: &Record) -> Result<bool, RpcError> {
        if self.live.get(&record.id).is_none() {
            if let Some(decided) = lease::relay(self, record, Operation::Cancel).await {
                return decided;
            }
        }
        live::cancel_here(self, &record.id).await
    }

    /// Cancels the running tasks of `owner` (a session that ended: nobody
    /// else can see them).
    pub async fn cancel_owned(&self, owner: &str) {
        for live in self.live.owned_by(Some(owner)) {
            let cancelled = self
                .store()
                .finish(
                    &live.id,
                    Status::Cancelled,
                    Some("The session that made the task ended."),
                    None,
                )
                .await;
            match cancelled {
                Ok(true) => {
                    tracing::debug!(task = %live.id, "task cancelled: its session ended");
                    live::stop(self, &live);
                    live::announce(
                        self,
                        &live,
                        Status::Cancelled,
                        Some("The session that made the task ended."),
                    )
                    .await;
                }
                Ok(false) => {}
                Err(error) => {
                    store_error(error);
                }
            }
        }
    }

    /// How many tasks run here.
    pub fn running(&self) -> usize {
        self.live.count()
    }

    /// Hands back this host's hold on the tasks still running here (it
    /// stops): another host sharing the store fails them at once.
    pub async fn hand_back(&self) {
        self.handed_back
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let running = self.live.ids();
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
}

/// The record of task `id` for `new`, made by `tasks` now, `status`: its
/// time to live as asked, within the settings' bounds.
fn new_record(tasks: &Tasks, id: &str, new: &NewTask, status: Status) -> Record {
    let now = now_ms();
    let max = tasks.options.max_ttl.as_millis() as u64;
    let ttl = new
        .ttl_ms
        .unwrap_or(tasks.options.ttl.as_millis() as u64)
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
        input_requests: None,
        rerun: new.rerun.clone().map(StoredRerun::Call),
        holder: tasks.replica.clone(),
    }
}

/// The conclusion of an owner's task as it may be kept: a result over
/// a quota fails the task with the reason instead.
pub(super) async fn keepable(
    tasks: &Tasks,
    owner: Option<&str>,
    concluded: Conclusion,
) -> Conclusion {
    let size = concluded
        .2
        .as_ref()
        .map_or(0, |outcome| store::outcome_text(outcome).len());
    let store = tasks.store();
    let usage = match store.usage(owner).await {
        Ok(theirs) => store.usage_all().await.map(|all| (theirs, all)),
        Err(error) => Err(error),
    };
    let refusal = match usage {
        Ok((theirs, all)) => tasks.options.quotas.refuse_result(size, theirs, all),
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

/// A finished call's status, message and stored outcome.
pub(super) type Conclusion = (Status, Option<String>, Option<store::Outcome>);

/// The conclusion of a finished call. A tool error fails a 2025-11-25 task
/// (as that wire says) but completes a 2026-07-28 one (its `failed` is for
/// JSON-RPC errors only).
pub(super) fn conclusion(wire: Wire, outcome: CallOutcome) -> Conclusion {
    match outcome {
        Ok(CallDone::Result(result)) => {
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            if is_error && wire == Wire::Handshake {
                let message = result
                    .pointer("/content/0/text")
                    .and_then(Value::as_str)
                    .map(|text| format!("The tool reported an error: {text}"));
                (Status::Failed, message, Some(Ok(result)))
            } else {
                (Status::Completed, None, Some(Ok(result)))
            }
        }
        Ok(CallDone::NoResponse) => (
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

/// Deletes expired tasks, stopping the ones still running.
async fn purge(tasks: &Tasks) {
    let purged = tasks.store().purge_expired(now_ms()).await;
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
        if let Some(live) = tasks.live.get(&id) {
            live::stop(tasks, &live);
        }
    }
}

/// Deletes expired tasks now and then, for as long as the tasks exist
/// (the server spawns it).
pub async fn sweep(tasks: Weak<Tasks>) {
    let every = match tasks.upgrade() {
        Some(tasks) => {
            (tasks.options.ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
        }
        None => return,
    };
    // The first sweep after one period: a shared store may still be on its
    // way (its schema being brought up to date).
    loop {
        tokio::time::sleep(every).await;
        match tasks.upgrade() {
            Some(tasks) => purge(&tasks).await,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_error_fails_only_a_2025_11_25_task() {
        let tool_error = Ok(CallDone::Result(
            json!({ "content": [{ "type": "text", "text": "no" }], "isError": true }),
        ));
        let (status, message, _) = conclusion(Wire::Handshake, tool_error.clone());
        assert_eq!(status, Status::Failed);
        assert_eq!(message.as_deref(), Some("The tool reported an error: no"));
        assert_eq!(conclusion(Wire::Stateless, tool_error).0, Status::Completed);
        let (status, _, outcome) = conclusion(Wire::Stateless, Err(RpcError::internal("crashed")));
        assert_eq!(status, Status::Failed);
        assert_eq!(outcome.unwrap().unwrap_err()["code"], -32603);
        assert_eq!(
            conclusion(Wire::Stateless, Ok(CallDone::NoResponse)).0,
            Status::Cancelled
        );
    }
}
