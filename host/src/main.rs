//! The `wasm-mcp` command line.

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use wasm_mcp::config::Config;
use wasm_mcp::dev;
use wasm_mcp::registry::Registry;
use wasm_mcp::reload::Policy;
use wasm_mcp::reload::{self, folder::wasm_files, FolderWatch, Loader};
use wasm_mcp::runtime::{describe, Runtime, RuntimeConfig, SpareMode};
use wasm_mcp::server::{build_notice_key, Notices, Server};
use wasm_mcp::settings;

/// An MCP server whose tools, resources and prompts are sandboxed
/// WebAssembly components.
///
/// Put plugin components (`*.wasm`) in a folder and serve them:
///
///     wasm-mcp serve --plugins ./plugins
///
/// Logs go to stderr (set the level with RUST_LOG, e.g. RUST_LOG=debug);
/// stdout carries only MCP messages.
#[derive(Parser)]
#[command(name = "wasm-mcp", version, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the plugins in a folder over stdio (newline-delimited
    /// JSON-RPC), or over Streamable HTTP with --http.
    Serve {
        /// The folder of plugin components (*.wasm). Overrides the config file.
        #[arg(long, short = 'p', env = "WASM_MCP_PLUGINS")]
        plugins: Option<PathBuf>,
        /// A TOML config file (see the README for its fields).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
        /// Do not reload plugins when their files change.
        #[arg(long)]
        no_watch: bool,
        #[command(flatten)]
        protocol: ProtocolArgs,
        #[command(flatten)]
        startup: StartupArgs,
        #[command(flatten)]
        http: HttpArgs,
    },
    /// Build plugins from source, serve them over stdio, and rebuild and
    /// reload one whenever its sources change.
    ///
    /// Each folder is built with its own toolchain: a Cargo package with
    /// `cargo build --target wasm32-wasip2`, an `app.py` with componentize-py,
    /// an `app.js` with componentize-js, any other folder (C, Go) by its
    /// executable `build.sh`, which writes FOLDER.wasm beside itself. Build
    /// output goes to stderr.
    #[command(verbatim_doc_comment)]
    Dev {
        /// Plugin source folders.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// Build Rust plugins with `--release`.
        #[arg(long)]
        release: bool,
        /// A TOML config file (see the README for its fields).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        protocol: ProtocolArgs,
        #[command(flatten)]
        startup: StartupArgs,
        #[command(flatten)]
        http: HttpArgs,
    },
    /// Build plugins from their source folders, once, as `dev` does.
    ///
    /// Rust with Cargo, Python with componentize-py and JavaScript with
    /// componentize-js against the world that covers what the module
    /// defines, C and Go by their build.sh (a plain component's WIT docs
    /// put back from its wit/ folder). Writes NAME.wasm (the name `serve`
    /// gives it) into each folder, or into --out.
    Build {
        /// Plugin source folders (default: the current folder).
        sources: Vec<PathBuf>,
        /// Build Rust plugins with `--release`.
        #[arg(long)]
        release: bool,
        /// The folder to write the components (and manifests) into.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        /// Check that a Python or JavaScript module needs this world
        /// (it is picked without it).
        #[arg(long)]
        world: Option<String>,
    },
    /// Print the plugin contract (WIT), to generate bindings from.
    Wit,
    /// Write the WASI preview1 reactor adapter, which makes a component of
    /// a core module built for wasip1 (Go, C): `wasm-tools component new
    /// CORE.wasm --adapt wasi_snapshot_preview1=FILE`.
    WasiAdapter {
        /// Where to write it.
        file: PathBuf,
    },
    /// Write a small working plugin (a tool; in Rust, Python and JavaScript
    /// also a resource and a prompt) with its build file into a new folder NAME.
    New {
        /// The plugin's language.
        language: wasm_mcp::scaffold::Language,
        /// The plugin's name (letters, digits, '-', '_'), also its folder's.
        name: String,
        /// Where to create the folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Compile the plugins in a folder into the compile cache, so that
    /// `serve` (with the same config) serves every one of them at once.
    Warm {
        /// The folder of plugin components (*.wasm). Overrides the config file.
        #[arg(long, short = 'p', env = "WASM_MCP_PLUGINS")]
        plugins: Option<PathBuf>,
        /// A TOML config file (see the README for its fields).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Publish a component, with the manifest beside it, to an OCI
    /// registry: `oci://REGISTRY/REPO:TAG`. Credentials: the config's
    /// [registries."REGISTRY"], else WASM_MCP_OCI_USERNAME and
    /// WASM_MCP_OCI_PASSWORD, else docker's config.json.
    Push {
        /// The component file.
        file: PathBuf,
        /// Where: oci://REGISTRY/REPO:TAG.
        reference: String,
        /// A TOML config file (for [server] max_plugin_mb, [registries]).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Sign a published component (cosign-compatible, key-based): the
    /// signature of its manifest digest is pushed beside it, at tag
    /// sha256-DIGEST.sig, as `cosign sign --key` does.
    Sign {
        /// What: oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:DIGEST.
        reference: String,
        /// The private key: ECDSA P-256, PKCS#8 PEM (e.g. from `openssl
        /// genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
        #[arg(long)]
        key: PathBuf,
        /// A TOML config file (for [registries]).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Fetch a component from an OCI registry (oci://REGISTRY/REPO:TAG or
    /// @sha256:DIGEST) into a plugin folder, where a serving host loads it.
    /// It is kept by digest in the compile cache's folder too.
    Pull {
        /// What: oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:DIGEST.
        reference: String,
        /// The plugin folder. Overrides the config file.
        #[arg(long, short = 'p', env = "WASM_MCP_PLUGINS")]
        plugins: Option<PathBuf>,
        /// The plugin's name (its file's); by default the repository's last part.
        #[arg(long)]
        name: Option<String>,
        /// A TOML config file (for [server] plugins, cache_dir, max_plugin_mb).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Print what a component offers (tools, resources, prompts) and what it imports.
    Inspect {
        /// The component file, or oci://REGISTRY/REPO:TAG (pulled under the
        /// signature policy, which is shown).
        file: PathBuf,
        /// The config whose grants to apply (see the README).
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
}

/// Which protocol revisions to offer.
#[derive(clap::Args, Clone, Default)]
struct ProtocolArgs {
    /// Offer only the handshake revisions (up to 2025-11-25): a client that
    /// would pick the stateless one and never listen for changes falls back
    /// to `initialize`, and hears `list_changed` (see [server] handshake_only).
    #[arg(long)]
    handshake_only: bool,
}

/// How long requests wait for the plugins' first load.
#[derive(clap::Args, Clone, Default)]
struct StartupArgs {
    /// How long a request that arrives while the plugins first load waits
    /// for them, in ms; then it is answered with those loaded so far (see
    /// [server] startup_wait_ms).
    #[arg(long, value_name = "MS", env = "WASM_MCP_STARTUP_WAIT_MS")]
    startup_wait_ms: Option<u64>,
}

impl StartupArgs {
    fn apply(&self, config: &mut Config) {
        if let Some(ms) = self.startup_wait_ms {
            config.server.startup_wait_ms = ms;
        }
    }
}

/// How long clients may cache list results under `dev` (2026-07-28
/// `ttlMs`), so a reload is seen within about a second even by a client
/// that never listens for changes.
const DEV_LIST_TTL_MS: u64 = 1000;

/// Serving over HTTP instead of stdio.
#[derive(clap::Args, Clone, Default)]
struct HttpArgs {
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead
    /// of stdio. Port 0 picks a free port; the address is logged.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Answer HTTP requests with JSON, never SSE.
    #[arg(long)]
    json_response: bool,
    /// Also serve the deprecated HTTP+SSE transport (GET /sse, POST /messages).
    #[arg(long)]
    legacy_sse: bool,
}

/// mimalloc instead of glibc's malloc, whose malloc and free were 18% of
/// the instructions of an HTTP tools/call: with it a call takes 11% fewer
/// instructions, `server/discover` 23% fewer (`scripts/bench-callgrind.py`).
/// Without transparent huge pages (`no_thp`), which doubled the idle RSS;
/// as it is, it adds 3-6 MiB to it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
    use tracing_subscriber::util::SubscriberInitExt as _;
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve { .. } | Command::Dev { .. }) {
        // A command that prints ends quietly when its reader goes away
        // (`wasm-mcp inspect x | head`), as Unix tools do, instead of
        // panicking on the broken pipe. The serving commands keep Rust's
        // default: a closed socket or stdout is an error they handle.
        // SAFETY: no other thread exists yet.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // TLS for registries and trace endpoints, with the crypto the host
    // already has.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Traces are asked for in the config of a command that serves, read
    // here (a bad config is reported by the command itself).
    let traces = match &cli.command {
        Command::Serve {
            config: Some(path), ..
        }
        | Command::Dev {
            config: Some(path), ..
        } => Config::load(path).ok().map(|c| c.traces),
        _ => None,
    };
    let traces = traces.map(|t| wasm_mcp::traces::layer(&t)).transpose();
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,wasmtime=warn,cranelift=warn")
            }),
        );
    let (traces, traces_failed) = match traces {
        Ok(layer) => (layer.flatten(), None),
        Err(e) => (None, Some(e)),
    };
    tracing_subscriber::registry().with(log).with(traces).init();
    if let Some(e) = traces_failed {
        tracing::warn!("traces are off: {e:#}");
    }
    // The commands that only write files or print need no async runtime.
    let command = match cli.command {
        Command::New {
            language,
            name,
            dir,
        } => {
            let folder = wasm_mcp::scaffold::create(language, &name, &dir)?;
            eprintln!(
                "wrote {}; see its README.md, or run: wasm-mcp dev {}",
                folder.display(),
                folder.display()
            );
            return Ok(());
        }
        Command::Wit => {
            print!("{}", wasm_mcp::dev::WIT);
            return Ok(());
        }
        Command::WasiAdapter { file } => {
            let adapter =
                wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;
            std::fs::write(&file, adapter)
                .with_context(|| format!("writing {}", file.display()))?;
            return Ok(());
        }
        command => command,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Loading a plugin (reading, decompressing, compiling) runs on
        // blocking threads, and what it freed stays in their allocator
        // heaps until they exit: an idle thread goes after 1 s, not 10 s.
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()?;
    let result = runtime.block_on(async {
        match command {
            Command::Serve {
                plugins,
                config,
                no_watch,
                protocol,
                startup,
                http,
            } => serve(plugins, config, no_watch, protocol, startup, http).await,
            Command::Dev {
                sources,
                release,
                config,
                protocol,
                startup,
                http,
            } => dev(sources, release, config, protocol, startup, http).await,
            Command::Warm { plugins, config } => warm(plugins, config).await,
            Command::Build {
                sources,
                release,
                out,
                world,
            } => {
                let sources = if sources.is_empty() {
                    vec![PathBuf::from(".")]
                } else {
                    sources
                };
                wasm_mcp::dev::build(sources, out, release, world).await
            }
            Command::Inspect { file, config } => inspect(file, config).await,
            Command::Push {
                file,
                reference,
                config,
            } => push(file, reference, config).await,
            Command::Pull {
                reference,
                plugins,
                name,
                config,
            } => pull(reference, plugins, name, config).await,
            Command::Sign {
                reference,
                key,
                config,
            } => sign(reference, key, config).await,
            Command::New { .. } | Command::Wit | Command::WasiAdapter { .. } => {
                unreachable!("handled before the runtime")
            }
        }
    });
    // Blocking threads may be stuck in the OS (a write to a client that
    // stopped reading, a plugin's file operation) or busy compiling a
    // plugin: do not wait for them long. (The task store's writes are
    // transactions: one cut short leaves the store as it was.)
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    wasm_mcp::traces::flush();
    result
}

async fn serve(
    plugins: Option<PathBuf>,
    config_path: Option<PathBuf>,
    no_watch: bool,
    protocol: ProtocolArgs,
    startup: StartupArgs,
    http: HttpArgs,
) -> Result<()> {
    let mut config = settings::load_config(config_path).await?;
    config.server.handshake_only |= protocol.handshake_only;
    startup.apply(&mut config);
    let dir = plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let watch = config.server.watch && !no_watch;
    serve_folder(dir, config, watch, http, None, Arc::default()).await
}

async fn dev(
    sources: Vec<PathBuf>,
    release: bool,
    config_path: Option<PathBuf>,
    protocol: ProtocolArgs,
    startup: StartupArgs,
    http: HttpArgs,
) -> Result<()> {
    let mut config = settings::load_config(config_path).await?;
    config.server.handshake_only |= protocol.handshake_only;
    startup.apply(&mut config);
    config.server.list_ttl_ms = config.server.list_ttl_ms.min(DEV_LIST_TTL_MS);
    // Reads each folder's build files: off the async workers.
    let sources = tokio::task::spawn_blocking(move || dev::sources(&sources)).await??;
    let workspace = Arc::new(dev::Workspace::create(release, "wasm-mcp dev")?);
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
                let notice = dev::build_notice(&source.name, &format!("{e:#}"), false);
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
                    let notice = dev::build_notice(plugin, &why, serving);
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
    serve_folder(
        workspace.plugins.clone(),
        config,
        true,
        http,
        Some(served),
        notices,
    )
    .await
}

/// Serves the plugins in `dir`; `served`, when given, is told the server;
/// `notices` are added to the instructions.
async fn serve_folder(
    dir: PathBuf,
    config: Config,
    watch: bool,
    http: HttpArgs,
    served: Option<Arc<std::sync::OnceLock<Arc<Server>>>>,
    notices: Arc<Notices>,
) -> Result<()> {
    settings::check_host_paths(&config, &dir)?;
    // A plugin folder that is missing or unreadable is said plainly, first.
    let readable = dir.clone();
    tokio::task::spawn_blocking(move || std::fs::read_dir(&readable).map(drop))
        .await?
        .with_context(|| format!("the plugin folder {} cannot be read", dir.display()))?;
    let runtime = Runtime::new(settings::runtime_config(&config))?;
    let registry = Arc::new(Registry::new(runtime));
    let loader = Loader::new(registry.clone(), Policy::new(config.clone())?);
    // Watch first, so a file written while the folder loads is not missed.
    let watch = if watch {
        Some(FolderWatch::start(&dir)?)
    } else {
        None
    };
    let folder = dir.clone();
    let files = tokio::task::spawn_blocking(move || wasm_files(&folder)).await??;
    let pulled = config.plugins.values().any(|p| p.source.is_some());
    // `dev` fills its folder itself; a source fills it from a registry.
    if files.is_empty() && served.is_none() && !pulled {
        tracing::warn!(
            plugins = %dir.display(),
            "the plugin folder holds no plugin component (*.wasm): nothing is served until one is added"
        );
    }
    let options = settings::server_options(&config, notices);
    let server = Server::new(registry, options);
    if let Some(served) = served {
        let _ = served.set(server.clone());
    }
    follow_sources(&config, &dir).await?;
    // Serve at once; the plugins load meanwhile, then changes are watched.
    let loading = server.loading();
    let (background, loads) = (server.clone(), loader.clone());
    tokio::spawn(async move {
        reload::load_all(&background, &loads, files).await;
        drop(loading);
        if let Some(watch) = watch {
            watch.run(background, loads).await;
        }
    });
    if let Some(address) = &config.metrics.listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("listening on {address} ([metrics] listen)"))?;
        tracing::info!(address = %listener.local_addr()?, "serving metrics and health");
        tokio::spawn(wasm_mcp::transport::http::ops::serve(
            server.clone(),
            listener,
        ));
    }
    let listen = http.http.clone().or_else(|| config.http.listen.clone());
    let Some(listen) = listen else {
        tracing::info!(plugins = %dir.display(), "serving over stdio");
        let (out, outgoing) = wasm_mcp::server::Outbox::new();
        let pipes = wasm_mcp::transport::std_pipes::std_pipes(outgoing)?;
        // On a worker, not the main thread: each request's task is then
        // spawned where it runs next, instead of waking a worker to run it.
        tokio::spawn(wasm_mcp::transport::stdio::serve_lines(
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
    let url = format!("http://{local}{}", options.path);
    tracing::info!(plugins = %dir.display(), %url, "serving Streamable HTTP");
    // One line on stdout says where, for scripts that picked port 0.
    println!("{url}");
    wasm_mcp::transport::http::serve(server, listener, options).await?;
    Ok(())
}

/// Starts pulling the plugins the config names by OCI reference into the
/// plugin folder (in the background: the host serves meanwhile).
async fn follow_sources(config: &Config, dir: &std::path::Path) -> Result<()> {
    let mut sources = Vec::new();
    for (name, section) in &config.plugins {
        if let Some(source) = &section.source {
            let trust = settings::trust(config, Some(name)).await?;
            sources.push((name.clone(), wasm_mcp::oci::reference(source)?, trust));
        }
    }
    if sources.is_empty() {
        return Ok(());
    }
    let store = settings::runtime_config(config)
        .cache_dir
        .context("plugins with an OCI source need the compile cache (server.cache_dir), where they are kept")?
        .join("oci");
    let every = (config.server.oci_poll_secs > 0)
        .then(|| std::time::Duration::from_secs(config.server.oci_poll_secs));
    tokio::spawn(wasm_mcp::oci::follow(
        sources,
        wasm_mcp::oci::Following {
            store,
            into: dir.to_owned(),
            limits: wasm_mcp::oci::PullLimits::of(config),
            every,
            logins: wasm_mcp::oci::Logins::of(config),
        },
    ));
    Ok(())
}

/// `wasm-mcp push`.
async fn push(file: PathBuf, reference: String, config_path: Option<PathBuf>) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let target = wasm_mcp::oci::reference(&reference)?;
    let logins = wasm_mcp::oci::Logins::of(&config);
    let digest =
        wasm_mcp::oci::push(&file, &target, config.server.max_plugin_mb << 20, &logins).await?;
    println!("pushed {} as {reference} ({digest})", file.display());
    Ok(())
}

/// `wasm-mcp sign`.
async fn sign(reference: String, key: PathBuf, config_path: Option<PathBuf>) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let target = wasm_mcp::oci::reference(&reference)?;
    let key = tokio::task::spawn_blocking(move || wasm_mcp::oci::signature::SigningKey::read(&key))
        .await??;
    let logins = wasm_mcp::oci::Logins::of(&config);
    let caps = wasm_mcp::oci::PullLimits::of(&config).registry;
    let digest = wasm_mcp::oci::sign(&target, &key, &logins, caps).await?;
    println!("signed {reference} ({digest})");
    Ok(())
}

/// `wasm-mcp pull`.
async fn pull(
    reference: String,
    plugins: Option<PathBuf>,
    name: Option<String>,
    config_path: Option<PathBuf>,
) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let dir = plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let source = wasm_mcp::oci::reference(&reference)?;
    let name = match name {
        Some(name) => name,
        None => source
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    let pulled = pull_into(&config, &source, &name, &dir).await?;
    println!(
        "pulled {reference} ({}) into {}",
        pulled.digest,
        pulled.file.display()
    );
    println!("{}", signature_line(&pulled.signature));
    Ok(())
}

/// Pulls `source` as plugin `name` into folder `into`, under the
/// signature policy, keeping it in the compile cache's store.
async fn pull_into(
    config: &Config,
    source: &oci_client::Reference,
    name: &str,
    into: &std::path::Path,
) -> Result<wasm_mcp::oci::Pulled> {
    let store = settings::runtime_config(config)
        .cache_dir
        .context(
            "the compile cache is off (server.cache_dir is \"\"): no store for pulled components",
        )?
        .join("oci");
    let trust = settings::trust(config, Some(name)).await?;
    let logins = wasm_mcp::oci::Logins::of(config);
    let limits = wasm_mcp::oci::PullLimits::of(config);
    wasm_mcp::oci::pull(source, name, &store, into, &limits, &trust, &logins).await
}

/// What a pull's signatures came to, as one line.
fn signature_line(verdict: &Option<wasm_mcp::oci::signature::Verdict>) -> String {
    match verdict {
        Some(wasm_mcp::oci::signature::Verdict::Verified(key)) => {
            format!("signature: verified with {key}")
        }
        Some(_) => "signature: none (the policy is if-present)".to_owned(),
        None => "signature: not checked (the policy is off)".to_owned(),
    }
}

/// `wasm-mcp warm`: compiles every plugin of the folder into the compile
/// cache; fails if one does not compile.
async fn warm(plugins: Option<PathBuf>, config_path: Option<PathBuf>) -> Result<()> {
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
async fn inspect(file: PathBuf, config_path: Option<PathBuf>) -> Result<()> {
    let config = settings::load_config(config_path).await?;
    let Some(reference) = file.to_str().filter(|f| f.starts_with("oci://")) else {
        return inspect_file(file, config).await;
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
    let inspected = match pull_into(&config, &source, &name, into.path()).await {
        Ok(pulled) => {
            println!("{reference} ({})", pulled.digest);
            println!("{}", signature_line(&pulled.signature));
            inspect_file(pulled.file, config).await
        }
        Err(e) => Err(e),
    };
    tokio::task::spawn_blocking(move || drop(into)).await?;
    inspected
}

/// `wasm-mcp inspect` of a component file.
async fn inspect_file(file: PathBuf, config: Config) -> Result<()> {
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
        Ok(entry) => print_offers(&entry),
        Err(e) => println!("not servable: {e:#}"),
    }
    Ok(())
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
}
