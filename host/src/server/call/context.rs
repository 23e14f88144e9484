//! The server's side of one plugin call: progress and log notifications
//! for the request, its cancellation, the plugin's change notices, and its
//! questions to the client.

use super::events::Events;
use super::input::{self, Wanted};
use super::wire::{LogMessage, Progress};
use super::{Asker, CallRequest, Link, Rounds};
use crate::protocol::model::to_json;
use crate::protocol::notification;
use crate::runtime::host_types::{Answer, InputError, ListKind, Question};
use crate::runtime::tool_call_types::{CallError as ToolCallError, ToolInfo};
use crate::runtime::{types::LogLevel, BoxFuture, CallContext, ToolCall, ToolCallGrant};
use crate::server::convert::{log_level_name, severity};
use parking_lot::Mutex;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// How a call's questions reach the client.
pub(crate) enum Questions {
    /// As requests on the connection (handshake revisions).
    Requests(Asker),
    /// As input-required results, answered by the client's retries
    /// (2026-07-28).
    Rounds(Arc<Rounds>),
    /// Not at all, for this reason.
    Refused(&'static str),
}

/// Where a plugin's change notices go.
pub(crate) trait PluginNotices: Send + Sync {
    /// `plugin` said one of its lists changed: ask it again.
    fn relist(self: Arc<Self>, plugin: &str);
    /// `plugin` said the resource at `uri` changed (heard only if it
    /// serves that resource).
    fn resource_updated(&self, plugin: &str, uri: String);
}

/// How a plugin's call reaches other tools (code mode): given to a call
/// of a plugin granted `call_tools` by the method that starts it, which
/// decides each tool call as the caller's own `tools/call`.
pub(crate) trait ToolCaller: Send + Sync {
    /// The tools `grant` names that the caller may use, matching `query`.
    fn search(&self, grant: &ToolCallGrant, query: &str, limit: usize) -> Vec<ToolInfo>;
    /// Runs `call` for the caller; `cancelled` (the calling plugin's call's)
    /// cancels it; the tool's messages go to `out` (where the calling
    /// call's go now).
    fn call(
        self: Arc<Self>,
        call: ToolCall,
        cancelled: CancellationToken,
        out: crate::server::Outbox,
    ) -> BoxFuture<Result<String, ToolCallError>>;
    /// Records a call of `name` the plugin's bounds refused before it was
    /// decided.
    fn refused(&self, name: &str, message: &str);
}

/// Whether a call may go on as a task.
pub(crate) enum TaskRole {
    /// It may not (the tool or the request does not allow it).
    Never,
    /// It may: the plugin asking for it says so to the call's driver
    /// (once: then `asked` is set).
    Possible {
        /// Where the call's driver hears it.
        events: Events,
        /// The plugin asked already.
        asked: AtomicBool,
    },
    /// It already is one.
    Task,
}

/// One request's view of its connection.
pub(crate) struct RequestScope {
    /// The plugin being called.
    pub plugin: String,
    /// Where notifications for this request go (a resumed call is re-linked
    /// to the request that resumed it).
    pub link: Arc<Link>,
    /// The lowest level sent as `notifications/message`; `None` sends none.
    pub log_level: Option<LogLevel>,
    /// The request's progress token, if it asked for progress.
    pub progress_token: Option<Value>,
    /// Cancelled when the call is.
    pub cancelled: CancellationToken,
    /// Where the plugin's change notices go (the server).
    pub notices: Arc<dyn PluginNotices>,
    /// The client's roots, when it declared them.
    pub client_roots: Option<Arc<Vec<PathBuf>>>,
    /// Who the client authenticated as, if anyone.
    pub principal: Option<String>,
    /// Whose plugin data the call reaches.
    pub tenant: crate::tenant::Tenant,
    /// The capabilities the client declared.
    pub client_capabilities: Value,
    /// The first client capability the plugin needed and the client had
    /// not declared.
    pub missing_capability: Mutex<Option<&'static str>>,
    /// How questions reach the client.
    pub questions: Questions,
    /// Whether the call may go on as a task.
    pub task_role: TaskRole,
}

impl RequestScope {
    /// The context of a call to `plugin` for `request`: notifications go
    /// through `link`, `cancelled` stops it, `questions` says how it asks
    /// the client.
    pub(super) fn new(
        request: &CallRequest,
        plugin: &str,
        link: Arc<Link>,
        cancelled: CancellationToken,
        questions: Questions,
        task_role: TaskRole,
    ) -> Arc<Self> {
        link.call_tools_through(request.tool_caller.clone());
        Arc::new(RequestScope {
            plugin: plugin.to_owned(),
            link,
            log_level: request.log_level,
            progress_token: request.progress_token.clone(),
            cancelled,
            notices: request.notices.clone(),
            client_roots: request.client_roots.clone(),
            principal: request.principal.clone(),
            tenant: request.tenant.clone(),
            client_capabilities: request.client_capabilities.clone(),
            missing_capability: Mutex::default(),
            questions,
            task_role,
        })
    }

    /// Whether the client declared `capability` (a path into its
    /// capabilities); if not, remembers that the request needed it.
    fn client_has(&self, capability: &[&'static str]) -> bool {
        let declared = capability
            .iter()
            .try_fold(&self.client_capabilities, |caps, key| caps.get(key))
            .is_some();
        if !declared {
            self.missing_capability.lock().get_or_insert(capability[0]);
        }
        declared
    }

    /// The client capability the request needed and did not have, if any.
    pub(crate) fn missing_capability(&self) -> Option<&'static str> {
        *self.missing_capability.lock()
    }

