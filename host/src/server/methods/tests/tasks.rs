//! `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel` (2025-11-25,
//! with the `task` param of `tools/call`) and `tasks/get`, `tasks/update`,
//! `tasks/cancel` (2026-07-28, with the tasks extension), over the
//! conformance plugin's task tools: `slow_compute` (optional; it asks to
//! go on as a task at once), `failing_job` (required), `greet` (never).

use super::{error_of, server_of, unwrapped, Client, EVERY_REVISION};
use crate::protocol::{meta, Revision};
use crate::server::ServerOptions;
use serde_json::{json, Value};
use std::sync::Arc;

async fn server() -> Arc<crate::server::Server> {
    server_of(
        &[("conformance", "conformance/conformance.wasm")],
        ServerOptions::default(),
    )
    .await
}

fn slow(seconds: f64) -> Value {
    json!({ "name": "slow_compute", "arguments": { "seconds": seconds, "label": "x" } })
}

/// The status of a task as `tasks/get` says, until it is not `working`.
async fn settled(client: &mut Client, id: &Value) -> Value {
    for _ in 0..200 {
        let task = client.result("tasks/get", json!({ "taskId": id })).await;
        if task["status"] != "working" {
            return task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{}: task {id} still working after 4 s", client.revision);
}

#[tokio::test]
async fn a_2025_11_25_task_runs_is_listed_and_gives_its_result() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2025_11_25).await;
    let mut call = slow(0.1);
    call["task"] = json!({ "ttl": 60000 });
    let created = client.result("tools/call", call).await;
    let task = &created["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(task["ttl"], 60000, "{created}");
    assert!(task["pollInterval"].is_u64(), "{created}");
    assert!(
        task.get("ttlMs").is_none(),
        "the 2025-11-25 names: {created}"
    );
    let id = task["taskId"].clone();
    assert!(id.is_string(), "{created}");

    let result = client.result("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "Computed x in 0.1s" }],
            "_meta": { meta::RELATED_TASK: { "taskId": id } },
        })
    );
    let task = client.result("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(task["status"], "completed", "{task}");
    assert!(task.get("pollInterval").is_none(), "over: {task}");

    let listed = client.result("tasks/list", json!({})).await;
    let ids: Vec<&Value> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&id], "{listed}");
    assert!(listed.get("nextCursor").is_none(), "{listed}");
    let (code, _) = client
        .error("tasks/list", json!({ "cursor": "not a cursor" }))
        .await;
    assert_eq!(code, -32602);

    let (code, message) = client.error("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32602,
            "Cannot cancel task: already in terminal status 'completed'"
        )
    );

    // Another session does not see it.
    let mut other = Client::open(&server, Revision::V2025_11_25).await;
    let (code, message) = other.error("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("Task not found"), "{message}");
    let listed = other.result("tasks/list", json!({})).await;
    assert_eq!(listed, json!({ "tasks": [] }));
}

