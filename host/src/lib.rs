//! wasm-mcp: an MCP server whose tools, resources and prompts live in
//! sandboxed WebAssembly components.
//!
//! Data flows one way: `transport` → `server` → `registry` → `runtime`.

pub mod config;
pub mod protocol;
pub mod registry;
pub mod runtime;
pub mod server;
pub mod transport;
