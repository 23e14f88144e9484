//! The MCP methods.

use super::context::{Questions, RequestScope, TaskRole};
use super::convert;
use super::mrtr::{Binding, Driven, Escalation, Execution, Link, Rounds};
use super::session::{all_versions, Era};
use super::tasks::{methods as task_methods, NewTask, Wire};
use super::{invalid, Asker, Connection, Outbox, Server, ServerEvent};
use crate::protocol::{meta, negotiate_legacy, ErrorCode, RequestId, RpcError};
use crate::registry::{pagination, Catalogue, Registry};
use crate::runtime::host_types::ListKind;
use crate::runtime::{completions, tools::TaskSupport, types, CallError, LoadedPlugin};
use serde_json::{json, Map, Value};
use std::sync::{Arc, Weak};
use tokio::sync::{broadcast, mpsc, watch};

type Outcome = Result<Option<Value>, RpcError>;

/// Methods that only exist with the `initialize` handshake.
const LEGACY_ONLY: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Methods that only exist on the stateless revision.
const MODERN_ONLY: &[&str] = &["server/discover", "subscriptions/listen"];

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
    /// Becomes `true` when it is cancelled.
    pub cancel: watch::Receiver<bool>,
    /// Where its response and the notifications about it go.
    pub reply: &'a Outbox,
}

/// Serves one request.
pub(super) async fn handle(request: Request<'_>, method: &str) -> Outcome {
    let Request {
        conn, params, era, ..
    } = request;
    match era {
        Era::Modern { .. } if LEGACY_ONLY.contains(&method) => {
            return Err(RpcError::method_not_found(method));
        }
        Era::Legacy { .. } if MODERN_ONLY.contains(&method) => {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "{method} needs _meta.\"{}\" of a stateless revision ({})",
                    meta::PROTOCOL_VERSION,
                    all_versions()[0]
                ),
            ));
        }
        Era::Legacy { version: None } if !matches!(method, "initialize" | "ping") => {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "the session is not initialized: send initialize first, or put the protocol version in _meta",
            ));
        }
        _ => {}
    }
    let server = &conn.server;
    let catalogue = server.registry.catalogue();
    match method {
        "ping" => Ok(Some(json!({}))),
        "server/discover" => Ok(Some(json!({
            "supportedVersions": all_versions(),
            "capabilities": capabilities(&catalogue, era),
            "serverInfo": server.server_info(),
            "instructions": server.instructions(),
        }))
        .map(strip_nulls)),
        "logging/setLevel" => {
            let level = params
                .get("level")
                .and_then(Value::as_str)
                .and_then(convert::parse_log_level);
            let level = level
                .ok_or_else(|| invalid("Invalid params: \"level\" must be an MCP log level"))?;
            conn.session().log_level = Some(level);
            Ok(Some(json!({})))
        }
        "tools/list" => {
            let with_output_schema = !matches!(
                era,
                Era::Legacy {
                    version: Some("2024-11-05" | "2025-03-26")
                }
            );
            list(&catalogue.tools, params, server, "tools", |t| {
                convert::tool(&t.name, &t.tool, with_output_schema)
            })
        }
        "tools/call" => call_tool(&request, &catalogue).await,
        "resources/list" => list(&catalogue.resources, params, server, "resources", |r| {
            convert::resource(&r.resource)
        }),
        "resources/templates/list" => list(
            &catalogue.templates,
            params,
            server,
            "resourceTemplates",
            |t| convert::template(&t.template),
        ),
        "resources/read" => read_resource(&request, &catalogue).await,
        "resources/subscribe" | "resources/unsubscribe" => {
            let uri = required_str(params, "uri")?;
            let mut session = conn.session();
            if method == "resources/subscribe" {
                if uri.len() > MAX_SUBSCRIBED_URI {
                    return Err(invalid(format!(
                        "Invalid params: a subscribed URI may have at most {MAX_SUBSCRIBED_URI} bytes"
                    )));
                }
                if session.subscriptions.len() >= MAX_SUBSCRIPTIONS
                    && !session.subscriptions.contains(uri)
                {
                    return Err(invalid(format!(
                        "a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources"
                    )));
                }
                session.subscriptions.insert(uri.to_owned());
            } else {
                session.subscriptions.remove(uri);
            }
            Ok(Some(json!({})))
        }
        "prompts/list" => list(&catalogue.prompts, params, server, "prompts", |p| {
            convert::prompt(&p.name, &p.prompt)
        }),
        "prompts/get" => get_prompt(&request, &catalogue).await,
        "completion/complete" => complete(&request, &catalogue).await,
        "subscriptions/listen" => listen(&request).await,
        "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" | "tasks/update" => {
            task_methods::handle(&request, method).await
        }
        _ => Err(RpcError::method_not_found(method)),
    }
}

