//! One request being served: what every method and every plugin call
//! needs to know of it.

use super::call::{Asker, Client, Link, Origin, Parking, Questions, RequestScope, TaskRole};
use super::session::Era;
use super::{Connection, Outbox};
use crate::protocol::{meta, RequestId};
use crate::runtime::types::LogLevel;
use crate::runtime::LoadedPlugin;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One request being served.
pub struct Request<'a> {
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
}

impl Origin for Request<'_> {
    fn reply(&self) -> &Outbox {
        self.reply
    }

    fn cancelled(&self) -> CancellationToken {
        self.cancel.clone()
    }

    fn params(&self) -> &Map<String, Value> {
        self.params
    }

    fn principal(&self) -> Option<&str> {
        self.conn.principal.as_deref()
    }

    fn is_stateless(&self) -> bool {
        self.era.is_modern()
    }

    fn parking(&self) -> &Parking {
        &self.conn.server.parking
    }

    fn input_timeout(&self) -> Duration {
        self.conn.server.options.input_timeout
    }

    fn context(
        &self,
        plugin: &LoadedPlugin,
        link: Arc<Link>,
        cancelled: CancellationToken,
        questions: Questions,
        task_role: TaskRole,
    ) -> Arc<RequestScope> {
        let Request {
            conn, params, era, ..
        } = self;
        let log_level = match era {
            Era::Modern { log_level, .. } => *log_level,
            Era::Legacy { .. } => Some(conn.session().log_level.unwrap_or(LogLevel::Debug)),
        };
        let progress_token = params
            .get("_meta")
            .and_then(|m| m.get("progressToken"))
            .cloned();
        let (client_roots, client_capabilities) = match era {
            Era::Legacy { .. } => {
                let session = conn.session();
                (
                    session.client_roots.clone(),
                    session.client_capabilities.clone(),
                )
            }
            Era::Modern { .. } => (
                None,
                params
                    .get("_meta")
                    .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            ),
        };
        Arc::new(RequestScope {
            plugin: plugin.name().to_owned(),
            client_roots,
            principal: conn.principal.clone(),
            link,
            log_level,
            progress_token,
            cancelled,
            notices: conn.server.clone(),
            client_capabilities,
            missing_capability: Default::default(),
            questions,
            task_role,
        })
    }

    fn inline_context(&self, plugin: &LoadedPlugin) -> Arc<RequestScope> {
        let (link, _) = Link::new(self.reply.clone());
        let questions = if self.era.is_modern() {
            Questions::Refused("this request cannot ask the client for input")
        } else {
            Questions::Requests(self.asker(link.clone(), None))
        };
        self.context(
            plugin,
            link,
            self.cancel.clone(),
            questions,
            TaskRole::Never,
        )
    }
}

impl Request<'_> {
    /// Asks on `link` for a call of this request's connection; `on_wait`
    /// hears when the call starts and stops waiting.
    pub fn asker(
        &self,
        link: Arc<Link>,
        on_wait: Option<Arc<dyn Fn(bool) + Send + Sync>>,
    ) -> Asker {
        let client: Weak<dyn Client> = Arc::downgrade(self.conn) as Weak<Connection>;
        Asker::new(
            client,
            link,
            self.conn.server.options.input_timeout,
            on_wait,
        )
    }
}
