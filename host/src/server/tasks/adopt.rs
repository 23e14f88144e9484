//! How a running call becomes a task: the store adopts it.

use super::{NewTask, Record, Tasks, Wire};
use crate::protocol::RpcError;
use crate::server::call::Execution;
use std::sync::Arc;

impl Tasks {
    /// Takes over a running 2026-07-28 call as the task `new`: stored,
    /// then supervised until it ends.
    pub fn adopt(self: &Arc<Self>, execution: Execution, new: NewTask) -> Result<Record, RpcError> {
        execution.mark_task();
        let live = self.prepare(Wire::V2, None, new.owner.clone());
        self.launch(live, new, || execution)
    }
}