fn strip_nulls(mut value: Value) -> Value {
    if let Some(obj) = value.as_object_mut() {
        obj.retain(|_, v| !v.is_null());
    }
    value
}

pub(super) fn initialize(conn: &Arc<Connection>, params: &Map<String, Value>) -> Outcome {
    let requested = required_str(params, "protocolVersion")?;
    let client_capabilities = params
        .get("capabilities")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let version = negotiate_legacy(requested);
    {
        let mut session = conn.session();
        if session.version.is_some() {
            return Err(RpcError::new(
                ErrorCode::InvalidRequest,
                "initialize was already received on this connection",
            ));
        }
        session.version = Some(version);
        if client_capabilities.get("roots").is_some() {
            session.client_roots = Some(Arc::new(Vec::new()));
        }
        session.client_capabilities = client_capabilities;
    }
    let server = &conn.server;
    let catalogue = server.registry.catalogue();
    let era = Era::Legacy {
        version: Some(version),
    };
    Ok(Some(strip_nulls(json!({
        "protocolVersion": version,
        "capabilities": capabilities(&catalogue, &era),
        "serverInfo": server.server_info(),
        "instructions": server.instructions(),
    }))))
}

/// What the server offers.
fn capabilities(catalogue: &Catalogue, era: &Era) -> Value {
    let mut caps = Map::new();
    if !era.is_modern() {
        caps.insert("logging".into(), json!({}));
    }
    // Plugins come and go while the server runs, so every list is offered,
    // possibly empty, and announced when it changes.
    caps.insert("tools".into(), json!({ "listChanged": true }));
    caps.insert(
        "resources".into(),
        json!({ "subscribe": true, "listChanged": true }),
    );
    caps.insert("prompts".into(), json!({ "listChanged": true }));
    let completable = !catalogue.prompts.is_empty() || !catalogue.templates.is_empty();
    if catalogue.has_completions() && completable {
        caps.insert("completions".into(), json!({}));
    }
    match era {
        Era::Legacy { version } if task_methods::legacy_tasks(*version) => {
            caps.insert(
                "tasks".into(),
                json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
            );
        }
        Era::Modern { .. } => {
            caps.insert("extensions".into(), json!({ meta::TASKS_EXTENSION: {} }));
        }
        Era::Legacy { .. } => {}
    }
    Value::Object(caps)
}

fn required_str<'a>(params: &'a Map<String, Value>, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("Invalid params: \"{key}\" must be a string")))
}

fn list<T>(
    items: &[T],
    params: &Map<String, Value>,
    server: &Server,
    key: &str,
    render: impl Fn(&T) -> Value,
) -> Outcome {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err(invalid("Invalid params: \"cursor\" must be a string")),
    };
    let (page, next) = pagination::page(items, cursor, server.options.page_size)
        .map_err(|e| invalid(format!("Invalid params: {e}")))?;
    let mut result = json!({ key: page.iter().map(render).collect::<Vec<_>>() });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Ok(Some(result))
}

/// The call context of a request to `plugin`: notifications go through
/// `link`, `cancelled` stops it, `questions` says how it asks the client.
fn scope(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    link: Arc<Link>,
    cancelled: watch::Receiver<bool>,
    questions: Questions,
    task_role: TaskRole,
) -> Arc<RequestScope> {
    let Request {
        conn, params, era, ..
    } = request;
    let log_level = match era {
        Era::Modern { log_level, .. } => *log_level,
        Era::Legacy { .. } => Some(conn.session().log_level.unwrap_or(types::LogLevel::Debug)),
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
        link,
        log_level,
        progress_token,
        cancelled,
        server: conn.server.clone(),
        client_capabilities,
        missing_capability: Default::default(),
        questions,
        task_role,
    })
}

