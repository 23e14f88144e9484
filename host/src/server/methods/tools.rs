//! `tools/list` and `tools/call`.

use super::plan::{plan_tool, Plan};
use super::tool_calls;
use super::{clip, invalid, unless_late, Request};
use super::{from_call, Answer, Answered};
use crate::protocol::Params;
use crate::protocol::{ErrorCode, Method, ResultType, RpcError};
use crate::registry::{schema_limits, Catalogue, ToolEntry};
use crate::runtime::tools::TaskSupport;
use crate::runtime::LoadedPlugin;
use crate::server::access::Item;
use crate::server::call::{
    self, call_plugin, tool_answer, Ended, Reply, RequestScope, Run, Target,
};
use crate::server::convert;
use crate::server::search;
use crate::server::tasks::{NewTask, Rerun, Wire};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::sync::Arc;

/// Schema problems reported for one call, at most.
const MAX_REPORTED_PROBLEMS: usize = 16;

/// `tools/call`: checks the arguments against the tool's schema (a
/// mismatch is a tool execution error from 2025-11-25 on, a protocol error
/// before), then runs the call as its plan says.
pub(super) async fn call(request: &Request<'_>, catalogue: &Arc<Catalogue>) -> Answered {
    let params = request.params;
    let name = Params(params).str("name")?;
    // Borrowed from the request, not copied: an object, or absent.
    let none = Value::Object(Map::new());
    let arguments = match Params(params).optional_object("arguments")? {
        None => &none,
        Some(_) => &params["arguments"],
    };
    if request.conn.server.options.tool_search.is_on() && search::is_reserved(name) {
        return super::tool_search::call(request, catalogue, name, arguments).await;
    }
    let entry = match admit(request, catalogue, name, arguments, None).await {
        Admitted::Run(entry) => entry,
        Admitted::Answered(answered) => return answered,
    };
    let plan = plan_tool(request, name, entry.tool.task_support).await?;
    let rerun = rerunnable(request, entry, name, arguments);
    let target = target(name, arguments);
    let run = ToolRun::new(request, entry, arguments);
    let call = move |context| run.start(context);
    let mut asked = request.call_request();
    asked.tool_caller = tool_calls::caller_for(request, entry, &[], u32::MAX, None);
    let plugin = entry.plugin.name();
    match plan {
        Plan::Request => from_call(tool_answer(
            call::run(asked, plugin, target, Run::Inline, call).await?,
        )),
        Plan::RequestedTask => {
            let id = request.conn.server.tasks.new_id();
            let run = Run::AsTask { id: id.clone() };
            let reply = call::run(asked, plugin, target, run, call).await?;
            start_requested_task(request, id, name, reply, rerun).await
        }
        Plan::MayBecomeTask { required } => {
            let after = request.conn.server.tasks.options().after;
            let run = Run::MayBecomeTask { after };
            let reply = call::run(asked, plugin, target, run, call).await?;
            answer(request, name, required, reply, rerun).await
        }
    }
}

/// What the decision on a call of a tool came to.
enum Admitted<'c> {
    /// It runs: the tool.
    Run(&'c ToolEntry),
    /// It does not; this is the answer.
    Answered(Answered),
}

/// The decision every call of tool `name` with `arguments` passes, from a
/// client or from a plugin (`from`, which must also be granted the tool):
/// the tool is served, the caller may use it (which counts against its
/// rates) and the arguments fit its schema (a mismatch is a tool
/// execution error from 2025-11-25 on, a protocol error before).
async fn admit<'c>(
    request: &Request<'_>,
    catalogue: &'c Catalogue,
    name: &str,
    arguments: &Value,
    from: Option<&tool_calls::Within<'_>>,
) -> Admitted<'c> {
    let Some(entry) = catalogue.tool(name) else {
        return Admitted::Answered(Err(invalid(unless_late(
            request,
            format!("Unknown tool: {}", clip(name)),
        ))));
    };
    if let Some(from) = from {
        // Audited as this tool's refusal when the grant refuses it.
        request
            .reached
            .set(&Item::tool(entry.plugin.name(), &entry.tool));
        if let Err(error) = from.may_call(entry) {
            return Admitted::Answered(Err(error));
        }
    }
    if let Err(error) = request.may_use(
        &Item::tool(entry.plugin.name(), &entry.tool),
        &format!("tool {}", clip(name)),
    ) {
        return Admitted::Answered(Err(error));
    }
    match check_arguments(entry, name, arguments).await {
        Ok(()) => Admitted::Run(entry),
        Err(error)
            if request.era.argument_errors_are_tool_errors()
                && error.code == ErrorCode::InvalidParams =>
        {
            Admitted::Answered(Ok(Answer::Result(convert::tool_error(&error.message))))
        }
        Err(error) => Admitted::Answered(Err(error)),
    }
}

