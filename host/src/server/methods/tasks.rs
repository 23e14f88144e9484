//! The `tasks/*` methods of both wires: `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel` on 2025-11-25 sessions; `tasks/get`,
//! `tasks/update` and `tasks/cancel` for 2026-07-28 requests that declare
//! the extension. Each wire answers the other's methods with -32601.

use super::Request;
use super::{Answer, Answered};
use crate::protocol::model::{to_json, Acknowledged};
use crate::protocol::params::{self, Params};
use crate::protocol::{meta, ErrorCode, Method, RpcError};
use crate::server::tasks::{Record, Status, Wire};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// Whether a 2026-07-28 request declares the tasks extension.
pub(crate) fn declares_tasks(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(meta::TASKS_EXTENSION))
        .is_some()
}

/// -32021: the request needs the tasks extension it did not declare.
pub(crate) fn missing_extension(what: &str) -> RpcError {
    RpcError::new(
        ErrorCode::MissingRequiredClientCapability,
        format!(
            "{what} needs the client capability extensions.\"{}\", which the request did not declare",
            meta::TASKS_EXTENSION
        ),
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { meta::TASKS_EXTENSION: {} } } }))
}

/// Serves a `tasks/*` request.
pub(super) async fn handle(request: &Request<'_>, method: Method) -> Answered {
    let params = request.params;
    let name = method.as_str();
    match request.era.task_wire() {
        Some(Wire::Handshake) => match method {
            Method::GetTask => get(request, Wire::Handshake).await,
            Method::TaskResult => result(request).await,
            Method::ListTasks => list(request).await,
            Method::CancelTask => cancel_v1(request).await,
            _ => Err(RpcError::method_not_found(name)),
        },
        Some(Wire::Stateless) => match method {
            Method::GetTask | Method::UpdateTask | Method::CancelTask
                if !declares_tasks(params) =>
            {
                Err(missing_extension(name))
            }
            Method::GetTask => get(request, Wire::Stateless).await,
            Method::UpdateTask => update(request).await,
            Method::CancelTask => cancel_v2(request).await,
            _ => Err(RpcError::method_not_found(name)),
        },
        None => Err(RpcError::method_not_found(name)),
    }
}

/// The `taskId` param.
fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    Params(params).str("taskId")
}

/// The task the request names, as its requester may see it (who thereby
/// knows of it).
async fn record(request: &Request<'_>) -> Result<Record, RpcError> {
    let id = task_id(request.params)?;
    let record = lookup(request, id).await?;
    // The task's tool, as this request's own credentials may use it now.
    let catalogue = request.conn.server.registry.catalogue();
    if let Some(entry) = catalogue.tool(&record.target) {
        let item = crate::server::access::Item::tool(entry.plugin.name(), &entry.tool);
        let what = format!(
            "task {}'s tool {}",
            super::clip(id),
            super::clip(&record.target)
        );
        request.may_see(&item, &what)?;
    }
    request.conn.server.tasks.known(id);
    Ok(record)
}

/// Task `id` as the requester may see it.
async fn lookup(request: &Request<'_>, id: &str) -> Result<Record, RpcError> {
    request
        .conn
        .server
        .tasks
        .get(id, request.conn.task_owner.as_deref())
        .await
}

async fn get(request: &Request<'_>, wire: Wire) -> Answered {
    let record = record(request).await?;
    Ok(Answer::Result(Value::Object(
        request.conn.server.tasks.render(&record, wire).to_map(),
    )))
}

