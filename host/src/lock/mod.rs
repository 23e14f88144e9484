//! The plugin lock: what each plugin tells the model, recorded once and
//! enforced after. `wasm-mcp lock` writes `wasm-mcp.lock` (per plugin: its
//! source, component digest, signer, the grants its manifest asks for,
//! and each tool's, prompt's, resource's and template's definition);
//! with `[server] lock` set, a plugin version that differs from its entry
//! is not served (the version serving keeps serving), the difference is
//! logged as a diff and counted, and `wasm-mcp lock update` accepts it.
//!
//! It knows the plugin folder's files (the signer file beside a
//! component) and the registry's listings; `reload` asks it before a new
//! version is installed.

mod diff;
mod enforce;
mod file;
mod record;

pub use diff::{diff, MAX_LINES};
pub use enforce::{Lock, LockWatch, Refused, Why};
pub use file::{lock_path, LockFile, FILE_NAME, MAX_LOCK_BYTES, VERSION};
pub use record::{
    digest, read_signer, signer_path, source_of, Definition, Entry, Observed, MAX_SIGNER_BYTES,
    NO_SIGNER,
};

use std::sync::Arc;

/// The lock `config` enforces (`[server] lock`, read now), if any.
pub async fn configured(config: &crate::config::Config) -> anyhow::Result<Option<Arc<Lock>>> {
    match &config.server.lock {
        Some(path) => Ok(Some(Lock::open(path.clone()).await?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests;
