//! Tools a plugin calls (code mode, the contract's `tool-calls`), on
//! every revision: the `caller` fixture, granted hello's tools, calls them
//! for its client, decided as the client's own calls are.

use super::{unwrapped, Client, EVERY_REVISION};
use crate::registry::tests::registry;
use crate::runtime::{ComponentSource, Grants, ToolCallGrant};
use crate::server::{Server, ServerOptions};
use serde_json::{json, Value};
use std::sync::Arc;

/// A server over `hello` and `caller`, which may call hello's tools (and
/// its own, which it never reaches).
async fn server() -> Arc<Server> {
    let registry = registry();
    let dist = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist");
    for (name, file, grant) in [
        ("hello", "plugins/hello.wasm", None),
        (
            "caller",
            "fixtures/caller.wasm",
            Some(["hello.*", "caller.*"]),
        ),
    ] {
        let path = dist.join(file);
        let bytes = tokio::fs::read(&path)
            .await
            .unwrap_or_else(|e| panic!("{}: {e} (scripts/build makes it)", path.display()));
        let grants = Grants {
            tool_calls: grant.map(|p| ToolCallGrant::new(&p.map(str::to_owned))),
            ..Grants::default()
        };
        let loaded = registry
            .load(name, ComponentSource::new(bytes), grants, true)
            .await
            .unwrap();
        registry.install(loaded);
    }
    Server::new(registry, ServerOptions::default())
}

/// What `caller`'s tool `tool` reported for `arguments`.
async fn report(client: &mut Client, tool: &str, arguments: Value) -> Value {
    let result = client
        .result(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await;
    let result = unwrapped(client.revision, result, None);
    assert_ne!(
        result["isError"],
        json!(true),
        "{}: {result}",
        client.revision
    );
    serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON")
}

#[tokio::test]
async fn a_plugin_calls_its_granted_tools_for_its_client_on_every_revision() {
    let server = server().await;
    for revision in EVERY_REVISION {
        let mut client = Client::open(&server, revision).await;
        let greeted = report(
            &mut client,
            "call",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        )
        .await;
        assert_eq!(greeted["ok"], 1, "{revision}: {greeted}");
        assert_eq!(
            greeted["last"]["content"][0]["text"], "Hello, Ada!",
            "{revision}"
        );
        // The result is the tool's own, without the 2026-07-28 envelope.
        assert!(greeted["last"].get("resultType").is_none(), "{revision}");
        let itself = report(&mut client, "call", json!({ "name": "search" })).await;
        let message = itself["error"]["message"].as_str().expect("refused");
        assert!(
            message.ends_with("(caller → caller): a plugin never reaches itself"),
            "{revision}: {message}"
        );
        let found = report(&mut client, "search", json!({ "query": "" })).await;
        let names: Vec<&str> = found["tools"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|t| t["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(names, ["greet", "add", "countdown"], "{revision}");
    }
}
