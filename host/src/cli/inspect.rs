//! `wasm-mcp warm` and `inspect`: compiling a folder ahead, and what one
//! component is, asks for, is granted and offers.

use anyhow::{Context as _, Result};
use std::path::PathBuf;
use std::sync::Arc;
use wasm_mcp::config::Config;
use wasm_mcp::registry::Registry;
use wasm_mcp::reload::{self, Loader, Policy};
use wasm_mcp::runtime::{describe, Runtime, RuntimeConfig, SpareMode};
use wasm_mcp::settings;

/// `wasm-mcp warm`: compiles every plugin of the folder into the compile
/// cache; fails if one does not compile.
pub(crate) async fn warm(plugins: Option<PathBuf>, config_path: Option<PathBuf>) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let dir = plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let runtime_config = settings::runtime_config(&config);
    anyhow::ensure!(
        runtime_config.cache_dir.is_some(),
        "the compile cache is off (server.cache_dir is \"\"): nothing to warm"
    );
    let runtime = Runtime::new(runtime_config)?;
    let compiled = reload::warm(&runtime, dir, config.server.max_plugin_mb << 20).await?;
    let mut failed = 0;
    for (path, outcome) in compiled {
        match outcome {
            Ok(()) => println!("compiled {}", path.display()),
            Err(e) => {
                eprintln!("{} did not compile: {e:#}", path.display());
                failed += 1;
            }
        }
    }
    anyhow::ensure!(failed == 0, "{failed} plugin(s) did not compile");
    Ok(())
}

/// `wasm-mcp inspect`: what a component imports and exports, what its
/// manifest asks for and is granted, and what it offers.
/// An `oci://` reference is pulled first (under the signature policy, into
/// a folder of its own), and what its signatures came to is shown.
pub(crate) async fn inspect(file: PathBuf, config_path: Option<PathBuf>) -> Result<()> {
    let config = settings::load_config(config_path.clone()).await?;
    let lock = super::lock::lock_for(&config, config_path.as_deref()).await;
    let Some(reference) = file.to_str().filter(|f| f.starts_with("oci://")) else {
        return inspect_file(file, config, lock).await;
    };
    let source = wasm_mcp::oci::reference(reference)?;
    let name = source.repository().rsplit('/').next().unwrap_or_default();
    let name = if wasm_mcp::names::is_valid(name) {
        name.to_owned()
    } else {
        "plugin".to_owned()
    };
    // Private to this user, fresh, removed when `into` drops.
    let into =
        tokio::task::spawn_blocking(|| wasm_mcp::files::private_temp_dir("wasm-mcp-inspect-"))
            .await??;
    let inspected = match super::oci::pull_into(&config, &source, &name, into.path()).await {
        Ok(pulled) => {
            println!("{reference} ({})", pulled.digest);
            println!("{}", super::oci::signature_line(&pulled.signature));
            inspect_file(pulled.file, config, lock).await
        }
        Err(e) => Err(e),
    };
    tokio::task::spawn_blocking(move || drop(into)).await?;
    inspected
}

/// `wasm-mcp inspect` of a component file (compared with the plugin
/// lock at `lock`, when given).
async fn inspect_file(file: PathBuf, config: Config, lock: Option<PathBuf>) -> Result<()> {
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: None,
        cache_key_file: None,
        ..settings::runtime_config(&config)
    })?;
    let limit = config.server.max_plugin_mb << 20;
    // Reading and compiling block: off the async workers.
    let (description, manifest) = tokio::task::spawn_blocking({
        let (runtime, file) = (runtime.clone(), file.clone());
        move || -> Result<_> {
            let bytes = wasm_mcp::files::read_regular(&file, limit)
                .with_context(|| format!("reading {}", file.display()))?;
            let description = describe(&runtime, &bytes)
                .with_context(|| format!("{} is not a loadable component", file.display()))?;
            Ok((description, wasm_mcp::config::Manifest::beside(&file)?))
        }
    })
    .await??;
    println!("{}", file.display());
    print_list("imports:", "", &description.imports);
    print_list("exports:", "", &description.exports);
    let loader = Loader::new(Arc::new(Registry::new(runtime)), Policy::new(config)?);
    let name = wasm_mcp::reload::folder::plugin_name(&file)?;
    println!(
        "asks for (manifest {}):",
        wasm_mcp::config::Manifest::path_for(&file).display()
    );
    for (root, mode) in &manifest.roots {
        println!("  root  {root} ({mode})");
    }
    print_list("", "host  ", &manifest.hosts);
    print_list("", "env   ", &manifest.env);
    let decision = loader.decide(&name, &manifest).await?;
    print_list("granted:", "", &decision.granted);
    print_list("denied:", "", &decision.denied);
    let limits = &decision.grants.limits;
    println!(
        "limits: memory {} MiB, {} ms per call, results up to {} MiB, {} calls at once",
        limits.memory_bytes >> 20,
        limits.call_timeout.as_millis(),
        limits.max_result_bytes >> 20,
        limits.max_concurrent_calls
    );
    if limits.calls_per_instance > 1 {
        println!(
            "instances kept between calls: each serves up to {} calls (state persists between them)",
            limits.calls_per_instance
        );
    }
    match limits.spare_instance {
        SpareMode::Auto => {}
        SpareMode::Always => println!("a spare instance is made ahead of each call"),
        SpareMode::Never => {
            println!("no spare instance: every call waits for its instance to be made")
        }
    }
    match loader.load_file(&file).await {
        Ok(entry) => {
            print_offers(&entry);
            print_listing_cost(&entry);
            if let Some(lock) = &lock {
                super::lock::print_match(loader.config(), lock, &name, &file, &entry).await;
            }
        }
        Err(e) => println!("not servable: {e:#}"),
    }
    Ok(())
}

