//! `resources/list`, `resources/templates/list`, `resources/read`,
//! `resources/subscribe` and `resources/unsubscribe`.

use super::{error_of, list_caching, server, unwrapped, Client, EVERY_REVISION};
use serde_json::json;

/// What `resources/read` caches on the stateless revision: nothing
/// shared, nothing kept.
const PRIVATE: Option<(u64, &str)> = Some((0, "private"));

#[tokio::test]
async fn the_lists_show_the_resource_and_the_template() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let resources = client.result("resources/list", json!({})).await;
        assert_eq!(
            unwrapped(revision, resources, list_caching()),
            json!({ "resources": [{ "uri": "notes://index", "name": "index", "mimeType": "text/plain" }] }),
            "{revision}"
        );
        let templates = client.result("resources/templates/list", json!({})).await;
        assert_eq!(
            unwrapped(revision, templates, list_caching()),
            json!({ "resourceTemplates": [{ "uriTemplate": "notes://note/{id}", "name": "note", "mimeType": "text/plain" }] }),
            "{revision}"
        );
        let (code, _) = client
            .error("resources/list", json!({ "cursor": "nonsense" }))
            .await;
        assert_eq!(code, -32602, "{revision}");
    }
}

#[tokio::test]
async fn a_resource_and_a_template_are_read() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for (uri, text) in [
            ("notes://index", "groceries\nideas\ntodo"),
            ("notes://note/ideas", "a wasm host for MCP tools"),
        ] {
            let read = client.result("resources/read", json!({ "uri": uri })).await;
            assert_eq!(
                unwrapped(revision, read, PRIVATE),
                json!({ "contents": [{ "uri": uri, "mimeType": "text/plain", "text": text }] }),
                "{revision}"
            );
        }
    }
}

#[tokio::test]
async fn a_missing_resource_is_not_found_with_the_revision_s_code() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let response = client
            .request("resources/read", json!({ "uri": "file:///nowhere" }))
            .await;
        // -32002 on the handshake revisions; 2026-07-28 has no such code.
        let expected = if revision.is_stateless() {
            -32602
        } else {
            -32002
        };
        assert_eq!(
            error_of(&response),
            Some((expected, "Resource not found: file:///nowhere".into())),
            "{revision}"
        );
        assert_eq!(
            response["error"]["data"],
            json!({ "uri": "file:///nowhere" }),
            "{revision}"
        );
        // A template's URI whose plugin finds nothing there: the plugin's
        // own error (the example plugin says so as an internal error).
        let (code, message) = client
            .error("resources/read", json!({ "uri": "notes://note/zzz" }))
            .await;
        assert_eq!(code, -32603, "{revision}");
        assert!(
            message.contains("no note named zzz"),
            "{revision}: {message}"
        );
        for params in [json!({}), json!({ "uri": 7 })] {
            let (code, message) = client.error("resources/read", params).await;
            assert_eq!(code, -32602, "{revision}");
            assert!(message.contains("uri"), "{revision}: {message}");
        }
    }
}

#[tokio::test]
async fn subscriptions_are_the_handshake_s() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        for method in ["resources/subscribe", "resources/unsubscribe"] {
            let response = client
                .request(method, json!({ "uri": "notes://index" }))
                .await;
            if revision.is_stateless() {
                // subscriptions/listen instead.
                assert_eq!(error_of(&response).map(|e| e.0), Some(-32601), "{response}");
                continue;
            }
            assert_eq!(response["result"], json!({}), "{revision} {method}");
            let (code, message) = client.error(method, json!({})).await;
            assert_eq!(code, -32602, "{revision} {method}");
            assert!(message.contains("uri"), "{revision}: {message}");
        }
        if revision.is_stateless() {
            continue;
        }
        let long = format!("notes://{}", "x".repeat(4096));
        let (code, message) = client
            .error("resources/subscribe", json!({ "uri": long }))
            .await;
        assert_eq!(code, -32602, "{revision}");
        assert!(
            message.contains("at most 4096 bytes"),
            "{revision}: {message}"
        );
    }
}

#[tokio::test]
async fn a_subscribed_resource_s_change_reaches_the_session() {
    let server = server().await;
    for revision in super::handshake_revisions() {
        let mut client = Client::open(&server, revision).await;
        client
            .result("resources/subscribe", json!({ "uri": "notes://index" }))
            .await;
        server.publish(crate::server::ServerEvent::ResourceUpdated(
            "notes://other".into(),
        ));
        server.publish(crate::server::ServerEvent::ResourceUpdated(
            "notes://index".into(),
        ));
        let updated = loop {
            let message = client.next().await;
            if message["method"] == "notifications/resources/updated" {
                break message;
            }
        };
        assert_eq!(
            updated["params"],
            json!({ "uri": "notes://index" }),
            "{revision}"
        );
        client
            .result("resources/unsubscribe", json!({ "uri": "notes://index" }))
            .await;
        client
            .result(
                "resources/subscribe",
                json!({ "uri": "notes://note/ideas" }),
            )
            .await;
        // Events reach the session in order: the first update it gets is
        // the one it still follows.
        for uri in ["notes://index", "notes://note/ideas"] {
            server.publish(crate::server::ServerEvent::ResourceUpdated(uri.into()));
        }
        let updated = loop {
            let message = client.next().await;
            if message["method"] == "notifications/resources/updated" {
                break message;
            }
        };
        assert_eq!(
            updated["params"],
            json!({ "uri": "notes://note/ideas" }),
            "{revision}"
        );
    }
}
