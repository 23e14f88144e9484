//! The MCP endpoint: POST carries every client message; GET opens a
//! session's stream of server-initiated messages (or resumes a stream);
//! DELETE ends a session.

use super::answer::{answer, sse, Streaming};
use super::event_log::EventLog;
use super::headers::{self, PROTOCOL_VERSION};
use super::responses::{
    accepts, bad_request, not_allowed, rpc_error, session_not_found, session_store_down,
};
use super::sessions::{self, HttpSession};
use super::App;
use crate::protocol::{
    meta, parse_message, ErrorCode, HeaderParameter, Incoming, Method, Revision, RpcError,
};
use crate::server::access::Profile;
use crate::server::{Arrival, Caller, Outbox};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use serde_json::{Map, Value};
use std::convert::Infallible;
use std::sync::Arc;

/// The `Mcp-Session-Id` header.
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// POST: one JSON-RPC message.
pub(super) async fn post(state: State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    post_in(state, headers, body, None).await
}

/// POST on the path of `profile` (`None`: the main one).
pub(super) async fn post_in(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Bytes,
    profile: Option<Arc<Profile>>,
) -> Response {
    let mut caller = match app.admit(&headers).await {
        Ok(caller) => caller,
        Err(refused) => return *refused,
    };
    if let Some(profile) = profile {
        caller = Arc::new((*caller).clone().in_profile(profile));
    }
    let response = message(&app, &headers, caller, body).await;
    app.challenged(response)
}

/// One JSON-RPC message of `caller`, admitted.
async fn message(app: &App, headers: &HeaderMap, caller: Arc<Caller>, body: Bytes) -> Response {
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
    if !accepts(headers, "application/json") && !accepts(headers, "text/event-stream") {
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
    let header_version = match headers::header(headers, &PROTOCOL_VERSION) {
        Ok(v) => v,
        Err(error) => return rpc_error(StatusCode::BAD_REQUEST, error, &id),
    };
    if let Some(version) = header_version {
        let offered = Revision::parse(version)
            .is_some_and(|r| !r.is_stateless() || app.server.offers_stateless());
        if !offered {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                app.server.unsupported_version(&Value::from(version)),
                &id,
            );
        }
    }
    let body_is_stateless = match &message {
        Incoming::Request { params, .. } => params
            .get("_meta")
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .is_some(),
        _ => false,
    };
    if body_is_stateless || header_version.is_some_and(is_stateless) {
        stateless(app, headers, caller, message, size).await
    } else {
        stateful(app, headers, caller, message, size).await
    }
}

/// A request of the stateless revision: checked, served on a connection
/// of its own, and cancelled if the client closes the stream.
async fn stateless(
    app: &App,
    headers: &HeaderMap,
    caller: Arc<Caller>,
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
    let (reply, messages) = Outbox::new();
    let arrival = Arrival {
        id: id.clone(),
        method,
        params,
        size,
        reply,
        caller,
    };
    let check = |method: &str, params: &Map<String, Value>, mirrored: &[HeaderParameter]| {
        headers::validate(headers, method, params, mirrored)
    };
    let conn = match crate::server::serve_stateless(&app.server, arrival, check).await {
        Ok(conn) => conn,
        Err(error) => return rpc_error(StatusCode::BAD_REQUEST, error, &id),
    };
    answer(
        messages,
        &id,
        Streaming::Stateless(conn),
        app.json_response,
        true,
    )
    .await
}