/// What each plugin of `dir` offers, loaded as `inspect` loads one (not
/// served; through the compile cache `config` names), and each plugin
/// that did not load, with why. The roots are not granted: what a plugin
/// lists does not depend on them, and a config written for another
/// machine names folders this one may not have.
pub(crate) async fn offered_in(
    dir: PathBuf,
    config: &Config,
) -> Result<(
    Vec<wasm_mcp::config::unmatched::Offered>,
    Vec<(String, String)>,
)> {
    let files = {
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || reload::folder::wasm_files(&dir)).await??
    };
    let runtime = Runtime::new(settings::runtime_config(config))?;
    let ungranted = Config {
        roots: Default::default(),
        ..config.clone()
    };
    let loader = Loader::new(Arc::new(Registry::new(runtime)), Policy::new(ungranted)?);
    let mut loads = tokio::task::JoinSet::new();
    for file in files {
        let loader = loader.clone();
        loads.spawn(async move {
            let name =
                reload::folder::plugin_name(&file).unwrap_or_else(|_| file.display().to_string());
            (name, loader.load_file(&file).await)
        });
    }
    let (mut offered, mut failed) = (Vec::new(), Vec::new());
    while let Some(joined) = loads.join_next().await {
        match joined? {
            (_, Ok(entry)) => offered.push(wasm_mcp::server::Server::offered(&entry)),
            (name, Err(e)) => failed.push((name, format!("{e:#}"))),
        }
    }
    offered.sort_by(|a, b| a.plugin.cmp(&b.plugin));
    failed.sort();
    Ok((offered, failed))
}

/// Bytes of JSON a model reads per token, about (English text and JSON
/// with common tokenizers); the estimates below divide by it.
const BYTES_PER_TOKEN: usize = 4;

/// What the plugin's tools cost a model that is handed `tools/list`, as
/// an estimate in tokens, and what tool search costs instead.
fn print_listing_cost(entry: &wasm_mcp::registry::PluginEntry) {
    let catalogue = wasm_mcp::registry::Catalogue::build(vec![entry.clone()]);
    let tools: Vec<serde_json::Value> = catalogue
        .tools
        .iter()
        .map(|t| wasm_mcp::server::convert::tool(t, true))
        .collect();
    let bytes = listing_bytes(&tools);
    let search = listing_bytes(&wasm_mcp::server::search::definitions());
    println!(
        "listing costs ~{} tokens ({bytes} bytes of tools/list JSON, about {BYTES_PER_TOKEN} bytes a token); \
         with [server] tool_search = \"only\" a host lists ~{} tokens whatever its plugins",
        bytes.div_ceil(BYTES_PER_TOKEN),
        search.div_ceil(BYTES_PER_TOKEN)
    );
}

/// The bytes of a `tools/list` result listing `tools`.
fn listing_bytes(tools: &impl serde::Serialize) -> usize {
    #[derive(serde::Serialize)]
    struct Listing<'a, T> {
        tools: &'a T,
    }
    serde_json::to_vec(&Listing { tools })
        .expect("a listing serializes")
        .len()
}

/// `title` (unless empty), then each item indented, after `tag`.
fn print_list(title: &str, tag: &str, items: &[impl std::fmt::Display]) {
    if !title.is_empty() {
        println!("{title}");
    }
    for item in items {
        println!("  {tag}{item}");
    }
}

/// What a loaded plugin offers.
fn print_offers(entry: &wasm_mcp::registry::PluginEntry) {
    let l = &entry.listing;
    println!("offers:");
    for t in &l.tools {
        let about = t.description.as_deref().unwrap_or("");
        println!("  tool      {}  {about}", t.name);
    }
    for r in &l.resources {
        let about = r.description.as_deref().unwrap_or(&r.name);
        println!("  resource  {}  {about}", r.uri);
    }
    for t in &l.templates {
        let about = t.description.as_deref().unwrap_or(&t.name);
        println!("  template  {}  {about}", t.uri_template);
    }
    for p in &l.prompts {
        let about = p.description.as_deref().unwrap_or("");
        println!("  prompt    {}  {about}", p.name);
    }
    if entry.plugin.exports().completions {
        println!("  completions");
    }
    for skill in &entry.skills.skills {
        let bytes: usize = skill.files.iter().map(|f| f.bytes.len()).sum();
        println!(
            "  skill     {}  {} ({} files, {bytes} bytes)",
            skill.uri,
            skill.description(),
            skill.files.len()
        );
    }
    for problem in &entry.skills.problems {
        println!("  refused   {problem}");
    }
}
