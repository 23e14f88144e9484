//! Input-required results (2026-07-28, multi round-trip requests): a plugin
//! that asks the client a question is parked mid-call; the request is
//! answered with `resultType: "input_required"`, the questions, and a
//! sealed `requestState`; the client's retry with `inputResponses` resumes
//! the parked call where it stopped.
//!
//! The state is an HMAC-SHA256-sealed reference to the parked call, bound
//! to the principal, the method and its parameters, and expiring. Parked
//! calls are bounded in number and time; an abandoned one is aborted,
//! which frees its instance.

use super::input::Wanted;
use super::waiting::{WaitSlot, Waiting};
use super::Outbox;
use crate::protocol::{random_id, RpcError};
use crate::runtime::host_types::{Answer, InputError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// What a request handler produces.
pub type Outcome = Result<Option<Value>, RpcError>;

/// Calls parked at once, at most.
pub const MAX_PARKED: usize = 1024;

/// A plugin's questions that the client has not answered yet.
pub struct Round {
    /// `inputRequests`: key → `{ method, params }`.
    pub requests: Map<String, Value>,
    /// Where the client's `inputResponses` go when it retries.
    pub answered: oneshot::Sender<Map<String, Value>>,
}

/// The plugin's side of the rounds: the answers so far, and a way to ask
/// for more.
pub struct Rounds {
    responses: Mutex<Map<String, Value>>,
    needs: mpsc::UnboundedSender<Round>,
    timeout: Duration,
}

impl Rounds {
    /// Rounds that start with the `inputResponses` a request carried; the
    /// receiver gets each round of unanswered questions.
    pub fn new(
        responses: Map<String, Value>,
        timeout: Duration,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Round>) {
        let (needs, rounds) = mpsc::unbounded_channel();
        let this = Rounds {
            responses: Mutex::new(responses),
            needs,
            timeout,
        };
        (Arc::new(this), rounds)
    }

    /// Answers `wanted` from the client's responses, asking for the ones it
    /// has not answered (or answered with something unreadable) until all
    /// are answered. Answers come in the order of `wanted`.
    pub async fn answer(&self, wanted: &[Wanted]) -> Vec<Result<Answer, InputError>> {
        let mut answers: Vec<Option<Result<Answer, InputError>>> =
            wanted.iter().map(|_| None).collect();
        loop {
            {
                let responses = self.responses.lock().unwrap_or_else(|p| p.into_inner());
                for (answer, w) in answers.iter_mut().zip(wanted) {
                    if answer.is_none() {
                        if let Some(parsed) = responses.get(&w.key).and_then(|v| w.parse(v).ok()) {
                            *answer = Some(Ok(parsed));
                        }
                    }
                }
            }
            let missing: Map<String, Value> = answers
                .iter()
                .zip(wanted)
                .filter(|(a, _)| a.is_none())
                .map(|(_, w)| (w.key.clone(), w.request()))
                .collect();
            if missing.is_empty() {
                return answers.into_iter().flatten().collect();
            }
            let (answered, rx) = oneshot::channel();
            let round = Round {
                requests: missing,
                answered,
            };
            let failure = if self.needs.send(round).is_err() {
                Some(InputError::Cancelled)
            } else {
                match tokio::time::timeout(self.timeout, rx).await {
                    Ok(Ok(new)) => {
                        self.responses
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend(new);
                        None
                    }
                    Ok(Err(_)) => Some(InputError::Cancelled),
                    Err(_) => Some(InputError::Timeout),
                }
            };
            if let Some(failure) = failure {
                return answers
                    .into_iter()
                    .map(|a| a.unwrap_or_else(|| Err(failure.clone())))
                    .collect();
            }
        }
    }
}

/// What a 2025-11-25 task's link knows of its client.
#[derive(Default)]
struct TaskClient {
    /// The client asked about the task (`tasks/get`, `tasks/result`, ...).
    knows: bool,
    /// The `tasks/result` stream open now.
    stream: Option<Outbox>,
}

/// Where a running call's notifications go and how it is cancelled; a
/// resumed call is re-linked to the request that resumed it.
pub struct Link {
    /// The current request's outbox (a dead one while parked).
    out: Mutex<Outbox>,
    /// Cancels the call.
    pub cancel: watch::Sender<bool>,
    /// The 2025-11-25 task the call runs as: every message about it says so.
    related_task: Option<String>,
    /// For such a task, whether the client knows of it yet and the
    /// `tasks/result` stream open now: its questions wait for either.
    client: watch::Sender<TaskClient>,
    /// Whether the call runs as a task (of either wire) now.
    as_task: std::sync::atomic::AtomicBool,
}

impl Link {
    /// A link to `out`, and the call's cancellation receiver.
    pub fn new(out: Outbox) -> (Arc<Self>, watch::Receiver<bool>) {
        Self::build(out, None)
    }

    /// A link for a call that runs as the 2025-11-25 task `task_id`.
    pub fn for_task(out: Outbox, task_id: &str) -> (Arc<Self>, watch::Receiver<bool>) {
        Self::build(out, Some(task_id.to_owned()))
    }

    fn build(out: Outbox, related_task: Option<String>) -> (Arc<Self>, watch::Receiver<bool>) {
        let (cancel, cancelled) = watch::channel(false);
        let link = Link {
            client: watch::channel(TaskClient::default()).0,
            as_task: (related_task.is_some()).into(),
            out: Mutex::new(out),
            cancel,
            related_task,
        };
        (Arc::new(link), cancelled)
    }

    /// Where messages go now.
    pub fn outbox(&self) -> Outbox {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sends messages to `out` from now on.
    pub fn relink(&self, out: Outbox) {
        *self.out.lock().unwrap_or_else(|p| p.into_inner()) = out;
    }

    /// Sends a task's messages to `out` (a `tasks/result` stream) until
    /// [`Link::detach`].
    pub fn attach(&self, out: Outbox) {
        self.relink(out.clone());
        self.client.send_modify(|c| {
            c.knows = true;
            c.stream = Some(out);
        });
    }

    /// Sends a task's messages back to `home`.
    pub fn detach(&self, home: Outbox) {
        self.client.send_modify(|c| c.stream = None);
        self.relink(home);
    }

    /// Notes that the client asked about the task (so it knows of it).
    pub fn known(&self) {
        self.client
            .send_if_modified(|c| !std::mem::replace(&mut c.knows, true));
    }

    /// Where to send a request to the client. A 2025-11-25 task's request
    /// waits until the client knows of the task (it asked about it), so it
    /// can tell which task the request belongs to; then it goes to the
    /// `tasks/result` stream open, else where messages go now.
    pub async fn request_route(&self) -> Outbox {
        if self.related_task.is_none() {
            return self.outbox();
        }
        let mut client = self.client.subscribe();
        let stream = client.wait_for(|c| c.knows).await.map(|c| c.stream.clone());
        match stream {
            Ok(stream) => stream.unwrap_or_else(|| self.outbox()),
            Err(_) => std::future::pending().await,
        }
    }

    /// `params` with the related-task `_meta` of a task's call.
    pub fn tag(&self, mut params: Value) -> Value {
        if let Some(task) = &self.related_task {
            crate::protocol::meta::tag_related_task(&mut params, task);
        }
        params
    }

    /// Whether the call runs as a task now.
    pub fn runs_as_task(&self) -> bool {
        self.as_task.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends a notification about the call.
    pub fn notify(&self, method: &str, params: Value) {
        self.outbox().notify(method, self.tag(params));
    }
}

/// A plugin call running on its own task, possibly waiting for answers.
pub struct Execution {
    /// The call.
    pub task: JoinHandle<Outcome>,
    /// Its rounds of questions.
    pub rounds: mpsc::UnboundedReceiver<Round>,
    waiting: Option<oneshot::Sender<Map<String, Value>>>,
    link: Arc<Link>,
    /// Becomes `true` when the plugin asks to go on as a task.
    detach: Option<watch::Receiver<bool>>,
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

    /// Marks the call as running as a task from now on.
    pub fn mark_task(&self) {
        self.link
            .as_task
            .store(true, std::sync::atomic::Ordering::Relaxed);
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

/// When a call that may run as a task becomes one.
#[derive(Debug, Clone, Copy)]
pub struct Escalation {
    /// Still running after this long.
    pub after: std::time::Duration,
}

impl Drop for Execution {
    fn drop(&mut self) {
        let _ = self.link.cancel.send(true);
        self.task.abort();
    }
}

/// What a sealed state is bound to: who asked, which method, with what.
pub struct Binding {
    hash: String,
    principal: Option<String>,
}

impl Binding {
    /// The binding of `method` on `target` (tool or prompt name, resource
    /// URI) with `arguments`, for `principal`.
    pub fn new(principal: Option<&str>, method: &str, target: &str, arguments: &Value) -> Self {
        let mut hash = Sha256::new();
        for part in [principal.unwrap_or(""), method, target] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hash.update(arguments.to_string().as_bytes());
        Binding {
            hash: B64.encode(hash.finalize()),
            principal: principal.map(str::to_owned),
        }
    }
}

struct Parked {
    execution: Execution,
    expires: Instant,
    /// Counts the call against its principal's waiting calls.
    _slot: WaitSlot,
}

/// The parked calls, and the key that seals their states.
pub struct Parking {
    key: ring::hmac::Key,
    parked: Mutex<HashMap<String, Parked>>,
    /// Ids of states already used, with when they expire: a state resumes
    /// its call once, never again.
    spent: Mutex<HashMap<String, u64>>,
    ttl: Duration,
    waiting: Arc<Waiting>,
}

/// Used states remembered at most (beyond, the soonest to expire are
/// forgotten first).
const MAX_SPENT: usize = 16 * MAX_PARKED;

fn invalid_state(why: &str) -> RpcError {
    RpcError::invalid_params(format!("Invalid params: invalid requestState ({why})"))
}

/// Milliseconds since the Unix epoch.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Parking {
    /// Parking for calls that wait at most `ttl` for their retry, counted
    /// against their principal's cap of `waiting` calls.
    pub fn new(ttl: Duration, waiting: Arc<Waiting>) -> Arc<Self> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).expect("the OS random source is available");
        let parking = Arc::new(Parking {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
            parked: Mutex::new(HashMap::new()),
            spent: Mutex::new(HashMap::new()),
            ttl,
            waiting,
        });
        let weak = Arc::downgrade(&parking);
        let every = (ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(parking) = weak.upgrade() else {
                    return;
                };
                parking.expire();
            }
        });
        parking
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops parked calls whose time is up (aborting them), and forgets
    /// used states that expired.
    fn expire(&self) {
        let unix = unix_now();
        self.spent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, expires| *expires >= unix);
        let now = Instant::now();
        let expired: Vec<Parked> = {
            let mut table = self.table();
            let ids: Vec<String> = table
                .iter()
                .filter(|(_, p)| p.expires <= now)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| table.remove(id)).collect()
        };
        if !expired.is_empty() {
            tracing::debug!(
                expired = expired.len(),
                "abandoned input-required calls dropped"
            );
        }
    }

    fn seal(&self, id: &str, binding: &Binding) -> String {
        let expires = unix_now() + self.ttl.as_millis() as u64;
        let payload = format!("{id}.{expires}.{}", binding.hash);
        let tag = ring::hmac::sign(&self.key, payload.as_bytes());
        format!("{}.{}", B64.encode(payload), B64.encode(tag.as_ref()))
    }

    /// The parked call a state names, after checking its seal, expiry and
    /// binding.
    fn unseal(&self, state: &str, binding: &Binding) -> Result<(String, u64), RpcError> {
        let (payload, tag) = state
            .split_once('.')
            .ok_or_else(|| invalid_state("malformed"))?;
        let payload = B64
            .decode(payload)
            .map_err(|_| invalid_state("malformed"))?;
        let tag = B64.decode(tag).map_err(|_| invalid_state("malformed"))?;
        ring::hmac::verify(&self.key, &payload, &tag)
            .map_err(|_| invalid_state("it failed its integrity check"))?;
        let payload = String::from_utf8(payload).map_err(|_| invalid_state("malformed"))?;
        let mut parts = payload.splitn(3, '.');
        let (Some(id), Some(expires), Some(bound)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid_state("malformed"));
        };
        let expires = expires
            .parse::<u64>()
            .map_err(|_| invalid_state("malformed"))?;
        if expires < unix_now() {
            return Err(invalid_state("it expired"));
        }
        if bound != binding.hash {
            return Err(invalid_state(
                "it belongs to another request, parameters or principal",
            ));
        }
        Ok((id.to_owned(), expires))
    }

    /// Records that the state of `id` was used; an error if it was before.
    fn spend(&self, id: &str, expires: u64) -> Result<(), RpcError> {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        if spent.contains_key(id) {
            return Err(invalid_state("it was used already"));
        }
        if spent.len() >= MAX_SPENT {
            let unix = unix_now();
            spent.retain(|_, e| *e >= unix);
            if spent.len() >= MAX_SPENT {
                let mut by_expiry: Vec<(u64, String)> =
                    spent.iter().map(|(id, e)| (*e, id.clone())).collect();
                by_expiry.sort();
                for (_, id) in by_expiry.iter().take(MAX_SPENT / 2) {
                    spent.remove(id);
                }
            }
        }
        spent.insert(id.to_owned(), expires);
        Ok(())
    }

    /// The parked call `state` names, given the client's new answers;
    /// `Ok(None)` when the state is genuine but the call is gone (expired
    /// or evicted), so the request runs afresh with its answers.
    pub fn resume(
        &self,
        state: &str,
        binding: &Binding,
        responses: Map<String, Value>,
    ) -> Result<Option<Execution>, RpcError> {
        let (id, expires) = self.unseal(state, binding)?;
        self.spend(&id, expires)?;
        let Some(mut parked) = self.table().remove(&id) else {
            return Ok(None);
        };
        if let Some(waiting) = parked.execution.waiting.take() {
            let _ = waiting.send(responses);
        }
        Ok(Some(parked.execution))
    }

    /// Runs `execution` for the request whose stream is `reply`, until it
    /// finishes (its outcome), asks questions (parked; an input-required
    /// result), the request is cancelled (aborted; no response), or, when
    /// `escalation` allows, the plugin asks to go on as a task or is still
    /// running after the threshold (detached).
    pub async fn drive(
        &self,
        mut execution: Execution,
        binding: Binding,
        reply: &Outbox,
        mut cancel: watch::Receiver<bool>,
        escalation: Option<Escalation>,
    ) -> Result<Driven, RpcError> {
        enum Next {
            Done(Outcome),
            Input(Round),
            Cancelled,
            Detach,
        }
        execution.link.relink(reply.clone());
        let mut detach = execution
            .detach
            .clone()
            .filter(|_| escalation.is_some())
            .unwrap_or_else(|| watch::channel(false).1);
        let threshold = escalation.map_or(Duration::MAX, |e| e.after);
        let next = tokio::select! {
            biased;
            _ = cancel.wait_for(|c| *c) => Next::Cancelled,
            Ok(_) = detach.wait_for(|d| *d) => Next::Detach,
            joined = &mut execution.task => Next::Done(joined.unwrap_or_else(|e| {
                Err(RpcError::internal(format!("the call failed: {e}")))
            })),
            Some(round) = execution.rounds.recv() => Next::Input(round),
            () = tokio::time::sleep(threshold), if escalation.is_some() => Next::Detach,
        };
        // Nothing more goes to this request's stream.
        execution.link.relink(Outbox::new().0);
        match next {
            Next::Done(outcome) => Ok(Driven::Done(outcome)),
            Next::Cancelled => Ok(Driven::Done(Ok(None))),
            Next::Detach => Ok(Driven::Detached(execution)),
            Next::Input(round) => {
                execution.waiting = Some(round.answered);
                let state = self.park(execution, &binding)?;
                Ok(Driven::Parked(json!({
                    "resultType": "input_required",
                    "inputRequests": round.requests,
                    "requestState": state,
                })))
            }
        }
    }

    fn park(&self, execution: Execution, binding: &Binding) -> Result<String, RpcError> {
        self.expire();
        let slot = self
            .waiting
            .take(binding.principal.as_deref())
            .map_err(RpcError::internal)?;
        let id = random_id();
        {
            let mut table = self.table();
            if table.len() >= MAX_PARKED {
                return Err(RpcError::internal(
                    "too many requests are waiting for input; try again later",
                ));
            }
            table.insert(
                id.clone(),
                Parked {
                    execution,
                    expires: Instant::now() + self.ttl,
                    _slot: slot,
                },
            );
            tracing::debug!(parked = table.len(), "a call waits for the client's input");
        }
        Ok(self.seal(&id, binding))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn states_are_sealed_bound_and_tamper_evident() {
        let parking = Parking::new(Duration::from_secs(60), Waiting::new(8));
        let binding = Binding::new(Some("ada"), "tools/call", "t", &json!({ "a": 1 }));
        let state = parking.seal("id1", &binding);
        assert_eq!(parking.unseal(&state, &binding).unwrap().0, "id1");
        let mut tampered = state.clone();
        tampered.push('x');
        assert!(parking.unseal(&tampered, &binding).is_err());
        assert!(parking
            .unseal(&format!("{state}-TAMPERED"), &binding)
            .is_err());
        let other = Binding::new(Some("bob"), "tools/call", "t", &json!({ "a": 1 }));
        assert!(parking.unseal(&state, &other).is_err());
        let changed = Binding::new(Some("ada"), "tools/call", "t", &json!({ "a": 2 }));
        assert!(parking.unseal(&state, &changed).is_err());
        let stranger = Parking::new(Duration::from_secs(60), Waiting::new(8));
        assert!(stranger.unseal(&state, &binding).is_err());
    }

    #[tokio::test]
    async fn a_state_is_used_once() {
        let parking = Parking::new(Duration::from_secs(60), Waiting::new(8));
        let binding = Binding::new(None, "tools/call", "t", &json!({}));
        let state = parking.seal("id1", &binding);
        // The call is gone (never parked): it runs afresh, once.
        assert!(parking
            .resume(&state, &binding, Map::new())
            .unwrap()
            .is_none());
        let again = parking.resume(&state, &binding, Map::new());
        assert!(again.is_err_and(|e| e.message.contains("used already")));
    }
}
