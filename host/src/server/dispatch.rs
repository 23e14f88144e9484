//! The server's one intake: a connection's messages dispatched as they
//! arrive (each request concurrently, to [`super::methods`]), its answers
//! shaped for their revision, and the client's notifications acted on.
//! The top of `server/`: the transport calls in here ([`handle`],
//! [`serve_stateless`]), and nothing in `server/` calls up into it.

use super::connection::Connection;
use super::methods::{Answer, Answered};
use super::session::{self, Era, Settled};
use super::{methods, Caller, Outbox, Outgoing, Server};
use crate::protocol::{
    notification, parse_message, HeaderParameter, Incoming, Method, RequestId, RpcError,
};
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// Handles one line of stdio on `conn`: responses and request-related
/// messages go to the connection's own outbox.
pub fn handle_text(conn: &Arc<Connection>, text: &str) {
    handle_text_from(conn, text, conn.caller.clone())
}

/// [`handle_text`] for a message that came with its own credentials
/// (`caller`), not those the connection was opened with.
pub fn handle_text_from(conn: &Arc<Connection>, text: &str, caller: Arc<Caller>) {
    match parse_message(text) {
        Ok(message) => handle(conn, message, text.len(), conn.out.clone(), caller),
        Err((id, error)) => {
            tracing::warn!("bad message: {}", error.message);
            conn.out.send(error.response(&id));
        }
    }
}

/// Handles one message on `conn`, `size` bytes as received, from
/// `caller`. A request runs concurrently; its response and the
/// notifications about it go to `reply`, which is dropped when the
/// request is done.
pub fn handle(
    conn: &Arc<Connection>,
    message: Incoming,
    size: usize,
    reply: Outbox,
    caller: Arc<Caller>,
) {
    match message {
        Incoming::Request { id, method, params } => {
            let arrival = Arrival {
                id,
                method,
                params,
                size,
                reply,
                caller,
            };
            // The era and the handshake are settled in arrival order;
            // everything else runs concurrently.
            let handshake_only = conn.server.options.handshake_only;
            // (The session's lock is let go before the request is served.)
            let era = session::era_of(&arrival.params, &conn.session(), handshake_only);
            let era = match era {
                Ok(era) => era,
                Err(error) => return arrival.reply.send(error.response(&arrival.id)),
            };
            let method = Method::parse(&arrival.method);
            let settled = Settled {
                era,
                method,
                catalogue: None,
            };
            serve(conn, arrival, settled);
        }
        Incoming::Notification { method, params } => notification(conn, &method, &params),
        Incoming::Response { id, outcome } => conn.answered(id, outcome),
    }
}

/// Serves `arrival`, a request of a stateless revision, on a connection
/// of its own, which it returns (its answer goes to `arrival.reply`).
/// `headers` is the transport's check of what the request repeats in
/// headers (its method, name and the tool's header parameters), made
/// against the catalogue that then serves it. An error refuses the
/// request unserved.
pub async fn serve_stateless(
    server: &Arc<Server>,
    arrival: Arrival,
    headers: impl FnOnce(&str, &Map<String, Value>, &[HeaderParameter]) -> Result<(), RpcError>,
) -> Result<Arc<Connection>, RpcError> {
    let arriving = server.arriving(&arrival.method).await;
    let mirrored = arriving.header_parameters(&arrival.params);
    headers(&arrival.method, &arrival.params, mirrored)?;
    let settled = server.settle_stateless(arriving, &arrival.params)?;
    let conn = Connection::stateless(server.clone(), Outbox::discard(), arrival.caller.clone());
    serve(&conn, arrival, settled);
    Ok(conn)
}

