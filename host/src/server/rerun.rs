//! Tasks whose host stopped, run again here: for tools annotated
//! idempotent, among replicas that allow it (`[cluster]
//! rerun_idempotent`). The store hands a lapsed task to one replica
//! (`TaskStore::claim_orphans`); its call runs with no client waiting.

use super::call::{self, call_plugin, tool_answer, Reply, Run, Target};
use super::tasks::{Record, Rerun, Wire};
use super::Server;
use crate::protocol::Method;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Runs again, on this host, the call of task `record` whose host stopped
/// (claimed from the store): as the principal it acted for, confined to
/// the roots it was, with no client to ask (a question fails) and nobody
/// listening for its progress. A tool that is gone fails the task.
async fn rerun(server: &Arc<Server>, record: Record) {
    let tasks = &server.tasks;
    let Some(asked) = record
        .rerun
        .clone()
        .and_then(|r| serde_json::from_value::<Rerun>(r).ok())
    else {
        tasks
            .fail_claimed(&record, "the task's call could not be read back")
            .await;
        return;
    };
    let catalogue = server.registry.catalogue();
    let Some(entry) = catalogue.tool(&asked.tool) else {
        let tool = crate::protocol::excerpt(&asked.tool, crate::protocol::QUOTED_BYTES);
        let why = format!("the tool {tool} is not served here any more");
        tasks.fail_claimed(&record, &why).await;
        return;
    };
    tracing::info!(task = %record.id, tool = %asked.tool, "running a task again: the replica running it stopped");
    let (plugin, tool) = (entry.plugin.clone(), entry.tool.name.clone());
    let stateless = record.wire == Wire::Stateless;
    let text = asked.arguments.to_string();
    let call = move |context| call_plugin(plugin, context, tool, text, stateless, true);
    let target = Target {
        method: Method::CallTool,
        name: &asked.tool,
        arguments: &asked.arguments,
    };
    let request = call::headless(
        server,
        asked.principal.clone(),
        asked
            .roots
            .as_ref()
            .map(|r| r.iter().map(std::path::PathBuf::from).collect()),
    );
    let run = Run::AsTask {
        id: record.id.clone(),
    };
    match call::run(request, entry.plugin.name(), target, run, call).await {
        Ok(Reply::BecameTask(execution)) => tasks.resume(record, execution),
        Ok(reply) => tasks.conclude_claimed(&record, tool_answer(reply)).await,
        Err(error) => tasks.conclude_claimed(&record, Err(error)).await,
    }
}

/// Runs again, every third of the lease, the calls of tasks whose host
/// stopped (where allowed), for as long as the server exists.
pub(super) async fn rerun_orphans(server: Weak<Server>) {
    let every = match server.upgrade() {
        Some(server) if server.tasks.options().rerun_idempotent => {
            (server.tasks.options().lease / 3).max(Duration::from_millis(100))
        }
        _ => return,
    };
    loop {
        tokio::time::sleep(every).await;
        let Some(server) = server.upgrade() else {
            return;
        };
        for record in server.tasks.claim_reruns().await {
            let server = server.clone();
            tokio::spawn(async move { rerun(&server, record).await });
        }
    }
}
