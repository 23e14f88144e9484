//! The plugin folder: loaded while the host already serves (every plugin at
//! once, each served when ready), then watched, so that the registry is
//! brought up to date when a component file (or its manifest) is added,
//! replaced or removed; the connected clients are told what changed.
//!
//! Loading happens here, off the request path; the registry swaps its
//! catalogue atomically, so a call in flight finishes on the version it
//! started with. A file that does not load leaves the working version
//! serving, and the error goes to the log and to clients that set a level.

pub mod folder;
mod loader;
mod policy;
mod settle;
mod skill_watch;
mod warm;

pub use loader::Loader;
pub use policy::{Decision, Policy};
pub use warm::warm;

use crate::coalesce::Coalescer;
use crate::registry::Reload;
use crate::server::Server;
use anyhow::{Context as _, Result};
use folder::{component_of, plugin_name};
use notify::{RecursiveMode, Watcher as _};
use settle::Settle;
use skill_watch::SkillWatch;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// A watch on a plugin folder. Events are collected from the moment it
/// starts, so nothing written while the initial load runs is missed.
pub struct FolderWatch {
    dir: PathBuf,
    events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    /// The watcher (kept alive for as long as the watch runs), which also
    /// watches the plugins' skills folders.
    skills: Arc<SkillWatch>,
}

impl FolderWatch {
    /// Starts watching `dir` (not its subfolders; its plugins' skills
    /// folders once [`FolderWatch::run`] runs).
    pub fn start(dir: &Path) -> Result<Self> {
        let (tx, events) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .context("starting the file watcher")?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("watching {}", dir.display()))?;
        Ok(FolderWatch {
            dir: dir.to_owned(),
            events,
            skills: SkillWatch::new(watcher),
        })
    }

    /// Watches the skills folders of `components` (before they first load,
    /// so that an edit meanwhile is not missed), each holding at most
    /// `max_skills` skills.
    pub async fn watch_skills(&self, components: &[PathBuf], max_skills: usize) {
        for path in components {
            self.skills.refresh(path, max_skills).await;
        }
    }

    /// Reloads plugins as their files change, for as long as the server
    /// runs. A file is reloaded once it settles; each file's reloads run
    /// one at a time (a change meanwhile reloads it once more after), and
    /// different files reload independently.
    pub async fn run(mut self, server: Arc<Server>, loader: Arc<Loader>) {
        tracing::info!(folder = %self.dir.display(), "watching for plugin changes");
        let mut settle = Settle::default();
        let reloads = Arc::new(Coalescer::default());
        // A change to the plugin lock loads again the plugins it held back.
        let mut lock_watch = match loader.lock().map(|lock| lock.watch()) {
            Some(Ok(watch)) => Some(watch),
            Some(Err(e)) => {
                tracing::warn!("the plugin lock is read again only at start: {e:#}");
                None
            }
            None => None,
        };
        if let Some(lock) = loader.lock() {
            // It may have changed while the folder first loaded.
            let now = Instant::now();
            for path in lock.held_back() {
                settle.note(&path, &notify::EventKind::Any, now);
            }
        }
        loop {
            let next_due = settle.next_due();
            let wake = async {
                match next_due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.events.recv() => match event {
                    Some(Ok(event)) => {
                        tracing::trace!(?event, "file event");
                        let now = Instant::now();
                        for path in event.paths.iter().filter_map(|p| component_of(&self.dir, p)) {
                            settle.note(&path, &event.kind, now);
                        }
                    }
                    Some(Err(e)) => tracing::warn!(folder = %self.dir.display(), "file watcher: {e}"),
                    None => return,
                },
                Some(kind) = async {
                    match &mut lock_watch {
                        Some(watch) => watch.changes.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    let now = Instant::now();
                    for path in loader.lock().map(|l| l.held_back()).unwrap_or_default() {
                        settle.note(&path, &kind, now);
                    }
                },
                _ = wake => {
                    // Each file on its own: a slow or hung load delays only
                    // its own file's next reload.
                    for path in settle.take_due(Instant::now()) {
                        let (server, loader, skills) = (server.clone(), loader.clone(), self.skills.clone());
                        let key = path.to_string_lossy().into_owned();
                        reloads.request(&key, move || {
                            let (server, loader, path, skills) = (server.clone(), loader.clone(), path.clone(), skills.clone());
                            async move {
                                // Watched first: a change while it loads reloads it again.
                                skills.refresh(&path, loader.skill_limits().skills).await;
                                reload(&server, &loader, &path).await
                            }
                        });
                    }
                }
            }
        }
    }
}

