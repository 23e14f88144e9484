//! `wasm-mcp lock`: writing the plugin lock from the plugins as they are,
//! showing how they differ from it (`lock diff`), and accepting them
//! (`lock update`).

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasm_mcp::config::{Config, Manifest};
use wasm_mcp::lock::{self, Entry, LockFile, Observed};
use wasm_mcp::registry::Registry;
use wasm_mcp::reload::{self, Loader, Policy};
use wasm_mcp::runtime::Runtime;
use wasm_mcp::settings;

/// `wasm-mcp lock diff`, `wasm-mcp lock update`.
#[derive(Subcommand)]
pub(crate) enum LockCommand {
    /// Print how each plugin differs from the lock (the locked and the new
    /// text one above the other); exit with 1 if one does.
    Diff,
    /// Accept the plugins as they are now into the lock: every one, or
    /// only PLUGIN. A serving host then serves the version it held back.
    Update {
        /// The plugin to accept (by default all of them).
        plugin: Option<String>,
    },
}

/// Where the plugins and the lock are.
#[derive(Args)]
pub(crate) struct LockArgs {
    /// The folder of plugin components (*.wasm). Overrides the config file.
    #[arg(long, short = 'p', env = "WASM_MCP_PLUGINS", global = true)]
    plugins: Option<PathBuf>,
    /// A TOML config file: its [server] lock names the lock file (else
    /// wasm-mcp.lock beside it, else in the current folder).
    #[arg(long, short = 'c', env = "WASM_MCP_CONFIG", global = true)]
    config: Option<PathBuf>,
}

/// Runs `wasm-mcp lock [diff | update [PLUGIN]]`; `false` when the exit
/// status should say something differs (or did not load).
pub(crate) async fn run(command: Option<LockCommand>, args: LockArgs) -> Result<bool> {
    let config = settings::load_config(args.config.clone()).await?;
    let dir = args
        .plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let path = lock::lock_path(config.server.lock.as_deref(), args.config.as_deref());
    let (now, failed) = observe(&dir, &config).await?;
    for (name, e) in &failed {
        eprintln!("plugin {name} did not load, so it is not recorded: {e}");
    }
    let ok = failed.is_empty();
    match command {
        None => {
            let file = LockFile {
                plugins: now,
                ..LockFile::default()
            };
            let count = file.plugins.len();
            write(file, &path).await?;
            println!("wrote {} ({count} plugins)", path.display());
            Ok(ok)
        }
        Some(LockCommand::Diff) => {
            let locked = read(&path).await?;
            Ok(print_diff(&locked, &now, &path) && ok)
        }
        Some(LockCommand::Update { plugin }) => {
            let mut file = match read(&path).await {
                Ok(file) => file,
                Err(_) if !exists(&path).await => LockFile::default(),
                Err(e) => return Err(e),
            };
            let accepted = match &plugin {
                Some(name) => {
                    let entry = now.get(name).with_context(|| {
                        format!(
                            "no plugin {name} (a loadable {name}.wasm) in {}",
                            dir.display()
                        )
                    })?;
                    BTreeMap::from([(name.clone(), entry.clone())])
                }
                None => {
                    // Plugins gone from the folder leave the lock too.
                    file.plugins.retain(|name, _| now.contains_key(name));
                    now
                }
            };
            for (name, entry) in accepted {
                let said = match file.plugins.get(&name) {
                    None => "added".to_owned(),
                    Some(old) if *old == entry => "unchanged".to_owned(),
                    Some(old) => {
                        format!("accepted ({} lines of diff)", lock::diff(old, &entry).len())
                    }
                };
                println!("{name}: {said}");
                file.plugins.insert(name, entry);
            }
            write(file, &path).await?;
            println!("wrote {}", path.display());
            Ok(ok || plugin.as_ref().is_some_and(|p| !failed.contains_key(p)))
        }
    }
}

/// Prints how each plugin differs from `locked`; `true` when none does.
fn print_diff(locked: &LockFile, now: &BTreeMap<String, Entry>, path: &Path) -> bool {
    let mut same = true;
    let names: std::collections::BTreeSet<&String> =
        locked.plugins.keys().chain(now.keys()).collect();
    for name in names {
        match (locked.plugins.get(name), now.get(name)) {
            (Some(_), None) => {
                same = false;
                println!("{name}: in the lock, not in the plugin folder");
            }
            (None, Some(_)) => {
                same = false;
                println!("{name}: not in the lock (a host enforcing it does not serve it)");
            }
            (Some(old), Some(new)) => {
                let lines = lock::diff(old, new);
                if lines.is_empty() {
                    println!("{name}: matches the lock");
                } else {
                    same = false;
                    println!("{name}: differs from the lock");
                    for line in lines {
                        println!("  {line}");
                    }
                }
            }
            (None, None) => {}
        }
    }
    if !same {
        println!(
            "(the lock: {}; `wasm-mcp lock update [PLUGIN]` accepts what is now)",
            path.display()
        );
    }
    same
}