#[tokio::test]
async fn a_running_2025_11_25_task_is_cancelled() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2025_11_25).await;
    let mut call = slow(30.0);
    call["task"] = json!({});
    let created = client.result("tools/call", call).await;
    let id = created["task"]["taskId"].clone();
    let cancelled = client.result("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(cancelled["taskId"], id);
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let task = client.result("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(task["status"], "cancelled", "{task}");
    let (code, message) = client.error("tasks/result", json!({ "taskId": id })).await;
    assert_eq!(code, -32600, "{message}");
    assert!(message.contains("was cancelled"), "{message}");
}

#[tokio::test]
async fn what_a_tool_allows_decides_whether_a_call_is_a_task_on_each_revision() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        // Asked as a task: a task from 2025-11-25 on; before, the `task`
        // param means nothing and the call is answered within its request.
        let mut call = slow(0.0);
        call["task"] = json!({});
        let response = client.request("tools/call", call).await;
        let result = &response["result"];
        if revision == Revision::V2025_11_25 {
            assert_eq!(result["task"]["status"], "working", "{response}");
        } else {
            let result = unwrapped(revision, result.clone(), None);
            assert_eq!(
                result,
                json!({ "content": [{ "type": "text", "text": "Computed x in 0s" }] }),
                "{revision}"
            );
        }
        // A tool that never runs as a task, asked as one.
        let mut greet = json!({ "name": "greet", "arguments": { "name": "Ada" } });
        greet["task"] = json!({});
        let response = client.request("tools/call", greet).await;
        if revision == Revision::V2025_11_25 {
            let (code, message) = error_of(&response).expect("refused");
            assert_eq!(code, -32601);
            assert!(message.contains("taskSupport is forbidden"), "{message}");
        } else {
            assert_eq!(
                response["result"]["content"][0]["text"], "Hello, Ada!",
                "{revision}: {response}"
            );
        }
        // A tool that only runs as a task, not asked as one.
        let response = client
            .request("tools/call", json!({ "name": "failing_job" }))
            .await;
        let expected = match revision {
            Revision::V2025_11_25 => Some((-32601, "only runs as a task")),
            Revision::V2026_07_28 => Some((-32021, "extensions")),
            // No tasks on the wire: the call runs (and its tool fails).
            _ => None,
        };
        match expected {
            Some((code, says)) => {
                let (got, message) = error_of(&response).expect("refused");
                assert_eq!(got, code, "{revision}: {message}");
                assert!(message.contains(says), "{revision}: {message}");
            }
            None => {
                assert_eq!(
                    response["result"]["isError"], true,
                    "{revision}: {response}"
                );
                assert_eq!(
                    response["result"]["content"][0]["text"],
                    "The job failed after a second of work",
                    "{revision}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_2026_07_28_task_is_created_polled_updated_and_cancelled() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2026_07_28)
        .await
        .with_tasks();
    let created = client.result("tools/call", slow(0.1)).await;
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working", "{created}");
    assert!(created["ttlMs"].is_u64(), "{created}");
    assert!(created["pollIntervalMs"].is_u64(), "{created}");
    assert!(
        created.get("ttl").is_none(),
        "the 2026-07-28 names: {created}"
    );
    let id = created["taskId"].clone();

    let task = settled(&mut client, &id).await;
    // A task's own `ttlMs` is its lifetime, not a caching hint.
    assert_eq!(task["ttlMs"], created["ttlMs"], "{task}");
    assert_eq!(task["resultType"], "complete", "{task}");
    assert_eq!(
        task["_meta"][meta::SERVER_INFO]["name"],
        "wasm-mcp",
        "{task}"
    );
    assert!(task.get("cacheScope").is_none(), "{task}");
    assert_eq!(task["status"], "completed", "{task}");
    assert_eq!(
        task["result"],
        json!({ "content": [{ "type": "text", "text": "Computed x in 0.1s" }], "resultType": "complete" })
    );
    // Over: an update or a cancel is acknowledged and changes nothing.
    let updated = client
        .result(
            "tasks/update",
            json!({ "taskId": id, "inputResponses": {} }),
        )
        .await;
    assert_eq!(unwrapped(Revision::V2026_07_28, updated, None), json!({}));
    let cancelled = client.result("tasks/cancel", json!({ "taskId": id })).await;
    assert_eq!(unwrapped(Revision::V2026_07_28, cancelled, None), json!({}));
    let task = client.result("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(task["status"], "completed", "{task}");

    // A running one is cancelled.
    let created = client.result("tools/call", slow(30.0)).await;
    let id = created["taskId"].clone();
    client.result("tasks/cancel", json!({ "taskId": id })).await;
    let task = client.result("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(task["status"], "cancelled", "{task}");

    for (method, params, code, says) in [
        (
            "tasks/get",
            json!({ "taskId": "nope" }),
            -32602,
            "Task not found",
        ),
        ("tasks/get", json!({}), -32602, "taskId"),
        (
            "tasks/update",
            json!({ "taskId": id }),
            -32602,
            "inputResponses",
        ),
        (
            "tasks/result",
            json!({ "taskId": id }),
            -32601,
            "tasks/result",
        ),
        ("tasks/list", json!({}), -32601, "tasks/list"),
    ] {
        let (got, message) = client.error(method, params.clone()).await;
        assert_eq!(got, code, "{method} {params}: {message}");
        assert!(message.contains(says), "{method} {params}: {message}");
    }
    // Without the extension declared.
    let mut bare = Client::open(&server, Revision::V2026_07_28).await;
    let response = bare.request("tasks/get", json!({ "taskId": id })).await;
    assert_eq!(error_of(&response).map(|e| e.0), Some(-32021), "{response}");
    assert_eq!(
        response["error"]["data"],
        json!({ "requiredCapabilities": { "extensions": { meta::TASKS_EXTENSION: {} } } })
    );
    // Without the extension, a tool that may run as a task runs within
    // its request.
    let result = bare.result("tools/call", slow(0.0)).await;
    assert_eq!(result["resultType"], "complete", "{result}");
}
