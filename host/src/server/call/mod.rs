//! One plugin call's whole life, from the request that starts it to its
//! answer: the [`Plan`] (within the request, input-required rounds, a
//! requested task, or escalation to a task), the call's context
//! ([`RequestScope`]: notifications, cancellation, questions), parking
//! between rounds ([`Parking`]), and the hand-over of a running call to
//! the task store ([`super::tasks::Tasks::launch`]).

mod asker;
mod context;
mod execution;
pub(super) mod input;
mod link;
pub mod outcome;
mod parking;
mod plan;
mod rounds;
mod waiting;

pub use asker::Asker;
pub use context::{Questions, RequestScope, TaskRole};
pub use execution::{Driven, Escalation, Execution};
pub use link::Link;
pub use parking::{Binding, Parking};
pub use plan::{plan_tool, Plan};
pub use rounds::{Round, Rounds};
pub use waiting::{Waiting, DEFAULT_MAX_WAITING_PER_PRINCIPAL};

use super::methods::Request;
use super::session::Era;
use super::tasks::{NewTask, Wire};
use super::Outcome;
use crate::protocol::{meta, Method, RpcError};
use crate::runtime::{types, LoadedPlugin};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// What a call is about: the method, the tool or prompt name or resource
/// URI, and the arguments (what an input-required state is bound to).
pub struct Target<'a> {
    /// The method of the request.
    pub method: Method,
    /// The tool or prompt name, or the resource URI.
    pub name: &'a str,
    /// The arguments.
    pub arguments: &'a Value,
}

/// The call context of a request to `plugin`: notifications go through
/// `link`, `cancelled` stops it, `questions` says how it asks the client.
fn context(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    link: Arc<Link>,
    cancelled: watch::Receiver<bool>,
    questions: Questions,
    task_role: TaskRole,
) -> Arc<RequestScope> {
    let Request {
        conn, params, era, ..
    } = request;
    let log_level = match era {
        Era::Modern { log_level, .. } => *log_level,
        Era::Legacy { .. } => Some(conn.session().log_level.unwrap_or(types::LogLevel::Debug)),
    };
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    let (client_roots, client_capabilities) = match era {
        Era::Legacy { .. } => {
            let session = conn.session();
            (
                session.client_roots.clone(),
                session.client_capabilities.clone(),
            )
        }
        Era::Modern { .. } => (
            None,
            params
                .get("_meta")
                .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
                .cloned()
                .unwrap_or_else(|| json!({})),
        ),
    };
    Arc::new(RequestScope {
        plugin: plugin.name().to_owned(),
        client_roots,
        link,
        log_level,
        progress_token,
        cancelled,
        server: conn.server.clone(),
        client_capabilities,
        missing_capability: Default::default(),
        questions,
        task_role,
    })
}

/// The context of a call within its request that asks the client as a
/// handshake revision allows: requests on the request's own stream. On
/// 2026-07-28 it cannot ask (see [`run`] for the calls that can).
pub fn inline_context(request: &Request<'_>, plugin: &LoadedPlugin) -> Arc<RequestScope> {
    let (link, _) = Link::new(request.reply.clone());
    let questions = if request.era.is_modern() {
        Questions::Refused("this request cannot ask the client for input")
    } else {
        Questions::Requests(Asker {
            conn: Arc::downgrade(request.conn),
            link: link.clone(),
            timeout: request.conn.server.options.input_timeout,
            on_wait: None,
        })
    };
    context(
        request,
        plugin,
        link,
        request.cancel.clone(),
        questions,
        TaskRole::Never,
    )
}

/// Runs a plugin call (`call`, given its context) as `plan` says. On the
/// handshake revisions its questions are requests to the client. On
/// 2026-07-28 the call runs on a tokio task of its own and is parked when
/// it asks; the request is answered with an input-required result, and
/// the client's retry (`inputResponses`, `requestState`) resumes it.
pub async fn run<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    target: Target<'_>,
    plan: Plan,
    call: F,
) -> Outcome
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    if plan == Plan::RequestedTask {
        return start_requested_task(request, plugin, target.name, call);
    }
    if !request.era.is_modern() {
        return call(inline_context(request, plugin)).await;
    }
    let conn = request.conn;
    let binding = Binding::new(
        conn.principal.as_deref(),
        target.method.as_str(),
        target.name,
        target.arguments,
    );
    let execution = start_or_resume(request, plugin, &binding, plan, call)?;
    let escalation = matches!(plan, Plan::MayBecomeTask { .. }).then(|| Escalation {
        after: conn.server.tasks.options().after,
    });
    let driven = conn
        .server
        .parking
        .drive(
            execution,
            binding,
            request.reply,
            request.cancel.clone(),
            escalation,
        )
        .await?;
    answer(request, target.name, plan, driven)
}

