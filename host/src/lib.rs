//! wasm-mcp: an MCP server whose tools, resources and prompts live in
//! sandboxed WebAssembly components.
//!
//! Data flows one way: `transport` → `server` → `registry` → `runtime`.
//! `reload` sits beside `transport`: it feeds file changes to the server;
//! `dev` builds plugins from source into a folder that `reload` watches.

pub mod cache_folder;
pub mod cluster;
pub mod coalesce;
pub mod config;
pub mod dev;
pub mod files;
pub mod launch;
pub mod lock;
pub mod metrics;
pub mod names;
pub mod oci;
pub mod plugin_data;
pub mod protocol;
pub mod registry;
pub mod reload;
pub mod runtime;
pub mod scaffold;
pub mod server;
pub mod settings;
pub mod skills;
pub mod tenant;
pub mod text;
pub mod traces;
pub mod transport;
pub mod trim;
