//! One request being served: what every method needs to know of it, and
//! the plain value a plugin call is given ([`Request::call_request`]).

use super::call::{Asking, CallRequest, Client, Retry};
use super::session::Era;
use super::{Connection, Outbox};
use crate::protocol::{meta, RequestId};
use crate::runtime::types::LogLevel;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// One request being served.
pub(super) struct Request<'a> {
    /// The connection it came on.
    pub conn: &'a Arc<Connection>,
    /// Its id.
    pub id: &'a RequestId,
    /// Its params.
    pub params: &'a Map<String, Value>,
    /// How it is to be served.
    pub era: &'a Era,
    /// Cancelled when the request is.
    pub cancel: CancellationToken,
    /// Where its response and the notifications about it go.
    pub reply: &'a Outbox,
    /// Who made it, and what its token grants.
    pub caller: &'a Arc<super::Caller>,
    /// The item its access was decided for (for the audit log).
    pub reached: &'a super::audit::Reached,
}

impl Request<'_> {
    /// Refuses the use of item `name` of `kind` of `plugin` (`what` in
    /// messages) unless the caller's token allows it, then counts the call
    /// against the caller's (and the tool's) calls per second.
    pub(super) fn may_use(
        &self,
        item: &super::access::Item<'_>,
        what: &str,
    ) -> Result<(), crate::protocol::RpcError> {
        self.may_see(item, what)?;
        let tool =
            (item.kind() == super::access::Kind::Tool).then_some((item.plugin(), item.name()));
        let options = &self.conn.server.options;
        options.rates.take(self.caller.principal.as_deref(), tool)
    }

    /// Refuses the caller what the access policy does not let it see (as
    /// [`Request::may_use`], without taking from its rate: for what the
    /// host serves itself, such as skills).
    pub(super) fn may_see(
        &self,
        item: &super::access::Item<'_>,
        what: &str,
    ) -> Result<(), crate::protocol::RpcError> {
        self.reached.set(item);
        let access = &self.conn.server.options.access;
        access.check(self.caller, item, what).inspect_err(|error| {
            crate::metrics::metrics().refused(crate::metrics::Refusal::Scope);
            super::refusals::note_access(self.caller.principal.as_deref(), error);
        })
    }

    /// What a plugin call made for this request needs to know of it: from
    /// the session on a handshake revision, from `_meta` on the stateless
    /// one.
    pub(super) fn call_request(&self) -> CallRequest {
        let Request {
            conn, params, era, ..
        } = self;
        let server = &conn.server;
        let meta = params.get("_meta");
        let progress_token = meta.and_then(|m| m.get("progressToken")).cloned();
        let (log_level, client_roots, client_capabilities, asking) = match era {
            Era::Handshake { .. } => {
                let session = conn.session();
                let client: Weak<dyn Client> = Arc::downgrade(conn) as Weak<Connection>;
                (
                    Some(session.log_level.unwrap_or(LogLevel::Debug)),
                    session.client_roots.clone(),
                    session.client_capabilities.clone(),
                    Asking::Requests {
                        client,
                        session: conn.out.clone(),
                    },
                )
            }
            Era::Stateless { log_level } => (
                *log_level,
                None,
                meta.and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                Asking::Rounds(Retry {
                    parking: server.parking.clone(),
                    responses: params.get("inputResponses").cloned(),
                    state: params.get("requestState").cloned(),
                }),
            ),
        };
        CallRequest {
            principal: conn.principal.clone(),
            tenant: self.caller.tenant.clone(),
            client_capabilities,
            client_roots,
            log_level,
            progress_token,
            cancelled: self.cancel.clone(),
            reply: self.reply.clone(),
            notices: server.clone(),
            input_timeout: server.options.input_timeout,
            asking,
            tool_caller: None,
        }
    }
}
