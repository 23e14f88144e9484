//! The MCP endpoint: POST carries every client message; GET opens a
//! session's stream of server-initiated messages (or resumes a stream);
//! DELETE ends a session.

use super::event_log::EventLog;
use super::headers::{self, PROTOCOL_VERSION};
use super::sessions::{self, HttpSession};
use super::App;
use crate::protocol::{
    meta, parse_message, ErrorCode, Incoming, Method, RequestId, Revision, RpcError,
};
use crate::server::{Canceller, Connection, Outbox};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// The `Mcp-Session-Id` header.
const SESSION_ID: &str = "mcp-session-id";

/// How long a client waits before reconnecting to a dropped stream.
const RETRY: Duration = Duration::from_secs(1);

/// A JSON-RPC error as an HTTP response.
pub(super) fn rpc_error(status: StatusCode, error: RpcError, id: &RequestId) -> Response {
    (status, Json(error.response(id))).into_response()
}

fn bad_request(message: impl Into<String>, id: &RequestId) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        RpcError::new(ErrorCode::InvalidRequest, message),
        id,
    )
}

fn not_allowed() -> Response {
    let mut response = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        RpcError::new(
            ErrorCode::InvalidRequest,
            "Method not allowed: without a session, only POST is served",
        ),
        &Value::Null,
    );
    response
        .headers_mut()
        .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn session_not_found(id: &RequestId) -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        RpcError::new(
            ErrorCode::InvalidRequest,
            "Session not found: it ended or expired; initialize a new one",
        ),
        id,
    )
}

/// Whether the Accept header (if any) admits `media`.
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let Some(accept) = headers.get(http::header::ACCEPT) else {
        return true;
    };
    let accept = accept.to_str().unwrap_or_default();
    accept.split(',').any(|item| {
        let item = item.split(';').next().unwrap_or_default().trim();
        item == media
            || item == "*/*"
            || item == format!("{}/*", media.split('/').next().unwrap_or_default())
    })
}

/// The HTTP status of a stateless request's answer: errors about the
/// request itself are client errors.
fn status_of(message: &Value) -> StatusCode {
    if retry_after(message).is_some() {
        return StatusCode::TOO_MANY_REQUESTS;
    }
    message["error"]["code"]
        .as_i64()
        .and_then(ErrorCode::from_code)
        .map_or(StatusCode::OK, status_for)
}

/// The HTTP status of a stateless request's JSON-RPC error: the one place
/// that maps the two.
fn status_for(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::MethodNotFound => StatusCode::NOT_FOUND,
        ErrorCode::ParseError
        | ErrorCode::InvalidRequest
        | ErrorCode::HeaderMismatch
        | ErrorCode::MissingRequiredClientCapability
        | ErrorCode::UnsupportedProtocolVersion => StatusCode::BAD_REQUEST,
        ErrorCode::InvalidParams | ErrorCode::InternalError | ErrorCode::ResourceNotFound => {
            StatusCode::OK
        }
    }
}

/// When an error response says to retry, in whole seconds.
fn retry_after(message: &Value) -> Option<u64> {
    let ms = message["error"]["data"]["retryAfterMs"].as_u64()?;
    Some(ms.div_ceil(1000).max(1))
}

/// A JSON answer; an error that says when to retry is a 429 with
/// `Retry-After` on every revision.
fn json_answer(message: Value, modern: bool) -> Response {
    if let Some(seconds) = retry_after(&message) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(http::header::RETRY_AFTER, seconds.to_string())],
            Json(message),
        )
            .into_response();
    }
    let status = if modern {
        status_of(&message)
    } else {
        StatusCode::OK
    };
    (status, Json(message)).into_response()
}

fn is_response_to(message: &Value, id: &RequestId) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id)
}

/// POST: one JSON-RPC message.
pub(super) async fn post(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let principal = match app.admit(&headers) {
        Ok(p) => p,
        Err(refused) => return *refused,
    };
    let json_body = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !json_body {
        return rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            RpcError::new(
                ErrorCode::InvalidRequest,
                "Unsupported Media Type: the body must be application/json",
            ),
            &Value::Null,
        );
    }
    if !accepts(&headers, "application/json") && !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            RpcError::new(
                ErrorCode::InvalidRequest,
                "Not Acceptable: the client must accept application/json and text/event-stream",
            ),
            &Value::Null,
        );
    }
    let message = match std::str::from_utf8(&body)
        .map_err(|_| {
            (
                Value::Null,
                RpcError::new(ErrorCode::ParseError, "Parse error: the body is not UTF-8"),
            )
        })
        .and_then(parse_message)
    {
        Ok(message) => message,
        Err((id, error)) => return rpc_error(StatusCode::BAD_REQUEST, error, &id),
    };
    // The parsed message is what the request keeps; the bytes go now.
    let size = body.len();
    drop(body);
    let id = match &message {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let header_version = match headers::header(&headers, PROTOCOL_VERSION) {
        Ok(v) => v,
        Err(error) => return rpc_error(StatusCode::BAD_REQUEST, error, &id),
    };
    if let Some(version) = header_version {
        let offered = Revision::parse(version)
            .is_some_and(|r| !r.is_stateless() || app.server.offers_stateless());
        if !offered {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                app.server.unsupported_version(&json!(version)),
                &id,
            );
        }
    }
    let body_is_modern = match &message {
        Incoming::Request { params, .. } => params
            .get("_meta")
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .is_some(),
        _ => false,
    };
    if body_is_modern || header_version.is_some_and(is_stateless) {
        stateless(&app, &headers, principal, message, size).await
    } else {
        stateful(&app, &headers, principal, message, size).await
    }
}

