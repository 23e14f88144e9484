//! The WebAssembly runtime: one wasmtime engine, compiled-component caching,
//! a fresh instance per call (unless the operator keeps them warm), limits,
//! and the `host` imports plugins call.
//!
//! Nothing here knows MCP's wire format: it hands out the contract's typed
//! values and leaves their JSON shape to the server.

pub mod bindings;
mod blocking;
mod cache;
mod call_error;
mod calls;
mod context;
mod engine;
mod exports;
mod grants;
mod imports;
mod inspect;
pub mod keyvalue;
mod lift;
mod limiter;
mod log_pipe;
mod plain;
mod plugin;
mod quota;
mod slots;
mod spare;
mod state;
mod tenant_dirs;
mod ticker;
mod tier;
mod tool_calls;
mod wait_clock;
mod warm;

pub use cache::ComponentSource;
pub use context::{BoxFuture, CallContext, Quiet, ToolCall};
pub use engine::{Runtime, RuntimeConfig};
pub use grants::{
    DirGrant, DirHandle, Grants, HostPattern, Limits, Secret, SpareMode, ToolCallGrant,
};
pub use inspect::{describe, ComponentDescription};
pub use plain::{custom_section_bytes, has_package_docs, Docs as PlainDocs, PlainTools};
pub use plugin::{CallError, Exports, Listing, LoadedPlugin};
pub use slots::answer_first;
pub use tenant_dirs::TenantDirs;
pub use tier::lower_this_thread;

/// The contract's `completions` interface types.
pub use bindings::exports::wasm_mcp::plugin::completions;
/// The contract's `prompts` interface types.
pub use bindings::exports::wasm_mcp::plugin::prompts;
/// The contract's `resources` interface types.
pub use bindings::exports::wasm_mcp::plugin::resources;
/// The contract's `tools` interface types.
pub use bindings::exports::wasm_mcp::plugin::tools;
/// The contract's `host` interface types.
pub use bindings::wasm_mcp::plugin::host as host_types;
/// The contract's `tool-calls` interface types (code mode).
pub use bindings::wasm_mcp::plugin::tool_calls as tool_call_types;
/// The contract's shared types.
pub use bindings::wasm_mcp::plugin::types;
