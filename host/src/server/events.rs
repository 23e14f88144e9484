//! Server-wide events on their way to handshake sessions (2026-07-28
//! listeners are served in [`super::methods`]).

use super::{convert, Connection, Heard, ServerEvent, Subscription};
use crate::protocol::notification;
use crate::registry::Catalogue;
use crate::runtime::host_types::ListKind;
use crate::runtime::types::LogLevel;
use serde_json::json;
use std::sync::Weak;
use tokio_util::sync::CancellationToken;

/// Sends change notifications to a handshake-revision connection once it is
/// initialized: list changes always, resource updates for subscribed URIs,
/// server log messages at or above the level the session set.
pub(super) async fn forward_handshake_events(
    conn: Weak<Connection>,
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
                resend_everything(&conn);
                continue;
            }
            Heard::Closed => return,
        };
        let Some(conn) = conn.upgrade() else { return };
        let (ready, subscriptions, log_level) = {
            let session = conn.session();
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
                conn.out.notify(list_changed_method(kind), json!({}));
            }
            ServerEvent::ResourceUpdated(uri) if subscriptions.contains(&uri) => {
                conn.out
                    .notify(notification::RESOURCE_UPDATED, json!({ "uri": uri }));
            }
            ServerEvent::PluginReplaced(plugin) => {
                let catalogue = conn.server.registry.catalogue();
                for uri in served_by(&catalogue, &plugin, &subscriptions) {
                    conn.out
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
                conn.out.notify(
                    notification::MESSAGE,
                    json!({ "level": convert::log_level_name(level), "logger": logger, "data": message }),
                );
            }
            ServerEvent::Alert { logger, message }
                if log_level.is_none_or(|min| {
                    convert::severity(LogLevel::Error) >= convert::severity(min)
                }) =>
            {
                conn.out.notify(
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
fn resend_everything(conn: &Connection) {
    let (ready, subscriptions) = {
        let session = conn.session();
        (
            session.version.is_some(),
            session.subscriptions.iter().cloned().collect::<Vec<_>>(),
        )
    };
    if !ready {
        return;
    }
    for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
        conn.out.notify(list_changed_method(kind), json!({}));
    }
    for uri in subscriptions {
        conn.out
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