/// A call of tool `name` with `arguments` that a plugin makes (`from`)
/// while it serves `request`'s call: decided as the caller's own call
/// would be, and as `from`'s grant allows; run within the calling
/// plugin's call, never as a task, never asking the client.
pub(super) async fn call_from_plugin(
    request: &Request<'_>,
    catalogue: &Arc<Catalogue>,
    name: &str,
    arguments: &Value,
    from: &tool_calls::Within<'_>,
) -> Answered {
    if request.conn.server.options.tool_search.is_on() && search::is_reserved(name) {
        return Err(invalid(format!(
            "{name} is the host's own tool: a plugin finds tools with search-tools and calls \
             them by name"
        )));
    }
    let entry = match admit(request, catalogue, name, arguments, Some(from)).await {
        Admitted::Run(entry) => entry,
        Admitted::Answered(answered) => return answered,
    };
    if !entry.for_model {
        return Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!(
                "tool {} is for its view only (its _meta.ui.visibility), and a plugin calls \
                 tools for the model",
                clip(name)
            ),
        ));
    }
    if entry.tool.task_support == TaskSupport::Required {
        return Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!(
                "tool {} runs only as a task, which a tool called from a plugin never becomes",
                clip(name)
            ),
        ));
    }
    let mut asked = request.call_request();
    asked.asking = call::Asking::Never("a tool called from a plugin cannot ask the client");
    asked.progress_token = None;
    asked.tool_caller = from.next(request, entry);
    let run = ToolRun::new(request, entry, arguments);
    let call = move |context| run.start(context);
    let target = target(name, arguments);
    let reply = call::run(asked, entry.plugin.name(), target, Run::Inline, call).await?;
    from_call(tool_answer(reply))
}

/// What the call log and parking know a call of tool `name` by.
fn target<'a>(name: &'a str, arguments: &'a Value) -> Target<'a> {
    Target {
        method: Method::CallTool,
        name,
        arguments,
    }
}

/// A call of a tool, ready to run in a call's context: its plugin, the
/// plugin's own name for it, its arguments as JSON text, and what the
/// request's revision makes of a missing capability or bad arguments.
struct ToolRun {
    plugin: Arc<LoadedPlugin>,
    tool: String,
    arguments: String,
    stateless: bool,
    argument_tool_errors: bool,
}

impl ToolRun {
    fn new(request: &Request<'_>, entry: &ToolEntry, arguments: &Value) -> Self {
        ToolRun {
            plugin: entry.plugin.clone(),
            tool: entry.tool.name.clone(),
            arguments: arguments.to_string(),
            stateless: request.era.is_stateless(),
            argument_tool_errors: request.era.argument_errors_are_tool_errors(),
        }
    }

    fn start(self, context: Arc<RequestScope>) -> impl Future<Output = Ended> + Send + 'static {
        call_plugin(
            self.plugin,
            context,
            self.tool,
            self.arguments,
            self.stateless,
            self.argument_tool_errors,
        )
    }
}

/// The answer to a 2026-07-28 request for `tool` whose call came to
/// `reply`: its result, an input-required result, or a task (the store
/// adopts a call that goes on). A tool that only runs as a task
/// (`required`) answers with one even when it finished at once.
async fn answer(
    request: &Request<'_>,
    tool: &str,
    required: bool,
    reply: Reply,
    rerun: Option<Rerun>,
) -> Answered {
    let tasks = &request.conn.server.tasks;
    let new_task = NewTask {
        owner: request.conn.task_owner.clone(),
        wire: Wire::Stateless,
        target: tool.to_owned(),
        ttl_ms: None,
        rerun,
    };
    let record = match reply {
        Reply::BecameTask(execution) => tasks.adopt(execution, new_task).await?,
        Reply::Nothing | Reply::InputRequired(_) => return from_call(reply.into_outcome()),
        ended if required => tasks.finished(new_task, tool_answer(ended)).await?,
        ended => return from_call(tool_answer(ended)),
    };
    let mut created = tasks.summary(&record, Wire::Stateless).to_map();
    ResultType::Task.tag(&mut created);
    Ok(Answer::Result(Value::Object(created)))
}

/// Stores the call the client asked to run as 2025-11-25 task `id`, then
/// starts it: answered at once with the task. Its questions go to the
/// session (or to a `tasks/result` stream while one is open), tagged with
/// the task.
async fn start_requested_task(
    request: &Request<'_>,
    id: String,
    tool: &str,
    reply: Reply,
    rerun: Option<Rerun>,
) -> Answered {
    let Reply::BecameTask(execution) = reply else {
        return from_call(tool_answer(reply));
    };
    let (conn, tasks) = (request.conn, &request.conn.server.tasks);
    let ttl_ms = request
        .params
        .get("task")
        .and_then(|t| t.get("ttl"))
        .and_then(Value::as_u64);
    let new = NewTask {
        owner: conn.task_owner.clone(),
        wire: Wire::Handshake,
        target: tool.to_owned(),
        ttl_ms,
        rerun,
    };
    let record = tasks
        .launch(id, new, Some(conn.out.clone()), execution)
        .await?;
    Ok(Answer::Result(
        json!({ "task": tasks.summary(&record, Wire::Handshake) }),
    ))
}

