//! Tasks as each wire shows them (the types are
//! [`crate::protocol::model`]'s).

use super::store::{Record, Status, Wire};
use crate::protocol::model::{DetailedTask, Task, TaskDetail, TaskStatus, Timing};
use crate::protocol::RpcError;
use serde_json::{Map, Value};

pub(crate) use crate::server::clock::timestamp;

/// The status as MCP names it.
pub(crate) fn status(status: Status) -> TaskStatus {
    match status {
        Status::Working => TaskStatus::Working,
        Status::InputRequired => TaskStatus::InputRequired,
        Status::Completed => TaskStatus::Completed,
        Status::Failed => TaskStatus::Failed,
        Status::Cancelled => TaskStatus::Cancelled,
    }
}

/// The task's common fields on `wire` (`Task`).
pub(crate) fn task(record: &Record, wire: Wire, poll_interval_ms: u64) -> Task {
    let poll = (!record.status.is_terminal()).then_some(poll_interval_ms);
    Task {
        task_id: record.id.clone(),
        status: status(record.status),
        status_message: record.status_message.clone(),
        created_at: timestamp(record.created_ms),
        last_updated_at: timestamp(record.updated_ms),
        timing: match wire {
            Wire::Handshake => Timing::Handshake {
                ttl: record.ttl_ms,
                poll_interval: poll,
            },
            Wire::Stateless => Timing::Stateless {
                ttl_ms: record.ttl_ms,
                poll_interval_ms: poll,
            },
        },
    }
}

/// The 2026-07-28 `DetailedTask`: the task with its result, error or
/// outstanding input requests inlined.
pub(crate) fn detailed(
    record: &Record,
    poll_interval_ms: u64,
    input_requests: Option<Map<String, Value>>,
) -> DetailedTask {
    let detail = match (record.status, &record.outcome) {
        (Status::Completed, Some(Ok(result))) => {
            // The result as a 2026-07-28 request gets it.
            let mut result = result.clone();
            if let Some(obj) = result.as_object_mut() {
                crate::protocol::ResultType::Complete.tag_unless_set(obj);
            }
            Some(TaskDetail::Result(result))
        }
        (Status::Failed, outcome) => Some(TaskDetail::Error(match outcome {
            Some(Err(error)) => error.clone(),
            _ => RpcError::internal(
                record
                    .status_message
                    .as_deref()
                    .unwrap_or("the task failed"),
            )
            .to_json(),
        })),
        (Status::InputRequired, _) => Some(TaskDetail::InputRequests(
            input_requests.unwrap_or_default(),
        )),
        _ => None,
    };
    DetailedTask {
        task: task(record, Wire::Stateless, poll_interval_ms),
        detail,
    }
}
