//! Tasks on the wire: the task object of both task wires (2025-11-25
//! `Task`, 2026-07-28 `DetailedTask`), and the results of `tasks/*` and of
//! a request run as a task.

use super::to_json;
use serde::Serialize;
use serde_json::{Map, Value};

/// Where a task is in its life, as MCP names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// `working`
    Working,
    /// `input_required`
    InputRequired,
    /// `completed`
    Completed,
    /// `failed`
    Failed,
    /// `cancelled`
    Cancelled,
}

/// A task's common fields (a 2025-11-25 `Task`; on 2026-07-28, a
/// `CreateTaskResult` without its `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What its status means now, if the host says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub last_updated_at: String,
    /// How long it is kept and how often to poll, named by wire.
    #[serde(flatten)]
    pub timing: Timing,
}

/// A task's time to live and poll interval, in ms, under each wire's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Timing {
    /// 2025-11-25: `ttl`, `pollInterval`.
    #[serde(rename_all = "camelCase")]
    Handshake {
        /// How long the task is kept after it was made.
        ttl: u64,
        /// How often to poll; left out once the task is over.
        #[serde(skip_serializing_if = "Option::is_none")]
        poll_interval: Option<u64>,
    },
    /// 2026-07-28: `ttlMs`, `pollIntervalMs`.
    #[serde(rename_all = "camelCase")]
    Stateless {
        /// How long the task is kept after it was made.
        ttl_ms: u64,
        /// How often to poll; left out once the task is over.
        #[serde(skip_serializing_if = "Option::is_none")]
        poll_interval_ms: Option<u64>,
    },
}

/// The 2026-07-28 `DetailedTask`: the task with what it ended with, or
/// what it waits on, inlined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Its result, error or questions, when it has them.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub detail: Option<TaskDetail>,
}

/// What a `DetailedTask` inlines.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TaskDetail {
    /// `result`: the call's result (the plugin's, as a 2026-07-28 request
    /// gets it).
    Result(Value),
    /// `error`: the JSON-RPC error it failed with.
    Error(Value),
    /// `inputRequests`: the questions it waits on, by key.
    InputRequests(Map<String, Value>),
}

/// A task as `tasks/get` shows it on either wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum TaskView {
    /// 2025-11-25: the `Task`.
    Task(Task),
    /// 2026-07-28: the `DetailedTask`.
    Detailed(DetailedTask),
}

impl TaskView {
    /// The view as a JSON object (to add `_meta` or `resultType` to).
    pub fn to_map(&self) -> Map<String, Value> {
        object(self)
    }
}

impl Task {
    /// The task as a JSON object (to add `_meta` or `resultType` to).
    pub fn to_map(&self) -> Map<String, Value> {
        object(self)
    }
}

/// `value`, a struct, as a JSON object.
fn object<T: Serialize>(value: &T) -> Map<String, Value> {
    match to_json(value) {
        Value::Object(map) => map,
        _ => unreachable!("a task serializes as an object"),
    }
}

/// The 2025-11-25 `CreateTaskResult`: a request run as a task answers with
/// the task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CreateTaskResult {
    /// The task made.
    pub task: Task,
}

/// The 2025-11-25 `tasks/list` result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// This page's tasks, oldest first.
    pub tasks: Vec<Task>,
    /// Where the next page starts; left out on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// An empty acknowledgement (`{}`): the 2026-07-28 `tasks/cancel` and
/// `tasks/update` results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Acknowledged {}

/// How a task is stored (an outcome): `{"result": ...}` or
/// `{"error": ...}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StoredOutcome<'a> {
    /// It ended with this result.
    Result(&'a Value),
    /// It ended with this JSON-RPC error.
    Error(&'a Value),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(timing: Timing) -> Task {
        Task {
            task_id: "t1".into(),
            status: TaskStatus::InputRequired,
            status_message: None,
            created_at: "c".into(),
            last_updated_at: "u".into(),
            timing,
        }
    }

    #[test]
    fn a_task_names_its_timing_by_wire_and_leaves_out_what_is_unset() {
        let v1 = task(Timing::Handshake {
            ttl: 5,
            poll_interval: Some(7),
        });
        assert_eq!(
            to_json(&v1),
            json!({ "taskId": "t1", "status": "input_required", "createdAt": "c",
                    "lastUpdatedAt": "u", "ttl": 5, "pollInterval": 7 })
        );
        let v2 = DetailedTask {
            task: task(Timing::Stateless {
                ttl_ms: 5,
                poll_interval_ms: None,
            }),
            detail: Some(TaskDetail::InputRequests(Map::new())),
        };
        assert_eq!(
            to_json(&v2),
            json!({ "taskId": "t1", "status": "input_required", "createdAt": "c",
                    "lastUpdatedAt": "u", "ttlMs": 5, "inputRequests": {} })
        );
        let bare = DetailedTask { detail: None, ..v2 };
        assert!(to_json(&bare).get("inputRequests").is_none());
        assert_eq!(to_json(&Acknowledged {}), json!({}));
        let list = ListTasksResult {
            tasks: vec![],
            next_cursor: None,
        };
        assert_eq!(to_json(&list), json!({ "tasks": [] }));
        let result = json!({ "content": [] });
        assert_eq!(
            to_json(&StoredOutcome::Result(&result)),
            json!({ "result": { "content": [] } })
        );
    }
}
