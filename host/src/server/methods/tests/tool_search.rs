//! The host's own search tools (`[server] tool_search`): `search_tools`
//! and `call_tool` through `tools/list` and `tools/call`.

use super::{list_caching, server_with, unwrapped, Client, EVERY_REVISION};
use crate::protocol::Revision;
use crate::server::search::ToolSearch;
use crate::server::ServerOptions;
use serde_json::{json, Value};

fn names(result: &Value) -> Vec<&str> {
    result["tools"]
        .as_array()
        .expect("tools is an array")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn the_search_tools_are_listed_beside_or_instead_of_the_tools() {
    for (mode, listed) in [
        (
            ToolSearch::Offered,
            vec!["greet", "add", "countdown", "search_tools", "call_tool"],
        ),
        (ToolSearch::Only, vec!["search_tools", "call_tool"]),
    ] {
        let options = ServerOptions {
            tool_search: mode,
            ..ServerOptions::default()
        };
        let server = server_with(options).await;
        for revision in EVERY_REVISION {
            let mut client = Client::open(&server, revision).await;
            let result = client.result("tools/list", json!({})).await;
            let result = unwrapped(revision, result, list_caching());
            let mut names = names(&result);
            names.sort_unstable();
            let mut expected = listed.clone();
            expected.sort_unstable();
            assert_eq!(names, expected, "{mode:?} {revision}");
        }
    }
}

#[tokio::test]
async fn search_tools_ranks_and_call_tool_calls() {
    let options = ServerOptions {
        tool_search: ToolSearch::Only,
        ..ServerOptions::default()
    };
    let server = server_with(options).await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let search = json!({ "name": "search_tools", "arguments": { "query": "add two numbers", "limit": 1 } });
        let found = unwrapped(revision, client.result("tools/call", search).await, None);
        assert_eq!(
            names(&found["structuredContent"]),
            ["add"],
            "{revision}: {found}"
        );
        let text: Value =
            serde_json::from_str(found["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, found["structuredContent"], "{revision}");

        let call = json!({ "name": "call_tool", "arguments": { "name": "add", "arguments": { "a": 2, "b": 3 } } });
        let added = unwrapped(revision, client.result("tools/call", call).await, None);
        assert_eq!(
            added["structuredContent"],
            json!({ "sum": 5.0 }),
            "{revision}"
        );

        // A bad call of a search tool: a tool error from 2025-11-25 on.
        for arguments in [
            json!({}),
            json!({ "name": "call_tool" }),
            json!({ "name": "add", "arguments": [1] }),
        ] {
            let response = client
                .request(
                    "tools/call",
                    json!({ "name": "call_tool", "arguments": arguments }),
                )
                .await;
            if revision >= Revision::V2025_11_25 {
                assert_eq!(
                    response["result"]["isError"], true,
                    "{revision}: {response}"
                );
                let text = response["result"]["content"][0]["text"].as_str().unwrap();
                assert!(text.starts_with("call_tool"), "{revision}: {text}");
            } else {
                assert_eq!(response["error"]["code"], -32602, "{revision}: {response}");
                let message = response["error"]["message"].as_str().unwrap();
                assert!(message.starts_with("call_tool"), "{revision}: {message}");
            }
        }
        let response = client
            .request(
                "tools/call",
                json!({ "name": "search_tools", "arguments": {} }),
            )
            .await;
        let says = if revision >= Revision::V2025_11_25 {
            &response["result"]["content"][0]["text"]
        } else {
            &response["error"]["message"]
        };
        assert!(
            says.as_str().is_some_and(|s| s.contains("\"query\"")),
            "{revision}: {response}"
        );
    }
}
