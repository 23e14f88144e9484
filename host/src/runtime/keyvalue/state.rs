//! What one store (one call, or a warm instance's calls in turn) keeps
//! for `wasi:keyvalue`, and the bounds it checks before the store is asked.

use super::bindings::wasi::keyvalue::store::Error;
use super::{Backend, Bounds, KeyValueGrant, Namespace, StoreError, MAX_BATCH_BYTES, MAX_HANDLES};
use std::sync::Arc;

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
    /// Buckets and CAS handles alive in the store's resource table (they
    /// outlive a call in a warm instance, so this never counts afresh).
    pub(super) handles: usize,
    /// Whether the current call's refusal for want of a grant was logged.
    pub(super) warned: bool,
}

impl KeyValueState {
    /// The state of a store for `namespace`.
    pub fn new(namespace: Namespace, grant: Option<KeyValueGrant>, bounds: Bounds) -> Self {
        KeyValueState {
            namespace,
            grant,
            bounds,
            ops: 0,
            handles: 0,
            warned: false,
        }
    }

    /// Readies it for the next call of a kept instance: its operations
    /// count afresh.
    pub fn rebind(&mut self) {
        self.ops = 0;
        self.warned = false;
    }

    /// The granted store; without a grant, `access-denied` (logged once
    /// per call at debug level, and the first time for each plugin at
    /// warning level, naming the config line that grants it: a plugin
    /// that tries the store on every call and falls back, as `memory`
    /// does, is not a warning per call).
    pub(super) fn backend(&mut self) -> Result<Arc<dyn Backend>, Error> {
        if let Some(grant) = &self.grant {
            return Ok(grant.backend.clone());
        }
        if !self.warned {
            self.warned = true;
            let plugin = &self.namespace.plugin;
            if first_refusal_of(plugin) {
                tracing::warn!(
                    plugin = %plugin,
                    "the plugin opened a key-value bucket without a store: refused \
                     (grant one with `[plugins.{plugin}] keyvalue = true`)"
                );
            } else {
                tracing::debug!(plugin = %plugin, "a key-value bucket refused: no store granted");
            }
        }
        Err(Error::AccessDenied)
    }

    /// Counts `n` operations against the call's budget, or refuses them
    /// all when they do not fit.
    pub(super) fn charge(&mut self, n: usize) -> Result<(), Error> {
        let max = self.bounds.ops_per_call;
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        match self.ops.checked_add(n) {
            Some(ops) if ops <= max => {
                self.ops = ops;
                Ok(())
            }
            _ if self.ops >= max => Err(self.over(
                format!(
                    "this call made its {max} key-value operations, this plugin's limit per call"
                ),
                "keyvalue_ops_per_call",
            )),
            _ => Err(self.over(
                format!(
                    "{n} more key-value operations would take this call over its limit of {max} \
                 ({} made so far)",
                    self.ops
                ),
                "keyvalue_ops_per_call",
            )),
        }
    }

    /// Counts one more bucket or CAS handle, within [`MAX_HANDLES`].
    pub(super) fn open_handle(&mut self) -> Result<(), Error> {
        if self.handles >= MAX_HANDLES {
            return Err(other(format!(
                "{MAX_HANDLES} buckets and CAS handles are open in this instance, the host's \
                 limit: drop some first"
            )));
        }
        self.handles += 1;
        Ok(())
    }

    /// Counts a bucket or CAS handle dropped.
    pub(super) fn close_handle(&mut self) {
        self.handles = self.handles.saturating_sub(1);
    }

    /// Refuses a key (`what`: "key", "bucket name", "cursor") that is
    /// empty, holds NUL, or is longer than `key_bytes`.
    pub(super) fn check_key(&self, what: &str, key: &str) -> Result<(), Error> {
        let max = self.bounds.key_bytes;
        if key.is_empty() {
            return Err(other(format!("a {what} must not be empty")));
        }
        if key.len() > max {
            return Err(self.over(
                format!(
                    "a {what} of {} bytes is over this plugin's limit of {max} bytes",
                    key.len()
                ),
                "keyvalue_key_bytes",
            ));
        }
        if key.contains('\0') {
            return Err(other(format!("a {what} must not hold NUL")));
        }
        Ok(())
    }

    /// Refuses a value longer than `value_bytes`.
    pub(super) fn check_value(&self, value: &[u8]) -> Result<(), Error> {
        let max = self.bounds.value_bytes;
        if value.len() > max {
            return Err(self.over(
                format!(
                    "a value of {} bytes is over this plugin's limit of {max} bytes",
                    value.len()
                ),
                "keyvalue_value_kb",
            ));
        }
        Ok(())
    }

    /// Refuses a batch of more than `page_keys` keys, before anything of
    /// it is counted or checked.
    pub(super) fn check_batch(&self, keys: usize) -> Result<(), Error> {
        let max = self.bounds.page_keys;
        if keys > max {
            return Err(self.over(
                format!("a batch of {keys} keys is over this plugin's limit of {max} keys"),
                "keyvalue_page_keys",
            ));
        }
        Ok(())
    }

    /// The guest's error for a store's failure.
    pub(super) fn store_error(&self, error: StoreError) -> Error {
        match error {
            StoreError::Full(text) if !text.contains("keyvalue_") => {
                let hint = self.raise("keyvalue_keys` or `keyvalue_mb");
                other(format!("{text} ({hint})"))
            }
            error => other(error.to_string()),
        }
    }

    /// An error over a bound the operator sets with `key`.
    fn over(&self, text: String, key: &str) -> Error {
        other(format!("{text} ({})", self.raise(key)))
    }

    fn raise(&self, key: &str) -> String {
        format!(
            "raise `{key}` in [limits] or [plugins.{}.limits]",
            self.namespace.plugin
        )
    }
}

/// Refuses keys and values of more than [`MAX_BATCH_BYTES`] in all.
pub(super) fn check_batch_bytes(bytes: usize) -> Result<(), Error> {
    if bytes > MAX_BATCH_BYTES {
        return Err(other(format!(
            "a batch of {bytes} bytes of keys and values is over the host's limit of {} MiB \
             for one batch: split it",
            MAX_BATCH_BYTES >> 20
        )));
    }
    Ok(())
}

/// `error::other(text)`.
pub(super) fn other(text: impl Into<String>) -> Error {
    Error::Other(text.into())
}

/// Whether `plugin` is refused a store for the first time in this process
/// (at most [`MAX_WARNED`] plugins remembered; past it, none warns again).
fn first_refusal_of(plugin: &str) -> bool {
    static WARNED: std::sync::LazyLock<parking_lot::Mutex<std::collections::HashSet<String>>> =
        std::sync::LazyLock::new(Default::default);
    let mut warned = WARNED.lock();
    warned.len() < MAX_WARNED && warned.insert(plugin.to_owned())
}

/// The most plugins remembered as warned of a refused store.
const MAX_WARNED: usize = 1024;
