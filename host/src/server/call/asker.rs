//! Questions asked as requests to the client (handshake revisions, and
//! 2025-11-25 tasks): sent on the call's stream, withdrawn unless answered.

use super::events::Events;
use super::wire::Cancelled;
use super::{Link, WaitSlot};
use crate::runtime::host_types::InputError;
use crate::runtime::BoxFuture;
use crate::server::Outbox;
use serde_json::Value;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::oneshot;
use tracing::Instrument as _;

/// The connection a call's questions go out on.
pub(crate) trait Client: Send + Sync {
    /// A slot for one more call waiting for this client's answers, or why
    /// not.
    fn wait_slot(&self) -> Result<WaitSlot, String>;
    /// Sends the client request `method` on `out`: its id, and where its
    /// answer (a result or an error object) arrives.
    fn request(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
    ) -> (Value, oneshot::Receiver<Result<Value, Value>>);
    /// Stops waiting for the answer to request `id`.
    fn forget(&self, id: &Value);
}

/// Asks the client questions for one request: on that request's outbox
/// (over HTTP, the SSE stream of the POST that made it).
#[derive(Clone)]
pub(crate) struct Asker {
    pub(super) conn: Weak<dyn Client>,
    pub(super) link: Arc<Link>,
    pub(super) timeout: Duration,
    /// Told when the call starts and stops waiting for an answer (a task
    /// is `input_required` meanwhile).
    pub(super) events: Option<Events>,
}

/// Says the wait for an answer ended, when dropped.
struct WaitingGuard(Option<Events>);

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        if let Some(events) = &self.0 {
            events.waiting(false);
        }
    }
}

impl Asker {
    /// Asks on `link` for a call of `conn`, waiting at most `timeout` for
    /// each answer; `events`, when given, hear when the call starts and
    /// stops waiting.
    pub(super) fn new(
        conn: Weak<dyn Client>,
        link: Arc<Link>,
        timeout: Duration,
        events: Option<Events>,
    ) -> Self {
        Asker {
            conn,
            link,
            timeout,
            events,
        }
    }

    /// Sends `method` and waits for the client's result, until `timeout`
    /// or `cancelled`; then the client is told the request is cancelled.
    pub(crate) async fn ask(
        &self,
        method: &str,
        params: Value,
        cancelled: BoxFuture<()>,
    ) -> Result<Value, InputError> {
        let span = tracing::debug_span!("client.request", rpc.method = %method);
        self.ask_unrecorded(method, params, cancelled)
            .instrument(span)
            .await
    }

    async fn ask_unrecorded(
        &self,
        method: &str,
        params: Value,
        mut cancelled: BoxFuture<()>,
    ) -> Result<Value, InputError> {
        let _slot = {
            let Some(conn) = self.conn.upgrade() else {
                return Err(InputError::Cancelled);
            };
            conn.wait_slot().map_err(InputError::Unsupported)?
        };
        if let Some(events) = &self.events {
            events.waiting(true);
        }
        let _waiting = WaitingGuard(self.events.clone());
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        // A task's question waits for a stream to go on (its tasks/result).
        let out = tokio::select! {
            out = self.link.request_route() => out,
            () = &mut deadline => return Err(InputError::Timeout),
            () = &mut cancelled => return Err(InputError::Cancelled),
        };
        let Some(conn) = self.conn.upgrade() else {
            return Err(InputError::Cancelled);
        };
        let (id, answer) = conn.request(&out, method, self.link.tag(params));
        drop(conn);
        // Withdrawn unless answered, even when this future is dropped.
        let mut pending = Withdraw {
            asker: self,
            id,
            reason: Some("the request was cancelled"),
        };
        tokio::select! {
            answer = answer => {
                pending.reason = None;
                match answer {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(InputError::ClientError(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("the client answered with an error")
                            .to_owned(),
                    )),
                    Err(_) => Err(InputError::Cancelled),
                }
            }
            () = &mut deadline => {
                pending.reason = Some("no answer in time");
                Err(InputError::Timeout)
            }
            () = cancelled => Err(InputError::Cancelled),
        }
    }
}

/// Tells the client a question is withdrawn, unless it was answered.
struct Withdraw<'a> {
    asker: &'a Asker,
    id: Value,
    reason: Option<&'static str>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(reason) = self.reason else { return };
        if let Some(conn) = self.asker.conn.upgrade() {
            conn.forget(&self.id);
        }
        self.asker.link.notify(
            "notifications/cancelled",
            crate::protocol::model::to_json(&Cancelled {
                request_id: &self.id,
                reason,
            }),
        );
    }
}
