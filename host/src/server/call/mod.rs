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

pub use asker::{Asker, Client};
pub use context::{PluginNotices, Questions, RequestScope, TaskRole};
pub use execution::{Driven, Escalation, Execution};
pub use link::Link;
pub use parking::{Binding, Parking};
pub use rounds::{Round, Rounds};
pub use waiting::{WaitSlot, Waiting};

use super::Outbox;
use crate::protocol::{params, Method, RpcError};
use crate::runtime::LoadedPlugin;
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What serving a request comes to: its result, `Ok(None)` for no response
/// at all (it was cancelled), or a JSON-RPC error.
pub type Outcome = Result<Option<Value>, RpcError>;

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

/// The request a call comes from, as the call sees it.
pub trait Origin {
    /// Where the request's answer and the messages about it go.
    fn reply(&self) -> &Outbox;
    /// Cancelled when the request is.
    fn cancelled(&self) -> CancellationToken;
    /// The request's params.
    fn params(&self) -> &Map<String, Value>;
    /// Who the request acts for.
    fn principal(&self) -> Option<&str>;
    /// Whether the request is of the stateless revision (its calls ask
    /// with input-required rounds).
    fn is_stateless(&self) -> bool;
    /// Where calls wait for the client's retry.
    fn parking(&self) -> &Parking;
    /// How long a call waits for an answer.
    fn input_timeout(&self) -> Duration;
    /// The context of a call to `plugin`: notifications go through `link`,
    /// `cancelled` stops it, `questions` says how it asks the client.
    fn context(
        &self,
        plugin: &LoadedPlugin,
        link: Arc<Link>,
        cancelled: CancellationToken,
        questions: Questions,
        task_role: TaskRole,
    ) -> Arc<RequestScope>;
    /// The context of a call within the request, asking the client as a
    /// handshake revision allows (requests on the request's own stream);
    /// on the stateless revision it cannot ask.
    fn inline_context(&self, plugin: &LoadedPlugin) -> Arc<RequestScope>;
}

/// Runs a plugin call (`call`, given its context) for `request`. On the
/// handshake revisions it runs within the request, and its questions are
/// requests to the client. On 2026-07-28 the call runs on a tokio task of
/// its own and is parked when it asks (the request is answered with an
/// input-required result, and the client's retry with `inputResponses`
/// and `requestState` resumes it); with `escalation`, it is detached when
/// the plugin asks to go on as a task or runs past the threshold.
pub async fn run<F, Fut>(
    request: &(dyn Origin + Sync),
    plugin: &LoadedPlugin,
    target: Target<'_>,
    escalation: Option<Escalation>,
    call: F,
) -> Result<Driven, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    if !request.is_stateless() {
        return Ok(Driven::Done(call(request.inline_context(plugin)).await));
    }
    let binding = Binding::new(
        request.principal(),
        target.method.as_str(),
        target.name,
        target.arguments,
    );
    let may_detach = escalation.is_some();
    let execution = start_or_resume(request, plugin, &binding, may_detach, call)?;
    request
        .parking()
        .drive(
            execution,
            binding,
            request.reply(),
            request.cancelled(),
            escalation,
        )
        .await
}

/// The parked call the request's `requestState` resumes, given its
/// `inputResponses`; else the call, started afresh with those answers.
fn start_or_resume<F, Fut>(
    request: &(dyn Origin + Sync),
    plugin: &LoadedPlugin,
    binding: &Binding,
    may_detach: bool,
    call: F,
) -> Result<Execution, RpcError>
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: Future<Output = Outcome> + Send + 'static,
{
    // Present means present here: a null is refused, not taken as absent.
    let params = request.params();
    let responses = match params.get("inputResponses") {
        None => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => return Err(params::invalid("\"inputResponses\" must be an object")),
    };
    if let Some(state) = params.get("requestState") {
        let state = state
            .as_str()
            .ok_or_else(|| params::invalid("\"requestState\" must be a string"))?;
        if let Some(parked) = request
            .parking()
            .resume(state, binding, responses.clone())?
        {
            return Ok(parked);
        }
    }
    let (rounds, needs) = Rounds::new(responses, request.input_timeout());
    let (link, cancelled) = Link::new(request.reply().clone());
    let (detach, task_role) = if may_detach {
        let (wanted, detach) = watch::channel(false);
        (Some(detach), TaskRole::Possible(wanted))
    } else {
        (None, TaskRole::Never)
    };
    let questions = Questions::Rounds(rounds);
    let context = request.context(plugin, link.clone(), cancelled, questions, task_role);
    Ok(Execution::start(call(context), needs, link, detach))
}
