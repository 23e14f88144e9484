//! One plugin call, from the request that starts it until it is answered
//! or goes on as a task. The only door for a plugin call: a request value
//! in ([`CallRequest`], how it runs: [`Run`]), one typed [`Reply`] out.
//! Inside: the call's context ([`RequestScope`]: notifications,
//! cancellation, questions), the call as a future its driver polls
//! ([`Execution`]), input-required rounds and parking between them
//! ([`Parking`]), and what a running call tells its driver ([`CallEvent`]:
//! a task's supervisor hears them too). Knows nothing of methods,
//! connections or the task store.

mod asker;
mod context;
mod events;
mod execution;
pub(super) mod input;
mod link;
pub(super) mod outcome;
mod parking;
mod reply;
mod rounds;
#[cfg(test)]
mod tests;
mod tool;
mod waiting;
pub(crate) mod wire;

pub(super) use asker::{Asker, Client};
pub(super) use context::{PluginNotices, Questions, RequestScope, TaskRole, ToolCaller};
pub(super) use events::{CallEvent, Events};
pub(super) use execution::{Ended, Execution};
pub(super) use link::Link;
pub(super) use parking::{Binding, Parking};
pub(super) use reply::{InputRequired, Reply};
pub(super) use rounds::{Round, Rounds};
pub(super) use tool::{call_plugin, tool_answer};
pub(super) use waiting::{WaitSlot, Waiting};

use super::Outbox;
use crate::protocol::{params, Method, RpcError};
use crate::runtime::types::LogLevel;
use serde_json::{Map, Value};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What serving a request comes to: `Done`, or a JSON-RPC error.
pub type Outcome = Result<Done, RpcError>;

/// How a request that did not fail ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Done {
    /// Its result, to send.
    Result(Value),
    /// No response at all (it was cancelled).
    NoResponse,
}

/// What a call is about: the method, the tool or prompt name or resource
/// URI, and the arguments (what an input-required state is bound to).
pub(super) struct Target<'a> {
    /// The method of the request.
    pub method: Method,
    /// The tool or prompt name, or the resource URI.
    pub name: &'a str,
    /// The arguments.
    pub arguments: &'a Value,
}

/// A plugin call as its request asks for it: everything the call needs to
/// know of the request, as plain values.
pub(super) struct CallRequest {
    /// Who the request acts for.
    pub principal: Option<String>,
    /// Whose plugin data it reaches.
    pub tenant: crate::tenant::Tenant,
    /// The capabilities the client declared.
    pub client_capabilities: Value,
    /// The client's roots, when it declared them.
    pub client_roots: Option<Arc<Vec<PathBuf>>>,
    /// The lowest level sent as `notifications/message`; `None` sends none.
    pub log_level: Option<LogLevel>,
    /// The request's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// Cancelled when the request is.
    pub cancelled: CancellationToken,
    /// Where the request's answer and the messages about it go.
    pub reply: Outbox,
    /// Where the plugin's change notices go.
    pub notices: Arc<dyn PluginNotices>,
    /// How long a call waits for an answer.
    pub input_timeout: Duration,
    /// How the call asks the client.
    pub asking: Asking,
    /// How the plugin calls tools, when it was granted that (code mode).
    pub tool_caller: Option<Arc<dyn ToolCaller>>,
}

/// The request of a call no client waits on (a task's call run again on
/// another host): as `principal`, confined to `roots` when given, with no
/// client to ask (a question fails at once) and nobody to hear its
/// progress or its log.
pub(super) fn headless(
    notices: Arc<dyn PluginNotices>,
    input_timeout: Duration,
    principal: Option<String>,
    tenant: crate::tenant::Tenant,
    roots: Option<Vec<PathBuf>>,
) -> CallRequest {
    let nobody: Weak<dyn Client> = Weak::<NoClient>::new();
    CallRequest {
        principal,
        tenant,
        client_capabilities: Value::Object(Map::new()),
        client_roots: roots.map(Arc::new),
        log_level: None,
        progress_token: None,
        cancelled: CancellationToken::new(),
        reply: Outbox::discard(),
        notices,
        input_timeout,
        asking: Asking::Requests {
            client: nobody,
            session: Outbox::discard(),
        },
        tool_caller: None,
    }
}

/// The client of a headless call: there is none, so a [`Weak`] to it
/// never upgrades and none of this is reached.
struct NoClient;

impl Client for NoClient {
    fn wait_slot(&self) -> Result<WaitSlot, String> {
        Err("no client waits on this call".into())
    }

    fn request(
        &self,
        _out: &Outbox,
        _method: &str,
        _params: Value,
    ) -> (Value, tokio::sync::oneshot::Receiver<Result<Value, Value>>) {
        // The sender is dropped: the question is answered as gone.
        (Value::Null, tokio::sync::oneshot::channel().1)
    }

    fn forget(&self, _id: &Value) {}
}

