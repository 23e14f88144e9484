//! In-process tests of the HTTP endpoint: the router answers requests
//! built here (a tower `oneshot`), with no socket. Checked: the status
//! each kind of answer gets, sessions opened by `initialize`, and the
//! headers a stateless request must repeat.

use super::{router, HttpOptions};
use crate::server::tests::empty_server;
use axum::body::Body;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

/// POSTs `body` to the endpoint with `headers` (and a loopback Host).
async fn post(body: &str, headers: &[(&str, &str)]) -> Response<Body> {
    let (app, _) = router(empty_server(), HttpOptions::default());
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    app.oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap()
}

async fn json_of(response: Response<Body>) -> Value {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// A stateless request of `method` with the headers it must repeat.
async fn stateless(method: &str, params: Value) -> Response<Body> {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    post(&body.to_string(), &headers).await
}

#[tokio::test]
async fn stateless_answers_carry_their_status() {
    let listed = stateless("tools/list", json!({})).await;
    assert_eq!(listed.status(), StatusCode::OK);
    assert_eq!(json_of(listed).await["result"]["tools"], json!([]));
    // A JSON-RPC error about the request itself is an HTTP client error.
    let unknown = stateless("no/such", json!({})).await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_of(unknown).await["error"]["code"], -32601);
    let handshake_only = stateless("ping", json!({})).await;
    assert_eq!(handshake_only.status(), StatusCode::NOT_FOUND);
    // Bad params are answered in the body, with 200.
    let bad = stateless("tools/list", json!({ "cursor": 1 })).await;
    assert_eq!(bad.status(), StatusCode::OK);
    assert_eq!(json_of(bad).await["error"]["code"], -32602);
}

#[tokio::test]
async fn a_stateless_request_must_repeat_its_method_in_the_headers() {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    } } });
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];
    let answer = post(&body.to_string(), &headers).await;
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(answer).await["error"]["code"], -32020);
    let unknown_version = post(&body.to_string(), &[("mcp-protocol-version", "2030-01-01")]).await;
    assert_eq!(unknown_version.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(unknown_version).await["error"]["code"], -32022);
}

#[tokio::test]
async fn initialize_opens_a_session_and_malformed_json_is_a_bad_request() {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" },
    } });
    let answer = post(&init.to_string(), &[]).await;
    assert_eq!(answer.status(), StatusCode::OK);
    let session = answer
        .headers()
        .get("mcp-session-id")
        .expect("a session id");
    assert_eq!(session.len(), 32);
    let broken = post("{\"jsonrpc\": \"2.0\", ", &[]).await;
    assert_eq!(broken.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_of(broken).await["error"]["code"], -32700);
    let sessionless = post(
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string(),
        &[],
    )
    .await;
    assert_eq!(sessionless.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn readiness_flips_with_the_first_load_and_the_shutdown() {
    let server = empty_server();
    let (app, _) = router(server.clone(), HttpOptions::default());
    let get = |path: &'static str| {
        let app = app.clone();
        async move {
            let request = Request::get(path).body(Body::empty()).unwrap();
            let response = app.oneshot(request).await.unwrap();
            (response.status(), json_of(response).await)
        }
    };
    let loading = server.loading();
    let (status, body) = get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["reasons"], json!(["the plugins are still loading"]));
    // Alive all along.
    assert_eq!(get("/healthz").await.0, StatusCode::OK);
    drop(loading);
    // The empty plugin set's digest: SHA-256 of nothing.
    let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(
        get("/readyz").await,
        (
            StatusCode::OK,
            json!({ "status": "ready", "plugins": empty, "store": "reachable" })
        )
    );
    server.stop();
    let (status, body) = get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["reasons"], json!(["the host is shutting down"]));
    assert_eq!(get("/healthz").await.0, StatusCode::OK);
}

/// POSTs `body` on session `session` (if any) to `app`.
async fn post_to(app: &axum::Router, body: Value, session: Option<&str>) -> Response<Body> {
    let mut request = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let request = request.body(Body::from(body.to_string())).unwrap();
    app.clone().oneshot(request).await.unwrap()
}

#[tokio::test]
async fn a_session_is_taken_up_by_another_endpoint_sharing_its_store() {
    // Two endpoints of one server: two hosts sharing a session store.
    let server = empty_server();
    let json = || HttpOptions {
        json_response: true,
        ..HttpOptions::default()
    };
    let (first, _) = router(server.clone(), json());
    let (second, _) = router(server.clone(), json());
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": { "roots": {} },
        "clientInfo": { "name": "t", "version": "0" },
    } });
    let opened = post_to(&first, init, None).await;
    assert_eq!(opened.status(), StatusCode::OK);
    let id = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let level = json!({ "jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                        "params": { "level": "error" } });
    assert_eq!(
        post_to(&first, level, Some(&id)).await.status(),
        StatusCode::OK
    );
    // The second endpoint never saw the session, and serves it as it was.
    let list = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/list" });
    let listed = post_to(&second, list.clone(), Some(&id)).await;
    assert_eq!(listed.status(), StatusCode::OK);
    assert_eq!(json_of(listed).await["result"]["tools"], json!([]));
    let kept = server.session_store().load(&id).await.unwrap().unwrap();
    assert_eq!(kept.version.map(|v| v.as_str()), Some("2025-06-18"));
    assert_eq!(
        kept.log_level.map(crate::server::convert::log_level_name),
        Some("error")
    );
    assert_eq!(kept.client_roots, Some(vec![]));
    // A session the store does not keep is unknown to both.
    let unknown = post_to(
        &second,
        list.clone(),
        Some("0123456789abcdef0123456789abcdef"),
    )
    .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    // Ended on the first, it is forgotten in the store.
    let delete = Request::delete("/mcp")
        .header("host", "127.0.0.1")
        .header("mcp-session-id", &id)
        .body(Body::empty())
        .unwrap();
    let deleted = first.clone().oneshot(delete).await.unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    assert_eq!(server.session_store().load(&id).await.unwrap(), None);
    let gone = post_to(&first, list, Some(&id)).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}
