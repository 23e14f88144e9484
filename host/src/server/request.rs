//! One request being served: what every method and every plugin call
//! needs to know of it.

use super::session::Era;
use super::{Connection, Outbox};
use crate::protocol::RequestId;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::watch;

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
    /// Becomes `true` when it is cancelled.
    pub cancel: watch::Receiver<bool>,
    /// Where its response and the notifications about it go.
    pub reply: &'a Outbox,
}
