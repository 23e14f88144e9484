//! `subscriptions/listen` (2026-07-28): one request whose stream carries
//! the notifications the client asked for, until it cancels or the server
//! shuts down.

use super::{tasks as tasks_ext, Request, MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS};
use super::{Answer, Answered};
use crate::protocol::model::{
    to_json, Honored, ResourceUpdated, SubscriptionAcknowledged, SubscriptionTag, Tagged,
    TaggedLogMessage,
};
use crate::protocol::params;
use crate::protocol::{notification, RpcError};
use crate::runtime::host_types::ListKind;
use crate::server::call::wire::LogMessage;
use crate::server::events::{list_changed_method, served_by};
use crate::server::tasks::Wire;
use crate::server::{Heard, Outbox, ServerEvent};
use serde_json::Value;

/// What a listener follows.
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    /// Subscribed resource URIs.
    uris: Vec<String>,
    /// Followed tasks (those the requester may see).
    task_ids: Vec<String>,
    /// Whether it asked for resource subscriptions.
    asked_uris: bool,
    /// Whether it asked for tasks.
    asked_tasks: bool,
}

impl Filter {
    /// What is honoured, as the acknowledgement says it.
    fn honored(&self) -> Honored<'_> {
        Honored {
            tools_list_changed: self.tools,
            prompts_list_changed: self.prompts,
            resources_list_changed: self.resources,
            resource_subscriptions: self.asked_uris.then_some(self.uris.as_slice()),
            task_ids: self.asked_tasks.then_some(self.task_ids.as_slice()),
        }
    }
}

/// `subscriptions/listen`: acknowledges, then forwards the events the
/// client asked for until it cancels or the server shuts down.
pub(super) async fn listen(request: &Request<'_>) -> Answered {
    let filter = parse_filter(request).await?;
    let tag = SubscriptionTag {
        subscription_id: request.id,
    };
    let out = request.reply;
    let mut events = request.conn.server.subscribe();
    out.notify(
        notification::SUBSCRIPTION_ACKNOWLEDGED,
        to_json(&SubscriptionAcknowledged {
            meta: &tag,
            notifications: filter.honored(),
        }),
    );
    // Where each task stands now, so a change made before the subscription
    // is not missed.
    for id in &filter.task_ids {
        notify_task(request, id, &tag).await;
    }
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = request.cancel.cancelled() => return Ok(Answer::NoResponse),
        };
        match event {
            Heard::Event(ServerEvent::Shutdown) | Heard::Closed => {
                return Ok(Answer::Result(to_json(&Tagged { meta: &tag })));
            }
            Heard::Event(event) => forward(request, &filter, event, &tag).await,
            Heard::Missed(n) => {
                // What was missed is unknown: say that everything the
                // listener follows may have changed.
                tracing::warn!(
                    "subscription {} missed {n} server events; resending every change it follows",
                    request.id
                );
                resend_everything(request, &filter, &tag).await;
            }
        }
    }
}

