//! What the task store keeps for one owner and for everyone: stored tasks
//! by count and bytes, running tasks, and the size of one stored result.
//! Over a quota a new task is refused with a clear error (an optional
//! 2026-07-28 tool then runs as an ordinary call), and a result too large
//! to keep fails its task with the reason instead of being stored.

/// The quotas.
#[derive(Debug, Clone)]
pub struct TaskQuotas {
    /// Tasks of one owner running at once.
    pub running_per_owner: usize,
    /// Tasks of one owner kept in the store (until they expire).
    pub stored_per_owner: usize,
    /// Bytes of results one owner keeps in the store.
    pub bytes_per_owner: usize,
    /// Tasks kept in the store in all.
    pub stored_total: usize,
    /// Bytes of results kept in the store in all.
    pub bytes_total: usize,
    /// The largest result kept, in bytes of JSON.
    pub result_bytes: usize,
}

impl Default for TaskQuotas {
    fn default() -> Self {
        use crate::config::defaults as d;
        TaskQuotas {
            running_per_owner: d::TASKS_RUNNING_PER_OWNER,
            stored_per_owner: d::TASKS_STORED_PER_OWNER,
            bytes_per_owner: d::TASK_BYTES_PER_OWNER,
            stored_total: d::TASKS_STORED,
            bytes_total: d::TASK_BYTES,
            result_bytes: d::TASK_RESULT_BYTES,
        }
    }
}

/// Tasks in the store and the bytes of their results.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Tasks kept.
    pub tasks: usize,
    /// Bytes of their stored results.
    pub bytes: usize,
}

fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
}

impl TaskQuotas {
    /// Why an owner that runs `running` tasks and keeps `owner` may not
    /// start another while the store keeps `all`; `None` if it may.
    pub fn refuse_new(&self, running: usize, owner: Usage, all: Usage) -> Option<String> {
        if running >= self.running_per_owner {
            Some(format!(
                "this client already runs {running} tasks (at most {})",
                self.running_per_owner
            ))
        } else if owner.tasks >= self.stored_per_owner {
            Some(format!(
                "this client already keeps {} tasks (at most {}); they are deleted when they expire",
                owner.tasks, self.stored_per_owner
            ))
        } else if owner.bytes >= self.bytes_per_owner {
            Some(format!(
                "this client's task results already take {} (at most {}); they are deleted when they expire",
                mib(owner.bytes),
                mib(self.bytes_per_owner)
            ))
        } else if all.tasks >= self.stored_total || all.bytes >= self.bytes_total {
            Some("the task store is full; try again later".into())
        } else {
            None
        }
    }

    /// Why a result of `size` bytes may not be kept for an owner that
    /// keeps `owner` while the store keeps `all`; `None` if it may.
    pub fn refuse_result(&self, size: usize, owner: Usage, all: Usage) -> Option<String> {
        if size > self.result_bytes {
            Some(format!(
                "the result is too large to keep as a task result ({} bytes; at most {})",
                size,
                mib(self.result_bytes)
            ))
        } else if owner.bytes + size > self.bytes_per_owner {
            Some(format!(
                "keeping the result would take this client's task results over {}",
                mib(self.bytes_per_owner)
            ))
        } else if all.bytes + size > self.bytes_total {
            Some("the task store is full: the result was not kept".into())
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_tasks_are_refused_past_any_quota() {
        let q = TaskQuotas {
            running_per_owner: 2,
            stored_per_owner: 3,
            bytes_per_owner: 100,
            stored_total: 5,
            bytes_total: 1000,
            result_bytes: 50,
        };
        let none = Usage::default();
        assert_eq!(
            q.refuse_new(
                1,
                Usage {
                    tasks: 2,
                    bytes: 99
                },
                none
            ),
            None
        );
        assert!(q
            .refuse_new(2, none, none)
            .unwrap()
            .contains("runs 2 tasks"));
        assert!(q
            .refuse_new(0, Usage { tasks: 3, bytes: 0 }, none)
            .is_some());
        assert!(q
            .refuse_new(
                0,
                Usage {
                    tasks: 0,
                    bytes: 100
                },
                none
            )
            .is_some());
        assert!(q
            .refuse_new(0, none, Usage { tasks: 5, bytes: 0 })
            .is_some());
        assert!(q
            .refuse_new(
                0,
                none,
                Usage {
                    tasks: 0,
                    bytes: 1000
                }
            )
            .is_some());
    }

    #[test]
    fn results_are_refused_when_too_large_or_over_quota() {
        let q = TaskQuotas {
            bytes_per_owner: 100,
            bytes_total: 150,
            result_bytes: 60,
            ..TaskQuotas::default()
        };
        let none = Usage::default();
        assert_eq!(q.refuse_result(60, none, none), None);
        assert!(q
            .refuse_result(61, none, none)
            .unwrap()
            .contains("too large"));
        assert!(q
            .refuse_result(
                50,
                Usage {
                    tasks: 1,
                    bytes: 60
                },
                none
            )
            .is_some());
        assert!(q
            .refuse_result(
                50,
                none,
                Usage {
                    tasks: 1,
                    bytes: 120
                }
            )
            .is_some());
    }
}