/// The context of a request that asks the client as a handshake revision
/// allows: requests on the request's own stream. On 2026-07-28 it cannot
/// ask (see [`asking`] for the requests that can).
fn plain_scope(request: &Request<'_>, plugin: &LoadedPlugin) -> Arc<RequestScope> {
    let (link, _) = Link::new(request.reply.clone());
    let questions = if request.era.is_modern() {
        Questions::Refused("this request cannot ask the client for input")
    } else {
        Questions::Requests(Asker {
            conn: Arc::downgrade(request.conn),
            link: link.clone(),
            timeout: request.conn.server.options.input_timeout,
            on_wait: None,
        })
    };
    scope(
        request,
        plugin,
        link,
        request.cancel.clone(),
        questions,
        TaskRole::Never,
    )
}

/// Whether and how a call may run as a task.
#[derive(Debug, Clone, Copy, PartialEq)]
enum TaskMode {
    /// It runs as an ordinary request.
    Never,
    /// The client asked for a 2025-11-25 task.
    Requested,
    /// The request allows a 2026-07-28 task; `required` when the tool only
    /// runs as one.
    Allowed { required: bool },
}

/// How a call of `tool` (with `support`) may run as a task, on the wire of
/// `request`; an error when the tool and the request disagree.
fn task_mode(
    request: &Request<'_>,
    tool: &str,
    support: TaskSupport,
) -> Result<TaskMode, RpcError> {
    let tasks = &request.conn.server.tasks;
    let room = || tasks.room_for(request.conn.task_owner.as_deref());
    match request.era {
        Era::Legacy { version } if task_methods::legacy_tasks(*version) => {
            let asked = matches!(request.params.get("task"), Some(Value::Object(_)));
            match (support, asked) {
                (TaskSupport::Forbidden, true) => Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!("Tool {tool} does not run as a task (its taskSupport is forbidden)"),
                )),
                (TaskSupport::Required, false) => Err(RpcError::new(
                    ErrorCode::MethodNotFound,
                    format!("Tool {tool} only runs as a task: call it with the \"task\" param"),
                )),
                (_, true) => room().map(|()| TaskMode::Requested),
                _ => Ok(TaskMode::Never),
            }
        }
        Era::Modern { .. } => {
            let declared = task_methods::declares_tasks(request.params);
            match (support, declared) {
                (TaskSupport::Forbidden, _) => Ok(TaskMode::Never),
                (TaskSupport::Required, false) => {
                    Err(task_methods::missing_extension(&format!("Tool {tool}")))
                }
                (_, false) => Ok(TaskMode::Never),
                (TaskSupport::Required, true) => {
                    room().map(|()| TaskMode::Allowed { required: true })
                }
                // Without room for a task, an optional one runs as a call.
                (TaskSupport::Optional, true) => Ok(match room() {
                    Ok(()) => TaskMode::Allowed { required: false },
                    Err(_) => TaskMode::Never,
                }),
            }
        }
        Era::Legacy { .. } => Ok(TaskMode::Never),
    }
}