/// The call to run again if its task's host stops: among replicas that
/// allow it, for a tool annotated idempotent.
fn rerunnable(
    request: &Request<'_>,
    entry: &ToolEntry,
    name: &str,
    arguments: &Value,
) -> Option<Rerun> {
    let tasks = &request.conn.server.tasks;
    let idempotent = entry
        .tool
        .annotations
        .as_ref()
        .and_then(|a| a.idempotent_hint);
    if !(tasks.options().rerun_idempotent && tasks.replica().is_some() && idempotent == Some(true))
    {
        return None;
    }
    // Run again elsewhere, it would have no caller to call tools for.
    if entry.plugin.grants().tool_calls.is_some() {
        return None;
    }
    let roots = match request.era {
        super::super::session::Era::Handshake { .. } => request.conn.session().client_roots.clone(),
        super::super::session::Era::Stateless { .. } => None,
    };
    Some(Rerun {
        v: crate::server::tasks::RERUN_VERSION,
        tool: name.to_owned(),
        plugin: Some(entry.plugin.name().to_owned()),
        plugin_tool: Some(entry.tool.name.clone()),
        component: Some(entry.plugin.hash().to_owned()),
        grants: request.caller.grants(),
        arguments: arguments.clone(),
        principal: request.conn.principal.clone(),
        roots: roots.map(|roots| {
            roots
                .iter()
                .filter_map(|p| p.to_str().map(str::to_owned))
                .collect()
        }),
    })
}

/// Argument checks that may take long (over
/// [`schema_limits::INLINE_VALIDATION_WORK`]) running at once, at most,
/// each on a blocking thread; more wait their turn.
const HEAVY_CHECKS: usize = 2;

/// -32602 listing (some of) the schema problems of `arguments`. A check
/// that could cost more than [`schema_limits::MAX_VALIDATION_WORK`]
/// (recursion and combinators counted) is refused before it starts; one
/// that may take long, and working that out, run off the async workers.
async fn check_arguments(entry: &ToolEntry, name: &str, arguments: &Value) -> Result<(), RpcError> {
    static HEAVY: std::sync::LazyLock<Arc<tokio::sync::Semaphore>> =
        std::sync::LazyLock::new(|| Arc::new(tokio::sync::Semaphore::new(HEAVY_CHECKS)));
    let bound = &entry.schema_bound;
    let problems = match bound.work(arguments, schema_limits::INLINE_VALIDATION_WORK) {
        Some(work) => schema_problems(&entry.validator, bound, arguments, work),
        None => {
            let permit = HEAVY.clone().acquire_owned().await;
            let (validator, bound) = (entry.validator.clone(), bound.clone());
            let arguments = arguments.clone();
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let work = bound.work(&arguments, schema_limits::MAX_VALIDATION_WORK)?;
                Some(schema_problems(&validator, &bound, &arguments, work))
            })
            .await
            .map_err(|_| RpcError::new(ErrorCode::InternalError, "checking the arguments failed"))?
            .ok_or_else(|| {
                invalid(format!(
                    "The arguments for tool {} are too large to check against its input schema \
                     (over the limit of {} units of work, counting each part of the schema as \
                     often as recursion and combinators apply it)",
                    clip(name),
                    schema_limits::MAX_VALIDATION_WORK
                ))
            })?
        }
    };
    if problems.is_empty() {
        return Ok(());
    }
    let summary: Vec<String> = problems
        .iter()
        .map(|p| {
            let path = p["path"].as_str().unwrap_or_default();
            let at = if path.is_empty() {
                "arguments".to_owned()
            } else {
                format!("arguments{path}")
            };
            format!("{at}: {}", p["message"].as_str().unwrap_or_default())
        })
        .collect();
    Err(invalid(format!(
        "Invalid arguments for tool {}: {}",
        clip(name),
        summary.join("; ")
    ))
    .with_data(json!({ "errors": problems })))
}

/// The ways `arguments` break `validator` (none when they fit), for a
/// check of `work`: up to [`MAX_REPORTED_PROBLEMS`], the first, or none but
/// that they do not fit, as [`schema_limits::Bound::listing`] allows (the
/// schema library works out every problem before the first is listed).
fn schema_problems(
    validator: &jsonschema::Validator,
    bound: &schema_limits::Bound,
    arguments: &Value,
    work: u64,
) -> Vec<Value> {
    let problem = |e: jsonschema::ValidationError<'_>| json!({ "path": clip(&e.instance_path().to_string()), "message": clip(&e.to_string()) });
    if validator.is_valid(arguments) {
        return Vec::new();
    }
    match bound.listing(work, arguments) {
        schema_limits::Listing::Some => validator
            .iter_errors(arguments)
            .take(MAX_REPORTED_PROBLEMS)
            .map(problem)
            .collect(),
        schema_limits::Listing::First => validator
            .validate(arguments)
            .err()
            .map(problem)
            .into_iter()
            .collect(),
        schema_limits::Listing::None => vec![json!({
            "path": "",
            "message": "they do not match its input schema (which part does not is not worked \
                        out: for arguments this large against a schema with anyOf or oneOf, \
                        that could take much memory)"
        })],
    }
}
