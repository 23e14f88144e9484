//! Tasks whose host stopped, run again here: for tools annotated
//! idempotent, among replicas that allow it (`[cluster]
//! rerun_idempotent`). The store hands a lapsed task to one replica
//! (`TaskStore::claim_orphans`); its call runs with no client waiting.

use super::access::{Caller, Item, Policy};
use super::audit::{Audit, Outcome};
use super::call::{self, call_plugin, tool_answer, CallRequest, Reply, Run, Target};
use super::tasks::{Record, Rerun, StoredRerun, Tasks, Wire};
use crate::protocol::Method;
use crate::registry::{Catalogue, ToolEntry};
use crate::tenant::Tenant;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// What running a task's call again needs of the server that runs it
/// (the `Server` is one).
pub(super) trait Host: Send + Sync + 'static {
    /// The tasks, stored and running.
    fn tasks(&self) -> &Arc<Tasks>;
    /// What is served now.
    fn catalogue(&self) -> Arc<Catalogue>;
    /// The operator's access policy.
    fn access(&self) -> &Policy;
    /// The audit log, if the operator keeps one.
    fn audit(&self) -> Option<&Audit>;
    /// The request of a call no client waits on (see [`call::headless`]).
    fn headless(
        self: Arc<Self>,
        principal: Option<String>,
        tenant: Tenant,
        roots: Option<Vec<PathBuf>>,
    ) -> CallRequest;
}

/// Runs again, on this host, the call of task `record` whose host stopped
/// (claimed from the store): as the principal it acted for, confined to
/// the roots it was, with no client to ask (a question fails) and nobody
/// listening for its progress. A tool that is gone fails the task.
async fn rerun(server: &Arc<dyn Host>, record: Record) {
    let tasks = server.tasks();
    // Read back by the rule of its version: a newer one is refused here.
    let asked = match record.rerun.clone() {
        Some(StoredRerun::Call(asked)) => asked,
        Some(StoredRerun::Refused(why)) => {
            tasks.fail_claimed(&record, &why).await;
            return;
        }
        None => {
            tasks
                .fail_claimed(&record, "the task's call could not be read back")
                .await;
            return;
        }
    };
    let catalogue = server.catalogue();
    let entry = match resolve(&catalogue, &asked) {
        Ok(entry) => entry,
        Err(why) => {
            tracing::warn!(task = %record.id, "a task is not run again: {why}");
            tasks.fail_claimed(&record, &why.to_string()).await;
            return;
        }
    };
    // The same decision as the call's own request, with the grants it
    // carried, against this replica's rules.
    let policy = server.access();
    let caller = Caller::from_grants(asked.principal.clone(), asked.grants.as_ref(), policy);
    let item = Item::tool(entry.plugin.name(), &entry.tool);
    let what = format!(
        "tool {}",
        crate::protocol::excerpt(&asked.tool, crate::protocol::QUOTED_BYTES)
    );
    if let Err(refused) = policy.check(&caller, &item, &what) {
        tracing::info!(task = %record.id, "a task is not run again: {}", refused.message);
        if let Some(audit) = server.audit() {
            audit.refused(&caller, Some(Method::CallTool), Some(&item), &refused);
        }
        let why = format!("the task is not run again here: {}", refused.message);
        tasks.fail_claimed(&record, &why).await;
        return;
    }
    tracing::info!(task = %record.id, tool = %asked.tool, "running a task again: the replica running it stopped");
    let audited = (entry.plugin.name().to_owned(), entry.tool.name.clone());
    let (plugin, tool) = (entry.plugin.clone(), entry.tool.name.clone());
    let stateless = record.wire == Wire::Stateless;
    let text = asked.arguments.to_string();
    let call = move |context| call_plugin(plugin, context, tool, text, stateless, true);
    let target = Target {
        method: Method::CallTool,
        name: &asked.tool,
        arguments: &asked.arguments,
    };
    let request = server.clone().headless(
        asked.principal.clone(),
        caller.tenant.clone(),
        asked
            .roots
            .as_ref()
            .map(|r| r.iter().map(PathBuf::from).collect()),
    );
    let run = Run::AsTask {
        id: record.id.clone(),
    };
    let replied = call::run(request, entry.plugin.name(), target, run, call).await;
    if let Some(audit) = server.audit() {
        let outcome = match &replied {
            Ok(_) => Outcome::answered(None),
            Err(error) => Outcome::failed(error),
        };
        audit.rerun(&caller, &audited.0, &audited.1, outcome);
    }
    match replied {
        Ok(Reply::BecameTask(execution)) => tasks.resume(record, execution),
        Ok(reply) => tasks.conclude_claimed(&record, tool_answer(reply)).await,
        Err(error) => tasks.conclude_claimed(&record, Err(error)).await,
    }
}

/// Why a task's call is not run again here.
#[derive(Debug, thiserror::Error)]
enum NotHere {
    /// Its record does not say which plugin served it.
    #[error("the task was started by an older host that did not record which plugin served it")]
    Unrecorded,
    /// Its plugin is served here as another component.
    #[error(
        "plugin {plugin} is served here as another version (component sha256:{here} here, \
         sha256:{then} when the task started)"
    )]
    OtherVersion {
        /// The plugin (quoted).
        plugin: String,
        /// The component served here (quoted).
        here: String,
        /// The component the task started on (quoted).
        then: String,
    },
    /// Its plugin no longer offers the tool.
    #[error("plugin {plugin} no longer offers the tool {tool}")]
    NoTool {
        /// The plugin (quoted).
        plugin: String,
        /// The tool (quoted).
        tool: String,
    },
    /// Its plugin is not served here.
    #[error("plugin {0} is not served here")]
    NotServed(String),
}

/// The tool `asked` called, by identity: the same plugin, the plugin's
/// own name for the tool and the same component; why not, when this
/// replica does not serve exactly that.
fn resolve<'c>(catalogue: &'c Catalogue, asked: &Rerun) -> Result<&'c ToolEntry, NotHere> {
    let quote = |text: &str| crate::protocol::excerpt(text, crate::protocol::QUOTED_BYTES);
    let (Some(plugin), Some(tool), Some(component)) =
        (&asked.plugin, &asked.plugin_tool, &asked.component)
    else {
        return Err(NotHere::Unrecorded);
    };
    let same = |e: &&ToolEntry| {
        e.plugin.name() == plugin && e.tool.name == *tool && e.plugin.hash() == component
    };
    if let Some(entry) = catalogue.tools.iter().find(same) {
        return Ok(entry);
    }
    let served = catalogue.plugin(plugin).map(|p| p.plugin.hash().to_owned());
    Err(match served {
        Some(other) if other != *component => NotHere::OtherVersion {
            plugin: quote(plugin),
            here: quote(&other),
            then: quote(component),
        },
        Some(_) => NotHere::NoTool {
            plugin: quote(plugin),
            tool: quote(tool),
        },
        None => NotHere::NotServed(quote(plugin)),
    })
}

/// Runs again, every third of the lease, the calls of tasks whose host
/// stopped (where allowed), for as long as the server exists.
pub(super) async fn rerun_orphans(server: Weak<dyn Host>) {
    let every = match server.upgrade() {
        Some(server) if server.tasks().options().rerun_idempotent => {
            (server.tasks().options().lease / 3).max(Duration::from_millis(100))
        }
        _ => return,
    };
    loop {
        tokio::time::sleep(every).await;
        let Some(server) = server.upgrade() else {
            return;
        };
        for record in server.tasks().claim_reruns().await {
            let server = server.clone();
            tokio::spawn(async move { rerun(&server, record).await });
        }
    }
}
