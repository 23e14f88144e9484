//! One tester for every way a call runs: the same closure plugin (no
//! wasm) run within a handshake request, as a requested 2025-11-25 task,
//! within a stateless request (answering its input-required rounds by
//! retrying), and within a stateless request that may become a task; each
//! way must come to the same observable outcome.

use super::*;
use crate::runtime::host_types::{Answer, InputError, Question};
use crate::runtime::{BoxFuture, CallContext};
use crate::server::OutboxReceiver;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::oneshot;

/// A plugin's behaviour: what it does with its context.
type Behaviour = fn(Arc<RequestScope>) -> BoxFuture<Ended>;

/// The ways a call runs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    Handshake,
    HandshakeTask,
    Stateless,
    StatelessMayBecomeTask,
}

const EVERY_WAY: [Way; 4] = [
    Way::Handshake,
    Way::HandshakeTask,
    Way::Stateless,
    Way::StatelessMayBecomeTask,
];

/// The connection of a test: answers `roots/list` at once, or never.
struct TestClient {
    answers: bool,
    waiting: Arc<Waiting>,
    unanswered: Mutex<Vec<oneshot::Sender<Result<Value, Value>>>>,
    forgotten: Mutex<Vec<Value>>,
}

impl Client for TestClient {
    fn wait_slot(&self) -> Result<WaitSlot, String> {
        self.waiting.take(None)
    }

    fn request(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
    ) -> (Value, oneshot::Receiver<Result<Value, Value>>) {
        let id = json!(crate::protocol::random_id());
        out.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let (tx, rx) = oneshot::channel();
        if self.answers {
            let _ = tx.send(Ok(roots_answer()));
        } else {
            self.unanswered.lock().push(tx);
        }
        (id, rx)
    }

    fn forget(&self, id: &Value) {
        self.forgotten.lock().push(id.clone());
    }
}

fn roots_answer() -> Value {
    json!({ "roots": [{ "uri": "file:///data", "name": "data" }] })
}

struct Quiet;
impl PluginNotices for Quiet {
    fn relist(self: Arc<Self>, _: &str) {}
    fn resource_updated(&self, _: &str, _: String) {}
}

/// What a call came to, as its client sees it.
#[derive(Debug)]
struct Observed {
    /// The final reply (after every retry, or the task's end).
    reply: Reply,
    /// Notifications and requests the client got, by method.
    methods: Vec<String>,
    /// Input-required rounds the client answered by retrying.
    retries: usize,
}

struct Harness {
    client: Arc<TestClient>,
    parking: Arc<Parking>,
    cancel: CancellationToken,
    timeout: Duration,
}

impl Harness {
    fn new(answers: bool, timeout: Duration) -> Self {
        let waiting = Waiting::new(8);
        Harness {
            client: Arc::new(TestClient {
                answers,
                waiting: waiting.clone(),
                unanswered: Mutex::default(),
                forgotten: Mutex::default(),
            }),
            parking: Parking::new(Duration::from_secs(60), waiting),
            cancel: CancellationToken::new(),
            timeout,
        }
    }

    fn request(&self, way: Way, out: &Outbox, retry: Option<(Value, Value)>) -> CallRequest {
        let asking = match way {
            Way::Handshake | Way::HandshakeTask => Asking::Requests {
                client: Arc::downgrade(&self.client) as Weak<dyn Client>,
                session: out.clone(),
            },
            Way::Stateless | Way::StatelessMayBecomeTask => {
                let (responses, state) = retry.unzip();
                Asking::Rounds(Retry {
                    parking: self.parking.clone(),
                    responses,
                    state,
                })
            }
        };
        CallRequest {
            principal: None,
            tenant: crate::tenant::Tenant::local(),
            client_capabilities: json!({ "roots": {} }),
            client_roots: None,
            log_level: Some(LogLevel::Debug),
            progress_token: Some(json!("p")),
            cancelled: self.cancel.clone(),
            reply: out.clone(),
            notices: Arc::new(Quiet),
            input_timeout: self.timeout,
            asking,
            tool_caller: None,
        }
    }