/// The listener's filter from the request's `notifications`.
async fn parse_filter(request: &Request<'_>) -> Result<Filter, RpcError> {
    let params = request.params;
    let asked = params
        .get("notifications")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let wants = |key: &str| asked.get(key).and_then(Value::as_bool).unwrap_or(false);
    let mut filter = Filter {
        tools: wants("toolsListChanged"),
        prompts: wants("promptsListChanged"),
        resources: wants("resourcesListChanged"),
        uris: Vec::new(),
        task_ids: Vec::new(),
        asked_uris: asked.contains_key("resourceSubscriptions"),
        asked_tasks: asked.contains_key("taskIds"),
    };
    filter.uris = asked
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if filter.uris.len() > MAX_SUBSCRIPTIONS
        || filter.uris.iter().any(|u| u.len() > MAX_SUBSCRIBED_URI)
    {
        return Err(params::invalid(format!(
            "at most {MAX_SUBSCRIPTIONS} resourceSubscriptions of at most {MAX_SUBSCRIBED_URI} bytes each"
        )));
    }
    // What the caller may not read, it does not follow (and is not told
    // it does).
    let catalogue = request.conn.server.registry.catalogue();
    let access = &request.conn.server.options.access;
    filter
        .uris
        .retain(|uri| match super::resources::item_at(&catalogue, uri) {
            Some(item) => access.check(request.caller, &item, uri).is_ok(),
            None => true,
        });
    let conn = request.conn;
    filter.task_ids = match asked.get("taskIds") {
        None => Vec::new(),
        Some(_) if !tasks_ext::declares_tasks(params) => {
            return Err(tasks_ext::missing_extension(
                "subscriptions/listen with taskIds",
            ))
        }
        Some(Value::Array(ids)) => {
            let mut seen = Vec::new();
            for id in ids.iter().filter_map(Value::as_str) {
                let owner = conn.task_owner.as_deref();
                if conn.server.tasks.get(id, owner).await.is_ok() {
                    seen.push(id.to_owned());
                }
            }
            seen
        }
        Some(_) => return Err(params::invalid("\"taskIds\" must be an array")),
    };
    Ok(filter)
}

/// Sends the listener `event` if it follows it.
async fn forward(
    request: &Request<'_>,
    filter: &Filter,
    event: ServerEvent,
    tag: &SubscriptionTag<'_>,
) {
    let out = request.reply;
    match event {
        ServerEvent::ListChanged(kind) if follows_list(filter, kind) => {
            out.notify(list_changed_method(kind), to_json(&Tagged { meta: tag }));
        }
        ServerEvent::ResourceUpdated(uri) if filter.uris.contains(&uri) => {
            updated(out, &uri, tag);
        }
        ServerEvent::TaskChanged { id, .. } if filter.task_ids.contains(&id) => {
            notify_task(request, &id, tag).await;
        }
        ServerEvent::Alert { logger, message } => {
            let alert = TaggedLogMessage {
                message: LogMessage {
                    level: "error",
                    logger: &logger,
                    data: &message,
                },
                meta: tag,
            };
            out.notify(notification::MESSAGE, to_json(&alert));
        }
        ServerEvent::PluginReplaced(plugin) => {
            let catalogue = request.conn.server.registry().catalogue();
            for uri in served_by(&catalogue, &plugin, &filter.uris) {
                updated(out, uri, tag);
            }
        }
        _ => {}
    }
}

/// Whether the listener follows changes of the `kind` list.
fn follows_list(filter: &Filter, kind: ListKind) -> bool {
    match kind {
        ListKind::Tools => filter.tools,
        ListKind::Prompts => filter.prompts,
        ListKind::Resources => filter.resources,
    }
}

/// After missed events: everything the listener follows, as changed.
async fn resend_everything(request: &Request<'_>, filter: &Filter, tag: &SubscriptionTag<'_>) {
    for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Resources] {
        if follows_list(filter, kind) {
            request
                .reply
                .notify(list_changed_method(kind), to_json(&Tagged { meta: tag }));
        }
    }
    for uri in &filter.uris {
        updated(request.reply, uri, tag);
    }
    for task in &filter.task_ids {
        notify_task(request, task, tag).await;
    }
}

/// `notifications/resources/updated` for `uri`.
fn updated(out: &Outbox, uri: &str, tag: &SubscriptionTag<'_>) {
    out.notify(
        notification::RESOURCE_UPDATED,
        to_json(&ResourceUpdated { uri, meta: tag }),
    );
}

/// Where task `id` stands now, if the requester may still see it.
async fn notify_task(request: &Request<'_>, id: &str, tag: &SubscriptionTag<'_>) {
    let conn = request.conn;
    let tasks = &conn.server.tasks;
    if let Ok(record) = tasks.get(id, conn.task_owner.as_deref()).await {
        let mut params = tasks.render(&record, Wire::Stateless).to_map();
        params.insert("_meta".into(), to_json(tag));
        request
            .reply
            .notify(notification::TASKS, Value::Object(params));
    }
}
