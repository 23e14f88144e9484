//! `wasi:keyvalue@0.2.0-draft2` (`store`, `atomics` with compare-and-swap,
//! `batch`) for plugins granted a store (`[plugins.NAME] keyvalue = true`).
//!
//! Every plugin's linker has the interfaces; a plugin without the grant is
//! refused (`access-denied`) when it opens a bucket. A granted one reaches
//! only its own namespace: its data of the calling tenant. A bucket is a
//! name inside that namespace, so no bucket name (`../other`, `*`) or key
//! (`..`, `/`) reaches anyone else's data.
//!
//! Every bound a plugin could break is checked here before the store is
//! asked, and answered with the interface's own `error::other` naming the
//! bound and the key that raises it (never a trap, never a partial write):
//!
//! | bound | default | key (`[limits]`, `[plugins.NAME.limits]`) |
//! |---|---|---|
//! | key and bucket-name length (non-empty, no NUL) | 512 bytes | `keyvalue_key_bytes` |
//! | value size | 1 MiB | `keyvalue_value_kb` |
//! | keys in one `list-keys` page and in one batch | 1000 | `keyvalue_page_keys` |
//! | operations per call (a batch counts one per key) | 10 000 | `keyvalue_ops_per_call` |
//! | keys and values of one batch (a `get-many`'s answer too) | 16 MiB | [`MAX_BATCH_BYTES`] |
//! | buckets and CAS handles open in one instance | 1024 | [`MAX_HANDLES`] |
//!
//! The store checks the namespace's quota (100 000 keys, 64 MiB of keys
//! and values: `keyvalue_keys`, `keyvalue_mb`) in the write's own
//! transaction; a batch is written all or none.
//!
//! Compare-and-swap: `cas.new` reads the key's version; `current` reads the
//! value again and moves the handle to its version; `swap` writes only if
//! the key still has that version, else answers `cas-failed` with a fresh
//! handle at the key's newest version, to retry with.

mod backend;
pub mod bindings;
mod host;
mod state;
#[cfg(test)]
mod tests;

pub(super) use host::add_to_linker;

pub use state::KeyValueState;

pub use backend::{Backend, Entry, Namespace, Quota, StoreError, Usage, Versioned};

use std::sync::Arc;

/// Bytes of keys and values one batch may carry: what `set-many` is given,
/// what a `get-many` answers.
pub const MAX_BATCH_BYTES: usize = 16 << 20;

/// Buckets and CAS handles one instance may hold open at once.
pub const MAX_HANDLES: usize = 1024;

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