/// Runs a plugin call (`run`, given its context) that may ask the client
/// questions. On the handshake revisions they are requests to the client.
/// On 2026-07-28 the call runs on a task of its own and is parked when it
/// asks; the request is answered with an input-required result, and the
/// client's retry (`inputResponses`, `requestState`) resumes it. `mode`
/// says whether the call may run as a task.
async fn asking<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    method: &str,
    target: &str,
    arguments: &Value,
    mode: TaskMode,
    run: F,
) -> Outcome
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    if mode == TaskMode::Requested {
        return start_requested_task(request, plugin, target, run);
    }
    if !request.era.is_modern() {
        return run(plain_scope(request, plugin)).await;
    }
    let conn = request.conn;
    let responses = match request.params.get("inputResponses") {
        None => Map::new(),
        Some(Value::Object(responses)) => responses.clone(),
        Some(_) => {
            return Err(invalid(
                "Invalid params: \"inputResponses\" must be an object",
            ))
        }
    };
    let binding = Binding::new(conn.principal.as_deref(), method, target, arguments);
    let parking = &conn.server.parking;
    let escalation = match mode {
        TaskMode::Allowed { .. } => Some(Escalation {
            after: conn.server.tasks.options().after,
        }),
        _ => None,
    };
    let mut resumed = None;
    if let Some(state) = request.params.get("requestState") {
        let state = state
            .as_str()
            .ok_or_else(|| invalid("Invalid params: \"requestState\" must be a string"))?;
        resumed = parking.resume(state, &binding, responses.clone())?;
    }
    let execution = match resumed {
        Some(execution) => execution,
        None => {
            let (rounds, needs) = Rounds::new(responses, conn.server.options.input_timeout);
            let (link, cancelled) = Link::new(request.reply.clone());
            let (detach, task_role) = match mode {
                TaskMode::Allowed { .. } => {
                    let (wanted, detach) = watch::channel(false);
                    (Some(detach), TaskRole::Possible(wanted))
                }
                _ => (None, TaskRole::Never),
            };
            let context = scope(
                request,
                plugin,
                link.clone(),
                cancelled,
                Questions::Rounds(rounds),
                task_role,
            );
            Execution::start(run(context), needs, link, detach)
        }
    };
    let driven = parking
        .drive(
            execution,
            binding,
            request.reply,
            request.cancel.clone(),
            escalation,
        )
        .await?;
    let new_task = || NewTask {
        owner: conn.task_owner.clone(),
        wire: Wire::V2,
        target: target.to_owned(),
        ttl_ms: None,
    };
    let tasks = &conn.server.tasks;
    let record = match driven {
        Driven::Parked(result) => return Ok(Some(result)),
        Driven::Done(Ok(None)) => return Ok(None),
        Driven::Done(outcome) if mode != (TaskMode::Allowed { required: true }) => return outcome,
        // A tool that only runs as a task answers with one, even when it
        // finished at once.
        Driven::Done(outcome) => tasks.finished(new_task(), outcome)?,
        Driven::Detached(execution) => {
            execution.mark_task();
            let live = tasks.prepare(Wire::V2, None, conn.task_owner.clone());
            tasks.launch(live, new_task(), || execution)?
        }
    };
    let mut created = tasks.summary(&record, Wire::V2);
    created.insert("resultType".into(), json!("task"));
    Ok(Some(Value::Object(created)))
}

/// Starts a call the client asked to run as a 2025-11-25 task: stored,
/// then started, and answered at once with the task. Its questions go to
/// the session (or to a `tasks/result` stream while one is open), tagged
/// with the task.
fn start_requested_task<F, Fut>(
    request: &Request<'_>,
    plugin: &LoadedPlugin,
    target: &str,
    run: F,
) -> Outcome
where
    F: FnOnce(Arc<RequestScope>) -> Fut,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    let conn = request.conn;
    let tasks = &conn.server.tasks;
    let ttl_ms = request
        .params
        .get("task")
        .and_then(|t| t.get("ttl"))
        .and_then(Value::as_u64);
    let live = tasks.prepare(Wire::V1, Some(conn.out.clone()), conn.task_owner.clone());
    let (link, cancelled) = Link::for_task(conn.out.clone(), live.id());
    live.set_link(link.clone());
    let questions = Questions::Requests(Asker {
        conn: Arc::downgrade(conn),
        link: link.clone(),
        timeout: conn.server.options.input_timeout,
        on_wait: Some(tasks.waiting_hook(&live)),
    });
    let context = scope(
        request,
        plugin,
        link.clone(),
        cancelled,
        questions,
        TaskRole::Task,
    );
    let new = NewTask {
        owner: conn.task_owner.clone(),
        wire: Wire::V1,
        target: target.to_owned(),
        ttl_ms,
    };
    let record = tasks.launch(live, new, move || {
        // No rounds: this wire asks with requests.
        let (_, rounds) = mpsc::unbounded_channel();
        Execution::start(run(context), rounds, link, None)
    })?;
    Ok(Some(json!({ "task": tasks.summary(&record, Wire::V1) })))
}

/// Maps a failed call into a plugin: `None` when cancelled (no response).
fn call_failed(plugin: &LoadedPlugin, error: CallError) -> Option<String> {
    tracing::warn!(plugin = plugin.name(), "call failed: {error}");
    match error {
        CallError::Cancelled => None,
        other => Some(other.to_string()),
    }
}

