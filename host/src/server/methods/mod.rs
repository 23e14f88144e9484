//! The MCP methods, one file per feature. Each parses its params, looks
//! up what they name, runs the call (through [`super::call`]) and renders
//! the result. [`handle`] checks that the method exists on the request's
//! revision and dispatches.

mod completion;
pub(super) mod lifecycle;
mod plan;
mod prompts;
mod resources;
mod subscriptions;
pub(super) mod tasks;
mod tools;

pub(super) use super::request::Request;
use super::session::Era;
use super::{Outcome, Server};
use crate::protocol::params::{self, Params};
use crate::protocol::{meta, Availability, ErrorCode, Method, Revision, RpcError};
use crate::registry::pagination;
use serde_json::{json, Map, Value};

/// Serves one request of method `name` (`method` when this server knows
/// it).
pub(super) async fn handle(request: Request<'_>, name: &str, method: Option<Method>) -> Outcome {
    check_era(request.era, name, method)?;
    let Some(method) = method else {
        return Err(RpcError::method_not_found(name));
    };
    let catalogue = request.conn.server.registry.catalogue();
    match method {
        // The connection answers a handshake's `initialize` itself.
        Method::Initialize => Err(RpcError::method_not_found(name)),
        Method::Ping => Ok(Some(json!({}))),
        Method::Discover => Ok(Some(lifecycle::discover(&request, &catalogue))),
        Method::SetLogLevel => lifecycle::set_level(&request),
        Method::ListTools => tools::list(&request, &catalogue),
        Method::CallTool => tools::call(&request, &catalogue).await,
        Method::ListResources => resources::list(&request, &catalogue),
        Method::ListResourceTemplates => resources::list_templates(&request, &catalogue),
        Method::ReadResource => resources::read(&request, &catalogue).await,
        Method::Subscribe => resources::subscribe(&request, true),
        Method::Unsubscribe => resources::subscribe(&request, false),
        Method::ListPrompts => prompts::list(&request, &catalogue),
        Method::GetPrompt => prompts::get(&request, &catalogue).await,
        Method::Complete => completion::complete(&request, &catalogue).await,
        Method::Listen => subscriptions::listen(&request).await,
        Method::GetTask
        | Method::TaskResult
        | Method::ListTasks
        | Method::CancelTask
        | Method::UpdateTask => tasks::handle(&request, method).await,
    }
}

/// Refuses a method that does not exist on the request's revision, and
/// anything but the handshake before it.
fn check_era(era: &Era, name: &str, method: Option<Method>) -> Result<(), RpcError> {
    let availability = method.map_or(Availability::Any, Method::availability);
    match era {
        Era::Modern { .. } if availability == Availability::HandshakeOnly => {
            Err(RpcError::method_not_found(name))
        }
        Era::Legacy { .. } if availability == Availability::StatelessOnly => Err(RpcError::new(
            ErrorCode::InvalidRequest,
            format!(
                "{name} needs _meta.\"{}\" of a stateless revision ({})",
                meta::PROTOCOL_VERSION,
                Revision::LATEST_STATELESS
            ),
        )),
        Era::Legacy { version: None }
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

/// One page of `items` (after the request's `cursor`) as `{ key: [...] }`,
/// each item rendered by `render`, with `nextCursor` when more follow.
fn page<T>(
    items: &[T],
    params: &Map<String, Value>,
    server: &Server,
    key: &str,
    render: impl Fn(&T) -> Value,
) -> Outcome {
    let cursor = Params(params).optional_str("cursor")?;
    let (page, next) =
        pagination::page(items, cursor, server.options.page_size).map_err(params::invalid)?;
    let mut result = json!({ key: page.iter().map(render).collect::<Vec<_>>() });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Ok(Some(result))
}

/// Resources one session may subscribe to.
pub(super) const MAX_SUBSCRIPTIONS: usize = 1024;

/// The longest URI a session may subscribe to.
pub(super) const MAX_SUBSCRIBED_URI: usize = 4096;

/// Client input as an error message may quote it: a short excerpt.
fn clip(text: &str) -> String {
    crate::protocol::excerpt(text, crate::protocol::QUOTED_BYTES)
}