    /// The questions the client can be asked (`wanted`), and an answer
    /// slot for each question: already filled with the refusal of one the
    /// client cannot be asked (a capability it did not declare, or a
    /// question that cannot be sent).
    fn sort_questions(&self, questions: Vec<(String, Question)>) -> (Vec<Slot>, Vec<Wanted>) {
        let mut answers = Vec::new();
        let mut wanted = Vec::new();
        for (index, (key, question)) in questions.into_iter().enumerate() {
            let (capability, kind, method, params) = input::describe(&key, &question);
            let params = if self.client_has(capability) {
                params.map_err(|why| format!("the question cannot be sent: {why}"))
            } else {
                Err(format!(
                    "the client did not declare the {} capability",
                    capability.join(".")
                ))
            };
            match params {
                Err(why) => answers.push(Some(Err(InputError::Unsupported(why)))),
                Ok(params) => {
                    answers.push(None);
                    wanted.push(Wanted {
                        index,
                        key,
                        kind,
                        method,
                        params,
                    });
                }
            }
        }
        (answers, wanted)
    }

    fn notify(&self, method: &str, params: Value) {
        self.link.notify(method, params);
    }
}

impl CallContext for RequestScope {
    fn log(&self, level: LogLevel, message: String) {
        tracing::debug!(plugin = %self.plugin, level = log_level_name(level), "{message}");
        if self
            .log_level
            .is_some_and(|min| severity(level) >= severity(min))
        {
            self.notify(
                notification::MESSAGE,
                to_json(&LogMessage {
                    level: log_level_name(level),
                    logger: &self.plugin,
                    data: &message,
                }),
            );
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let params = to_json(&Progress {
            progress_token: token,
            progress,
            total,
            message,
        });
        self.notify(notification::PROGRESS, params);
    }

    fn client_roots(&self) -> Option<Arc<Vec<PathBuf>>> {
        self.client_roots.clone()
    }

    fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    fn tenant(&self) -> Option<&crate::tenant::Tenant> {
        Some(&self.tenant)
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    fn cancelled(&self) -> BoxFuture<()> {
        Box::pin(self.cancelled.clone().cancelled_owned())
    }

    fn list_changed(&self, _: ListKind) {
        self.notices.clone().relist(&self.plugin);
    }

    fn resource_updated(&self, uri: String) {
        self.notices.resource_updated(&self.plugin, uri);
    }

    fn search_tools(&self, grant: &ToolCallGrant, query: &str, limit: usize) -> Vec<ToolInfo> {
        match self.link.tool_caller() {
            Some(caller) => caller.search(grant, query, limit),
            None => Vec::new(),
        }
    }

    fn call_tool(&self, call: ToolCall) -> BoxFuture<Result<String, ToolCallError>> {
        match self.link.tool_caller() {
            Some(caller) => caller.call(call, self.cancelled.clone(), self.link.outbox()),
            None => Box::pin(async {
                Err(ToolCallError {
                    code: crate::protocol::ErrorCode::InvalidRequest.code() as i32,
                    message: "this call cannot call tools (it runs for no caller)".into(),
                })
            }),
        }
    }

    fn tool_call_refused(&self, name: &str, message: &str) {
        match self.link.tool_caller() {
            Some(caller) => caller.refused(name, message),
            None => {
                tracing::warn!(plugin = %self.plugin, tool = name, "tool call refused: {message}")
            }
        }
    }

    fn continue_as_task(&self) -> bool {
        match &self.task_role {
            TaskRole::Never => false,
            TaskRole::Task => true,
            TaskRole::Possible { events, asked } => {
                if !asked.swap(true, Ordering::Relaxed) {
                    events.wants_task();
                }
                true
            }
        }
    }

    fn ask(
        &self,
        questions: Vec<(String, Question)>,
    ) -> BoxFuture<Vec<Result<Answer, InputError>>> {
        let (answers, wanted) = self.sort_questions(questions);
        tracing::debug!(plugin = %self.plugin, questions = wanted.len(), "asking the client");
        match &self.questions {
            Questions::Requests(asker) => {
                let asker = asker.clone();
                let cancelled = self.cancelled.clone();
                Box::pin(async move {
                    let asks = wanted.iter().map(|w| ask_one(&asker, w, cancelled.clone()));
                    let got = futures_util::future::join_all(asks).await;
                    fill(answers, &wanted, got)
                })
            }
            Questions::Rounds(rounds) => {
                let rounds = rounds.clone();
                Box::pin(async move {
                    let got = rounds.answer(&wanted).await;
                    fill(answers, &wanted, got)
                })
            }
            Questions::Refused(why) => {
                let got = wanted
                    .iter()
                    .map(|_| Err(InputError::Unsupported((*why).to_owned())))
                    .collect();
                let all = fill(answers, &wanted, got);
                Box::pin(async move { all })
            }
        }
    }
}

/// One question's answer, once it has one.
type Slot = Option<Result<Answer, InputError>>;

/// `answers` with the answers `got` to the `wanted` questions filled in.
fn fill(
    mut answers: Vec<Slot>,
    wanted: &[Wanted],
    got: Vec<Result<Answer, InputError>>,
) -> Vec<Result<Answer, InputError>> {
    for (w, answer) in wanted.iter().zip(got) {
        answers[w.index] = Some(answer);
    }
    answers
        .into_iter()
        .map(|a| a.expect("every question answered"))
        .collect()
}

/// Asks the client one question as a request, until the call is
/// cancelled.
async fn ask_one(
    asker: &Asker,
    wanted: &Wanted,
    cancelled: CancellationToken,
) -> Result<Answer, InputError> {
    let until_cancelled = Box::pin(cancelled.cancelled_owned());
    let answer = asker
        .ask(wanted.method, wanted.params.clone(), until_cancelled)
        .await?;
    wanted
        .parse(&answer)
        .map_err(|error| InputError::ClientError(error.to_string()))
}
