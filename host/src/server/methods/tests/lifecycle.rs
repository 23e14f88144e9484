//! `initialize`, `ping`, `server/discover`, `logging/setLevel`, and what
//! each revision answers a method it does not have.

use super::{error_of, handshake_revisions, server, unwrapped, Client, EVERY_REVISION};
use crate::protocol::{meta, Method, Revision};
use serde_json::{json, Value};

/// What `initialize` and `server/discover` declare on `revision`.
fn expected_capabilities(revision: Revision) -> Value {
    let mut caps = json!({
        "tools": { "listChanged": true },
        "resources": { "subscribe": true, "listChanged": true },
        "prompts": { "listChanged": true },
        "completions": {},
        "extensions": {
            crate::skills::EXTENSION: { "directoryRead": true },
            meta::UI_EXTENSION: { "mimeTypes": [meta::UI_MIME_TYPE] },
        },
    });
    if !revision.is_stateless() {
        caps["logging"] = json!({});
    }
    if revision == Revision::V2025_11_25 {
        caps["tasks"] =
            json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } });
    }
    if revision.is_stateless() {
        caps["extensions"][meta::TASKS_EXTENSION] = json!({});
    }
    caps
}

#[tokio::test]
async fn initialize_settles_the_revision_and_declares_its_capabilities() {
    let server = server().await;
    for revision in handshake_revisions() {
        let mut client = Client::unopened(&server, revision);
        let init = client.initialize(revision.as_str()).await;
        let result = &init["result"];
        assert_eq!(result["protocolVersion"], revision.as_str(), "{init}");
        assert_eq!(
            result["capabilities"],
            expected_capabilities(revision),
            "{revision}"
        );
        assert_eq!(result["serverInfo"]["name"], "wasm-mcp", "{revision}");
        assert_eq!(
            result["serverInfo"]["version"],
            env!("CARGO_PKG_VERSION"),
            "{revision}"
        );
        // No instructions configured: none said, not `null`.
        assert!(result.get("instructions").is_none(), "{revision}: {init}");
        // Once per connection.
        let again = client.initialize(revision.as_str()).await;
        let (code, message) = error_of(&again).expect("a second initialize fails");
        assert_eq!(code, -32600, "{revision}");
        assert!(
            message.contains("already received"),
            "{revision}: {message}"
        );
    }
}

#[tokio::test]
async fn initialize_with_a_revision_not_spoken_answers_the_newest_handshake_one() {
    let server = server().await;
    for asked in ["1999-01-01", "2026-07-28", ""] {
        let mut client = Client::unopened(&server, Revision::LATEST_HANDSHAKE);
        let init = client.initialize(asked).await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{asked}");
    }
    let mut client = Client::unopened(&server, Revision::LATEST_HANDSHAKE);
    let response = client
        .send_raw("initialize", json!({ "capabilities": {} }))
        .await;
    let (code, message) = error_of(&response).expect("no protocolVersion");
    assert_eq!(code, -32602);
    assert!(message.contains("protocolVersion"), "{message}");
}

#[tokio::test]
async fn initialize_is_not_a_method_of_the_stateless_revision() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2026_07_28).await;
    let (code, message) = client
        .error(
            "initialize",
            json!({ "protocolVersion": "2025-11-25", "capabilities": {} }),
        )
        .await;
    assert_eq!(code, -32601);
    assert!(message.contains("initialize"), "{message}");
}

#[tokio::test]
async fn before_the_handshake_only_initialize_and_ping_are_served() {
    let server = server().await;
    let mut client = Client::unopened(&server, Revision::V2025_11_25);
    assert_eq!(client.result("ping", json!({})).await, json!({}));
    for method in Method::ALL {
        if matches!(method, Method::Initialize | Method::Ping) {
            continue;
        }
        let (code, message) = client.error(method.as_str(), json!({})).await;
        assert_eq!(code, -32600, "{}", method.as_str());
        let expected = if method.availability() == crate::protocol::Availability::StatelessOnly {
            "needs _meta"
        } else {
            "not initialized"
        };
        assert!(message.contains(expected), "{}: {message}", method.as_str());
    }
}

#[tokio::test]
async fn ping_answers_an_empty_result_on_the_handshake_revisions_only() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let response = client.request("ping", json!({})).await;
        if revision.is_stateless() {
            assert_eq!(error_of(&response).map(|e| e.0), Some(-32601), "{response}");
        } else {
            assert_eq!(response["result"], json!({}), "{revision}: {response}");
        }
    }
}

