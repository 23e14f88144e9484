//! `tools/list` and `tools/call`.

use super::{list_caching, server, server_with, unwrapped, Client, EVERY_REVISION};
use crate::protocol::Revision;
use crate::server::ServerOptions;
use serde_json::{json, Value};

/// The names of a page's tools.
fn names(result: &Value) -> Vec<&str> {
    result["tools"]
        .as_array()
        .expect("tools is an array")
        .iter()
        .map(|t| t["name"].as_str().expect("a tool has a name"))
        .collect()
}

#[tokio::test]
async fn tools_list_shows_output_schemas_from_2025_06_18_on() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let result = client.result("tools/list", json!({})).await;
        let result = unwrapped(revision, result, list_caching());
        assert_eq!(names(&result), ["greet", "add", "countdown"], "{revision}");
        assert!(result.get("nextCursor").is_none(), "{revision}: one page");
        let add = &result["tools"][1];
        assert_eq!(add["description"], "Adds two numbers", "{revision}");
        assert_eq!(
            add["annotations"],
            json!({ "readOnlyHint": true, "idempotentHint": true }),
            "{revision}"
        );
        assert_eq!(add["inputSchema"]["type"], "object", "{revision}");
        assert_eq!(
            add["inputSchema"]["required"],
            json!(["a", "b"]),
            "{revision}"
        );
        let shows_output = revision >= Revision::V2025_06_18;
        assert_eq!(
            add["outputSchema"]["properties"]["sum"]["type"],
            if shows_output {
                json!("number")
            } else {
                Value::Null
            },
            "{revision}: {add}"
        );
        assert_eq!(
            add.get("outputSchema").is_some(),
            shows_output,
            "{revision}: {add}"
        );
        // greet has no output schema on any revision.
        assert!(
            result["tools"][0].get("outputSchema").is_none(),
            "{revision}"
        );
    }
}

#[tokio::test]
async fn tools_list_pages_follow_the_cursor_on_every_revision() {
    let options = ServerOptions {
        page_size: 2,
        ..ServerOptions::default()
    };
    let server = server_with(options).await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let first = unwrapped(
            revision,
            client.result("tools/list", json!({})).await,
            list_caching(),
        );
        assert_eq!(names(&first), ["greet", "add"], "{revision}");
        let cursor = first["nextCursor"].clone();
        assert!(cursor.is_string(), "{revision}: {first}");
        let second = unwrapped(
            revision,
            client
                .result("tools/list", json!({ "cursor": cursor }))
                .await,
            list_caching(),
        );
        assert_eq!(names(&second), ["countdown"], "{revision}");
        assert!(second.get("nextCursor").is_none(), "{revision}: {second}");
        for bad in [json!("not a cursor"), json!(5)] {
            let (code, message) = client.error("tools/list", json!({ "cursor": bad })).await;
            assert_eq!(code, -32602, "{revision} {bad}");
            assert!(message.contains("cursor"), "{revision}: {message}");
        }
    }
}

#[tokio::test]
async fn tools_call_answers_content_and_structured_content() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let greet = json!({ "name": "greet", "arguments": { "name": "Ada" } });
        let result = unwrapped(revision, client.result("tools/call", greet).await, None);
        assert_eq!(
            result,
            json!({ "content": [{ "type": "text", "text": "Hello, Ada!" }] }),
            "{revision}"
        );
        let add = json!({ "name": "add", "arguments": { "a": 1, "b": 2.5 } });
        let result = unwrapped(revision, client.result("tools/call", add).await, None);
        assert_eq!(
            result["structuredContent"],
            json!({ "sum": 3.5 }),
            "{revision}"
        );
        assert_eq!(result["content"][0]["type"], "text", "{revision}");
        let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap())
            .expect("the structured content as text");
        assert_eq!(text, json!({ "sum": 3.5 }), "{revision}");
        assert!(result.get("isError").is_none(), "{revision}: {result}");
    }
}

#[tokio::test]
async fn arguments_a_tool_refuses_are_a_tool_error_from_2025_11_25_on() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let call = json!({ "name": "add", "arguments": { "a": "one" } });
        let response = client.request("tools/call", call).await;
        if revision >= Revision::V2025_11_25 {
            let result = unwrapped(revision, response["result"].clone(), None);
            assert_eq!(result["isError"], true, "{revision}: {response}");
            let text = result["content"][0]["text"].as_str().unwrap();
            assert!(
                text.starts_with("Invalid arguments for tool add: ")
                    && text.contains("\"b\" is a required property")
                    && text.contains("arguments/a: "),
                "{revision}: {text}"
            );
        } else {
            let error = &response["error"];
            assert_eq!(error["code"], -32602, "{revision}: {response}");
            let message = error["message"].as_str().unwrap();
            assert!(
                message.starts_with("Invalid arguments for tool add: "),
                "{revision}: {message}"
            );
            let paths: Vec<&str> = error["data"]["errors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["path"].as_str().unwrap())
                .collect();
            let mut paths = paths;
            paths.sort_unstable();
            assert_eq!(paths, ["", "/a"], "{revision}: {error}");
        }
    }
}

#[tokio::test]
async fn a_call_that_names_nothing_served_is_invalid_params_on_every_revision() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (params, says) in [
            (json!({ "name": "nope" }), "Unknown tool: nope"),
            (json!({ "name": 1 }), "name"),
            (json!({}), "name"),
            (json!({ "name": "greet", "arguments": [] }), "arguments"),
            (json!({ "name": "greet", "arguments": "x" }), "arguments"),
        ] {
            let (code, message) = client.error("tools/call", params.clone()).await;
            assert_eq!(code, -32602, "{revision} {params}");
            assert!(message.contains(says), "{revision} {params}: {message}");
        }
    }
}

#[tokio::test]
async fn progress_is_sent_for_a_request_that_asks_for_it() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let mut params = json!({ "name": "countdown", "arguments": { "steps": 2 } });
        params["_meta"] = json!({ "progressToken": "p-1" });
        let result = unwrapped(revision, client.result("tools/call", params).await, None);
        assert_eq!(
            result["content"][0]["text"], "counted down from 2",
            "{revision}"
        );
        let progress: Vec<Value> = client
            .others
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| {
                let p = &m["params"];
                json!([p["progressToken"], p["progress"], p["total"], p["message"]])
            })
            .collect();
        assert_eq!(
            progress,
            [
                json!(["p-1", 1.0, 2.0, "counting"]),
                json!(["p-1", 2.0, 2.0, "counting"])
            ],
            "{revision}"
        );
    }
}
