//! The deprecated HTTP+SSE transport of 2024-11-05, for old clients: GET
//! opens an event stream whose first event names the URL to POST messages
//! to; every answer comes back on the stream.

use super::responses::rpc_error;
use super::App;
use crate::protocol::{random_id, ErrorCode, RpcError};
use crate::server::{Connection, Outbox};
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Where the event stream is opened.
pub(super) const STREAM_PATH: &str = "/sse";
/// Where messages are posted.
pub(super) const MESSAGES_PATH: &str = "/messages";

/// One old-style connection.
pub(super) struct LegacyConnection {
    conn: Arc<Connection>,
    principal: Option<String>,
}

/// Ends the connection when its event stream goes away.
struct Hangup(Arc<App>, String);

impl Drop for Hangup {
    fn drop(&mut self) {
        if let Some(gone) = self.0.legacy_table().remove(&self.1) {
            gone.conn.close();
        }
    }
}

/// GET /sse: the event stream.
pub(super) async fn open(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let caller = match app.admit(&headers).await {
        Ok(caller) => caller,
        Err(refused) => return *refused,
    };
    let principal = caller.principal.clone();
    let (out, messages) = Outbox::new();
    let id = random_id();
    let conn = Connection::new(app.server.clone(), out, caller);
    app.legacy_table()
        .insert(id.clone(), LegacyConnection { conn, principal });
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("{MESSAGES_PATH}?sessionId={id}"));
    let hangup = (
        Hangup(app.clone(), id),
        crate::metrics::metrics().stream_opened(),
    );
    let messages = futures_util::stream::unfold(messages, |mut rx| async move {
        rx.recv().await.map(|m| (m, rx))
    });
    let rest = messages.map(move |m| {
        let _ = &hangup;
        Ok::<_, std::convert::Infallible>(Event::default().event("message").data(m.text()))
    });
    Sse::new(futures_util::stream::once(async { Ok(endpoint) }).chain(rest))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// The query of a message POST.
#[derive(Deserialize)]
pub(super) struct Target {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// POST /messages?sessionId=…: one message; the answer goes to the stream.
pub(super) async fn message(
    State(app): State<Arc<App>>,
    Query(target): Query<Target>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Each message acts with its own token's grants, not with those of
    // the token that opened the stream (it must be the same principal's).
    let caller = match app.admit(&headers).await {
        Ok(caller) => caller,
        Err(refused) => return *refused,
    };
    let principal = caller.principal.clone();
    let conn = app
        .legacy_table()
        .get(&target.session_id)
        .filter(|c| c.principal == principal)
        .map(|c| c.conn.clone());
    let Some(conn) = conn else {
        return rpc_error(
            StatusCode::NOT_FOUND,
            RpcError::new(ErrorCode::InvalidRequest, "Session not found"),
            &Value::Null,
        );
    };
    match std::str::from_utf8(&body) {
        Ok(text) => {
            crate::server::handle_text_from(&conn, text, caller);
            (StatusCode::ACCEPTED, "Accepted").into_response()
        }
        Err(_) => rpc_error(
            StatusCode::BAD_REQUEST,
            RpcError::new(ErrorCode::ParseError, "Parse error: the body is not UTF-8"),
            &Value::Null,
        ),
    }
}
