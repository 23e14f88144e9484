//! Why a call into a plugin produced no answer.

use super::exports::WrongType;
use super::lift::OverBudget;
use super::log_pipe::Tail;
use std::time::Duration;

/// Why a call into a plugin produced no answer. Each is contained to the
/// one call: the plugin and the host keep serving.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The component does not export the interface the call needs.
    #[error("the plugin does not export the `{0}` interface")]
    NotExported(&'static str),
    /// The plugin trapped (panic, `unreachable`, out of memory, ...).
    #[error("the plugin failed: {0}")]
    Trap(String),
    /// The call ran past its deadline and was interrupted.
    #[error("the call ran longer than {0:?} and was stopped")]
    Timeout(Duration),
    /// The caller cancelled the call and it was interrupted.
    #[error("the call was cancelled")]
    Cancelled,
    /// The call could not be set up (a granted folder is missing, ...).
    #[error("the call could not be prepared: {0}")]
    Setup(String),
    /// What the plugin handed the host was over its limits; nothing beyond
    /// them was copied.
    #[error("{0}")]
    TooLarge(String),
    /// An export of the contract's interfaces has another type than the
    /// contract's.
    #[error("{0}")]
    WrongType(String),
    /// Every instance the host may have at once is in use.
    #[error(
        "the host already runs as many plugin instances as it may \
         ([server] max_instances); try again shortly"
    )]
    Busy,
}

impl CallError {
    /// What a wasmtime error from a call means for the caller.
    pub(super) fn from_wasm(error: wasmtime::Error) -> Self {
        if let Some(over) = error.chain().find_map(|e| e.downcast_ref::<OverBudget>()) {
            return CallError::TooLarge(over.0.clone());
        }
        if let Some(wrong) = error.chain().find_map(|e| e.downcast_ref::<WrongType>()) {
            return CallError::WrongType(wrong.to_string());
        }
        if error
            .chain()
            .any(|e| e.is::<wasmtime::PoolConcurrencyLimitError>())
        {
            return CallError::Busy;
        }
        // A trap says what happened; any other error, its innermost cause
        // (the outer ones are wasm backtraces).
        let detail = match error.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => error.root_cause().to_string(),
        };
        CallError::Trap(detail.lines().next().unwrap_or_default().to_owned())
    }

    /// A trap, with what the plugin wrote last on stderr (a panic message,
    /// an exception), so the client sees why.
    pub(super) fn with_last_words(
        self,
        stderr: &std::sync::Weak<parking_lot::Mutex<Tail>>,
    ) -> Self {
        let CallError::Trap(detail) = self else {
            return self;
        };
        let words = stderr
            .upgrade()
            .map(|tail| tail.lock().text())
            .unwrap_or_default();
        if words.is_empty() {
            CallError::Trap(detail)
        } else {
            CallError::Trap(format!("{detail}; it wrote on stderr:\n{words}"))
        }
    }
}
