//! What one store (one call, or a warm instance's calls in turn) keeps
//! for `wasi:keyvalue`.

use super::{Bounds, KeyValueGrant, Namespace};

/// A store's key-value state: whose data it reaches, through which
/// store, under which bounds, and how many operations it made.
pub struct KeyValueState {
    /// The plugin's data of the call's tenant.
    pub namespace: Namespace,
    /// The store, when the plugin was granted one.
    pub grant: Option<KeyValueGrant>,
    /// The plugin's bounds.
    pub bounds: Bounds,
    /// Operations made by the current call.
    pub ops: u32,
}

impl KeyValueState {
    /// The state of a store for `namespace`.
    pub fn new(namespace: Namespace, grant: Option<KeyValueGrant>, bounds: Bounds) -> Self {
        KeyValueState {
            namespace,
            grant,
            bounds,
            ops: 0,
        }
    }

    /// Readies it for the next call of a kept instance: its operations
    /// count afresh.
    pub fn rebind(&mut self) {
        self.ops = 0;
    }
}