    /// Runs `behaviour` the `way` given, as a client would: retrying with
    /// the answers to input-required rounds, and driving a task as its
    /// supervisor would (answering its rounds), to the end.
    async fn observe(&self, way: Way, behaviour: Behaviour) -> Observed {
        let (out, mut received) = Outbox::new();
        let arguments = json!({});
        let target = || Target {
            method: Method::CallTool,
            name: "t",
            arguments: &arguments,
        };
        let run = || match way {
            Way::Handshake | Way::Stateless => Run::Inline,
            Way::HandshakeTask => Run::AsTask {
                id: "task-1".into(),
            },
            Way::StatelessMayBecomeTask => Run::MayBecomeTask {
                after: Duration::from_secs(3600),
            },
        };
        let mut retries = 0;
        let mut reply = super::run(
            self.request(way, &out, None),
            "p",
            target(),
            run(),
            behaviour,
        )
        .await
        .expect("the call runs");
        let reply = loop {
            reply = match reply {
                Reply::InputRequired(input) => {
                    retries += 1;
                    assert!(retries < 10, "too many rounds");
                    let responses: Map<String, Value> = input
                        .requests
                        .keys()
                        .map(|k| (k.clone(), roots_answer()))
                        .collect();
                    let retry = Some((Value::Object(responses), json!(input.state)));
                    let asked = self.request(way, &out, retry);
                    super::run(asked, "p", target(), run(), behaviour)
                        .await
                        .expect("the retry runs")
                }
                Reply::BecameTask(execution) => supervise(execution).await,
                done => break done,
            };
        };
        drop(out);
        Observed {
            reply,
            methods: methods(&mut received).await,
            retries,
        }
    }
}

/// Drives a task's call to its end as the task supervisor does: answers
/// its rounds at once.
async fn supervise(mut execution: Execution) -> Reply {
    // The client asked about the task (a 2025-11-25 task's questions wait
    // for that).
    execution.link().known();
    loop {
        tokio::select! {
            biased;
            ended = &mut execution.task => return ended.into(),
            Some(event) = execution.events.recv() => {
                if let CallEvent::Asked(round) = event {
                    let answers = round.requests.keys().map(|k| (k.clone(), roots_answer())).collect();
                    let _ = round.answered.send(answers);
                }
            }
        }
    }
}

async fn methods(received: &mut OutboxReceiver) -> Vec<String> {
    let mut methods = Vec::new();
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(20), received.recv()).await
    {
        if let Some(method) = message.json().and_then(|m| m["method"].as_str()) {
            methods.push(method.to_owned());
        }
    }
    methods
}

fn complete(value: Value) -> BoxFuture<Ended> {
    Box::pin(async move { Ended::Outcome(Ok(super::Done::Result(value))) })
}

fn logs_and_progress(scope: Arc<RequestScope>) -> BoxFuture<Ended> {
    scope.log(crate::runtime::types::LogLevel::Info, "hello".into());
    scope.progress(1.0, Some(2.0), None);
    complete(json!({ "ok": true }))
}

fn asks_for_roots(scope: Arc<RequestScope>) -> BoxFuture<Ended> {
    Box::pin(async move {
        let answers = scope.ask(vec![("r".into(), Question::Roots)]).await;
        let roots = match answers.into_iter().next() {
            Some(Ok(Answer::Roots(roots))) => roots.len() as i64,
            Some(Err(InputError::Timeout)) => -1,
            _ => -2,
        };
        Ended::Outcome(Ok(super::Done::Result(json!({ "roots": roots }))))
    })
}

fn goes_on_as_task(scope: Arc<RequestScope>) -> BoxFuture<Ended> {
    scope.continue_as_task();
    asks_for_roots(scope)
}

fn panics(_: Arc<RequestScope>) -> BoxFuture<Ended> {
    Box::pin(async { panic!("boom") })
}

fn crashes(_: Arc<RequestScope>) -> BoxFuture<Ended> {
    Box::pin(async { Ended::Crashed("the plugin ran out of time".into()) })
}

fn waits_until_cancelled(scope: Arc<RequestScope>) -> BoxFuture<Ended> {
    Box::pin(async move {
        scope.cancelled().await;
        Ended::Outcome(Ok(super::Done::NoResponse))
    })
}

fn completed(observed: &Observed) -> &Value {
    match &observed.reply {
        Reply::Complete(value) => value,
        other => panic!("not complete: {other:?}"),
    }
}

#[tokio::test]
async fn logs_and_progress_reach_the_client_every_way() {
    for way in EVERY_WAY {
        let observed = Harness::new(true, Duration::from_secs(5))
            .observe(way, logs_and_progress)
            .await;
        assert_eq!(completed(&observed), &json!({ "ok": true }), "{way:?}");
        assert_eq!(
            observed.methods,
            ["notifications/message", "notifications/progress"],
            "{way:?}"
        );
    }
}

