//! How calls become tasks: a 2025-11-25 call the client asked to run as a
//! task is started as one, and a 2026-07-28 call that goes on past its
//! request is adopted by the store.

use super::{NewTask, Tasks, Wire};
use crate::protocol::RpcError;
use crate::runtime::LoadedPlugin;
use crate::server::call::{
    self, Asker, Driven, Execution, Link, Questions, RequestScope, TaskRole,
};
use crate::server::request::Request;
use crate::server::Outcome;
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;

impl Tasks {
    /// The answer to a 2026-07-28 request for `tool` whose call came to
    /// `driven`: its result, an input-required result, or a task (the
    /// store adopts a call that goes on). A tool that only runs as a task
    /// (`required`) answers with one even when it finished at once.
    pub fn answer(
        self: &Arc<Self>,
        request: &Request<'_>,
        tool: &str,
        required: bool,
        driven: Driven,
    ) -> Outcome {
        let owner = request.conn.task_owner.clone();
        let new_task = || NewTask {
            owner: owner.clone(),
            wire: Wire::V2,
            target: tool.to_owned(),
            ttl_ms: None,
        };
        let record = match driven {
            Driven::Done(outcome) if required && !matches!(outcome, Ok(None)) => {
                self.finished(new_task(), outcome)?
            }
            Driven::Detached(execution) => self.adopt(execution, new_task())?,
            other => return other.into_outcome(),
        };
        let mut created = self.summary(&record, Wire::V2);
        created.insert("resultType".into(), json!("task"));
        Ok(Some(Value::Object(created)))
    }

    /// Takes over a running 2026-07-28 call as the task `new`.
    fn adopt(
        self: &Arc<Self>,
        execution: Execution,
        new: NewTask,
    ) -> Result<super::Record, RpcError> {
        execution.mark_task();
        let live = self.prepare(Wire::V2, None, new.owner.clone());
        self.launch(live, new, || execution)
    }

    /// Starts a call the client asked to run as a 2025-11-25 task: stored,
    /// then started, and answered at once with the task. Its questions go
    /// to the session (or to a `tasks/result` stream while one is open),
    /// tagged with the task.
    pub fn start_requested<F, Fut>(
        self: &Arc<Self>,
        request: &Request<'_>,
        plugin: &LoadedPlugin,
        tool: &str,
        call: F,
    ) -> Outcome
    where
        F: FnOnce(Arc<RequestScope>) -> Fut,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        let conn = request.conn;
        let ttl_ms = request
            .params
            .get("task")
            .and_then(|t| t.get("ttl"))
            .and_then(Value::as_u64);
        let live = self.prepare(Wire::V1, Some(conn.out.clone()), conn.task_owner.clone());
        let (link, cancelled) = Link::for_task(conn.out.clone(), live.id());
        live.set_link(link.clone());
        let questions = Questions::Requests(Asker::new(
            Arc::downgrade(conn),
            link.clone(),
            conn.server.options.input_timeout,
            Some(self.waiting_hook(&live)),
        ));
        let context = call::context(
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
            target: tool.to_owned(),
            ttl_ms,
        };
        let record = self.launch(live, new, move || {
            // No rounds: this wire asks with requests.
            let (_, rounds) = mpsc::unbounded_channel();
            Execution::start(call(context), rounds, link, None)
        })?;
        Ok(Some(json!({ "task": self.summary(&record, Wire::V1) })))
    }
}
