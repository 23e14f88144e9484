//! Where a running call's messages go: the stream of the request serving
//! it now (a parked call is re-linked to its retry; a 2025-11-25 task's
//! to a `tasks/result` stream while one is open); and for whom its tool
//! calls are made (code mode): the request serving it now.

use super::ToolCaller;
use crate::server::Outbox;
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What a 2025-11-25 task's link knows of its client.
#[derive(Default)]
struct TaskClient {
    /// The client asked about the task (`tasks/get`, `tasks/result`, ...).
    knows: bool,
    /// The `tasks/result` stream open now.
    stream: Option<Outbox>,
}

/// Where a running call's notifications go and how it is cancelled; a
/// resumed call is re-linked to the request that resumed it.
pub struct Link {
    /// The current request's outbox (a dead one while parked).
    out: Mutex<Outbox>,
    /// Cancels the call.
    pub cancel: CancellationToken,
    /// The 2025-11-25 task the call runs as: every message about it says so.
    related_task: Option<String>,
    /// For such a task, whether the client knows of it yet and the
    /// `tasks/result` stream open now: its questions wait for either.
    client: watch::Sender<TaskClient>,
    /// How the plugin calls tools for the request serving the call now
    /// (a resumed call calls them with its retry's credentials), when it
    /// was granted that.
    tool_caller: Mutex<Option<Arc<dyn ToolCaller>>>,
}

impl Link {
    /// A link to `out`, and the call's cancellation receiver.
    pub fn new(out: Outbox) -> (Arc<Self>, CancellationToken) {
        Self::build(out, None)
    }

    /// A link for a call that runs as the 2025-11-25 task `task_id`.
    pub fn for_task(out: Outbox, task_id: &str) -> (Arc<Self>, CancellationToken) {
        Self::build(out, Some(task_id.to_owned()))
    }

    fn build(out: Outbox, related_task: Option<String>) -> (Arc<Self>, CancellationToken) {
        let cancel = CancellationToken::new();
        let cancelled = cancel.clone();
        let link = Link {
            client: watch::channel(TaskClient::default()).0,
            out: Mutex::new(out),
            cancel,
            related_task,
            tool_caller: Mutex::default(),
        };
        (Arc::new(link), cancelled)
    }

    /// Where messages go now.
    pub fn outbox(&self) -> Outbox {
        self.out.lock().clone()
    }

    /// Sends messages to `out` from now on.
    pub fn relink(&self, out: Outbox) {
        *self.out.lock() = out;
    }

    /// How the plugin calls tools now, if it may.
    pub(crate) fn tool_caller(&self) -> Option<Arc<dyn ToolCaller>> {
        self.tool_caller.lock().clone()
    }

    /// Makes the plugin's tool calls through `caller` (that of the request
    /// serving the call) from now on.
    pub(crate) fn call_tools_through(&self, caller: Option<Arc<dyn ToolCaller>>) {
        *self.tool_caller.lock() = caller;
    }

    /// Sends a task's messages to `out` (a `tasks/result` stream) until
    /// [`Link::detach`].
    pub fn attach(&self, out: Outbox) {
        self.relink(out.clone());
        self.client.send_modify(|c| {
            c.knows = true;
            c.stream = Some(out);
        });
    }

    /// Sends a task's messages back to `home`.
    pub fn detach(&self, home: Outbox) {
        self.client.send_modify(|c| c.stream = None);
        self.relink(home);
    }

    /// Notes that the client asked about the task (so it knows of it).
    pub fn known(&self) {
        self.client
            .send_if_modified(|c| !std::mem::replace(&mut c.knows, true));
    }

    /// Where to send a request to the client. A 2025-11-25 task's request
    /// waits until the client knows of the task (it asked about it), so it
    /// can tell which task the request belongs to; then it goes to the
    /// `tasks/result` stream open, else where messages go now.
    pub async fn request_route(&self) -> Outbox {
        if self.related_task.is_none() {
            return self.outbox();
        }
        let mut client = self.client.subscribe();
        let stream = client.wait_for(|c| c.knows).await.map(|c| c.stream.clone());
        match stream {
            Ok(stream) => stream.unwrap_or_else(|| self.outbox()),
            Err(_) => std::future::pending().await,
        }
    }

    /// `params` with the related-task `_meta` of a task's call.
    pub fn tag(&self, mut params: Value) -> Value {
        if let Some(task) = &self.related_task {
            crate::protocol::meta::tag_related_task(&mut params, task);
        }
        params
    }

    /// Sends a notification about the call.
    pub fn notify(&self, method: &str, params: Value) {
        self.outbox().notify(method, self.tag(params));
    }
}
