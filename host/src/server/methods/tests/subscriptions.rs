//! `subscriptions/listen` (2026-07-28): one request whose stream carries
//! what the client follows.

use super::{handshake_revisions, server, Client};
use crate::protocol::{meta, Revision};
use crate::runtime::host_types::ListKind;
use crate::server::ServerEvent;
use serde_json::{json, Value};

/// The next notification of one of `methods`.
async fn next_of(client: &mut Client, methods: &[&str]) -> Value {
    loop {
        let message = client.next().await;
        if methods.iter().any(|m| message["method"] == *m) {
            return message;
        }
    }
}

#[tokio::test]
async fn listen_acknowledges_then_forwards_only_what_is_followed() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2026_07_28).await;
    let params = client.params(json!({
        "notifications": {
            "toolsListChanged": true,
            "promptsListChanged": false,
            "resourceSubscriptions": ["notes://index"],
        }
    }));
    let id = client.send_only("subscriptions/listen", params);
    let tag = json!({ meta::SUBSCRIPTION_ID: id });
    let ack = next_of(&mut client, &["notifications/subscriptions/acknowledged"]).await;
    assert_eq!(
        ack["params"],
        json!({
            "_meta": tag,
            "notifications": { "toolsListChanged": true, "resourceSubscriptions": ["notes://index"] },
        })
    );
    let followed = [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ];
    // In order: what is not followed is not sent.
    server.publish(ServerEvent::ListChanged(ListKind::Prompts));
    server.publish(ServerEvent::ResourceUpdated("notes://note/ideas".into()));
    server.publish(ServerEvent::ListChanged(ListKind::Tools));
    let first = next_of(&mut client, &followed).await;
    assert_eq!(first["method"], "notifications/tools/list_changed");
    assert_eq!(first["params"], json!({ "_meta": tag }));
    server.publish(ServerEvent::ListChanged(ListKind::Resources));
    server.publish(ServerEvent::ResourceUpdated("notes://index".into()));
    let second = next_of(&mut client, &followed).await;
    assert_eq!(second["method"], "notifications/resources/updated");
    assert_eq!(
        second["params"],
        json!({ "uri": "notes://index", "_meta": tag })
    );
    // The server shutting down ends the stream with the request's answer.
    server.publish(ServerEvent::Shutdown);
    let end = client.response(id).await;
    let result = super::unwrapped(Revision::V2026_07_28, end["result"].clone(), None);
    assert_eq!(result, json!({ "_meta": tag }));
}

#[tokio::test]
async fn listen_refuses_what_it_cannot_follow() {
    let server = server().await;
    let mut client = Client::open(&server, Revision::V2026_07_28).await;
    let too_many: Vec<String> = (0..1025).map(|i| format!("notes://{i}")).collect();
    for (params, code, says) in [
        (
            json!({ "notifications": { "taskIds": ["t"] } }),
            -32021,
            meta::TASKS_EXTENSION,
        ),
        (
            json!({ "notifications": { "resourceSubscriptions": too_many } }),
            -32602,
            "at most 1024 resourceSubscriptions",
        ),
    ] {
        let (got, message) = client.error("subscriptions/listen", params).await;
        assert_eq!(got, code, "{message}");
        assert!(message.contains(says), "{message}");
    }
    let mut tasks = Client::open(&server, Revision::V2026_07_28)
        .await
        .with_tasks();
    let (code, message) = tasks
        .error(
            "subscriptions/listen",
            json!({ "notifications": { "taskIds": "t" } }),
        )
        .await;
    assert_eq!(code, -32602, "{message}");
    assert!(
        message.contains("\"taskIds\" must be an array"),
        "{message}"
    );
}

#[tokio::test]
async fn listen_is_not_a_handshake_method() {
    let server = server().await;
    for revision in handshake_revisions() {
        let mut client = Client::open(&server, revision).await;
        let (code, message) = client.error("subscriptions/listen", json!({})).await;
        assert_eq!(code, -32600, "{revision}");
        assert!(
            message.contains("subscriptions/listen needs _meta"),
            "{revision}: {message}"
        );
    }
}
