//! `wasm-mcp tenant list|export|delete`: an operator's view of each
//! tenant's plugin data — its key-value data in the store `serve` uses
//! (the SQLite file, or the shared PostgreSQL of `[state] url`) and its
//! folder in each root made per tenant (`path = ".../{tenant}"`).

use anyhow::{Context as _, Result};
use clap::Subcommand;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use wasm_mcp::config::Config;
use wasm_mcp::plugin_data::folders::{self, Tally, TenantRoot};
use wasm_mcp::plugin_data::SqliteStore;
use wasm_mcp::runtime::keyvalue::{Backend, Usage};
use wasm_mcp::settings;

/// `wasm-mcp tenant ...`
#[derive(Subcommand)]
pub(crate) enum TenantCommand {
    /// List every tenant with plugin data: its keys and bytes in each
    /// plugin's key-value store, and its folder in each root made per
    /// tenant. A name too long to be a folder's is shown as its key
    /// (`~` and its SHA-256).
    List {
        /// The config `serve` runs with (its store and roots).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Write one tenant's plugin data to a new tar archive:
    /// `keyvalue.jsonl` (one JSON object per key: plugin, bucket, key,
    /// value in base64) and `roots/<root>/...`, its folder of each root
    /// made per tenant (regular files and folders; symlinks not followed).
    Export {
        /// The tenant's name (as its token's claim gives it), or a key
        /// `tenant list` shows.
        name: String,
        /// The archive to write (refused if it exists).
        #[arg(long, value_name = "FILE.tar")]
        out: PathBuf,
        /// The most the archive may hold, in MiB of values and files;
        /// beyond it nothing is written.
        #[arg(long, value_name = "MIB", default_value_t = folders::DEFAULT_EXPORT_LIMIT >> 20)]
        max_mb: u64,
        /// The config `serve` runs with (its store and roots).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Delete all of one tenant's plugin data: its keys in every plugin's
    /// key-value store and its folder in each root made per tenant
    /// (symlinks inside are removed, never followed). Says what it removed.
    Delete {
        /// The tenant's name (as its token's claim gives it), or a key
        /// `tenant list` shows.
        name: String,
        /// The config `serve` runs with (its store and roots).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
}

/// Runs `command`.
pub(crate) async fn run(command: TenantCommand) -> Result<()> {
    match command {
        TenantCommand::List { config } => list(config).await,
        TenantCommand::Export {
            name,
            out,
            max_mb,
            config,
        } => export(&name, out, max_mb, config).await,
        TenantCommand::Delete { name, config } => delete(&name, config).await,
    }
}

/// The store `serve` would use with `config`, and where it is.
async fn open_store(config: &Config) -> Result<(Arc<dyn Backend>, String)> {
    if let Some(shared) = wasm_mcp::cluster::keyvalue_store(config).await? {
        return Ok((Arc::new(shared), "the shared database ([state] url)".into()));
    }
    let Some(path) = settings::keyvalue_store_path(config) else {
        anyhow::bail!(
            "the key-value store is kept in memory ([state] keyvalue_store = \"\"), so no tenant's \
             data outlives the host: there is none to reach"
        );
    };
    let shown = format!("the SQLite store {}", path.display());
    // A store never made holds nothing: it is not made here.
    let exists = tokio::fs::try_exists(&path).await.unwrap_or(false);
    let store =
        tokio::task::spawn_blocking(move || SqliteStore::open(exists.then_some(path.as_path())))
            .await??;
    Ok((Arc::new(store), shown))
}

/// The key of the tenant `name`: its encoding, or `name` itself when it is
/// a hashed key (`~...`, as `list` shows a long name).
fn key_of(name: &str) -> Result<String> {
    if name.starts_with('~') && folders::is_tenant_key(name) {
        return Ok(name.to_owned());
    }
    let tenant = wasm_mcp::tenant::Tenant::new(name).context("a tenant's name is not empty")?;
    Ok(tenant.key().to_string())
}

/// How a tenant is shown: its name (escaped where it is not plain text),
/// or its key when the name was hashed.
fn shown(key: &str) -> String {
    match wasm_mcp::tenant::decode(key) {
        Some(name) if name.chars().all(|c| !c.is_control()) && !name.contains('"') => {
            format!("\"{name}\"")
        }
        Some(name) => format!("{name:?}"),
        None => format!("{key} (a long name, shown by its key)"),
    }
}

async fn load(config: Option<PathBuf>) -> Result<(Config, Vec<TenantRoot>)> {
    let config = settings::load_config(config).await?;
    let roots = folders::tenant_roots(&config);
    Ok((config, roots))
}

/// What one tenant holds: its use of each plugin's store, and its folder
/// in each root (the root's name, the folder, what it holds).
type Held = (Vec<Usage>, Vec<(String, PathBuf, Tally)>);

async fn list(config: Option<PathBuf>) -> Result<()> {
    let (config, roots) = load(config).await?;
    let (store, place) = open_store(&config).await?;
    let mut tenants: BTreeMap<String, Held> = BTreeMap::new();
    for usage in store.usage().await? {
        tenants
            .entry(usage.namespace.tenant.to_string())
            .or_default()
            .0
            .push(usage);
    }
    let folders = tokio::task::spawn_blocking(move || -> Result<Vec<_>> {
        let mut found = Vec::new();
        for root in &roots {
            for key in folders::tenant_folders(&root.parent)? {
                if let Some(tally) = folders::measure(&root.parent, &key)? {
                    found.push((
                        key.clone(),
                        root.name.clone(),
                        root.parent.join(&key),
                        tally,
                    ));
                }
            }
        }
        Ok(found)
    })
    .await??;
    for (key, root, path, tally) in folders {
        tenants.entry(key).or_default().1.push((root, path, tally));
    }
    println!("key-value data: {place}");
    if tenants.is_empty() {
        println!("no tenant has plugin data");
    }
    for (key, (usage, folders)) in &tenants {
        println!("tenant {} (key {key})", shown(key));
        for usage in usage {
            println!(
                "  keyvalue {}: {} keys, {} bytes",
                usage.namespace.plugin, usage.keys, usage.bytes
            );
        }
        for (root, path, tally) in folders {
            println!("  roots.{root} {}: {tally}", path.display());
        }
    }
    Ok(())
}

async fn export(name: &str, out: PathBuf, max_mb: u64, config: Option<PathBuf>) -> Result<()> {
    let key = key_of(name)?;
    let (config, roots) = load(config).await?;
    let (store, place) = open_store(&config).await?;
    let limit = max_mb.saturating_mul(1 << 20);
    let entries = store
        .export(&key, limit)
        .await
        .with_context(|| format!("reading the tenant's key-value data from {place}"))?;
    let (shown_out, tenant) = (out.display().to_string(), key.clone());
    let exported = tokio::task::spawn_blocking(move || {
        folders::write_archive(&out, &tenant, &entries, &roots, limit)
    })
    .await??;
    println!(
        "wrote {shown_out}: tenant {}: {} keys ({} bytes of values) from {place}",
        shown(&key),
        exported.keys,
        exported.value_bytes
    );
    for (root, tally) in &exported.folders {
        println!("  roots.{root}: {tally}");
    }
    Ok(())
}

async fn delete(name: &str, config: Option<PathBuf>) -> Result<()> {
    let key = key_of(name)?;
    let (config, roots) = load(config).await?;
    let (store, place) = open_store(&config).await?;
    let (keys, bytes) = store
        .delete_tenant(&key)
        .await
        .with_context(|| format!("deleting the tenant's key-value data from {place}"))?;
    println!(
        "tenant {}: removed {keys} keys ({bytes} bytes of keys and values) from {place}",
        shown(&key)
    );
    let tenant = key.clone();
    let removed = tokio::task::spawn_blocking(move || {
        roots
            .iter()
            .map(|root| {
                let path = root.parent.join(&tenant);
                (
                    root.name.clone(),
                    path,
                    folders::remove(&root.parent, &tenant),
                )
            })
            .collect::<Vec<_>>()
    })
    .await?;
    let mut failed = 0;
    for (root, path, outcome) in removed {
        match outcome {
            Ok(Some(tally)) => println!("  removed roots.{root} {}: {tally}", path.display()),
            Ok(None) => {}
            Err(e) => {
                eprintln!("  roots.{root} {}: not removed: {e:#}", path.display());
                failed += 1;
            }
        }
    }
    anyhow::ensure!(
        failed == 0,
        "{failed} folder(s) of the tenant were not removed"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_hashed_keys_reach_the_same_tenant() {
        assert_eq!(key_of("alice").unwrap(), "alice");
        assert_eq!(key_of("../x").unwrap(), "%2E%2E%2Fx");
        let long = "x".repeat(300);
        let hashed = wasm_mcp::tenant::encode(&long);
        assert_eq!(key_of(&long).unwrap(), hashed);
        assert_eq!(key_of(&hashed).unwrap(), hashed);
        // A name that only looks hashed is a name.
        assert_eq!(key_of("~x").unwrap(), "%7Ex");
        assert!(key_of("").is_err());
        assert_eq!(shown("alice"), "\"alice\"");
        assert_eq!(shown("a%0Ab"), "\"a\\nb\"");
        assert!(shown(&hashed).contains("shown by its key"));
    }
}