/// Each plugin of `dir` as it is now, by name, and those that did not
/// load, with why. Loaded as a serving host loads them (with the grants
/// `config` gives, through its compile cache), not served.
pub(crate) async fn observe(
    dir: &Path,
    config: &Config,
) -> Result<(BTreeMap<String, Entry>, BTreeMap<String, String>)> {
    let files = {
        let dir = dir.to_owned();
        tokio::task::spawn_blocking(move || reload::folder::wasm_files(&dir)).await??
    };
    let runtime = Runtime::new(settings::runtime_config(config))?;
    let loader = Loader::new(
        Arc::new(Registry::new(runtime)),
        Policy::new(config.clone())?,
    );
    let mut loads = tokio::task::JoinSet::new();
    for file in files {
        let loader = loader.clone();
        loads.spawn(async move {
            let name =
                reload::folder::plugin_name(&file).unwrap_or_else(|_| file.display().to_string());
            let entry = observe_one(&loader, &name, &file).await;
            (name, entry)
        });
    }
    let (mut now, mut failed) = (BTreeMap::new(), BTreeMap::new());
    while let Some(joined) = loads.join_next().await {
        match joined? {
            (name, Ok(entry)) => {
                now.insert(name, entry);
            }
            (name, Err(e)) => {
                failed.insert(name, format!("{e:#}"));
            }
        }
    }
    Ok((now, failed))
}

/// Plugin `name` (its component at `file`) as it is now.
pub(crate) async fn observe_one(loader: &Loader, name: &str, file: &Path) -> Result<Entry> {
    let entry = loader.load_file(file).await?;
    let wasm = file.to_owned();
    let (manifest, signer) = tokio::task::spawn_blocking(move || -> Result<_> {
        Ok((Manifest::beside(&wasm)?, lock::read_signer(&wasm)?))
    })
    .await??;
    Ok(Entry::of(Observed {
        source: lock::source_of(loader.config(), name),
        component_hash: entry.plugin.hash(),
        signer,
        manifest: &manifest,
        listing: &entry.listing,
    }))
}

/// The lock file at `path` (off the async workers).
pub(crate) async fn read(path: &Path) -> Result<LockFile> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || LockFile::read(&path)).await?
}

async fn write(file: LockFile, path: &Path) -> Result<()> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || file.write(&path)).await?
}

async fn exists(path: &Path) -> bool {
    tokio::fs::symlink_metadata(path).await.is_ok()
}

/// The lock `inspect` compares a plugin with: `[server] lock`, else
/// wasm-mcp.lock beside the config file if there is one.
pub(crate) async fn lock_for(config: &Config, config_file: Option<&Path>) -> Option<PathBuf> {
    if let Some(lock) = &config.server.lock {
        return Some(lock.clone());
    }
    let beside = lock::lock_path(None, Some(config_file?));
    let exists = tokio::fs::try_exists(&beside).await.unwrap_or(false);
    exists.then_some(beside)
}

/// `inspect`'s line saying whether plugin `name` (its component at
/// `file`, loaded as `entry`) matches the lock at `path`, then the diff.
pub(crate) async fn print_match(
    config: &Config,
    path: &Path,
    name: &str,
    file: &Path,
    entry: &wasm_mcp::registry::PluginEntry,
) {
    let wasm = file.to_owned();
    let asked = tokio::task::spawn_blocking(move || -> Result<_> {
        Ok((Manifest::beside(&wasm)?, lock::read_signer(&wasm)?))
    })
    .await
    .map_err(anyhow::Error::from)
    .and_then(|r| r);
    let (manifest, signer) = match asked {
        Ok(asked) => asked,
        Err(e) => return println!("lock: not compared: {e:#}"),
    };
    let now = Entry::of(Observed {
        source: lock::source_of(config, name),
        component_hash: entry.plugin.hash(),
        signer,
        manifest: &manifest,
        listing: &entry.listing,
    });
    let locked = match read(path).await {
        Ok(locked) => locked,
        Err(e) => return println!("lock: not compared: {e:#}"),
    };
    let shown = path.display();
    match locked.plugins.get(name) {
        None => println!("lock: {name} is not in {shown} (a host enforcing it does not serve it)"),
        Some(old) => {
            let lines = lock::diff(old, &now);
            if lines.is_empty() {
                println!("lock: matches {shown}");
            } else {
                println!("lock: differs from {shown}");
                for line in lines {
                    println!("  {line}");
                }
            }
        }
    }
}