/// A request of the stateless revision: checked, served on a connection
/// of its own, and cancelled if the client closes the stream.
async fn stateless(
    app: &App,
    headers: &HeaderMap,
    principal: Option<String>,
    message: Incoming,
    size: usize,
) -> Response {
    let (id, method, params) = match message {
        Incoming::Request { id, method, params } => (id, method, params),
        // Without sessions, a notification has nothing to act on.
        Incoming::Notification { .. } => return StatusCode::ACCEPTED.into_response(),
        Incoming::Response { .. } => {
            return bad_request(
                "Bad Request: this revision does not carry client responses",
                &Value::Null,
            )
        }
    };
    let schema = match Method::parse(&method) {
        Some(Method::CallTool) => params
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| app.server.tool_input_schema(name)),
        _ => None,
    };
    if let Err(error) = headers::validate(headers, &method, &params, schema.as_deref())
        .and_then(|()| app.server.check_stateless_meta(&params))
    {
        return rpc_error(StatusCode::BAD_REQUEST, error, &id);
    }
    let (reply, messages) = Outbox::new();
    let conn = Connection::stateless(app.server.clone(), Outbox::new().0, principal);
    conn.handle(
        Incoming::Request {
            id: id.clone(),
            method,
            params,
        },
        size,
        reply,
    );
    answer(
        messages,
        &id,
        Streaming::Stateless(conn),
        app.json_response,
        true,
    )
    .await
}

/// Where an SSE answer streams from.
enum Streaming {
    /// A stateless request: closing the stream cancels it.
    Stateless(Arc<Connection>),
    /// A session's request: the stream can be resumed; abandoned for
    /// longer than `grace`, the request is cancelled.
    Session {
        session: Arc<HttpSession>,
        /// Whether to open with a priming event (2025-11-25 and later).
        priming: bool,
        /// Cancels the request (`None` if it was refused or ended already).
        cancel: Option<Arc<Canceller>>,
        grace: Duration,
    },
}

/// Cancels a request when dropped (its client went away before its
/// answer), unless disarmed.
struct CancelOnDrop(Option<Cancel>);

/// What a [`CancelOnDrop`] cancels.
enum Cancel {
    /// A stateless request's own connection.
    Connection(Arc<Connection>),
    /// A session's request.
    Request(Arc<Canceller>),
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        match self.0.take() {
            Some(Cancel::Connection(conn)) => conn.close(),
            Some(Cancel::Request(request)) => request.cancel(),
            None => {}
        }
    }
}

fn message_event(message: &Value) -> Result<Event, Infallible> {
    Ok(Event::default().data(message.to_string()))
}

fn receiver_stream(messages: crate::server::OutboxReceiver) -> impl Stream<Item = Value> {
    futures_util::stream::unfold(messages, |mut rx| async move {
        rx.recv().await.map(|m| (m, rx))
    })
}

/// Answers a request: as JSON when its response is the first message (or
/// the server prefers JSON), otherwise as an SSE stream of the messages
/// about it, ending with its response.
async fn answer(
    mut messages: crate::server::OutboxReceiver,
    id: &RequestId,
    streaming: Streaming,
    json_only: bool,
    modern: bool,
) -> Response {
    // A request is cancelled if its client goes away while this waits for
    // its answer, or (stateless) while its stream is read. Once its answer
    // is found the request has ended, and cancelling does nothing.
    let cancel_on_drop = CancelOnDrop(match &streaming {
        Streaming::Stateless(conn) => Some(Cancel::Connection(conn.clone())),
        Streaming::Session { cancel, .. } => cancel.clone().map(Cancel::Request),
    });
    let Some(first) = messages.recv().await else {
        // Cancelled before it answered: nothing more will come.
        return StatusCode::ACCEPTED.into_response();
    };
    if json_only || is_response_to(&first, id) {
        let mut message = first;
        while !is_response_to(&message, id) {
            // Without a stream for this request, its questions to the
            // client go on the session's GET stream; notifications are lost.
            if let Streaming::Session { session, .. } = &streaming {
                if message.get("method").is_some() && message.get("id").is_some() {
                    session.standalone.push(&message);
                }
            }
            match messages.recv().await {
                Some(next) => message = next,
                None => return StatusCode::ACCEPTED.into_response(),
            }
        }
        return json_answer(message, modern);
    }
    match streaming {
        Streaming::Stateless(_) => {
            let guard = cancel_on_drop;
            let events = futures_util::stream::once(async move { first })
                .chain(receiver_stream(messages))
                .map(move |message| {
                    let _ = &guard;
                    message_event(&message)
                });
            sse(events)
        }
        Streaming::Session {
            session,
            priming,
            cancel,
            grace,
        } => {
            let log = session.open_stream(first, messages);
            // Disconnected, the client may resume the stream within the
            // grace; after it, the request is cancelled.
            if let Some(cancel) = cancel {
                log.on_abandoned(grace, move || cancel.cancel());
            }
            cancel_on_drop.disarm();
            let busy = session.busy();
            let prime =
                priming.then(|| Ok(Event::default().id(log.event_id(0)).retry(RETRY).data("")));
            let events = futures_util::stream::iter(prime)
                .chain(log.read(Some(0)))
                .map(move |event| {
                    let _ = &busy;
                    event
                });
            sse(events)
        }
    }
}

