//! The config compiled into the settings of each part, in one place: the
//! runtime's, the server's, the task store's and the HTTP endpoint's.
//! Only the binary's commands use it.

mod http;

pub use http::http_options;

use crate::config::Config;
use crate::config::ToolSearchSetting;
use crate::runtime::RuntimeConfig;
use crate::server::search::ToolSearch;
use crate::server::tasks::{TaskOptions, TaskQuotas};
use crate::server::{AdmissionLimits, Notices, ServerOptions};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The config file at `path` (read off the async workers), or the
/// defaults without one.
pub async fn load_config(path: Option<PathBuf>) -> Result<Config> {
    tokio::task::spawn_blocking(move || read_config(path.as_deref())).await?
}

/// [`load_config`] on the calling thread (blocking).
pub fn read_config(path: Option<&Path>) -> Result<Config> {
    match path {
        Some(path) => Config::load(path),
        None => Ok(Config::default()),
    }
}

/// What pulling plugin `name` (`None`: one the config does not name)
/// asks of its signatures. Reads `[signatures] keys` and `trusted_root`
/// (off the async workers) only when the policy checks signatures.
pub async fn trust(config: &Config, name: Option<&str>) -> Result<crate::oci::Trust> {
    let policy = config.signature_policy(name);
    if policy == crate::config::SignaturePolicy::Off {
        return Ok(crate::oci::Trust::default());
    }
    let files = config.signatures.keys.clone();
    let root_file = config.signatures.trusted_root.clone();
    let (keys, root) = tokio::task::spawn_blocking(move || -> Result<_> {
        let keys = files
            .iter()
            .map(|file| crate::oci::signature::PublicKey::read(file))
            .collect::<Result<Vec<_>>>()?;
        // Read now to fail early; read again at each pull.
        if let Some(file) = &root_file {
            crate::oci::sigstore::TrustedRoot::read(file)?;
        }
        Ok((keys, root_file))
    })
    .await??;
    let own = name.and_then(|n| config.plugins.get(n)?.identities.clone());
    Ok(crate::oci::Trust {
        policy,
        keys: keys.into(),
        repositories: config.signatures.repositories.clone().into(),
        identities: own
            .unwrap_or_else(|| config.signatures.identities.clone())
            .into(),
        root,
    })
}

/// The server's settings; `notices` are added to the instructions.
pub fn server_options(config: &Config, notices: Arc<Notices>) -> ServerOptions {
    let server = &config.server;
    ServerOptions {
        instructions: server.instructions.clone(),
        page_size: server.page_size,
        list_ttl_ms: server.list_ttl_ms,
        input_timeout: Duration::from_millis(server.input_timeout_ms),
        tasks: task_options(config),
        admission: AdmissionLimits {
            per_connection: server.max_requests_per_connection,
            per_principal: server.max_requests_per_principal,
            total: server.max_requests,
            bytes_per_principal: server.max_requests_mb_per_principal << 20,
            bytes_total: server.max_requests_mb << 20,
        },
        max_waiting_per_principal: server.max_waiting_per_principal,
        handshake_only: server.handshake_only,
        startup_wait: Duration::from_millis(server.startup_wait_ms),
        max_sessions: config.http.max_sessions,
        notices,
        access: Arc::new(crate::server::Policy::of(config)),
        rates: Arc::new(crate::server::rates::Rates::of(config)),
        tool_search: match server.tool_search {
            ToolSearchSetting::Flag(false) => ToolSearch::Off,
            ToolSearchSetting::Flag(true) => ToolSearch::Offered,
            ToolSearchSetting::Only(_) => ToolSearch::Only,
        },
        ..ServerOptions::default()
    }
}

/// The compile cache: `$XDG_CACHE_HOME/wasm-mcp`, else `~/.cache/wasm-mcp`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wasm-mcp"))
}

/// The host's state folder: `$XDG_STATE_HOME/wasm-mcp`, else
/// `~/.local/state/wasm-mcp`.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state")))
        .map(|base| base.join("wasm-mcp"))
}

