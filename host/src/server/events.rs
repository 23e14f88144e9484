//! Server-wide events on their way to handshake sessions (2026-07-28
//! listeners are served in `methods/subscriptions.rs`). A leaf: what it
//! needs of a connection is a [`Listener`].

use super::bus::{Heard, Subscription};
use super::outbox::Outbox;
use super::session::Session;
use super::{convert, ServerEvent};
use crate::protocol::notification;
use crate::registry::Catalogue;
use crate::runtime::host_types::ListKind;
use crate::runtime::types::LogLevel;
use serde_json::json;
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// What event forwarding needs of a connection (`Connection` is one).
pub(super) trait Listener: Send + Sync {
    /// What its session settled (version, subscriptions, log level).
    fn settled(&self) -> parking_lot::MutexGuard<'_, Session>;
    /// Where its notifications go.
    fn outbox(&self) -> &Outbox;
    /// The catalogue now served.
    fn catalogue(&self) -> Arc<Catalogue>;
}

/// Sends change notifications to a handshake-revision connection once it is
/// initialized: list changes always, resource updates for subscribed URIs,
/// server log messages at or above the level the session set.
pub(super) async fn forward_handshake_events(
    conn: Weak<impl Listener>,
    mut events: Subscription,
    closed: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = closed.cancelled() => return,
        };
        let event = match event {
            Heard::Event(event) => event,
            Heard::Missed(n) => {
                let Some(conn) = conn.upgrade() else { return };
                tracing::warn!("a connection missed {n} server events; resending every change");
                resend_everything(&*conn);
                continue;
            }
            Heard::Closed => return,
        };
        let Some(conn) = conn.upgrade() else { return };
        let (ready, subscriptions, log_level) = {
            let session = conn.settled();
            let subscriptions: Vec<String> = match &event {
                ServerEvent::ResourceUpdated(_) | ServerEvent::PluginReplaced(_) => {
                    session.subscriptions.iter().cloned().collect()
                }
                _ => Vec::new(),
            };
            (session.version.is_some(), subscriptions, session.log_level)
        };
        if !ready {
            continue;
        }
        match event {
            ServerEvent::ListChanged(kind) => {
                conn.outbox().notify(list_changed_method(kind), json!({}));
            }
            ServerEvent::ResourceUpdated(uri) if subscriptions.contains(&uri) => {
                conn.outbox()
                    .notify(notification::RESOURCE_UPDATED, json!({ "uri": uri }));
            }
            ServerEvent::PluginReplaced(plugin) => {
                let catalogue = conn.catalogue();
                for uri in served_by(&catalogue, &plugin, &subscriptions) {
                    conn.outbox()
                        .notify(notification::RESOURCE_UPDATED, json!({ "uri": uri }));
                }
            }
            ServerEvent::Log {
                level,
                logger,
                message,
            } if log_level
                .is_some_and(|min| convert::severity(level) >= convert::severity(min)) =>
            {
                conn.outbox().notify(
                    notification::MESSAGE,
                    json!({ "level": convert::log_level_name(level), "logger": logger, "data": message }),
                );
            }
            ServerEvent::Alert { logger, message }
                if log_level.is_none_or(|min| {
                    convert::severity(LogLevel::Error) >= convert::severity(min)
                }) =>
            {
                conn.outbox().notify(
                    notification::MESSAGE,
                    json!({ "level": "error", "logger": logger, "data": message }),
                );
            }
            _ => {}
        }
    }
}

/// After missed events: every list may have changed, and every subscribed
/// resource may read differently.
fn resend_everything(conn: &impl Listener) {
    let (ready, subscriptions) = {
        let session = conn.settled();
        (
            session.version.is_some(),
            session.subscriptions.iter().cloned().collect::<Vec<_>>(),
        )
    };
    if !ready {
        return;
    }
    for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
        conn.outbox().notify(list_changed_method(kind), json!({}));
    }
    for uri in subscriptions {
        conn.outbox()
            .notify(notification::RESOURCE_UPDATED, json!({ "uri": uri }));
    }
}

/// The notification that announces a change of `kind`.
pub(super) fn list_changed_method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => notification::TOOLS_LIST_CHANGED,
        ListKind::Prompts => notification::PROMPTS_LIST_CHANGED,
        ListKind::Resources => notification::RESOURCES_LIST_CHANGED,
    }
}

/// The URIs among `uris` that `plugin` serves in `catalogue`.
pub(super) fn served_by<'a>(
    catalogue: &Catalogue,
    plugin: &str,
    uris: &'a [String],
) -> Vec<&'a String> {
    uris.iter()
        .filter(|uri| {
            catalogue
                .resource_owner(uri)
                .is_some_and(|p| p.name() == plugin)
        })
        .collect()
}
