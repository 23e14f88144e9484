//! In-process tests of the methods: a server with no plugins, driven over
//! a stdio pair (a tokio duplex) one JSON line at a time, as a client
//! would. What a method decides (its revision, its params, its errors, the
//! shape of its result) is checked here; the end-to-end tests drive the
//! binary with real clients and plugins.

use crate::protocol::Revision;
use crate::server::tests::empty_server;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// A client of one stdio connection to a fresh server.
struct Client {
    tx: WriteHalf<DuplexStream>,
    rx: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl Client {
    fn start() -> Client {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (input, output) = tokio::io::split(theirs);
        tokio::spawn(super::stdio::serve(
            empty_server(),
            input,
            output,
            std::time::Duration::from_secs(2),
        ));
        let (rx, tx) = tokio::io::split(ours);
        Client {
            tx,
            rx: BufReader::new(rx).lines(),
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.tx.write_all(line.as_bytes()).await.unwrap();
    }

    /// The response to request `id` (messages before it are skipped).
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.rx.next_line())
                .await
                .expect("answered within 10 s")
                .unwrap()
                .expect("the server is still there");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        let params = json!({ "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } });
        let answer = self.call(0, "initialize", params).await;
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        answer
    }
}

/// The `_meta` of a stateless request.
fn stateless(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    params
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error, not {answer}"))
}

#[tokio::test]
async fn the_handshake_settles_the_revision_and_gates_the_methods() {
    let mut c = Client::start();
    assert_eq!(code(&c.call(1, "tools/list", json!({})).await), -32600);
    assert_eq!(code(&c.call(2, "no/such", json!({})).await), -32600);
    let init = c.initialize("2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let caps = &init["result"]["capabilities"];
    assert!(caps["logging"].is_object() && caps["tools"]["listChanged"] == true);
    assert!(
        caps.get("tasks").is_none(),
        "tasks are 2025-11-25 on: {caps}"
    );
    assert_eq!(
        c.call(3, "tools/list", json!({})).await["result"],
        json!({ "tools": [] })
    );
    assert_eq!(c.call(4, "ping", json!({})).await["result"], json!({}));
    assert_eq!(code(&c.call(5, "no/such", json!({})).await), -32601);
    assert_eq!(code(&c.call(6, "server/discover", json!({})).await), -32600);
    assert_eq!(
        code(
            &c.call(7, "initialize", json!({ "protocolVersion": "2025-06-18" }))
                .await
        ),
        -32600
    );
    assert_eq!(
        code(&c.call(8, "tasks/get", json!({ "taskId": "x" })).await),
        -32601
    );
}

#[tokio::test]
async fn an_unknown_revision_is_answered_with_the_newest_handshake_one() {
    let mut c = Client::start();
    let init = c.initialize("1999-01-01").await;
    assert_eq!(
        init["result"]["protocolVersion"],
        Revision::LATEST_HANDSHAKE.as_str()
    );
    assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
}

#[tokio::test]
async fn params_are_checked_with_one_error_code() {
    let mut c = Client::start();
    c.initialize("2025-11-25").await;
    for (method, params) in [
        ("tools/list", json!({ "cursor": 5 })),
        ("tools/list", json!({ "cursor": "not a cursor" })),
        ("tools/call", json!({ "name": 1 })),
        ("tools/call", json!({ "name": "missing" })),
        ("tools/call", json!({ "name": "missing", "arguments": [] })),
        ("prompts/get", json!({ "name": "missing" })),
        ("resources/subscribe", json!({})),
        ("logging/setLevel", json!({ "level": "loud" })),
        (
            "completion/complete",
            json!({ "ref": { "type": "ref/other" }, "argument": { "name": "a", "value": "" } }),
        ),
        ("tasks/get", json!({})),
    ] {
        let answer = c.call(1, method, params.clone()).await;
        assert_eq!(code(&answer), -32602, "{method} {params}: {answer}");
    }
    let missing = c
        .call(2, "resources/read", json!({ "uri": "file:///nowhere" }))
        .await;
    assert_eq!(code(&missing), -32002, "{missing}");
}

#[tokio::test]
async fn stateless_requests_carry_their_revision_and_get_caching_hints() {
    let mut c = Client::start();
    let listed = c.call(1, "tools/list", stateless(json!({}))).await;
    let result = &listed["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].is_u64());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "wasm-mcp"
    );
    let discovered = c.call(2, "server/discover", stateless(json!({}))).await;
    let versions: Vec<&str> = Revision::newest_first().map(Revision::as_str).collect();
    assert_eq!(discovered["result"]["supportedVersions"], json!(versions));
    assert_eq!(code(&c.call(3, "ping", stateless(json!({}))).await), -32601);
    assert_eq!(
        code(&c.call(4, "initialize", stateless(json!({}))).await),
        -32601
    );
    let missing = c
        .call(5, "resources/read", stateless(json!({ "uri": "x:y" })))
        .await;
    assert_eq!(
        code(&missing),
        -32602,
        "resource-not-found is -32602 here: {missing}"
    );
    let mut unknown = stateless(json!({}));
    unknown["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2030-01-01");
    let refused = c.call(6, "tools/list", unknown).await;
    assert_eq!(code(&refused), -32022);
    assert_eq!(refused["error"]["data"]["supported"][0], "2026-07-28");
    let bare = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } });
    assert_eq!(code(&c.call(7, "tools/list", bare).await), -32602);
    let tasks = c
        .call(8, "tasks/get", stateless(json!({ "taskId": "x" })))
        .await;
    assert_eq!(
        code(&tasks),
        -32021,
        "the tasks extension was not declared: {tasks}"
    );
}
