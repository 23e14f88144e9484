//! Answering a POSTed request: its response as JSON, or an SSE stream of
//! the messages about it ending with its response; cancelled when the
//! client goes away.

use super::responses::json_answer;
use super::sessions::HttpSession;
use crate::protocol::RequestId;
use crate::server::{Canceller, Connection, Outgoing};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How long a client waits before reconnecting to a dropped stream.
const RETRY: Duration = Duration::from_secs(1);

/// Where an SSE answer streams from.
pub(super) enum Streaming {
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
pub(super) struct CancelOnDrop(Option<Cancel>);

/// What a [`CancelOnDrop`] cancels.
pub(super) enum Cancel {
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

fn message_event(message: &Outgoing) -> Result<Event, Infallible> {
    Ok(Event::default().data(message.text()))
}

fn receiver_stream(messages: crate::server::OutboxReceiver) -> impl Stream<Item = Outgoing> {
    futures_util::stream::unfold(messages, |mut rx| async move {
        rx.recv().await.map(|m| (m, rx))
    })
}

/// Answers a request: as JSON when its response is the first message (or
/// the server prefers JSON), otherwise as an SSE stream of the messages
/// about it, ending with its response.
pub(super) async fn answer(
    mut messages: crate::server::OutboxReceiver,
    id: &RequestId,
    streaming: Streaming,
    json_only: bool,
    stateless: bool,
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
    if json_only || first.is_response_to(id) {
        let mut message = first;
        while !message.is_response_to(id) {
            // Without a stream for this request, its questions to the
            // client go on the session's GET stream; notifications are lost.
            if let Streaming::Session { session, .. } = &streaming {
                if message.is_request() {
                    session.standalone.push(&message);
                }
            }
            match messages.recv().await {
                Some(next) => message = next,
                None => return StatusCode::ACCEPTED.into_response(),
            }
        }
        return json_answer(message, stateless);
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

pub(super) fn sse(
    events: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    let open = crate::metrics::metrics().stream_opened();
    let events = events.map(move |event| {
        let _ = &open;
        event
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