/// A message of a handshake revision, within its session (or opening one).
async fn stateful(
    app: &App,
    headers: &HeaderMap,
    caller: Arc<Caller>,
    message: Incoming,
    size: usize,
) -> Response {
    let principal = caller.principal.clone();
    let id = match &message {
        Incoming::Request { id, .. } => id.clone(),
        _ => Value::Null,
    };
    let session_id = match headers::header(headers, &SESSION_ID) {
        Ok(v) => v,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, e, &id),
    };
    let opens = matches!(&message, Incoming::Request { method, .. } if Method::parse(method) == Some(Method::Initialize));
    let (session, new) = match session_id {
        None if opens => match app.sessions.open(&app.server, principal).await {
            Ok(session) => (session, true),
            Err(sessions::Full) => {
                crate::metrics::metrics().refused(crate::metrics::Refusal::Sessions);
                return rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    RpcError::internal("too many sessions in progress; try again later"),
                    &id,
                );
            }
        },
        None => {
            return bad_request(
                "Bad Request: the Mcp-Session-Id header is required (initialize first)",
                &id,
            )
        }
        Some(session_id) => match app.sessions.find(&app.server, session_id, &principal).await {
            Ok(session) => (session, false),
            Err(sessions::Lookup::StoreDown) => return session_store_down(&id),
            Err(sessions::Lookup::Unknown) => return session_not_found(&id),
        },
    };
    let _busy = session.busy();
    let Incoming::Request { id, method, params } = message else {
        crate::server::handle(&session.conn, message, size, Outbox::discard(), caller);
        return StatusCode::ACCEPTED.into_response();
    };
    let (reply, messages) = Outbox::new();
    crate::server::handle(
        &session.conn,
        Incoming::Request {
            id: id.clone(),
            method,
            params,
        },
        size,
        reply,
        caller,
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
            // Kept before the client can name it.
            session.conn.persist().await;
            let value = HeaderValue::from_str(&session.id).expect("hex is a valid header value");
            response.headers_mut().insert(SESSION_ID, value);
        } else {
            app.sessions.close(&session.id).await;
        }
    }
    response
}

/// The session a GET or DELETE names (held here, or taken up from the
/// session store); `Err` is the answer to send.
async fn named_session(app: &App, headers: &HeaderMap) -> Result<Arc<HttpSession>, Box<Response>> {
    let principal = app.admit(headers).await?.principal.clone();
    let version = headers::header(headers, &PROTOCOL_VERSION).ok().flatten();
    let session_id = headers::header(headers, &SESSION_ID).ok().flatten();
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
    match app.sessions.find(&app.server, session_id, &principal).await {
        Ok(session) => Ok(session),
        Err(sessions::Lookup::StoreDown) => Err(Box::new(session_store_down(&Value::Null))),
        Err(sessions::Lookup::Unknown) => Err(Box::new(session_not_found(&Value::Null))),
    }
}

/// GET: the session's stream of server-initiated messages, or the rest of
/// a stream named by `Last-Event-ID`.
pub(super) async fn get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let session = match named_session(&app, &headers).await {
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
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(EventLog::parse_event_id);
    let busy = session.busy();
    let held = last.and_then(|(stream, seq)| session.stream(stream).map(|log| (log, seq)));
    let events: BoxStream<'static, Result<Event, Infallible>> = match (held, last, session.keeper())
    {
        // A stream held here; events it began after (sent by the host
        // that held the session before) come from the store first.
        (Some((log, seq)), _, keeper) => {
            let local = log.first_seq();
            match keeper.filter(|_| seq + 1 < local) {
                Some(keeper) => super::replay::kept(keeper.clone(), log.id, seq, Some(local))
                    .chain(log.read(Some(local - 1)))
                    .boxed(),
                None => log.read(Some(seq)).boxed(),
            }
        }
        // A stream another host held: what the store kept of it.
        (None, Some((stream, seq)), Some(keeper)) => {
            super::replay::kept(keeper.clone(), stream, seq, None).boxed()
        }
        _ => session.standalone.read(None).boxed(),
    };
    sse(events.map(move |event| {
        let _ = &busy;
        event
    }))
}

/// DELETE: ends the session.
pub(super) async fn delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    match named_session(&app, &headers).await {
        Ok(session) => {
            app.sessions.close(&session.id).await;
            // Another host may hold it too (it moved between them).
            app.server
                .publish(crate::server::ServerEvent::SessionEnded(session.id.clone()));
            StatusCode::OK.into_response()
        }
        Err(answer) => *answer,
    }
}

/// Whether a version header names the stateless revision.
fn is_stateless(version: &str) -> bool {
    Revision::parse(version).is_some_and(Revision::is_stateless)
}
