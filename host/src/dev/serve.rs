//! `wasm-mcp dev`: build every plugin folder, serve what built, and
//! rebuild and reload a plugin whenever its sources change.

use crate::config::Config;
use crate::launch::Http;
use crate::server::{build_notice_key, Notices, Server};
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// How long clients may cache list results under `dev` (2026-07-28
/// `ttlMs`), so a reload is seen within about a second even by a client
/// that never listens for changes.
const DEV_LIST_TTL_MS: u64 = 1000;

/// `wasm-mcp dev`: builds each folder of `sources`, serves what built
/// (with `config`, over stdio or as `http` says), and rebuilds a plugin
/// whenever its sources change. A build's failure is said in the
/// instructions and, once serving, to every client.
pub async fn serve(
    sources: Vec<PathBuf>,
    release: bool,
    mut config: Config,
    http: Http,
) -> Result<()> {
    config.server.list_ttl_ms = config.server.list_ttl_ms.min(DEV_LIST_TTL_MS);
    // Reads each folder's build files: off the async workers.
    let sources = tokio::task::spawn_blocking(move || super::sources(&sources)).await??;
    let workspace = Arc::new(super::Workspace::create(release, "wasm-mcp dev", true)?);
    // A plugin that did not build is listed as failing in the
    // instructions every client receives, until it builds.
    let notices = Arc::new(Notices::default());
    let mut built = Vec::new();
    for source in &sources {
        match workspace.build(source).await {
            Ok(()) => built.push(true),
            Err(e) => {
                eprintln!(
                    "wasm-mcp dev: {} did not build; it is served once it does: {e:#}",
                    source.name
                );
                let notice = super::build_notice(&source.name, &format!("{e:#}"), false);
                notices.set(&build_notice_key(&source.name), Some(notice));
                built.push(false);
            }
        }
    }
    // Later builds' failures go to the clients too (the developer's own),
    // once the server is up.
    let served: Arc<std::sync::OnceLock<Arc<Server>>> = Arc::default();
    for (source, built_before) in sources.into_iter().zip(built) {
        let workspace = workspace.clone();
        let served = served.clone();
        let notices = notices.clone();
        tokio::spawn(async move {
            let name = source.name.clone();
            let built_before = std::sync::atomic::AtomicBool::new(built_before);
            let built = move |plugin: &str, outcome: Result<(), String>| match outcome {
                Ok(()) => {
                    built_before.store(true, std::sync::atomic::Ordering::Relaxed);
                    notices.set(&build_notice_key(plugin), None);
                }
                Err(why) => {
                    let serving = built_before.load(std::sync::atomic::Ordering::Relaxed);
                    let notice = super::build_notice(plugin, &why, serving);
                    notices.set(&build_notice_key(plugin), Some(notice.clone()));
                    if let Some(server) = served.get() {
                        server.alert("wasm-mcp dev", notice.clone(), notice);
                    }
                }
            };
            if let Err(e) = workspace.rebuild_on_change(source, built).await {
                eprintln!("wasm-mcp dev: stopped watching {name}: {e:#}");
            }
        });
    }
    let starting = crate::launch::Starting::begin(&workspace.plugins, &config)?;
    crate::launch::serve_folder(starting, config, true, http, Some(served), notices).await
}
