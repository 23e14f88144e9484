//! Starting the host: the plugin folder loaded (while it already serves)
//! and watched, the plugins named by OCI reference followed, metrics and
//! health served, then MCP over stdio or Streamable HTTP. What `serve` and
//! `dev` share; the composition root, so it may use every part.

use crate::config::Config;
use crate::registry::Registry;
use crate::reload::{self, folder::wasm_files, FolderWatch, Loader, Policy};
use crate::runtime::Runtime;
use crate::server::{Backends, Notices, Server};
use crate::settings;
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Serving over HTTP instead of stdio (the command line's choice; the
/// config's `[http] listen` otherwise).
#[derive(Debug, Clone, Default)]
pub struct Http {
    /// The address to serve Streamable HTTP on.
    pub listen: Option<String>,
    /// Answer with JSON, never SSE.
    pub json_response: bool,
    /// Also serve the deprecated HTTP+SSE transport.
    pub legacy_sse: bool,
}

/// What starting to serve a plugin folder reads from the file system.
struct FolderSetup {
    /// The folder's watch, when watched.
    watch: Option<FolderWatch>,
    /// Its plugin components, in name order.
    files: Vec<PathBuf>,
    /// The audit log, when one is configured.
    audit: Option<crate::server::audit::Audit>,
}

impl FolderSetup {
    /// Reads it (blocking): a folder that is missing or unreadable is said
    /// plainly, first; the watch starts before the files are listed, so a
    /// file written while the folder loads is not missed.
    fn read(dir: &Path, watch: bool, audit: &crate::config::AuditSection) -> Result<Self> {
        std::fs::read_dir(dir)
            .map(drop)
            .with_context(|| format!("the plugin folder {} cannot be read", dir.display()))?;
        let watch = match watch {
            true => Some(FolderWatch::start(dir)?),
            false => None,
        };
        Ok(FolderSetup {
            watch,
            files: wasm_files(dir)?,
            audit: crate::server::audit::Audit::open(audit)?,
        })
    }
}

/// A plugin folder about to be served: its absolute path, checked, and
/// the engine already starting (see [`Starting::begin`]).
pub struct Starting {
    dir: PathBuf,
    engine: tokio::sync::oneshot::Receiver<Result<Arc<Runtime>>>,
}

impl Starting {
    /// Checks that the host's own folders and files (`dir`, the plugin
    /// folder, among them) lie outside every root `config` grants, then
    /// starts the engine (about 1 ms here: its pool's address space, its
    /// linker) and what checking input schemas needs first (about 2 ms)
    /// on threads of their own. Called as early as the config is known
    /// (`serve` calls it before its async runtime is even built): both
    /// run while the rest of the set-up does, and the first load waits
    /// for them.
    pub fn begin(dir: &Path, config: &Config) -> Result<Self> {
        // Absolute, so the watcher's events name the files the loader
        // read (a relative folder was never reloaded).
        let dir = std::path::absolute(dir)
            .with_context(|| format!("the plugin folder {} has no absolute path", dir.display()))?;
        settings::check_host_paths(config, &dir)?;
        let runtime_config = settings::runtime_config(config);
        let (started, engine) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("engine-start".into())
            .spawn(move || {
                let _ = started.send(Runtime::new(runtime_config));
            })
            .context("starting a thread for the engine")?;
        // At a lower priority: it yields the cores to the engine's start
        // and the first loads, which need it only once they compile their
        // input schemas.
        let _ = std::thread::Builder::new()
            .name("schema-checks".into())
            .spawn(|| {
                crate::runtime::lower_this_thread();
                crate::registry::warm_schema_checks();
            });
        Ok(Starting { dir, engine })
    }

    /// The engine, once started.
    async fn engine(self) -> Result<Arc<Runtime>> {
        self.engine
            .await
            .context("the engine's start stopped before it ended")?
    }
}

/// The store of plugins' key-value data, when any plugin may be granted
/// one: `shared` (the replicas' database), else the SQLite file
/// ([`settings::keyvalue_store_path`]). One that cannot be opened stops
/// the host: a plugin granted a store must not lose its writes.
async fn keyvalue_store(
    config: &Config,
    shared: Option<Arc<dyn crate::runtime::keyvalue::Backend>>,
) -> Result<Option<crate::runtime::keyvalue::KeyValueGrant>> {
    if !settings::grants_keyvalue(config) {
        return Ok(None);
    }
    let backend = match shared {
        Some(shared) => shared,
        None => {
            let path = settings::keyvalue_store_path(config);
            let store = tokio::task::spawn_blocking(move || {
                let opened = crate::plugin_data::SqliteStore::open(path.as_deref());
                opened.with_context(|| match &path {
                    Some(path) => format!("opening the key-value store {}", path.display()),
                    None => "opening the key-value store in memory".to_owned(),
                })
            })
            .await??;
            Arc::new(store)
        }
    };
    Ok(Some(crate::runtime::keyvalue::KeyValueGrant { backend }))
}

/// Serves the plugins in the folder `starting` checked, watching it for
/// changes when `watch`, over stdio or as `http` says; `served`, when
/// given, is told the server; `notices` are added to the instructions.
pub async fn serve_folder(
    starting: Starting,
    config: Config,
    watch: bool,
    http: Http,
    served: Option<Arc<std::sync::OnceLock<Arc<Server>>>>,
    notices: Arc<Notices>,
) -> Result<()> {
    let dir = starting.dir.clone();
    // The folder's set-up reads, in one job beside the engine's start:
    // each blocking step on its own waited for a thread of its own.
    let reading = {
        let (dir, audit) = (dir.clone(), config.audit.clone());
        tokio::task::spawn_blocking(move || FolderSetup::read(&dir, watch, &audit))
    };
    let mut options = settings::server_options(&config, notices);
    let policy = Policy::new(config.clone());
    let FolderSetup {
        watch,
        files,
        audit,
    } = reading.await??;
    let policy = policy?;
    options.audit = audit.map(Arc::new);
    // A host on its own opens its tasks store (an SQLite file) on a thread
    // of its own: the host serves meanwhile, and what needs the store
    // waits until it is open. A replica's stores are shared.
    let local = config
        .state
        .url
        .is_none()
        .then(|| Backends::local(&options));
    let pulled = config.plugins.values().any(|p| p.source.is_some());
    // `dev` fills its folder itself; a source fills it from a registry.
    if files.is_empty() && served.is_none() && !pulled {
        tracing::warn!(
            plugins = %dir.display(),
            "the plugin folder holds no plugin component (*.wasm): nothing is served until one is added"
        );
    }
    let replica = crate::cluster::replica_name(&config);
    let shared = crate::cluster::connect(&config, &replica, options.max_sessions).await?;
    let keyvalue = shared.as_ref().and_then(|s| s.keyvalue.clone());
    let policy = match keyvalue_store(&config, keyvalue).await? {
        Some(store) => policy.with_keyvalue(store),
        None => policy,
    };
    let lock = crate::lock::configured(&config).await?;
    let registry = Arc::new(Registry::new(starting.engine().await?));
    let loader = Loader::locked(registry.clone(), policy, lock);
    let backends = match shared {
        Some(shared) => shared,
        // `connect` gives none exactly when `[state] url` is unset.
        None => local.context("a host on its own must have opened its stores")?,
    };
    let server = Server::with_backends(registry, options, backends);
    if let Some(served) = served {
        let _ = served.set(server.clone());
    }
    let first_pulls = follow_sources(&config, &dir).await?;
    if let Some(first_pulls) = &first_pulls {
        server.first_load_of(first_pulls.names.iter().cloned());
    }
    // Serve at once; the plugins load meanwhile, then changes are watched.
    let loading = server.loading();
    let (background, loads) = (server.clone(), loader.clone());
    tokio::spawn(async move {
        if let Some(watch) = &watch {
            watch
                .watch_skills(&files, loads.skill_limits().skills)
                .await;
        }
        // The plugins pulled from their sources belong to the first load
        // too, each loaded as soon as its own pull has written it: until
        // every source's first pull has ended (within its pull deadline)
        // and what it wrote has loaded, requests wait (up to
        // startup_wait_ms) and the host is not ready.
        let pulled = async {
            if let Some(first_pulls) = first_pulls {
                first_pulls.load(&background, &loads).await;
            }
        };
        tokio::join!(reload::load_all(&background, &loads, files), pulled);
        // Typos in the config's names show once everything has loaded
        // (and again, for the plugin concerned, after each reload).
        background.warn_unknown_items(loads.config(), None);
        drop(loading);
        // What only start-up used goes back (the code and data it touched,
        // the loading threads' heaps).
        crate::trim::after_first_load();
        if let Some(watch) = watch {
            watch.run(background, loads).await;
        }
    });
    if let Some(address) = &config.metrics.listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address} ([metrics] listen)"))?;
        tracing::info!(address = %listener.local_addr()?, "serving metrics and health");
        tokio::spawn(crate::transport::http::ops::serve(server.clone(), listener));
    }
    let listen = http.listen.clone().or_else(|| config.http.listen.clone());
    let Some(listen) = listen else {
        tracing::info!(plugins = %dir.display(), "serving over stdio");
        let (out, outgoing) = crate::server::Outbox::new();
        let pipes = crate::transport::std_pipes::std_pipes(outgoing)?;
        // On a worker, not the main thread: each request's task is then
        // spawned where it runs next, instead of waking a worker to run it.
        tokio::spawn(crate::transport::stdio::serve_lines(
            server,
            pipes.input,
            out,
            std::time::Duration::from_millis(config.server.stdin_eof_grace_ms),
        ))
        .await??;
        // The last answers may still be on their way to stdout.
        tokio::task::spawn_blocking(move || pipes.written.wait(std::time::Duration::from_secs(2)))
            .await?;
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    let local = listener.local_addr()?;
    // Reads a JWT key file, if one is configured: off the async workers.
    let options = tokio::task::spawn_blocking(move || {
        settings::http_options(&config, local, http.json_response, http.legacy_sse)
    })
    .await??;
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let url = format!("{scheme}://{local}{}", options.path);
    tracing::info!(plugins = %dir.display(), %url, "serving Streamable HTTP");
    // One line on stdout says where, for scripts that picked port 0.
    println!("{url}");
    crate::transport::http::serve(server, listener, options).await?;
    Ok(())
}