#[tokio::test]
async fn a_question_is_answered_every_way() {
    for way in EVERY_WAY {
        let observed = Harness::new(true, Duration::from_secs(5))
            .observe(way, asks_for_roots)
            .await;
        assert_eq!(completed(&observed), &json!({ "roots": 1 }), "{way:?}");
        // Asked as a request on the handshake revisions, as a round (a
        // retry) on the stateless one.
        let (requests, retries) = match way {
            Way::Handshake | Way::HandshakeTask => (vec!["roots/list".to_owned()], 0),
            Way::Stateless | Way::StatelessMayBecomeTask => (vec![], 1),
        };
        assert_eq!(observed.methods, requests, "{way:?}");
        assert_eq!(observed.retries, retries, "{way:?}");
    }
}

#[tokio::test]
async fn going_on_as_a_task_is_the_same_answer_every_way() {
    for way in EVERY_WAY {
        let observed = Harness::new(true, Duration::from_secs(5))
            .observe(way, goes_on_as_task)
            .await;
        assert_eq!(completed(&observed), &json!({ "roots": 1 }), "{way:?}");
        // Only a call that may become a task asks as one: its round goes
        // to the supervisor, not to a retry.
        let retries = usize::from(way == Way::Stateless);
        assert_eq!(observed.retries, retries, "{way:?}");
    }
}

#[tokio::test]
async fn a_panic_fails_the_call_every_way() {
    for way in EVERY_WAY {
        let observed = Harness::new(true, Duration::from_secs(5))
            .observe(way, panics)
            .await;
        match observed.reply {
            Reply::Failed(error) => {
                assert_eq!(error.code, crate::protocol::ErrorCode::InternalError);
                assert!(
                    error.message.contains("panicked: boom"),
                    "{way:?}: {error:?}"
                );
            }
            other => panic!("{way:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_crash_is_left_to_whoever_renders_it_every_way() {
    for way in EVERY_WAY {
        let observed = Harness::new(true, Duration::from_secs(5))
            .observe(way, crashes)
            .await;
        assert!(
            matches!(&observed.reply, Reply::Crashed(why) if why.contains("out of time")),
            "{way:?}: {:?}",
            observed.reply
        );
    }
}

#[tokio::test]
async fn an_unanswered_question_times_out_where_the_call_keeps_running() {
    // On the stateless revision an unanswered round parks the call (the
    // client's retry, or its expiry, ends it): no time-out inside the call.
    for way in [Way::Handshake, Way::HandshakeTask] {
        let harness = Harness::new(false, Duration::from_millis(50));
        let observed = harness.observe(way, asks_for_roots).await;
        assert_eq!(completed(&observed), &json!({ "roots": -1 }), "{way:?}");
        // The question was sent, then withdrawn.
        assert_eq!(
            observed.methods,
            ["roots/list", "notifications/cancelled"],
            "{way:?}"
        );
        assert_eq!(harness.client.forgotten.lock().len(), 1, "{way:?}");
    }
}

#[tokio::test]
async fn a_cancelled_request_sends_nothing() {
    for way in [Way::Handshake, Way::Stateless, Way::StatelessMayBecomeTask] {
        let harness = Harness::new(true, Duration::from_secs(5));
        let cancel = harness.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cancel.cancel();
        });
        let observed = harness.observe(way, waits_until_cancelled).await;
        assert!(matches!(observed.reply, Reply::Nothing), "{way:?}");
    }
}

#[tokio::test]
async fn a_task_reports_its_waits_and_starts_only_when_driven() {
    let harness = Harness::new(false, Duration::from_secs(5));
    let (out, _received) = Outbox::new();
    let arguments = json!({});
    let target = Target {
        method: Method::CallTool,
        name: "t",
        arguments: &arguments,
    };
    let run = Run::AsTask { id: "t1".into() };
    let reply = super::run(
        harness.request(Way::HandshakeTask, &out, None),
        "p",
        target,
        run,
        asks_for_roots,
    )
    .await
    .unwrap();
    let Reply::BecameTask(mut execution) = reply else {
        panic!("not a task: {reply:?}");
    };
    // Not polled yet: it has not started.
    assert!(execution.events.try_recv().is_err());
    let poll = tokio::time::timeout(Duration::from_millis(50), &mut execution.task).await;
    assert!(poll.is_err(), "the question is never answered");
    // It waits for an answer, but a 2025-11-25 task's question is sent only
    // once the client knows of the task.
    assert!(matches!(
        execution.events.try_recv(),
        Ok(CallEvent::Waiting(true))
    ));
    assert!(harness.client.unanswered.lock().is_empty());
    execution.link().known();
    let poll = tokio::time::timeout(Duration::from_millis(50), &mut execution.task).await;
    assert!(poll.is_err(), "the question is never answered");
    assert_eq!(harness.client.unanswered.lock().len(), 1);
    // Dropping the call withdraws its question.
    drop(execution);
    assert_eq!(harness.client.forgotten.lock().len(), 1);
}