#[tokio::test]
async fn server_discover_exists_on_the_stateless_revision_only() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let response = client.request("server/discover", json!({})).await;
        if !revision.is_stateless() {
            let (code, message) = error_of(&response).expect("not on this revision");
            assert_eq!(code, -32600, "{revision}");
            assert!(
                message.contains("server/discover needs _meta"),
                "{revision}: {message}"
            );
            continue;
        }
        let result = unwrapped(revision, response["result"].clone(), super::list_caching());
        assert_eq!(
            result,
            json!({
                "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "capabilities": expected_capabilities(revision),
                "serverInfo": { "name": "wasm-mcp", "version": env!("CARGO_PKG_VERSION") },
            })
        );
    }
}

#[tokio::test]
async fn a_method_no_revision_has_is_not_found_and_named() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let (code, message) = client.error("tools/frobnicate", json!({})).await;
        assert_eq!(code, -32601, "{revision}");
        assert!(
            message.contains("tools/frobnicate"),
            "{revision}: {message}"
        );
    }
}

#[tokio::test]
async fn each_method_exists_on_the_revisions_that_have_it() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for method in Method::ALL {
            if method == Method::Listen && revision.is_stateless() {
                // Served: acknowledged at once, answered only when it ends.
                let params = client.params(json!({}));
                let id = client.send_only(method.as_str(), params);
                let ack = client.next().await;
                assert_eq!(
                    ack["method"], "notifications/subscriptions/acknowledged",
                    "{ack}"
                );
                client.notify("notifications/cancelled", json!({ "requestId": id }));
                continue;
            }
            // Empty params: a method that exists answers (or refuses its
            // params); one that does not is refused before any param is read.
            let response = client.request(method.as_str(), json!({})).await;
            let code = error_of(&response).map(|e| e.0);
            let name = method.as_str();
            let absent = if method == Method::Initialize {
                // The handshake's own: -32601 on the stateless revision;
                // on a handshake one, its params are read first (a second
                // initialize with good ones is -32600: see above).
                Some(if revision.is_stateless() {
                    -32601
                } else {
                    -32602
                })
            } else if !method.exists_on(revision) {
                Some(if revision.is_stateless() {
                    -32601
                } else {
                    -32600
                })
            } else if method.is_task_method() {
                task_method_absence(revision, method)
            } else {
                None
            };
            match absent {
                Some(expected) => assert_eq!(code, Some(expected), "{revision} {name}: {response}"),
                None => assert!(
                    !matches!(code, Some(-32601 | -32600)),
                    "{revision} {name} exists: {response}"
                ),
            }
        }
    }
}

/// The code a `tasks/*` method answers with empty params, when it is not
/// served on `revision` (or, on the stateless one, not without the
/// extension); `None` when it is served.
fn task_method_absence(revision: Revision, method: Method) -> Option<i64> {
    match revision {
        Revision::V2025_11_25 => (method == Method::UpdateTask).then_some(-32601),
        Revision::V2026_07_28 => Some(match method {
            Method::TaskResult | Method::ListTasks => -32601,
            // Served, but only to a request that declares the extension.
            _ => -32021,
        }),
        _ => Some(-32601),
    }
}

#[tokio::test]
async fn logging_set_level_takes_mcp_levels_on_the_handshake_revisions() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let response = client
            .request("logging/setLevel", json!({ "level": "warning" }))
            .await;
        if revision.is_stateless() {
            // The level is in each request's _meta instead.
            assert_eq!(error_of(&response).map(|e| e.0), Some(-32601), "{response}");
            continue;
        }
        assert_eq!(response["result"], json!({}), "{revision}: {response}");
        for level in [json!("loud"), json!(3), json!(null)] {
            let (code, message) = client
                .error("logging/setLevel", json!({ "level": level }))
                .await;
            assert_eq!(code, -32602, "{revision} {level}");
            assert!(message.contains("log level"), "{revision}: {message}");
        }
    }
}

#[tokio::test]
async fn the_level_set_filters_what_a_tool_logs() {
    let server = server().await;
    for revision in EVERY_REVISION {
        // countdown logs each step at info.
        let args = json!({ "name": "countdown", "arguments": { "steps": 2 } });
        let mut heard = Vec::new();
        for level in ["debug", "error"] {
            let mut client = Client::open(&server, revision).await;
            let mut params = args.clone();
            if revision.is_stateless() {
                params["_meta"] = json!({ meta::LOG_LEVEL: level });
            } else {
                client
                    .result("logging/setLevel", json!({ "level": level }))
                    .await;
            }
            client.result("tools/call", params).await;
            let logged: Vec<Value> = client
                .others
                .iter()
                .filter(|m| m["method"] == "notifications/message")
                .map(|m| m["params"]["data"].clone())
                .collect();
            heard.push(logged);
        }
        assert_eq!(
            heard,
            [vec![json!("step 1 of 2"), json!("step 2 of 2")], vec![]],
            "{revision}"
        );
    }
}
