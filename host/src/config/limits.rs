//! `[limits]` and `[plugins.<name>.limits]`: what one call of a plugin may
//! use, and every plugin's defaults (the runtime's limits are built from
//! them).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[limits]`: what one call may use, for every plugin unless its
/// `[plugins.<name>.limits]` says otherwise.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Linear memory per instance, in MiB.
    pub memory_mb: usize,
    /// Wall-clock time per call, in milliseconds.
    pub call_timeout_ms: u64,
    /// The largest result a call may return, in MiB of JSON.
    pub max_result_mb: usize,
    /// Calls of one plugin that may run at once; more wait their turn.
    pub max_concurrent_calls: usize,
    /// Items in one result (content blocks, resource contents, prompt
    /// messages, completion values, entries of a list).
    pub max_result_items: usize,
    /// The largest single message a plugin sends the client (a log line, a
    /// progress message, a resource URI, one set of questions), in KiB.
    pub max_message_kb: usize,
    /// Notifications (logs, progress, change notices, stdout/stderr lines)
    /// one call may send per second; more are dropped and counted.
    pub notifications_per_sec: u32,
    /// Deadline of the `list-*` calls made when a plugin loads, in ms.
    pub load_timeout_ms: u64,
    /// OS threads a plugin's file operations may occupy at once.
    pub max_blocking_threads: usize,
    /// Calls one instance serves, one after another. 1 (the default): a
    /// fresh instance per call. More is an opt-in trade of isolation
    /// between calls for speed (the book's "The sandbox and its limits").
    pub calls_per_instance: u32,
    /// When a fresh instance is made for the plugin's next call while a
    /// call of it runs (one at most; the book's "The sandbox and its limits").
    pub spare_instance: SpareMode,
    /// The longest key a plugin granted the key-value store may use, in
    /// bytes (bucket names too).
    pub keyvalue_key_bytes: usize,
    /// The largest value it may store under one key, in KiB.
    pub keyvalue_value_kb: usize,
    /// Keys one tenant's data of the plugin may hold, across its buckets.
    pub keyvalue_keys: u64,
    /// Bytes of keys and values one tenant's data of the plugin may hold,
    /// across its buckets, in MiB.
    pub keyvalue_mb: u64,
    /// Keys one `list-keys` page (and one batch) holds at most.
    pub keyvalue_page_keys: usize,
    /// Key-value operations one call may make (a batch counts one per
    /// key); more fail.
    pub keyvalue_ops_per_call: u32,
    /// Tools one call of a plugin granted `call_tools` may call (code
    /// mode), searches included; more are refused. A client's call bounds
    /// every tool call made for it, those of the tools it calls included.
    pub tool_calls: u32,
    /// How deep calls from plugins may nest: a tool called from a plugin
    /// that was itself called from a plugin is at depth 2. A call deeper
    /// than any plugin on the way allows is refused.
    pub tool_call_depth: u32,
    /// What one call's tool calls may move in all, arguments, results and
    /// searches, in MiB; a call past it is refused (a result past it is
    /// withheld, though the tool ran). A client's call bounds every tool
    /// call made for it, those of the tools it calls included.
    pub tool_call_mb: usize,
    /// The largest view (an MCP Apps `ui://` resource of type
    /// `text/html;profile=mcp-app`) a read may return, in KiB; a read of a
    /// larger one is refused.
    pub max_view_kb: usize,
}

impl Default for LimitsSection {
    /// Every plugin's limits unless the config says otherwise (the
    /// runtime's too).
    fn default() -> Self {
        LimitsSection {
            memory_mb: 256,
            call_timeout_ms: 60_000,
            max_result_mb: 16,
            max_concurrent_calls: 16,
            max_result_items: 10_000,
            max_message_kb: 64,
            notifications_per_sec: 100,
            load_timeout_ms: 5_000,
            max_blocking_threads: 16,
            calls_per_instance: 1,
            spare_instance: SpareMode::Auto,
            keyvalue_key_bytes: 512,
            keyvalue_value_kb: 1024,
            keyvalue_keys: 100_000,
            keyvalue_mb: 64,
            keyvalue_page_keys: 1000,
            keyvalue_ops_per_call: 10_000,
            tool_calls: 100,
            tool_call_depth: 2,
            tool_call_mb: 16,
            max_view_kb: 4096,
        }
    }
}

/// When a plugin gets a spare instance: one made ahead of its next call.
/// Read from `"auto"`, `"always"` or `"never"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SpareMode {
    /// Where instantiating takes long enough for a spare to pay (CPython,
    /// Go), not where making one in a task of its own would cost more than
    /// it saves (most Rust and C plugins).
    #[default]
    Auto,
    /// After every call that returned normally with no other call running.
    Always,
    /// Never: every call waits for its instance to be made.
    Never,
}

