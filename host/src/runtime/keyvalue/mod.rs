//! `wasi:keyvalue@0.2.0-draft2` (`store`, `atomics` with compare-and-swap,
//! `batch`) for plugins granted a store (`[plugins.NAME] keyvalue = true`).
//!
//! Every plugin's linker has the interfaces; a plugin without the grant is
//! refused (`access-denied`) when it opens a bucket. A granted one reaches
//! only its own namespace: its data of the calling tenant. Every bound a
//! plugin could break (key and value sizes, page and batch sizes,
//! operations per call) is checked here before the store is asked; the
//! store checks the namespace's quota in the write's own transaction.

mod backend;
pub mod bindings;
mod state;

pub use state::KeyValueState;

pub use backend::{Backend, Entry, Namespace, Quota, StoreError, Usage, Versioned};

use std::sync::Arc;

/// The key-value store granted to a plugin.
#[derive(Clone)]
pub struct KeyValueGrant {
    /// Where its data is kept.
    pub backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for KeyValueGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyValueGrant")
    }
}

impl PartialEq for KeyValueGrant {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.backend, &other.backend)
    }
}

/// What one plugin's use of the store may reach ([`crate::config::LimitsSection`]'s
/// `keyvalue_*` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The longest key (and bucket name), in bytes.
    pub key_bytes: usize,
    /// The largest value, in bytes.
    pub value_bytes: usize,
    /// What one tenant's data of the plugin may hold.
    pub quota: Quota,
    /// Keys in one `list-keys` page, and in one batch.
    pub page_keys: usize,
    /// Operations one call may make (a batch counts one per key).
    pub ops_per_call: u32,
}
