//! One plugin call, from the request that starts it until it is answered
//! or goes on as a task: the call's context ([`RequestScope`]:
//! notifications, cancellation, questions), the call on a tokio task of
//! its own ([`Execution`]), input-required rounds and parking between
//! them ([`Parking`]), and escalation ([`Driven::Detached`], which the
//! task store adopts). Knows nothing of methods or of the task store.

mod asker;
mod context;
mod execution;
pub(super) mod input;
mod link;
pub mod outcome;
mod parking;
mod rounds;
mod waiting;

pub use asker::Asker;
pub use context::{Questions, RequestScope, TaskRole};
pub use execution::{Driven, Escalation, Execution};
pub use link::Link;
pub use parking::{Binding, Parking};
pub use rounds::{Round, Rounds};
pub use waiting::Waiting;

use super::request::Request;
use super::session::Era;
use super::Outcome;
use crate::protocol::{meta, Method, RpcError};
use crate::runtime::{types, LoadedPlugin};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

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
pub fn context(
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

/// Runs a plugin call (`call`, given its context) for `request`. On the
/// handshake revisions it runs within the request, and its questions are
/// requests to the client. On 2026-07-28 the call runs on a tokio task of
/// its own and is parked when it asks (the request is answered with an
/// input-required result, and the client's retry with `inputResponses`
/// and `requestState` resumes it); with `escalation`, it is detached when
/// the plugin asks to go on as a task or runs past the threshold.
pub async fn run<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    target: Target<'_>,
    escalation: Option<Escalation>,
    call: F,
) -> Result<Driven, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    if !request.era.is_modern() {
        return Ok(Driven::Done(call(inline_context(request, plugin)).await));
    }
    let conn = request.conn;
    let binding = Binding::new(
        conn.principal.as_deref(),
        target.method.as_str(),
        target.name,
        target.arguments,
    );
    let may_detach = escalation.is_some();
    let execution = start_or_resume(request, plugin, &binding, may_detach, call)?;
    conn.server
        .parking
        .drive(
            execution,
            binding,
            request.reply,
            request.cancel.clone(),
            escalation,
        )
        .await
}

/// The parked call the request's `requestState` resumes, given its
/// `inputResponses`; else the call, started afresh with those answers.
fn start_or_resume<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    binding: &Binding,
    may_detach: bool,
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
    let (detach, task_role) = if may_detach {
        let (wanted, detach) = watch::channel(false);
        (Some(detach), TaskRole::Possible(wanted))
    } else {
        (None, TaskRole::Never)
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