fn sse(events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static) -> Response {
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// A message of a handshake revision, within its session (or opening one).
async fn stateful(
    app: &App,
    headers: &HeaderMap,
    principal: Option<String>,
    message: Incoming,
    size: usize,
) -> Response {
    let id = match &message {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let session_id = match headers::header(headers, SESSION_ID) {
        Ok(v) => v,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, e, &id),
    };
    let opens = matches!(&message, Incoming::Request { method, .. } if Method::parse(method) == Some(Method::Initialize));
    let (session, new) = match session_id {
        None if opens => match app.sessions.open(&app.server, principal) {
            Ok(session) => (session, true),
            Err(sessions::Full) => {
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    RpcError::internal("too many sessions in progress; try again later"),
                    &id,
                )
            }
        },
        None => {
            return bad_request(
                "Bad Request: the Mcp-Session-Id header is required (initialize first)",
                &id,
            )
        }
        Some(session_id) => match app.sessions.get(session_id, &principal) {
            Ok(session) => (session, false),
            Err(_) => return session_not_found(&id),
        },
    };
    let _busy = session.busy();
    let Incoming::Request { id, method, params } = message else {
        session.conn.handle(message, size, Outbox::new().0);
        return StatusCode::ACCEPTED.into_response();
    };
    let (reply, messages) = Outbox::new();
    session.conn.handle(
        Incoming::Request {
            id: id.clone(),
            method,
            params,
        },
        size,
        reply,
    );
    let priming = session
        .conn
        .negotiated_version()
        .is_some_and(Revision::has_handshake_tasks);
    let streaming = Streaming::Session {
        session: session.clone(),
        priming,
        cancel: session.conn.canceller(&id).map(Arc::new),
        grace: app.resume_grace,
    };
    let mut response = answer(messages, &id, streaming, app.json_response, false).await;
    if new {
        if session.conn.negotiated_version().is_some() {
            let value = HeaderValue::from_str(&session.id).expect("hex is a valid header value");
            response.headers_mut().insert(SESSION_ID, value);
        } else {
            app.sessions.close(&session.id);
        }
    }
    response
}

/// The session a GET or DELETE names; `Err` is the answer to send.
fn named_session(app: &App, headers: &HeaderMap) -> Result<Arc<HttpSession>, Box<Response>> {
    let principal = app.admit(headers)?;
    let version = headers::header(headers, PROTOCOL_VERSION).ok().flatten();
    let session_id = headers::header(headers, SESSION_ID).ok().flatten();
    let revision = version.and_then(Revision::parse);
    let Some(session_id) = session_id.filter(|_| !revision.is_some_and(Revision::is_stateless))
    else {
        return Err(Box::new(match revision {
            Some(r) if !r.is_stateless() => bad_request(
                "Bad Request: the Mcp-Session-Id header is required",
                &Value::Null,
            ),
            _ => not_allowed(),
        }));
    };
    app.sessions
        .get(session_id, &principal)
        .map_err(|_| Box::new(session_not_found(&Value::Null)))
}

/// GET: the session's stream of server-initiated messages, or the rest of
/// a stream named by `Last-Event-ID`.
pub(super) async fn get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let session = match named_session(&app, &headers) {
        Ok(s) => s,
        Err(answer) => return *answer,
    };
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            RpcError::new(
                ErrorCode::InvalidRequest,
                "Not Acceptable: the client must accept text/event-stream",
            ),
            &Value::Null,
        );
    }
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(EventLog::parse_event_id)
        .and_then(|(stream, seq)| session.stream(stream).map(|log| (log, seq)));
    let (log, after) = match resume {
        Some((log, seq)) => (log, Some(seq)),
        None => (session.standalone.clone(), None),
    };
    let busy = session.busy();
    sse(log.read(after).map(move |event| {
        let _ = &busy;
        event
    }))
}

/// DELETE: ends the session.
pub(super) async fn delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match named_session(&app, &headers) {
        Ok(session) => {
            app.sessions.close(&session.id);
            StatusCode::OK.into_response()
        }
        Err(answer) => *answer,
    }
}

/// Whether a version header names the stateless revision.
fn is_stateless(version: &str) -> bool {
    Revision::parse(version).is_some_and(Revision::is_stateless)
}