/// Starts pulling the plugins the config names by OCI reference into the
/// plugin folder (in the background: the host serves meanwhile); `None`
/// when it names none.
async fn follow_sources(config: &Config, dir: &std::path::Path) -> Result<Option<FirstPulls>> {
    let Some((references, following)) = settings::sources(config, dir)? else {
        return Ok(None);
    };
    let mut sources = Vec::new();
    for (name, reference) in references {
        let trust = settings::trust(config, Some(&name)).await?;
        sources.push((name, reference, trust));
    }
    let names = sources.iter().map(|(name, ..)| name.clone()).collect();
    let (first, told) = tokio::sync::mpsc::channel(sources.len().max(1));
    tokio::spawn(crate::oci::follow(sources, following, first));
    Ok(Some(FirstPulls { told, names }))
}

/// The end of each source's first pull, as [`crate::oci::follow`] tells it.
struct FirstPulls {
    told: tokio::sync::mpsc::Receiver<(String, Option<PathBuf>)>,
    /// The sources whose first pull has not ended.
    names: std::collections::BTreeSet<String>,
}

impl FirstPulls {
    /// Loads what each source's first pull wrote as soon as it is written
    /// (each on its own: a slow pull or load delays no other), until every
    /// first pull has ended and its plugin has loaded, marking each
    /// source's part of the first load done.
    async fn load(mut self, server: &Arc<Server>, loader: &Arc<Loader>) {
        let mut loads = tokio::task::JoinSet::new();
        while !self.names.is_empty() {
            let Some((name, file)) = self.told.recv().await else {
                break;
            };
            self.names.remove(&name);
            let (server, loader) = (server.clone(), loader.clone());
            loads.spawn(async move {
                if let Some(file) = file {
                    reload::load_pulled(&server, &loader, &file).await;
                }
                server.first_loaded(&name);
            });
        }
        // Sources that never told (their task ended early) hold nothing up.
        for name in std::mem::take(&mut self.names) {
            server.first_loaded(&name);
        }
        while loads.join_next().await.is_some() {}
    }
}