/// Serves a request whose era and method are `settled`, concurrently:
/// a handshake's `initialize` at once, anything else admitted, tracked
/// (cancellable) and run on a task of its own.
fn serve(conn: &Arc<Connection>, arrival: Arrival, settled: Settled) {
    if settled.method == Some(Method::Initialize) && !settled.era.is_stateless() {
        let outcome = methods::lifecycle::initialize(conn, &arrival.params);
        if let Some(response) = respond(
            &conn.server,
            &arrival.id,
            &settled.era,
            settled.method,
            outcome,
        ) {
            arrival.reply.send(response);
        }
        return;
    }
    let admitted = match admit(conn, &arrival, settled.method) {
        Ok(admitted) => admitted,
        Err(error) => return arrival.reply.send(error.response(&arrival.id)),
    };
    let cancel = conn.track(&arrival.id);
    let span = request_span(&arrival, settled.method);
    // The instances its call used are torn down after it answered.
    tokio::spawn(
        conn.answering.track_future(crate::runtime::answer_first(
            run(
                conn.clone(),
                arrival,
                settled,
                admitted,
                cancel,
                span.clone(),
            )
            .instrument(span),
        )),
    );
}

/// Admits `arrival` under the server's admission limits, or refuses it
/// (busy: counted, logged and audited).
fn admit(
    conn: &Connection,
    arrival: &Arrival,
    method: Option<Method>,
) -> Result<super::admission::Admitted, RpcError> {
    let on_connection = conn.in_flight_count();
    let admission = &conn.server.admission;
    admission
        .admit(conn.principal.as_deref(), on_connection, arrival.size)
        .inspect_err(|error| {
            tracing::warn!(
                method = arrival.method,
                "request refused: {}",
                error.message
            );
            crate::metrics::metrics().refused(crate::metrics::Refusal::InProgress);
            if let Some(audit) = &conn.server.options.audit {
                audit.record(&super::audit::Entry {
                    event: "refused",
                    principal: arrival.caller.principal.as_deref(),
                    tenant: super::audit::tenant_of(&arrival.caller.tenant),
                    method: method.map(Method::as_str),
                    outcome: "busy",
                    code: Some(error.code.code()),
                    reason: Some(&error.message),
                    ..Default::default()
                });
            }
        })
}

/// Runs an admitted request to its answer: the method, its audit line,
/// and the response (none for a request the client cancelled).
async fn run(
    conn: Arc<Connection>,
    arrival: Arrival,
    settled: Settled,
    admitted: super::admission::Admitted,
    cancel: CancellationToken,
    span: tracing::Span,
) {
    let _admitted = admitted;
    let started = std::time::Instant::now();
    let Settled {
        era,
        method,
        catalogue,
    } = settled;
    if catalogue.is_none() && method.is_some_and(Method::reads_catalogue) {
        conn.server.until_loaded().await;
    }
    let reached = super::audit::Reached::default();
    let request = super::request::Request {
        conn: &conn,
        id: &arrival.id,
        params: &arrival.params,
        era: &era,
        cancel: cancel.clone(),
        reply: &arrival.reply,
        caller: &arrival.caller,
        reached: &reached,
    };
    let outcome = methods::handle(request, &arrival.method, method, catalogue).await;
    if let Some(audit) = &conn.server.options.audit {
        audit.served(super::audit::Served {
            principal: arrival.caller.principal.as_deref(),
            tenant: &arrival.caller.tenant,
            method,
            params: &arrival.params,
            outcome: match &outcome {
                Ok(Answer::Result(result)) => super::audit::Outcome::answered(Some(result)),
                Ok(_) => super::audit::Outcome::answered(None),
                Err(error) => super::audit::Outcome::failed(error),
            },
            error: outcome.as_ref().err(),
            reached: &reached,
            took: started.elapsed(),
            span: &span,
            parent: None,
        });
    }
    let response = respond(&conn.server, &arrival.id, &era, method, outcome);
    conn.untrack(&arrival.id);
    if cancel.is_cancelled() && conn.is_ending() {
        arrival.reply.send(
            RpcError::internal(
                "the request was cancelled: the client closed its input \
                 while it was still running",
            )
            .response(&arrival.id),
        );
    } else if cancel.is_cancelled() {
        // A request the client cancelled gets no response.
        tracing::debug!(id = %arrival.id, method = arrival.method, "request cancelled");
    } else if let Some(response) = response {
        arrival.reply.send(response);
    }
}

