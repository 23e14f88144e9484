//! The MCP methods, one file per feature. Each parses its params, looks
//! up what they name, runs the call (through [`super::call`]) and renders
//! the result. [`handle`] checks that the method exists on the request's
//! revision and dispatches.

mod completion;
pub(super) mod lifecycle;
mod plan;
mod prompts;
mod resources;
mod skills;
mod subscriptions;
pub(super) mod tasks;
#[cfg(test)]
mod tests;
mod tool_calls;
mod tool_search;
mod tools;

use super::call::Done;
use super::prepared::{List, Page};
pub(super) use super::request::Request;
use super::session::Era;
use super::Outcome;
use crate::protocol::model::{to_json, Empty};
use crate::protocol::params::{self, Params};
use crate::protocol::{meta, Availability, ErrorCode, Method, Revision, RpcError};
use crate::registry::{pagination, Catalogue};
use serde_json::Value;
use std::sync::Arc;

/// What a method answers with.
pub(super) enum Answer {
    /// A result made for this request.
    Result(Value),
    /// A page of a list, prepared before.
    Page(Page),
    /// Nothing: the request was cancelled, or its answer went another way.
    NoResponse,
}

/// What serving a request comes to.
pub(super) type Answered = Result<Answer, RpcError>;

impl From<Done> for Answer {
    fn from(done: Done) -> Self {
        match done {
            Done::Result(result) => Answer::Result(result),
            Done::NoResponse => Answer::NoResponse,
        }
    }
}

/// A plugin call's [`Outcome`] as a method's answer.
fn from_call(outcome: Outcome) -> Answered {
    outcome.map(Answer::from)
}

/// Serves one request of method `name` (`method` when this server knows
/// it).
pub(super) async fn handle(
    request: Request<'_>,
    name: &str,
    method: Option<Method>,
    catalogue: Option<Arc<Catalogue>>,
) -> Answered {
    check_era(request.era, name, method)?;
    let Some(method) = method else {
        return Err(RpcError::method_not_found(name));
    };
    let catalogue = catalogue.unwrap_or_else(|| request.conn.server.registry.catalogue());
    let page = |list| page(&request, &catalogue, list).map(Answer::Page);
    match method {
        // The connection answers a handshake's `initialize` itself.
        Method::Initialize => Err(RpcError::method_not_found(name)),
        Method::Ping => Ok(Answer::Result(to_json(&Empty {}))),
        Method::Discover => Ok(Answer::Result(lifecycle::discover(&request))),
        Method::SetLogLevel => persisted(&request, lifecycle::set_level(&request)).await,
        Method::ListTools => page(List::Tools(request.era.lists_output_schema())),
        Method::CallTool => tools::call(&request, &catalogue).await,
        Method::ListResources => page(List::Resources),
        Method::ListResourceTemplates => page(List::Templates),
        Method::ReadResource => resources::read(&request, &catalogue).await,
        Method::Subscribe => persisted(&request, resources::subscribe(&request, true)).await,
        Method::Unsubscribe => persisted(&request, resources::subscribe(&request, false)).await,
        Method::ListPrompts => page(List::Prompts),
        Method::GetPrompt => prompts::get(&request, &catalogue).await,
        Method::Complete => completion::complete(&request, &catalogue).await,
        Method::Listen => subscriptions::listen(&request).await,
        Method::ListSkills => skills::list(&request, &catalogue),
        Method::GetSkill => skills::get(&request, &catalogue),
        Method::ReadDirectory => skills::read_directory(&request, &catalogue),
        Method::GetTask
        | Method::TaskResult
        | Method::ListTasks
        | Method::CancelTask
        | Method::UpdateTask => tasks::handle(&request, method).await,
    }
}

/// `outcome` of a request that changed its session, answered once the
/// session is saved (a host sharing the session store sees the change
/// before the client does).
async fn persisted(request: &Request<'_>, answered: Answered) -> Answered {
    if answered.is_ok() {
        request.conn.persist().await;
    }
    answered
}

/// Refuses a method that does not exist on the request's revision, and
/// anything but the handshake before it.
fn check_era(era: &Era, name: &str, method: Option<Method>) -> Result<(), RpcError> {
    let availability = method.map_or(Availability::Any, Method::availability);
    match era {
        Era::Stateless { .. } if availability == Availability::HandshakeOnly => {
            Err(RpcError::method_not_found(name))
        }
        Era::Handshake { .. } if availability == Availability::StatelessOnly => Err(RpcError::new(
            ErrorCode::InvalidRequest,
            format!(
                "{name} needs _meta.\"{}\" of a stateless revision ({})",
                meta::PROTOCOL_VERSION,
                Revision::LATEST_STATELESS
            ),
        )),
        Era::Handshake { version: None }
            if !matches!(method, Some(Method::Initialize | Method::Ping)) =>
        {
            Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "the session is not initialized: send initialize first, or put the protocol version in _meta",
            ))
        }
        _ => Ok(()),
    }
}

/// Shorthand for a `-32602` error about what the params name (the shape
/// of params is checked through [`Params`]).
fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::invalid_params(message)
}

/// `text` (a name not served), followed by the plugins still loading if
/// there are any (it may be one of theirs).
fn unless_late(request: &Request<'_>, text: String) -> String {
    let late = request.conn.server.late_notice();
    if late.is_empty() {
        text
    } else {
        format!("{text}. {late}")
    }
}

/// The page of `list` after the request's `cursor`, from the items
/// prepared for `catalogue`.
fn page(request: &Request<'_>, catalogue: &Arc<Catalogue>, list: List) -> Result<Page, RpcError> {
    let cursor = Params(request.params).optional_str("cursor")?;
    let server = &request.conn.server;
    let policy = &server.options.access;
    let lists = server.prepared.of(catalogue, list, &server.options);
    let shown = policy
        .view(request.caller)
        .map(|view| lists.visible(list, &view));
    let len = shown
        .as_ref()
        .map_or_else(|| lists.items(list).len(), |shown| shown.len());
    let (range, next_cursor) =
        pagination::bounds(len, cursor, server.options.page_size).map_err(params::invalid)?;
    Ok(Page {
        lists,
        list,
        start: range.start,
        end: range.end,
        next_cursor,
        shown,
    })
}

/// Resources one session may subscribe to.
pub(super) const MAX_SUBSCRIPTIONS: usize = 1024;

/// The longest URI a session may subscribe to.
pub(super) const MAX_SUBSCRIBED_URI: usize = 4096;

/// Client input as an error message may quote it: a short excerpt.
fn clip(text: &str) -> String {
    crate::protocol::excerpt(text, crate::protocol::QUOTED_BYTES)
}
