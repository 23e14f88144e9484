//! The lock as a serving host keeps it: the file read again whenever it
//! changed, each new plugin version checked against its entry, the
//! plugins held back remembered (so that accepting them into the lock
//! reloads them), and a watch on the file.

use super::file::LockFile;
use super::record::Entry;
use anyhow::{Context as _, Result};
use notify::{RecursiveMode, Watcher as _};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::mpsc;

/// What tells one version of the lock file from another: its inode,
/// length and modification time.
type Stamp = (u64, u64, Option<SystemTime>);

/// The plugin lock a serving host enforces (`[server] lock`).
pub struct Lock {
    path: PathBuf,
    /// The file as last read, with its stamp.
    read: Mutex<Option<(Stamp, Arc<LockFile>)>>,
    /// The plugins whose current file is held back, with that file's path
    /// (at most one per plugin file in the folder).
    held: Mutex<BTreeMap<String, PathBuf>>,
}

/// Why a plugin version is not served.
#[derive(Debug)]
pub struct Refused {
    /// The plugin.
    pub plugin: String,
    /// The lock file.
    pub lock: PathBuf,
    /// What is wrong.
    pub why: Why,
}

/// What keeps a plugin version from being served.
#[derive(Debug)]
pub enum Why {
    /// The lock has no entry for the plugin.
    Unlocked,
    /// The lock file cannot be read now.
    Unreadable(String),
    /// It differs from its entry: the diff's lines.
    Differs(Vec<String>),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (plugin, lock) = (&self.plugin, self.lock.display());
        match &self.why {
            Why::Unlocked => write!(
                f,
                "plugin {plugin} has no entry in the plugin lock {lock} \
                 (`wasm-mcp lock update {plugin}` adds it)"
            ),
            Why::Unreadable(e) => write!(f, "the plugin lock cannot be read: {e}"),
            Why::Differs(lines) => {
                write!(
                    f,
                    "plugin {plugin} differs from the plugin lock {lock} \
                     (`wasm-mcp lock update {plugin}` accepts it):"
                )?;
                for line in lines {
                    write!(f, "\n  {line}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Refused {}

impl Refused {
    /// One line for clients (no host path, no diff): what happened and
    /// where to look.
    pub fn summary(&self) -> String {
        let plugin = &self.plugin;
        match &self.why {
            Why::Unlocked => format!("plugin {plugin} is not in the plugin lock"),
            Why::Unreadable(_) => "the plugin lock cannot be read".to_owned(),
            Why::Differs(_) => {
                format!(
                    "plugin {plugin} differs from the plugin lock (`wasm-mcp lock diff` shows how)"
                )
            }
        }
    }
}

impl Lock {
    /// The lock at `path`, read now: a lock file that is missing or not
    /// valid is an error (the host does not start).
    pub async fn open(path: PathBuf) -> Result<Arc<Lock>> {
        let lock = Arc::new(Lock {
            path,
            read: Mutex::default(),
            held: Mutex::default(),
        });
        lock.current().await?;
        Ok(lock)
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock as its file is now: read again (off the async workers)
    /// when it changed since last read.
    pub async fn current(&self) -> Result<Arc<LockFile>> {
        let path = self.path.clone();
        let stamp = tokio::task::spawn_blocking(move || stamp(&path)).await??;
        if let Some((seen, file)) = &*self.read.lock() {
            if *seen == stamp {
                return Ok(file.clone());
            }
        }
        let path = self.path.clone();
        let file = Arc::new(tokio::task::spawn_blocking(move || LockFile::read(&path)).await??);
        *self.read.lock() = Some((stamp, file.clone()));
        Ok(file)
    }

    /// Whether plugin `name`, as it is `now`, may be served under `file`
    /// (the lock as read, or why it could not be).
    pub fn check(
        &self,
        file: &Result<Arc<LockFile>, String>,
        name: &str,
        now: &Entry,
    ) -> Result<(), Refused> {
        let refused = |why| Refused {
            plugin: name.to_owned(),
            lock: self.path.clone(),
            why,
        };
        let file = file
            .as_ref()
            .map_err(|e| refused(Why::Unreadable(e.clone())))?;
        let Some(locked) = file.plugins.get(name) else {
            return Err(refused(Why::Unlocked));
        };
        let lines = super::diff::diff(locked, now);
        if lines.is_empty() {
            Ok(())
        } else {
            Err(refused(Why::Differs(lines)))
        }
    }

    /// The check of a plugin's lists asked again while it serves (it said
    /// they changed): its definitions against its entry in the lock as last
    /// read. Lists that differ are not served (logged with the diff, and
    /// counted); the ones in place stay.
    pub fn relist_gate(self: &Arc<Self>) -> crate::registry::RelistGate {
        let lock = Arc::downgrade(self);
        Box::new(move |name: &str, listing: &crate::runtime::Listing| {
            let Some(lock) = lock.upgrade() else {
                return true;
            };
            let file = lock.read.lock().as_ref().map(|(_, file)| file.clone());
            let locked = file.as_ref().and_then(|f| f.plugins.get(name));
            let refusal = match locked {
                None => Refused {
                    plugin: name.to_owned(),
                    lock: lock.path.clone(),
                    why: Why::Unlocked,
                },
                Some(locked) => {
                    let fresh = Entry::of(super::record::Observed {
                        source: locked.source.clone(),
                        component_hash: locked
                            .component
                            .strip_prefix("sha256:")
                            .unwrap_or(&locked.component),
                        signer: Some(locked.signer.clone()),
                        manifest: &locked.asks,
                        listing,
                    });
                    let lines = super::diff::diff(locked, &fresh);
                    if lines.is_empty() {
                        return true;
                    }
                    Refused {
                        plugin: name.to_owned(),
                        lock: lock.path.clone(),
                        why: Why::Differs(lines),
                    }
                }
            };
            crate::metrics::metrics().lock_refusal(name);
            tracing::warn!(
                plugin = name,
                "plugin {name} listed again: the new lists are not served (the ones in place stay): {refusal}"
            );
            false
        })
    }

    /// Notes that plugin `name`'s file at `wasm` is held back.
    pub fn hold(&self, name: &str, wasm: &Path) {
        self.held.lock().insert(name.to_owned(), wasm.to_owned());
    }

    /// Notes that plugin `name` is no longer held back.
    pub fn release(&self, name: &str) {
        self.held.lock().remove(name);
    }

    /// The component files held back, to load again when the lock changes.
    pub fn held_back(&self) -> Vec<PathBuf> {
        self.held.lock().values().cloned().collect()
    }

    /// Watches the lock file: each change to it is sent (with the kind of
    /// event, for settling) until the watch drops.
    pub fn watch(&self) -> Result<LockWatch> {
        let (tx, changes) = mpsc::channel(16);
        let file_name = self.path.file_name().map(|n| n.to_owned());
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                let ours = event
                    .paths
                    .iter()
                    .any(|p| p.file_name().map(|n| n.to_owned()) == file_name);
                if ours {
                    // A full queue already holds a change to act on.
                    let _ = tx.try_send(event.kind);
                }
            })
            .context("starting the plugin lock's watcher")?;
        let folder = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        watcher
            .watch(&folder, RecursiveMode::NonRecursive)
            .with_context(|| format!("watching {} for the plugin lock", folder.display()))?;
        Ok(LockWatch {
            _watcher: watcher,
            changes,
        })
    }
}

/// A watch on the lock file (see [`Lock::watch`]).
pub struct LockWatch {
    _watcher: notify::RecommendedWatcher,
    /// The changes, as the kind of each file event.
    pub changes: mpsc::Receiver<notify::EventKind>,
}

/// The lock file's stamp. Blocks.
fn stamp(path: &Path) -> Result<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow::anyhow!(
                "the plugin lock {} does not exist: write it with `wasm-mcp lock`",
                path.display()
            )
        } else {
            anyhow::anyhow!("reading the plugin lock {}: {e}", path.display())
        }
    })?;
    Ok((meta.ino(), meta.len(), meta.modified().ok()))
}
