//! Whether a tool call runs within its request or as a task.

use super::{tasks as tasks_ext, Request};
use crate::protocol::{ErrorCode, RpcError};
use crate::runtime::tools::TaskSupport;
use crate::server::session::Wire;
use serde_json::Value;

/// How a call runs, decided before it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Plan {
    /// Within its request, never as a task.
    Request,
    /// As the 2025-11-25 task the client asked for.
    RequestedTask,
    /// Within its 2026-07-28 request, becoming a task when the plugin asks
    /// to or is still running after the threshold; `required` when the
    /// tool only runs as a task (then it answers with one even when it
    /// finished at once).
    MayBecomeTask {
        /// The tool only runs as a task.
        required: bool,
    },
}

/// How a call of `tool` (with `support`) may run as a task, on the wire of
/// `request`; an error when the tool and the request disagree.
pub(super) async fn plan_tool(
    request: &Request<'_>,
    tool: &str,
    support: TaskSupport,
) -> Result<Plan, RpcError> {
    let tasks = &request.conn.server.tasks;
    let room = || tasks.room_for(request.conn.task_owner.as_deref());
    match request.era.task_wire() {
        Some(Wire::Handshake) => {
            let asked = matches!(request.params.get("task"), Some(Value::Object(_)));
            match (support, asked) {
                (TaskSupport::Forbidden, true) => Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!("Tool {tool} does not run as a task (its taskSupport is forbidden)"),
                )),
                (TaskSupport::Required, false) => Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!("Tool {tool} only runs as a task: call it with the \"task\" param"),
                )),
                (_, true) => room().await.map(|()| Plan::RequestedTask),
                _ => Ok(Plan::Request),
            }
        }
        Some(Wire::Stateless) => {
            let declared = tasks_ext::declares_tasks(request.params);
            match (support, declared) {
                (TaskSupport::Forbidden, _) => Ok(Plan::Request),
                (TaskSupport::Required, false) => {
                    Err(tasks_ext::missing_extension(&format!("Tool {tool}")))
                }
                (_, false) => Ok(Plan::Request),
                (TaskSupport::Required, true) => room()
                    .await
                    .map(|()| Plan::MayBecomeTask { required: true }),
                // Without room for a task, an optional one runs as a call.
                (TaskSupport::Optional, true) => Ok(match room().await {
                    Ok(()) => Plan::MayBecomeTask { required: false },
                    Err(_) => Plan::Request,
                }),
            }
        }
        None => Ok(Plan::Request),
    }
}