/// Loads the plugins of `files` all at once, each served, and announced to
/// the clients already connected, as soon as it is ready: a slow plugin
/// delays no other. A component compiled before comes from the cache; a
/// new one is served first as the baseline compiler builds it, and its
/// optimised build replaces it later (see [`crate::registry::Registry::update_plugin`]).
pub async fn load_all(server: &Arc<Server>, loader: &Arc<Loader>, files: Vec<PathBuf>) {
    server.first_load_of(files.iter().filter_map(|path| plugin_name(path).ok()));
    let mut loads = tokio::task::JoinSet::new();
    for path in files {
        let (server, loader) = (server.clone(), loader.clone());
        loads.spawn(async move {
            update(&server, &loader, &path, Occasion::Startup).await;
            if let Ok(name) = plugin_name(&path) {
                server.first_loaded(&name);
            }
        });
    }
    // Said once at the default log level when requests stop waiting for
    // plugins still loading.
    let watcher = server.clone();
    let late = tokio::spawn(async move {
        watcher.until_loaded().await;
        let late = watcher.late_plugins();
        if !late.is_empty() {
            tracing::warn!(
                plugins = %late.join(", "),
                "requests no longer wait for the plugins still loading (startup_wait_ms); \
                 each is served, and announced with list_changed, once it has loaded"
            );
        }
    });
    while loads.join_next().await.is_some() {}
    late.abort();
}

/// Loads a plugin file a source's first pull wrote, as part of the first
/// load (announced only once requests no longer wait for that load).
pub async fn load_pulled(server: &Server, loader: &Loader, path: &Path) {
    update(server, loader, path, Occasion::Startup).await
}

/// Brings one plugin up to date with its changed file and announces the
/// change.
pub async fn reload(server: &Server, loader: &Loader, path: &Path) {
    update(server, loader, path, Occasion::Change).await
}

/// Why a plugin file is read.
#[derive(Clone, Copy, PartialEq)]
enum Occasion {
    /// The host starts.
    Startup,
    /// The file changed while serving.
    Change,
}

/// Brings one plugin up to date with its file and announces the change;
/// a failure becomes a notice, and a log line.
async fn update(server: &Server, loader: &Loader, path: &Path, occasion: Occasion) {
    let name = match plugin_name(path) {
        Ok(name) => name,
        Err(e) => {
            if occasion == Occasion::Startup {
                tracing::error!(path = %path.display(), "plugin not loaded: {e:#}");
            } else {
                let summary = "a plugin file name was refused; see the server log".into();
                server.log_error("wasm-mcp", format!("{e:#}"), summary);
            }
            return;
        }
    };
    let had_it = server.registry().catalogue().plugin(&name).is_some();
    let notice = crate::server::load_notice_key(&name);
    let e = match loader.reload_file(path).await {
        Ok(reload) => {
            if matches!(reload, Reload::Added(_) | Reload::Replaced(_)) {
                crate::metrics::metrics().plugin_load(&name, true);
            }
            // The first load is looked at whole once it is done (`launch`).
            if occasion == Occasion::Change && !matches!(reload, Reload::Unchanged) {
                server.warn_unknown_items(loader.config(), Some(&name));
            }
            server.notices().set(&notice, None);
            if occasion == Occasion::Change || server.announces_first_loads() {
                server.announce_reload(&name, &reload);
            }
            return;
        }
        Err(e) => e,
    };
    if let Some(refused) = e.downcast_ref::<crate::lock::Refused>() {
        held_back(server, &name, had_it, refused);
        return;
    }
    crate::metrics::metrics().plugin_load(&name, false);
    let consequence = if had_it {
        "the previous version keeps serving"
    } else {
        "it is not served"
    };
    let cause = e.root_cause();
    server.notices().set(
        &notice,
        Some(format!(
            "plugin {name} did not load ({consequence}): {cause}"
        )),
    );
    if occasion == Occasion::Startup {
        // A client that connects later reads the notice in its
        // instructions; one that connected already (initialize does not
        // wait for the first load) is told now, whatever its log level.
        server.alert(
            "wasm-mcp",
            format!("plugin not loaded: {}: {e:#}", path.display()),
            format!("plugin {name} did not load ({consequence}): {cause}"),
        );
    } else {
        // The outer errors name host paths: the log has them; clients get
        // the innermost cause, which does not.
        server.log_error(
            "wasm-mcp",
            format!("plugin {name} not reloaded ({consequence}): {e:#}"),
            format!("plugin {name} not reloaded ({consequence}): {cause}"),
        );
    }
}

/// A plugin version the plugin lock refused: logged with its diff,
/// counted, and told to clients (without the diff) in the instructions.
fn held_back(server: &Server, name: &str, had_it: bool, refused: &crate::lock::Refused) {
    crate::metrics::metrics().lock_refusal(name);
    let consequence = if had_it {
        "the version serving keeps serving"
    } else {
        "it is not served"
    };
    tracing::warn!(
        plugin = name,
        "plugin {name} held back by the plugin lock ({consequence}): {refused}"
    );
    let notice = crate::server::load_notice_key(name);
    let summary = refused.summary();
    server
        .notices()
        .set(&notice, Some(format!("{summary} ({consequence})")));
}