/// Where tasks are kept: the config's `[tasks] store`, else the state
/// folder; `None` keeps them in memory.
pub fn task_options(config: &Config) -> TaskOptions {
    let section = &config.tasks;
    let store = match &section.store {
        Some(path) if path.as_os_str().is_empty() => None,
        Some(path) => Some(path.clone()),
        None => state_dir().map(|dir| dir.join("tasks.db")),
    };
    let ms = Duration::from_millis;
    TaskOptions {
        store,
        ttl: ms(section.ttl_ms),
        max_ttl: ms(section.max_ttl_ms),
        poll_interval: ms(section.poll_interval_ms),
        after: ms(section.after_ms),
        max_running: section.max_running,
        quotas: TaskQuotas {
            running_per_owner: section.max_running_per_owner,
            stored_per_owner: section.max_stored_per_owner,
            bytes_per_owner: section.max_stored_mb_per_owner << 20,
            stored_total: section.max_stored,
            bytes_total: section.max_stored_mb << 20,
            result_bytes: section.max_result_mb << 20,
        },
        lease: Duration::from_secs(config.cluster.lease_secs),
        rerun_idempotent: config.cluster.rerun_idempotent,
    }
}

/// Where plugins' key-value data is kept without `[state] url`: `[state]
/// keyvalue_store`, else `keyvalue.db` in the state folder (beside
/// `tasks.db`); `None` keeps it in memory.
pub fn keyvalue_store_path(config: &Config) -> Option<PathBuf> {
    match &config.state.keyvalue_store {
        Some(path) if path.as_os_str().is_empty() => None,
        Some(path) => Some(path.clone()),
        None => state_dir().map(|dir| dir.join("keyvalue.db")),
    }
}

/// Whether any plugin may be granted a key-value store.
pub fn grants_keyvalue(config: &Config) -> bool {
    config.plugins.values().any(|p| p.keyvalue)
}

/// The runtime's settings: the compile cache and its key, the memory cap.
pub fn runtime_config(config: &Config) -> RuntimeConfig {
    let cache_dir = match &config.server.cache_dir {
        Some(dir) if dir.as_os_str().is_empty() => None,
        Some(dir) => Some(dir.clone()),
        None => default_cache_dir(),
    };
    RuntimeConfig {
        cache_dir,
        cache_key_file: state_dir().map(|dir| dir.join("cache.key")),
        cache_max_bytes: config.server.cache_max_mb << 20,
        max_memory_bytes: config.max_memory_bytes(),
        max_instances: config.server.max_instances,
    }
}

/// Refuses to serve when a folder or file the host trusts (the plugins,
/// the compile cache and its key, the task store) lies inside a root, or
/// holds one: a plugin granted that root could change it.
pub fn check_host_paths(config: &Config, plugins: &Path) -> Result<()> {
    let runtime = runtime_config(config);
    if let Some(cache) = &runtime.cache_dir {
        let (cache, plugins) = (std::path::absolute(cache)?, std::path::absolute(plugins)?);
        anyhow::ensure!(
            !cache.starts_with(&plugins) && !plugins.starts_with(&cache),
            "the compile cache {} and the plugin folder {} overlap; keep them apart",
            cache.display(),
            plugins.display()
        );
    }
    let tasks = task_options(config);
    let paths = [
        ("the plugin folder", Some(plugins.to_owned())),
        ("the compile cache", runtime.cache_dir),
        ("the compile cache key", runtime.cache_key_file),
        ("the task store", tasks.store),
        ("the key-value store", keyvalue_store_path(config)),
    ];
    for (what, path) in paths {
        if let Some(path) = path {
            config.check_outside_roots(what, &path)?;
        }
    }
    Ok(())
}

/// The plugins the config names by OCI reference (each plugin's name and
/// reference), and how they are followed.
pub type Sources = (Vec<(String, oci_client::Reference)>, crate::oci::Following);

/// The plugins the config names by OCI reference, and how they are
/// followed into `dir` (`None`: no plugin has a source). Reads nothing.
pub fn sources(config: &Config, dir: &std::path::Path) -> Result<Option<Sources>> {
    let mut sources = Vec::new();
    for (name, section) in &config.plugins {
        if let Some(source) = &section.source {
            sources.push((name.clone(), crate::oci::reference(source)?));
        }
    }
    if sources.is_empty() {
        return Ok(None);
    }
    let store = runtime_config(config)
        .cache_dir
        .context("plugins with an OCI source need the compile cache (server.cache_dir), where they are kept")?
        .join("oci");
    let every = (config.server.oci_poll_secs > 0)
        .then(|| std::time::Duration::from_secs(config.server.oci_poll_secs));
    let following = crate::oci::Following {
        store,
        into: dir.to_owned(),
        limits: crate::oci::PullLimits::of(config),
        every,
        logins: crate::oci::Logins::of(config),
    };
    Ok(Some((sources, following)))
}

#[cfg(test)]
mod tests;
