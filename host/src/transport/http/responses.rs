//! The endpoint's answers: JSON-RPC errors with their HTTP status, and a
//! stateless request's JSON answer.

use crate::protocol::{ErrorCode, RequestId, RpcError};
use crate::server::Outgoing;
use axum::response::{IntoResponse, Response};
use axum::Json;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::Value;

/// A JSON-RPC error as an HTTP response.
pub(super) fn rpc_error(status: StatusCode, error: RpcError, id: &RequestId) -> Response {
    (status, Json(error.response(id))).into_response()
}

pub(super) fn bad_request(message: impl Into<String>, id: &RequestId) -> Response {
    rpc_error(
        StatusCode::BAD_REQUEST,
        RpcError::new(ErrorCode::InvalidRequest, message),
        id,
    )
}

pub(super) fn not_allowed() -> Response {
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

pub(super) fn session_not_found(id: &RequestId) -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        RpcError::new(
            ErrorCode::InvalidRequest,
            "Session not found: it ended or expired; initialize a new one",
        ),
        id,
    )
}

/// The answer when a session may be kept in a store that does not answer.
pub(super) fn session_store_down(id: &RequestId) -> Response {
    let mut response = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        RpcError::new(
            ErrorCode::InternalError,
            "The session store is unreachable, so this session cannot be taken up here now; retry shortly",
        ),
        id,
    );
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    response
}

/// Whether the Accept header (if any) admits `media`.
pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
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
pub(super) fn status_of(message: &Value) -> StatusCode {
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
pub(super) fn status_for(code: ErrorCode) -> StatusCode {
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
        ErrorCode::Forbidden => StatusCode::FORBIDDEN,
    }
}

/// The scopes a refused request needed (space-separated), carried from
/// the answer to where the endpoint adds its challenge.
#[derive(Clone)]
pub(super) struct NeedsScope(pub String);

/// When an error response says to retry, in whole seconds.
pub(super) fn retry_after(message: &Value) -> Option<u64> {
    let ms = message["error"]["data"]["retryAfterMs"].as_u64()?;
    Some(ms.div_ceil(1000).max(1))
}

/// A JSON answer; an error that says when to retry is a 429 with
/// `Retry-After` on every revision.
pub(super) fn json_answer(message: Outgoing, stateless: bool) -> Response {
    let message = match message {
        Outgoing::Json(message) => message,
        // Only successful responses are prepared as text.
        Outgoing::Text { text, .. } => {
            return (
                StatusCode::OK,
                [(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                text,
            )
                .into_response();
        }
    };
    if let Some(seconds) = retry_after(&message) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(http::header::RETRY_AFTER, seconds.to_string())],
            Json(message),
        )
            .into_response();
    }
    if message["error"]["code"].as_i64() == Some(ErrorCode::Forbidden.code()) {
        // Refused for its token's scopes on every revision, as the
        // authorization spec says.
        let scope = message["error"]["data"]["scope"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut response = (StatusCode::FORBIDDEN, Json(message)).into_response();
        response.extensions_mut().insert(NeedsScope(scope));
        return response;
    }
    let status = if stateless {
        status_of(&message)
    } else {
        StatusCode::OK
    };
    (status, Json(message)).into_response()
}
