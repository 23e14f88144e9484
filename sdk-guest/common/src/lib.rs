//! What the wasm-mcp host and its Rust SDK both need, written once: the
//! grammar of the URI templates a plugin names its resource families with,
//! and a matcher that extracts a URI's variables in time linear in the URI.
//!
//! The crate has no dependencies, so it builds for the host and for
//! `wasm32-wasip2` alike, and it lives inside the SDK's folder so that the
//! folder still stands alone when copied.

pub mod uri_template;

pub use uri_template::{Part, UriTemplate};