/// `tasks/result`: waits for the task to end, sending its call's questions
/// and notifications on this request's stream meanwhile, then answers with
/// what the call answered.
async fn result(request: &Request<'_>) -> Answered {
    let tasks = &request.conn.server.tasks;
    let record = record(request).await?;
    if !record.status.is_terminal() {
        let _attached = tasks.attach(&record.id, request.reply);
        tokio::select! {
            () = tasks.wait_over(&record.id) => {}
            () = request.cancel.cancelled() => return Ok(Answer::NoResponse),
        }
    }
    let record = lookup(request, &record.id).await?;
    match (record.status, record.outcome) {
        (_, Some(Ok(mut result))) => {
            meta::tag_related_task(&mut result, &record.id);
            Ok(Answer::Result(result))
        }
        (_, Some(Err(error))) => Err(RpcError::from_json(&error)),
        (Status::Cancelled, None) => Err(RpcError::new(
            ErrorCode::InvalidRequest,
            format!("Task {} was cancelled, so it has no result", record.id),
        )),
        (_, None) => Err(RpcError::internal(format!(
            "Task {} ended without a result",
            record.id
        ))),
    }
}

/// `tasks/list`: the session's (or principal's) tasks, oldest first.
async fn list(request: &Request<'_>) -> Answered {
    let server = &request.conn.server;
    let bad_cursor = || params::invalid("invalid cursor");
    let after = match request.params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(cursor)) => {
            let text = B64
                .decode(cursor)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(bad_cursor)?;
            let (created, id) = text.split_once(':').ok_or_else(bad_cursor)?;
            let created: u64 = created.parse().map_err(|_| bad_cursor())?;
            Some((created, id.to_owned()))
        }
        Some(_) => return Err(bad_cursor()),
    };
    let page = server.options.page_size.max(1);
    let mut records = server
        .tasks
        .list(
            request.conn.task_owner.as_deref(),
            after.as_ref().map(|(c, i)| (*c, i.as_str())),
            page + 1,
        )
        .await?;
    let more = records.len() > page;
    records.truncate(page);
    // Only the tasks whose tool this request's credentials may see now
    // (the cursor still follows every record read).
    let catalogue = server.registry.catalogue();
    let sees = |r: &Record| {
        catalogue.tool(&r.target).is_none_or(|entry| {
            let item = crate::server::access::Item::tool(entry.plugin.name(), &entry.tool);
            server
                .options
                .access
                .check(request.caller, &item, "")
                .is_ok()
        })
    };
    let mut result = json!({
        "tasks": records
            .iter()
            .filter(|r| sees(r))
            .map(|r| Value::Object(server.tasks.render(r, Wire::Handshake).to_map()))
            .collect::<Vec<_>>(),
    });
    if let (true, Some(last)) = (more, records.last()) {
        result["nextCursor"] = json!(B64.encode(format!("{}:{}", last.created_ms, last.id)));
    }
    Ok(Answer::Result(result))
}

/// 2025-11-25 `tasks/cancel`: the cancelled task, or -32602 when it is
/// already over.
async fn cancel_v1(request: &Request<'_>) -> Answered {
    let tasks = &request.conn.server.tasks;
    let record = record(request).await?;
    let terminal = |status: Status| {
        RpcError::invalid_params(format!(
            "Cannot cancel task: already in terminal status '{}'",
            status.as_str()
        ))
    };
    if record.status.is_terminal() {
        return Err(terminal(record.status));
    }
    if !tasks.cancel(&record).await? {
        let now = lookup(request, &record.id).await?;
        return Err(terminal(now.status));
    }
    let record = lookup(request, &record.id).await?;
    Ok(Answer::Result(Value::Object(
        tasks.render(&record, Wire::Handshake).to_map(),
    )))
}

/// 2026-07-28 `tasks/cancel`: an empty acknowledgement, also for a task
/// that is already over.
async fn cancel_v2(request: &Request<'_>) -> Answered {
    let record = record(request).await?;
    if !record.status.is_terminal() {
        request.conn.server.tasks.cancel(&record).await?;
    }
    Ok(Answer::Result(to_json(&Acknowledged {})))
}

/// `tasks/update`: the client's answers to the task's questions; an empty
/// acknowledgement.
async fn update(request: &Request<'_>) -> Answered {
    let responses = Params(request.params).object("inputResponses")?.0.clone();
    let record = record(request).await?;
    if !record.status.is_terminal() {
        request
            .conn
            .server
            .tasks
            .update(&record.id, responses)
            .await?;
    }
    Ok(Answer::Result(to_json(&Acknowledged {})))
}