/// A failed call as a JSON-RPC outcome: -32603, or no response when cancelled.
fn failed_request(plugin: &LoadedPlugin, error: CallError) -> Outcome {
    call_failed(plugin, error)
        .map(RpcError::internal)
        .map_or(Ok(None), Err)
}

/// `result` if its JSON fits the plugin's result limit, else why not.
fn within_result_limit(plugin: &LoadedPlugin, result: Value) -> Result<Value, String> {
    let limit = plugin.grants().limits.max_result_bytes;
    let size = super::outbox::json_size(&result);
    if size <= limit {
        return Ok(result);
    }
    tracing::warn!(plugin = plugin.name(), size, limit, "result over the limit");
    Err(format!(
        "the result is {size} bytes of JSON, over this plugin's limit of {limit} bytes"
    ))
}

fn plugin_error(error: types::Error, not_found: ErrorCode) -> RpcError {
    match error {
        types::Error::InvalidParams(m) => invalid(m),
        types::Error::NotFound(m) => RpcError::new(not_found, m),
        types::Error::Internal(m) => RpcError::internal(m),
    }
}

async fn call_tool(request: &Request<'_>, catalogue: &Catalogue) -> Outcome {
    let params = request.params;
    let name = required_str(params, "name")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(a)) => Value::Object(a.clone()),
        Some(_) => return Err(invalid("Invalid params: \"arguments\" must be an object")),
    };
    let entry = catalogue
        .tool(name)
        .ok_or_else(|| invalid(format!("Unknown tool: {}", clip(name))))?;
    let problems: Vec<Value> = entry
        .validator
        .iter_errors(&arguments)
        .take(MAX_REPORTED_PROBLEMS)
        .map(|e| json!({ "path": clip(&e.instance_path().to_string()), "message": clip(&e.to_string()) }))
        .collect();
    if !problems.is_empty() {
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
        return Err(invalid(format!(
            "Invalid arguments for tool {}: {}",
            clip(name),
            summary.join("; ")
        ))
        .with_data(json!({ "errors": problems })));
    }
    let mode = task_mode(request, name, entry.tool.task_support)?;
    let plugin = entry.plugin.clone();
    let tool = entry.tool.name.clone();
    let text = arguments.to_string();
    let modern = request.era.is_modern();
    asking(
        request,
        &entry.plugin,
        "tools/call",
        name,
        &arguments,
        mode,
        move |context| async move {
            let outcome = plugin.call_tool(context.clone(), &tool, &text).await;
            if modern {
                if let Some(capability) = context.missing_capability() {
                    return Err(missing_capability(capability));
                }
            }
            match outcome {
                Ok(Ok(result)) => {
                    let result = convert::call_result(&result).map_err(RpcError::internal)?;
                    Ok(Some(
                        within_result_limit(&plugin, result)
                            .unwrap_or_else(|m| convert::tool_error(&m)),
                    ))
                }
                Ok(Err(types::Error::Internal(message))) => Ok(Some(convert::tool_error(&message))),
                Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
                // A task's call that crashed fails the task (a protocol-level
                // failure); an ordinary call shows the crash as a tool error.
                Err(error) if context.runs_as_task() => failed_request(&plugin, error),
                Err(error) => Ok(call_failed(&plugin, error).map(|m| convert::tool_error(&m))),
            }
        },
    )
    .await
}

/// Resources one session may subscribe to.
const MAX_SUBSCRIPTIONS: usize = 1024;

/// The longest URI a session may subscribe to.
const MAX_SUBSCRIBED_URI: usize = 4096;

/// Schema problems reported for one call, at most.
const MAX_REPORTED_PROBLEMS: usize = 16;

/// Client input as an error message may quote it: a short excerpt.
fn clip(text: &str) -> String {
    crate::protocol::excerpt(text, crate::protocol::QUOTED_BYTES)
}

/// -32021: the request needed a capability the client did not declare.
fn missing_capability(capability: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MissingRequiredClientCapability,
        format!("this request needs the client capability \"{capability}\", which the request did not declare"),
    )
    .with_data(json!({ "requiredCapabilities": { capability: {} } }))
}

fn not_found_code(era: &Era) -> ErrorCode {
    if era.is_modern() {
        ErrorCode::InvalidParams
    } else {
        ErrorCode::ResourceNotFound
    }
}