/// A notification from the client on `conn`.
fn notification(conn: &Arc<Connection>, method: &str, params: &Map<String, Value>) {
    match method {
        notification::CANCELLED => {
            let Some(id) = params.get("requestId") else {
                return;
            };
            if let Some(cancel) = conn.in_flight.lock().get(&id.to_string()) {
                tracing::debug!(%id, "request cancelled by the client");
                cancel.cancel();
            }
        }
        notification::INITIALIZED => {
            let wants_roots = {
                let mut session = conn.session();
                session.initialized = true;
                session.client_roots.is_some()
            };
            let this = conn.clone();
            tokio::spawn(async move { this.persist().await });
            if wants_roots {
                tokio::spawn(conn.clone().refresh_roots());
            }
        }
        notification::ROOTS_LIST_CHANGED => {
            if conn.session().client_roots.is_some() {
                tokio::spawn(conn.clone().refresh_roots());
            }
        }
        notification::PROGRESS => {}
        other => tracing::debug!(method = other, "ignoring notification"),
    }
}

/// The response to request `id`, shaped for its era; `None` for
/// [`Answer::NoResponse`].
fn respond(
    server: &Server,
    id: &RequestId,
    era: &Era,
    method: Option<Method>,
    answered: Answered,
) -> Option<Outgoing> {
    match answered {
        Ok(Answer::NoResponse) => None,
        Ok(Answer::Result(result)) => Some(match era {
            // What 2026-07-28 requires on every result (`resultType`,
            // server identity, and caching hints on cacheable ones), written
            // as the result is serialized.
            Era::Stateless { .. } => {
                let envelope = super::prepared::envelope(&server.options, method);
                success(id, &envelope.around(&result))
            }
            Era::Handshake { .. } => success(id, &result),
        }),
        Ok(Answer::Page(page)) => Some(Outgoing::Text {
            id: id.clone(),
            text: page.response(id, &server.options, era.is_stateless()),
        }),
        Err(error) => Some(Outgoing::Json(error.response(id))),
    }
}

/// One request as a transport hands it to the server: the message's
/// parts, its size as received, where its response and the notifications
/// about it go, and who sent it.
pub struct Arrival {
    /// Its id.
    pub id: RequestId,
    /// Its method, as sent.
    pub method: String,
    /// Its params.
    pub params: Map<String, Value>,
    /// Its size in bytes, as received.
    pub size: usize,
    /// Where its response and the notifications about it go; dropped when
    /// the request is done.
    pub reply: Outbox,
    /// Who sent it, and what its credentials grant.
    pub caller: Arc<Caller>,
}

/// The span a request runs in. What a client sent is recorded bounded: a
/// method outside the protocol's set as one value, the id cut short.
fn request_span(arrival: &Arrival, method: Option<Method>) -> tracing::Span {
    let span = tracing::debug_span!(
        "mcp.request",
        otel.name = crate::traces::method_name(method),
        otel.kind = "server",
        rpc.method = crate::traces::method_name(method),
        mcp.request.id = %crate::traces::Excerpt(&arrival.id),
        mcp.tenant = %arrival.caller.tenant,
    );
    crate::traces::continue_from(&span, &arrival.params);
    span
}

/// A successful response, serialized once here: the outbox counts its
/// bytes and every transport writes the text as it is.
fn success<R: serde::Serialize>(id: &RequestId, result: &R) -> Outgoing {
    #[derive(serde::Serialize)]
    struct Success<'a, R> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: &'a R,
    }
    let response = Success {
        jsonrpc: "2.0",
        id,
        result,
    };
    Outgoing::Text {
        id: id.clone(),
        text: serde_json::to_string(&response).expect("a JSON result always serializes"),
    }
}