impl<'de> serde::Deserialize<'de> for SpareMode {
    fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Self, D::Error> {
        match String::deserialize(from)?.as_str() {
            "auto" => Ok(SpareMode::Auto),
            "always" => Ok(SpareMode::Always),
            "never" => Ok(SpareMode::Never),
            other => Err(serde::de::Error::custom(format!(
                "{other:?} is not \"auto\", \"always\" or \"never\""
            ))),
        }
    }
}

/// `[plugins.<name>.limits]`: overrides of `[limits]` for one plugin.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsOverride {
    /// See [`LimitsSection::memory_mb`].
    pub memory_mb: Option<usize>,
    /// See [`LimitsSection::call_timeout_ms`].
    pub call_timeout_ms: Option<u64>,
    /// See [`LimitsSection::max_result_mb`].
    pub max_result_mb: Option<usize>,
    /// See [`LimitsSection::max_concurrent_calls`].
    pub max_concurrent_calls: Option<usize>,
    /// See [`LimitsSection::max_result_items`].
    pub max_result_items: Option<usize>,
    /// See [`LimitsSection::max_message_kb`].
    pub max_message_kb: Option<usize>,
    /// See [`LimitsSection::notifications_per_sec`].
    pub notifications_per_sec: Option<u32>,
    /// See [`LimitsSection::load_timeout_ms`].
    pub load_timeout_ms: Option<u64>,
    /// See [`LimitsSection::max_blocking_threads`].
    pub max_blocking_threads: Option<usize>,
    /// See [`LimitsSection::calls_per_instance`].
    pub calls_per_instance: Option<u32>,
    /// See [`LimitsSection::spare_instance`].
    pub spare_instance: Option<SpareMode>,
    /// See [`LimitsSection::keyvalue_key_bytes`].
    pub keyvalue_key_bytes: Option<usize>,
    /// See [`LimitsSection::keyvalue_value_kb`].
    pub keyvalue_value_kb: Option<usize>,
    /// See [`LimitsSection::keyvalue_keys`].
    pub keyvalue_keys: Option<u64>,
    /// See [`LimitsSection::keyvalue_mb`].
    pub keyvalue_mb: Option<u64>,
    /// See [`LimitsSection::keyvalue_page_keys`].
    pub keyvalue_page_keys: Option<usize>,
    /// See [`LimitsSection::keyvalue_ops_per_call`].
    pub keyvalue_ops_per_call: Option<u32>,
    /// See [`LimitsSection::tool_calls`].
    pub tool_calls: Option<u32>,
    /// See [`LimitsSection::tool_call_depth`].
    pub tool_call_depth: Option<u32>,
    /// See [`LimitsSection::tool_call_mb`].
    pub tool_call_mb: Option<usize>,
    /// See [`LimitsSection::max_view_kb`].
    pub max_view_kb: Option<usize>,
}

impl LimitsSection {
    /// These limits with `over` applied.
    pub fn with(&self, over: &LimitsOverride) -> LimitsSection {
        LimitsSection {
            memory_mb: over.memory_mb.unwrap_or(self.memory_mb),
            call_timeout_ms: over.call_timeout_ms.unwrap_or(self.call_timeout_ms),
            max_result_mb: over.max_result_mb.unwrap_or(self.max_result_mb),
            max_concurrent_calls: over
                .max_concurrent_calls
                .unwrap_or(self.max_concurrent_calls),
            max_result_items: over.max_result_items.unwrap_or(self.max_result_items),
            max_message_kb: over.max_message_kb.unwrap_or(self.max_message_kb),
            notifications_per_sec: over
                .notifications_per_sec
                .unwrap_or(self.notifications_per_sec),
            load_timeout_ms: over.load_timeout_ms.unwrap_or(self.load_timeout_ms),
            max_blocking_threads: over
                .max_blocking_threads
                .unwrap_or(self.max_blocking_threads),
            calls_per_instance: over.calls_per_instance.unwrap_or(self.calls_per_instance),
            spare_instance: over.spare_instance.unwrap_or(self.spare_instance),
            keyvalue_key_bytes: over.keyvalue_key_bytes.unwrap_or(self.keyvalue_key_bytes),
            keyvalue_value_kb: over.keyvalue_value_kb.unwrap_or(self.keyvalue_value_kb),
            keyvalue_keys: over.keyvalue_keys.unwrap_or(self.keyvalue_keys),
            keyvalue_mb: over.keyvalue_mb.unwrap_or(self.keyvalue_mb),
            keyvalue_page_keys: over.keyvalue_page_keys.unwrap_or(self.keyvalue_page_keys),
            keyvalue_ops_per_call: over
                .keyvalue_ops_per_call
                .unwrap_or(self.keyvalue_ops_per_call),
            tool_calls: over.tool_calls.unwrap_or(self.tool_calls),
            tool_call_depth: over.tool_call_depth.unwrap_or(self.tool_call_depth),
            tool_call_mb: over.tool_call_mb.unwrap_or(self.tool_call_mb),
            max_view_kb: over.max_view_kb.unwrap_or(self.max_view_kb),
        }
    }

    /// The call deadline.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }
}