async fn read_resource(request: &Request<'_>, catalogue: &Catalogue) -> Outcome {
    let (params, era) = (request.params, request.era);
    let uri = required_str(params, "uri")?;
    let not_found = || {
        RpcError::new(
            not_found_code(era),
            format!("Resource not found: {}", clip(uri)),
        )
        .with_data(json!({ "uri": clip(uri) }))
    };
    let owner = catalogue.resource_owner(uri).ok_or_else(not_found)?;
    let plugin = owner.clone();
    let (target, code) = (uri.to_owned(), not_found_code(era));
    asking(request, owner, "resources/read", uri, &Value::Null, TaskMode::Never, move |context| async move {
        match plugin.read_resource(context, &target).await {
            Ok(Ok(contents)) => {
                let result = json!({ "contents": contents.iter().map(convert::resource_contents).collect::<Vec<_>>() });
                within_result_limit(&plugin, result)
                    .map(Some)
                    .map_err(RpcError::internal)
            }
            Ok(Err(types::Error::NotFound(_))) => Err(RpcError::new(
                code,
                format!("Resource not found: {target}"),
            )
            .with_data(json!({ "uri": clip(&target) }))),
            Ok(Err(error)) => Err(plugin_error(error, code)),
            Err(error) => failed_request(&plugin, error),
        }
    })
    .await
}

async fn get_prompt(request: &Request<'_>, catalogue: &Catalogue) -> Outcome {
    let params = request.params;
    let name = required_str(params, "name")?;
    let entry = catalogue
        .prompt(name)
        .ok_or_else(|| invalid(format!("Unknown prompt: {}", clip(name))))?;
    let mut arguments = Vec::new();
    match params.get("arguments") {
        None | Some(Value::Null) => {}
        Some(Value::Object(args)) => {
            for (key, value) in args {
                let value = value.as_str().ok_or_else(|| {
                    invalid(format!(
                        "Invalid params: prompt argument \"{key}\" must be a string"
                    ))
                })?;
                arguments.push((key.clone(), value.to_owned()));
            }
        }
        Some(_) => return Err(invalid("Invalid params: \"arguments\" must be an object")),
    }
    let missing: Vec<&str> = entry
        .prompt
        .arguments
        .iter()
        .filter(|a| a.required && !arguments.iter().any(|(k, _)| *k == a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "Missing required argument(s) for prompt {name}: {}",
            missing.join(", ")
        )));
    }
    let plugin = entry.plugin.clone();
    let prompt = entry.prompt.name.clone();
    let given = params.get("arguments").cloned().unwrap_or(Value::Null);
    asking(
        request,
        &entry.plugin,
        "prompts/get",
        name,
        &given,
        TaskMode::Never,
        move |context| async move {
            match plugin.get_prompt(context, &prompt, &arguments).await {
                Ok(Ok(result)) => within_result_limit(&plugin, convert::prompt_result(&result))
                    .map(Some)
                    .map_err(RpcError::internal),
                Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
                Err(error) => failed_request(&plugin, error),
            }
        },
    )
    .await
}

async fn complete(request: &Request<'_>, catalogue: &Catalogue) -> Outcome {
    let params = request.params;
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("Invalid params: \"ref\" must be an object"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("Invalid params: \"argument\" must be an object"))?;
    let argument_name = required_str(argument, "name")?.to_owned();
    let argument_value = required_str(argument, "value")?.to_owned();
    let context_arguments: Vec<(String, String)> = params
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .map(|args| {
            args.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let (plugin, reference) = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = required_str(reference, "name")?;
            let entry = catalogue
                .prompt(name)
                .ok_or_else(|| invalid(format!("Unknown prompt: {}", clip(name))))?;
            (
                &entry.plugin,
                completions::Reference::Prompt(entry.prompt.name.clone()),
            )
        }
        Some("ref/resource") => {
            let uri = required_str(reference, "uri")?;
            let entry = catalogue
                .template(uri)
                .ok_or_else(|| invalid(format!("Unknown resource template: {}", clip(uri))))?;
            (
                &entry.plugin,
                completions::Reference::ResourceTemplate(uri.to_owned()),
            )
        }
        _ => {
            return Err(invalid(
                "Invalid params: \"ref.type\" must be \"ref/prompt\" or \"ref/resource\"",
            ))
        }
    };
    if !plugin.exports().completions {
        return Ok(Some(
            json!({ "completion": { "values": [], "hasMore": false } }),
        ));
    }
    let asked = completions::CompletionRequest {
        reference,
        argument_name,
        argument_value,
        context_arguments,
    };
    let context = plain_scope(request, plugin);
    match plugin.complete(context, &asked).await {
        Ok(Ok(completion)) => Ok(Some(convert::completion(&completion))),
        Ok(Err(error)) => Err(plugin_error(error, ErrorCode::InvalidParams)),
        Err(error) => failed_request(plugin, error),
    }
}

