//! What the server's tests, and the transports' tests, start from.

use super::{Server, ServerOptions};
use crate::registry::Registry;
use crate::runtime::{Runtime, RuntimeConfig};
use std::sync::Arc;

/// A server with no plugins and a small runtime.
pub(crate) fn empty_server() -> Arc<Server> {
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 2,
        max_memory_bytes: 1 << 20,
        ..RuntimeConfig::default()
    })
    .expect("the runtime starts");
    Server::new(Arc::new(Registry::new(runtime)), ServerOptions::default())
}
