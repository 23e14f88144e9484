//! What a key-value store behind `wasi:keyvalue` must do: the contract
//! between the runtime (which checks every bound a plugin could break
//! before it asks) and the stores that keep the data (SQLite on one
//! machine, PostgreSQL shared by replicas: `crate::plugin_data`).
//!
//! Every operation is atomic. Data is kept per [`Namespace`] (one plugin's
//! data of one tenant); a bucket is only a name inside it, so no bucket or
//! key, whatever it holds, reaches another namespace.

use async_trait::async_trait;
use std::sync::Arc;

/// Whose data: one plugin's, for one tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Namespace {
    /// The plugin's name.
    pub plugin: Arc<str>,
    /// The tenant's key ([`crate::tenant::Tenant::key`]): plain ASCII.
    pub tenant: Arc<str>,
}

/// How much one namespace may hold; checked by the store in the same
/// transaction as the write that would exceed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Keys, across its buckets.
    pub max_keys: u64,
    /// Bytes of keys and values together, across its buckets.
    pub max_bytes: u64,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The write would take the namespace over its [`Quota`]; nothing
    /// was written.
    #[error("{0}")]
    Full(String),
    /// The value `increment` found is not a decimal integer, or the sum
    /// overflows.
    #[error("{0}")]
    NotANumber(String),
    /// The store could not be reached or failed; nothing is known to have
    /// been written.
    #[error("the key-value store failed: {0}")]
    Failed(String),
}

/// A value read with its version, for compare-and-swap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// The value, `None` when the key has none.
    pub value: Option<Vec<u8>>,
    /// Its version: every write of a key gives it a new one; `0` when the
    /// key has no value.
    pub version: i64,
}

/// One namespace's use, for `wasm-mcp tenant list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// The namespace.
    pub namespace: Namespace,
    /// Its keys.
    pub keys: u64,
    /// Bytes of its keys and values.
    pub bytes: u64,
}

/// One key with its value, as `wasm-mcp tenant export` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The plugin whose data it is.
    pub plugin: String,
    /// Its bucket.
    pub bucket: String,
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: Vec<u8>,
}

/// A store of plugin data. Calls never block an async worker.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The values of `keys` in `bucket`, in their order.
    async fn get_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<u8>>>, StoreError>;

    /// The value of `key` with its version.
    async fn get_versioned(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
    ) -> Result<Versioned, StoreError>;

    /// Sets every entry, all or none, within `quota`.
    async fn set_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        entries: Vec<(String, Vec<u8>)>,
        quota: Quota,
    ) -> Result<(), StoreError>;

    /// Deletes every key (one without a value is no error), all or none.
    async fn delete_many(
        &self,
        ns: &Namespace,
        bucket: &str,
        keys: Vec<String>,
    ) -> Result<(), StoreError>;

    /// Whether `key` has a value.
    async fn exists(&self, ns: &Namespace, bucket: &str, key: &str) -> Result<bool, StoreError>;

    /// Up to `limit` keys of `bucket` in byte order, from just after
    /// `after`; the cursor of the next page (the last key given) when
    /// there may be more.
    async fn list_keys(
        &self,
        ns: &Namespace,
        bucket: &str,
        after: Option<String>,
        limit: usize,
    ) -> Result<(Vec<String>, Option<String>), StoreError>;

    /// Adds `delta` to the decimal integer at `key` (0 when it has none)
    /// and returns the sum, kept as decimal text.
    async fn increment(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        delta: i64,
        quota: Quota,
    ) -> Result<i64, StoreError>;

    /// Sets `key` to `value` if its version is still `version` (`0`: it
    /// still has no value); whether it did.
    async fn swap(
        &self,
        ns: &Namespace,
        bucket: &str,
        key: &str,
        version: i64,
        value: Vec<u8>,
        quota: Quota,
    ) -> Result<bool, StoreError>;

    /// Every namespace with data, and its use.
    async fn usage(&self) -> Result<Vec<Usage>, StoreError>;

    /// Every key of tenant `tenant` (its key), in every plugin's
    /// namespace, with its value; at most `limit` bytes of values in all,
    /// beyond which it fails.
    async fn export(&self, tenant: &str, limit: u64) -> Result<Vec<Entry>, StoreError>;

    /// Deletes every key of tenant `tenant` (its key) in every plugin's
    /// namespace; the keys and bytes removed.
    async fn delete_tenant(&self, tenant: &str) -> Result<(u64, u64), StoreError>;
}