/// `subscriptions/listen`: acknowledges, then forwards the events the
/// client asked for until it cancels or the server shuts down.
async fn listen(request: &Request<'_>) -> Outcome {
    let Request {
        conn, id, params, ..
    } = request;
    let out = request.reply;
    let mut cancel = request.cancel.clone();
    let filter = params
        .get("notifications")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let wants = |key: &str| filter.get(key).and_then(Value::as_bool).unwrap_or(false);
    let (tools, prompts, resources) = (
        wants("toolsListChanged"),
        wants("promptsListChanged"),
        wants("resourcesListChanged"),
    );
    let uris: Vec<String> = filter
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if uris.len() > MAX_SUBSCRIPTIONS || uris.iter().any(|u| u.len() > MAX_SUBSCRIBED_URI) {
        return Err(invalid(format!(
            "Invalid params: at most {MAX_SUBSCRIPTIONS} resourceSubscriptions of at most {MAX_SUBSCRIBED_URI} bytes each"
        )));
    }
    let mut honored = Map::new();
    for (key, on) in [
        ("toolsListChanged", tools),
        ("promptsListChanged", prompts),
        ("resourcesListChanged", resources),
    ] {
        if on {
            honored.insert(key.into(), json!(true));
        }
    }
    if filter.contains_key("resourceSubscriptions") {
        honored.insert("resourceSubscriptions".into(), json!(uris));
    }
    let tasks = &conn.server.tasks;
    let task_ids: Vec<String> = match filter.get("taskIds") {
        None => Vec::new(),
        Some(_) if !task_methods::declares_tasks(params) => {
            return Err(task_methods::missing_extension(
                "subscriptions/listen with taskIds",
            ))
        }
        Some(Value::Array(ids)) => ids
            .iter()
            .filter_map(Value::as_str)
            .filter(|id| tasks.get(id, conn.task_owner.as_deref()).is_ok())
            .map(str::to_owned)
            .collect(),
        Some(_) => return Err(invalid("Invalid params: \"taskIds\" must be an array")),
    };
    if filter.contains_key("taskIds") {
        honored.insert("taskIds".into(), json!(task_ids));
    }
    let tag = json!({ meta::SUBSCRIPTION_ID: id });
    let mut events = conn.server.subscribe();
    out.notify(
        "notifications/subscriptions/acknowledged",
        json!({ "_meta": tag, "notifications": honored }),
    );
    // Where each task stands now, so a change made before the subscription
    // is not missed.
    for id in &task_ids {
        if let Ok(record) = tasks.get(id, conn.task_owner.as_deref()) {
            let mut params = tasks.render(&record, Wire::V2);
            params.insert("_meta".into(), tag.clone());
            out.notify("notifications/tasks", Value::Object(params));
        }
    }
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = cancel.wait_for(|c| *c) => return Ok(None),
        };
        let (method, mut params) = match event {
            Ok(ServerEvent::ListChanged(ListKind::Tools)) if tools => {
                ("notifications/tools/list_changed", json!({}))
            }
            Ok(ServerEvent::ListChanged(ListKind::Prompts)) if prompts => {
                ("notifications/prompts/list_changed", json!({}))
            }
            Ok(ServerEvent::ListChanged(ListKind::Resources)) if resources => {
                ("notifications/resources/list_changed", json!({}))
            }
            Ok(ServerEvent::ResourceUpdated(uri)) if uris.contains(&uri) => {
                ("notifications/resources/updated", json!({ "uri": uri }))
            }
            Ok(ServerEvent::TaskChanged(id)) if task_ids.contains(&id) => {
                let Ok(record) = tasks.get(&id, conn.task_owner.as_deref()) else {
                    continue;
                };
                (
                    "notifications/tasks",
                    Value::Object(tasks.render(&record, Wire::V2)),
                )
            }
            Ok(ServerEvent::PluginReplaced(plugin)) => {
                let catalogue = conn.server.registry.catalogue();
                for uri in served_by(&catalogue, &plugin, &uris) {
                    out.notify(
                        "notifications/resources/updated",
                        json!({ "uri": uri, "_meta": tag }),
                    );
                }
                continue;
            }
            Ok(ServerEvent::Shutdown) | Err(broadcast::error::RecvError::Closed) => {
                return Ok(Some(json!({ "_meta": tag })));
            }
            Err(broadcast::error::RecvError::Lagged(n)) => {
                // What was missed is unknown: say that everything the
                // listener follows may have changed.
                tracing::warn!(
                    "subscription {id} missed {n} server events; resending every change it follows"
                );
                let lists = [
                    (tools, "notifications/tools/list_changed"),
                    (prompts, "notifications/prompts/list_changed"),
                    (resources, "notifications/resources/list_changed"),
                ];
                for (_, method) in lists.iter().filter(|(on, _)| *on) {
                    out.notify(method, json!({ "_meta": tag }));
                }
                for uri in &uris {
                    out.notify(
                        "notifications/resources/updated",
                        json!({ "uri": uri, "_meta": tag }),
                    );
                }
                for task in &task_ids {
                    if let Ok(record) = tasks.get(task, conn.task_owner.as_deref()) {
                        let mut params = tasks.render(&record, Wire::V2);
                        params.insert("_meta".into(), tag.clone());
                        out.notify("notifications/tasks", Value::Object(params));
                    }
                }
                continue;
            }
            Ok(_) => continue,
        };
        params["_meta"] = tag.clone();
        out.notify(method, params);
    }
}