/// The parked call the request's `requestState` resumes, given its
/// `inputResponses`; else the call, started afresh with those answers.
fn start_or_resume<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    binding: &Binding,
    plan: Plan,
    call: F,
) -> Result<Execution, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    let server = &request.conn.server;
    let responses = match request.params.get("inputResponses") {
        None => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: \"inputResponses\" must be an object",
            ))
        }
    };
    if let Some(state) = request.params.get("requestState") {
        let state = state.as_str().ok_or_else(|| {
            RpcError::invalid_params("Invalid params: \"requestState\" must be a string")
        })?;
        if let Some(parked) = server.parking.resume(state, binding, responses.clone())? {
            return Ok(parked);
        }
    }
    let (rounds, needs) = Rounds::new(responses, server.options.input_timeout);
    let (link, cancelled) = Link::new(request.reply.clone());
    let (detach, task_role) = match plan {
        Plan::MayBecomeTask { .. } => {
            let (wanted, detach) = watch::channel(false);
            (Some(detach), TaskRole::Possible(wanted))
        }
        _ => (None, TaskRole::Never),
    };
    let questions = Questions::Rounds(rounds);
    let context = context(
        request,
        plugin,
        link.clone(),
        cancelled,
        questions,
        task_role,
    );
    Ok(Execution::start(call(context), needs, link, detach))
}

/// The answer to a 2026-07-28 request whose call was driven to `driven`:
/// its result, an input-required result, or a task (the task store adopts
/// a call that goes on).
fn answer(request: &Request<'_>, tool: &str, plan: Plan, driven: Driven) -> Outcome {
    let conn = request.conn;
    let new_task = || NewTask {
        owner: conn.task_owner.clone(),
        wire: Wire::V2,
        target: tool.to_owned(),
        ttl_ms: None,
    };
    let tasks = &conn.server.tasks;
    let record = match driven {
        Driven::Parked(result) => return Ok(Some(result)),
        Driven::Done(Ok(None)) => return Ok(None),
        Driven::Done(outcome) if plan != (Plan::MayBecomeTask { required: true }) => {
            return outcome
        }
        // A tool that only runs as a task answers with one, even when it
        // finished at once.
        Driven::Done(outcome) => tasks.finished(new_task(), outcome)?,
        Driven::Detached(execution) => {
            execution.mark_task();
            let live = tasks.prepare(Wire::V2, None, conn.task_owner.clone());
            tasks.launch(live, new_task(), || execution)?
        }
    };
    let mut created = tasks.summary(&record, Wire::V2);
    created.insert("resultType".into(), json!("task"));
    Ok(Some(Value::Object(created)))
}

/// Starts a call the client asked to run as a 2025-11-25 task: stored,
/// then started, and answered at once with the task. Its questions go to
/// the session (or to a `tasks/result` stream while one is open), tagged
/// with the task.
fn start_requested_task<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    target: &str,
    call: F,
) -> Outcome
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    let conn = request.conn;
    let tasks = &conn.server.tasks;
    let ttl_ms = request
        .params
        .get("task")
        .and_then(|t| t.get("ttl"))
        .and_then(Value::as_u64);
    let live = tasks.prepare(Wire::V1, Some(conn.out.clone()), conn.task_owner.clone());
    let (link, cancelled) = Link::for_task(conn.out.clone(), live.id());
    live.set_link(link.clone());
    let questions = Questions::Requests(Asker {
        conn: Arc::downgrade(conn),
        link: link.clone(),
        timeout: conn.server.options.input_timeout,
        on_wait: Some(tasks.waiting_hook(&live)),
    });
    let context = context(
        request,
        plugin,
        link.clone(),
        cancelled,
        questions,
        TaskRole::Task,
    );
    let new = NewTask {
        owner: conn.task_owner.clone(),
        wire: Wire::V1,
        target: target.to_owned(),
        ttl_ms,
    };
    let record = tasks.launch(live, new, move || {
        // No rounds: this wire asks with requests.
        let (_, rounds) = mpsc::unbounded_channel();
        Execution::start(call(context), rounds, link, None)
    })?;
    Ok(Some(json!({ "task": tasks.summary(&record, Wire::V1) })))
}
