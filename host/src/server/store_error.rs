//! What can go wrong at a store seam (the task store, the session store),
//! as one error type, and what each kind of failure means on the wire, in
//! one place ([`From<StoreError> for RpcError`](StoreError)).
//!
//! The store traits return `anyhow::Result` (their PostgreSQL
//! implementations live in `cluster/`); an implementation says what kind
//! of failure it met by returning a [`StoreError`] inside it, and
//! [`StoreError::of`] reads it back (any other error reads as
//! [`StoreError::Unreachable`]: the store did not do what was asked, and
//! asking again later may work).
//!
//! Each implementation classifies what its database says: SQLite's
//! constraint errors and PostgreSQL's integrity constraint violations
//! (SQLSTATE class 23), serialization failures and deadlocks (40001,
//! 40P01) are [`StoreError::Conflict`]; a value or page that does not read
//! (SQLite's corrupt file or mistyped column, PostgreSQL's data exceptions,
//! class 22, and XX001/XX002, a column whose type or nullness is not what
//! the host reads) is [`StoreError::Corrupt`]; a lost connection, an empty
//! pool, a deadline passed stay unreachable.

use crate::protocol::RpcError;

/// Which store failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seam {
    /// The task store (SQLite, PostgreSQL or memory).
    Tasks,
    /// The session store (PostgreSQL or memory).
    Sessions,
}

impl Seam {
    fn as_str(self) -> &'static str {
        match self {
            Seam::Tasks => "tasks",
            Seam::Sessions => "session",
        }
    }
}

/// A store that failed, by the kind of failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or did not answer (a lost
    /// connection, a full disk, a thread that failed): retrying later may
    /// work.
    #[error("{0}")]
    Unreachable(anyhow::Error),
    /// The write conflicts with what is stored (an id taken, a row written
    /// meanwhile by another host).
    #[error("{0}")]
    Conflict(String),
    /// What is stored cannot be read (a damaged row or file).
    #[error("{0}")]
    Corrupt(String),
}

impl StoreError {
    /// The kind of failure `error` (from a store) is: the [`StoreError`]
    /// it carries, else [`StoreError::Unreachable`].
    pub fn of(error: anyhow::Error) -> StoreError {
        match error.downcast::<StoreError>() {
            Ok(known) => known,
            Err(other) => StoreError::Unreachable(other),
        }
    }

    /// The wire error of `seam` failing so, logged once here.
    pub fn to_rpc(&self, seam: Seam) -> RpcError {
        let store = seam.as_str();
        match self {
            StoreError::Unreachable(error) => {
                tracing::error!("the {store} store failed: {error:#}")
            }
            _ => tracing::error!("the {store} store failed: {self}"),
        }
        RpcError::internal(match self {
            StoreError::Unreachable(_) => format!("the {store} store failed: {self}"),
            StoreError::Conflict(_) => format!("the {store} store refused a write: {self}"),
            StoreError::Corrupt(_) => {
                format!("the {store} store holds what it cannot read: {self}")
            }
        })
    }
}

impl From<StoreError> for RpcError {
    /// A task store's failure on the wire (the only store whose failures a
    /// JSON-RPC answer tells; the session store's is the HTTP transport's
    /// 503).
    fn from(error: StoreError) -> RpcError {
        error.to_rpc(Seam::Tasks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_error_reads_back_and_others_are_unreachable() {
        let conflict = anyhow::Error::new(StoreError::Conflict("task t1 exists".into()));
        assert!(matches!(StoreError::of(conflict), StoreError::Conflict(_)));
        let down = StoreError::of(anyhow::anyhow!("connection refused"));
        assert!(matches!(down, StoreError::Unreachable(_)));
        let error = RpcError::from(down);
        assert_eq!(error.message, "the tasks store failed: connection refused");
        let corrupt = RpcError::from(StoreError::Corrupt("bad row".into()));
        assert!(corrupt.message.contains("cannot read: bad row"));
    }
}