/// Sends change notifications to a handshake-revision connection once it is
/// initialized: list changes always, resource updates for subscribed URIs,
/// server log messages at or above the level the session set.
pub(super) async fn forward_legacy_events(
    conn: Weak<Connection>,
    mut events: broadcast::Receiver<ServerEvent>,
    mut closed: watch::Receiver<bool>,
) {
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = closed.wait_for(|c| *c) => return,
        };
        let event = match event {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                let Some(conn) = conn.upgrade() else { return };
                tracing::warn!("a connection missed {n} server events; resending every change");
                resend_everything(&conn);
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
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
                    .notify("notifications/resources/updated", json!({ "uri": uri }));
            }
            ServerEvent::PluginReplaced(plugin) => {
                let catalogue = conn.server.registry.catalogue();
                for uri in served_by(&catalogue, &plugin, &subscriptions) {
                    conn.out
                        .notify("notifications/resources/updated", json!({ "uri": uri }));
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
                    "notifications/message",
                    json!({ "level": convert::log_level_name(level), "logger": logger, "data": message }),
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
            .notify("notifications/resources/updated", json!({ "uri": uri }));
    }
}

/// The notification that announces a change of `kind`.
fn list_changed_method(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "notifications/tools/list_changed",
        ListKind::Prompts => "notifications/prompts/list_changed",
        ListKind::Resources => "notifications/resources/list_changed",
    }
}

/// The URIs among `uris` that `plugin` serves in `catalogue`.
fn served_by<'a>(catalogue: &Catalogue, plugin: &str, uris: &'a [String]) -> Vec<&'a String> {
    uris.iter()
        .filter(|uri| {
            catalogue
                .resource_owner(uri)
                .is_some_and(|p| p.name() == plugin)
        })
        .collect()
}

/// Re-asks a plugin for its lists, swaps the catalogue, and announces the
/// lists that really changed.
pub(super) async fn relist(server: &Server, plugin: &str) {
    let Some(entry) = server.registry.catalogue().plugin(plugin).cloned() else {
        return;
    };
    match Registry::describe(entry.plugin).await {
        Ok(fresh) => {
            if let Some(change) = server.registry.relisted(fresh) {
                server.announce(&change);
            }
        }
        Err(e) => tracing::error!(plugin, "could not re-list the plugin: {e:#}"),
    }
}
