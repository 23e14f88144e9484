//! A tool call into a plugin, rendered as what it came to (counted in the
//! metrics): what `tools/call` runs, and what a task's call run again on
//! another host runs.

use super::outcome::{call_failed, missing_capability, plugin_error, within_result_limit};
use super::{Ended, Reply, RequestScope};
use crate::metrics::{metrics, Outcome as Measured};
use crate::protocol::{ErrorCode, RpcError};
use crate::runtime::{tools, types, CallError, LoadedPlugin};
use crate::server::{convert, Outcome};
use std::sync::Arc;

/// A tool call's reply as its request's answer: a crash is a tool error.
pub(crate) fn tool_answer(reply: Reply) -> Outcome {
    match reply {
        Reply::Crashed(why) => Ok(super::Done::Result(convert::tool_error(&why))),
        other => other.into_outcome(),
    }
}

/// What a call came to, as the metrics count it.
fn measured(outcome: &Result<Result<tools::CallResult, types::Error>, CallError>) -> Measured {
    match outcome {
        Ok(Ok(result)) if result.is_error => Measured::ToolError,
        Ok(Ok(_)) => Measured::Ok,
        Ok(Err(_)) => Measured::ToolError,
        Err(CallError::Trap(_)) => Measured::Trap,
        Err(CallError::Timeout(_)) => Measured::Timeout,
        Err(CallError::Cancelled) => Measured::Cancelled,
        Err(CallError::Busy) => Measured::Busy,
        Err(CallError::TooLarge(_)) => Measured::TooLarge,
        Err(CallError::NotExported(_) | CallError::Setup(_) | CallError::WrongType(_)) => {
            Measured::Failed
        }
    }
}

/// Calls the tool in the plugin and renders what it came to.
pub(crate) async fn call_plugin(
    plugin: Arc<LoadedPlugin>,
    context: Arc<RequestScope>,
    tool: String,
    arguments: String,
    stateless: bool,
    argument_tool_errors: bool,
) -> Ended {
    let started = std::time::Instant::now();
    let outcome = plugin.call_tool(context.clone(), &tool, &arguments).await;
    metrics().tool_call(plugin.name(), &tool, measured(&outcome), started.elapsed());
    if stateless {
        if let Some(capability) = context.missing_capability() {
            return Err(missing_capability(capability)).into();
        }
    }
    let ended = match outcome {
        Ok(Ok(result)) => convert::call_result(&result)
            .map(|result| {
                super::Done::Result(
                    within_result_limit(&plugin, result)
                        .unwrap_or_else(|m| convert::tool_error(&m)),
                )
            })
            .map_err(RpcError::internal),
        Ok(Err(types::Error::Internal(message))) => {
            Ok(super::Done::Result(convert::tool_error(&message)))
        }
        // The plugin found its arguments wrong (or what they name missing).
        Ok(Err(types::Error::InvalidParams(message) | types::Error::NotFound(message)))
            if argument_tool_errors =>
        {
            Ok(super::Done::Result(convert::tool_error(&message)))
        }
        Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
        // A crash is a tool error for a request, a failure for a task:
        // whoever ends up with the call renders it.
        Err(error) => {
            return call_failed(&plugin, error)
                .map_or(Ended::Outcome(Ok(super::Done::NoResponse)), Ended::Crashed)
        }
    };
    ended.into()
}