/// How a call asks the client, by the request's revision.
pub(super) enum Asking {
    /// Handshake revisions: requests on the connection.
    Requests {
        /// The connection.
        client: Weak<dyn Client>,
        /// The session's own stream (where a task's messages go when no
        /// `tasks/result` stream is open).
        session: Outbox,
    },
    /// 2026-07-28: input-required rounds, parked between retries.
    Rounds(Retry),
    /// Not at all, for this reason (a tool a plugin called).
    Never(&'static str),
}

/// What a 2026-07-28 request brings to its call's rounds.
pub(super) struct Retry {
    /// Where calls wait for the client's retry.
    pub parking: Arc<Parking>,
    /// The request's `inputResponses`, if any (checked by the call).
    pub responses: Option<Value>,
    /// The request's `requestState`, if any (checked by the call).
    pub state: Option<Value>,
}

/// How a call runs.
pub(super) enum Run {
    /// Within its request.
    Inline,
    /// Within its 2026-07-28 request, going on as a task when the plugin
    /// asks to or is still running after `after`.
    MayBecomeTask {
        /// The threshold.
        after: Duration,
    },
    /// As the 2025-11-25 task `id` the client asked for: not started; the
    /// reply hands it over ([`Reply::BecameTask`]).
    AsTask {
        /// The task's id.
        id: String,
    },
}

/// Runs `call` (a call of `plugin`, given its context) for `request` as
/// `run` says. On the handshake revisions it runs within the request, and
/// its questions are requests to the client. On 2026-07-28 it is parked
/// when it asks (the reply is input-required, and the client's retry with
/// `inputResponses` and `requestState` resumes it).
pub(super) async fn run<F, Fut>(
    request: CallRequest,
    plugin: &str,
    target: Target<'_>,
    run: Run,
    call: F,
) -> Result<Reply, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Ended> + Send + 'static,
{
    match (&request.asking, run) {
        (Asking::Requests { client, session }, Run::AsTask { id }) => {
            let (link, cancelled) = Link::for_task(session.clone(), &id);
            let (events, heard) = Events::new();
            let asker = Asker::new(
                client.clone(),
                link.clone(),
                request.input_timeout,
                Some(events),
            );
            let questions = Questions::Requests(asker);
            let context = RequestScope::new(
                &request,
                plugin,
                link.clone(),
                cancelled,
                questions,
                TaskRole::Task,
            );
            Ok(Reply::BecameTask(Execution::new(
                call(context),
                heard,
                link,
            )))
        }
        (Asking::Requests { .. } | Asking::Never(_), _) => {
            let call = call(inline_scope(&request, plugin));
            Ok(execution::catching_panics(call).await.into())
        }
        (Asking::Rounds(_), Run::AsTask { .. }) => Err(RpcError::internal(
            "a requested task belongs to the handshake revisions",
        )),
        (Asking::Rounds(retry), run) => {
            let binding = Binding::new(
                request.principal.as_deref(),
                target.method.as_str(),
                target.name,
                target.arguments,
            );
            let escalation = match run {
                Run::MayBecomeTask { after } => Some(after),
                _ => None,
            };
            let may_become_task = escalation.is_some();
            let execution =
                start_or_resume(&request, retry, plugin, &binding, may_become_task, call)?;
            retry
                .parking
                .drive(
                    execution,
                    binding,
                    &request.reply,
                    request.tool_caller.clone(),
                    request.cancelled.clone(),
                    escalation,
                )
                .await
        }
    }
}

/// The context of a call within its request: on a handshake revision it
/// asks the client with requests on the request's own stream; on the
/// stateless revision it cannot ask.
pub(super) fn inline_scope(request: &CallRequest, plugin: &str) -> Arc<RequestScope> {
    let (link, _) = Link::new(request.reply.clone());
    let questions = match &request.asking {
        Asking::Requests { client, .. } => Questions::Requests(Asker::new(
            client.clone(),
            link.clone(),
            request.input_timeout,
            None,
        )),
        Asking::Rounds(_) => Questions::Refused("this request cannot ask the client for input"),
        Asking::Never(why) => Questions::Refused(why),
    };
    RequestScope::new(
        request,
        plugin,
        link,
        request.cancelled.clone(),
        questions,
        TaskRole::Never,
    )
}

/// The parked call the request's `requestState` resumes, given its
/// `inputResponses`; else the call, started afresh with those answers.
fn start_or_resume<F, Fut>(
    request: &CallRequest,
    retry: &Retry,
    plugin: &str,
    binding: &Binding,
    may_become_task: bool,
    call: F,
) -> Result<Execution, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Ended> + Send + 'static,
{
    // Present means present here: a null is refused, not taken as absent.
    let responses = match &retry.responses {
        None => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => return Err(params::invalid("\"inputResponses\" must be an object")),
    };
    if let Some(state) = &retry.state {
        let state = state
            .as_str()
            .ok_or_else(|| params::invalid("\"requestState\" must be a string"))?;
        if let Some(parked) = retry.parking.resume(state, binding, responses.clone())? {
            return Ok(parked);
        }
    }
    let (events, heard) = Events::new();
    let rounds = Rounds::new(responses, request.input_timeout, events.clone());
    let (link, cancelled) = Link::new(request.reply.clone());
    let task_role = if may_become_task {
        TaskRole::Possible {
            events,
            asked: AtomicBool::new(false),
        }
    } else {
        TaskRole::Never
    };
    let questions = Questions::Rounds(rounds);
    let context = RequestScope::new(
        request,
        plugin,
        link.clone(),
        cancelled,
        questions,
        task_role,
    );
    Ok(Execution::new(call(context), heard, link))
}
