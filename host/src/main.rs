//! The `wasm-mcp` command line.

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::Arc;
use wasm_mcp::config::Config;
use wasm_mcp::{dev, launch, settings};

mod cli;

/// An MCP server whose tools, resources and prompts are sandboxed
/// WebAssembly components.
///
/// Put plugin components (`*.wasm`) in a folder and serve them:
///
///     wasm-mcp serve --plugins ./plugins
///
/// Logs go to stderr (set the level with RUST_LOG, e.g. RUST_LOG=debug;
/// WASM_MCP_LOG_FORMAT=json writes one JSON object per line); stdout
/// carries only MCP messages.
#[derive(Parser)]
#[command(
    name = "wasm-mcp",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WASM_MCP_REVISION"), ")"),
    verbatim_doc_comment
)]
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
        /// A TOML config file (its keys: `wasm-mcp config schema`, or the book's config reference).
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
        #[command(flatten)]
        cluster: ClusterArgs,
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
        /// A TOML config file (its keys: `wasm-mcp config schema`, or the book's config reference).
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
        /// A TOML config file (its keys: `wasm-mcp config schema`, or the book's config reference).
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
    /// Check a config file, or print its JSON Schema.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print what a component offers (tools, resources, prompts) and what it imports.
    Inspect {
        /// The component file, or oci://REGISTRY/REPO:TAG (pulled under the
        /// signature policy, which is shown).
        file: PathBuf,
        /// The config whose grants to apply.
        #[arg(long, short = 'c', env = "WASM_MCP_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Record what each plugin tells the model in the plugin lock
    /// (wasm-mcp.lock): its source, component digest, signer, the grants
    /// its manifest asks for, and each tool's, prompt's, resource's and
    /// template's definition. A host whose [server] lock names the file
    /// serves no plugin version that differs from it.
    Lock {
        #[command(subcommand)]
        command: Option<cli::lock::LockCommand>,
        #[command(flatten)]
        args: cli::lock::LockArgs,
    },
    /// List, export or delete each tenant's plugin data (its key-value
    /// data and its folders in the roots made per tenant).
    Tenant {
        #[command(subcommand)]
        command: cli::tenant::TenantCommand,
    },
}

/// `wasm-mcp config ...`
#[derive(Subcommand)]
enum ConfigCommand {
    /// Check a config file without starting anything: unknown keys, wrong
    /// types and values, overlapping roots, files it names that cannot be
    /// read. Prints every problem with its line and key path; exits with 1
    /// if there was one.
    Check {
        /// The config file (TOML).
        file: PathBuf,
        /// Check keys, types and values only, not that the folders and
        /// files it names are there (a config written for another machine).
        #[arg(long)]
        no_files: bool,
        /// Also load the plugins of this folder (as `serve --plugins` takes
        /// it; not served) and report, as problems, what the config names
        /// that matches none of them: a [plugins.NAME] section, a rule for
        /// a tool, prompt or resource, a profile pattern; and a plugin no
        /// section names while access rules exist.
        #[arg(long, short = 'p', value_name = "DIR")]
        plugins: Option<PathBuf>,
    },
    /// Print the config file's JSON Schema, for editors that check and
    /// complete TOML as it is written (taplo, Even Better TOML).
    Schema {
        /// A plugin manifest's (`<plugin>.toml`) instead.
        #[arg(long)]
        manifest: bool,
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

/// Sharing state with other replicas.
#[derive(clap::Args, Clone, Default)]
struct ClusterArgs {
    /// Share tasks, sessions and events with other replicas in this
    /// PostgreSQL database: postgres://USER@HOST[:PORT]/DB (a password goes
    /// in the config's [state] password). Overrides [state] url.
    #[arg(long, value_name = "URL", env = "WASM_MCP_STATE")]
    state: Option<String>,
    /// This replica's name (letters, digits, '-', '_'). Overrides
    /// [cluster] replica.
    #[arg(long, value_name = "NAME", env = "WASM_MCP_REPLICA")]
    replica: Option<String>,
}

impl ClusterArgs {
    fn apply(self, config: &mut Config) -> Result<()> {
        if let Some(url) = self.state {
            wasm_mcp::config::check_state_url(&url)?;
            config.state.url = Some(url);
        }
        if let Some(name) = self.replica {
            anyhow::ensure!(
                wasm_mcp::config::valid_replica_name(&name),
                "--replica {name:?} must be letters, digits, '-' or '_' (no dot)"
            );
            config.cluster.replica = Some(name);
        }
        Ok(())
    }
}

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

impl From<HttpArgs> for launch::Http {
    fn from(args: HttpArgs) -> Self {
        launch::Http {
            listen: args.http,
            json_response: args.json_response,
            legacy_sse: args.legacy_sse,
        }
    }
}

/// mimalloc instead of glibc's malloc, whose malloc and free were 18% of
/// the instructions of an HTTP tools/call: with it a call takes 11% fewer
/// instructions, `server/discover` 23% fewer (`scripts/bench-callgrind.py`).
/// Without transparent huge pages (`no_thp`), which doubled the idle RSS;
/// as it is, it adds 3-6 MiB to it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How log lines are written, from `WASM_MCP_LOG_FORMAT`.
#[derive(Clone, Copy)]
enum LogFormat {
    /// One line of text per event (the default).
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// `WASM_MCP_LOG_FORMAT`: `text` (or unset) or `json`; anything else is
/// refused before anything starts.
fn log_format() -> Result<LogFormat> {
    match std::env::var("WASM_MCP_LOG_FORMAT").as_deref() {
        Err(std::env::VarError::NotPresent) | Ok("" | "text") => Ok(LogFormat::Text),
        Ok("json") => Ok(LogFormat::Json),
        Ok(other) => anyhow::bail!("WASM_MCP_LOG_FORMAT={other:?}: expected \"text\" or \"json\""),
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("WASM_MCP_LOG_FORMAT is not UTF-8: expected \"text\" or \"json\"")
        }
    }
}

/// The layer writing log lines to stderr in `format`.
fn log_layer<S>(format: LogFormat) -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            Box::new(layer.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())))
        }
        // Each event's fields at the top level beside `timestamp`, `level`
        // and `target`, and the span it happened in under `span`.
        LogFormat::Json => Box::new(
            layer
                .json()
                .flatten_event(true)
                .with_current_span(true)
                .with_span_list(false),
        ),
    }
}

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
    // `serve` reads its config once, here: its traces are set up before
    // anything logs, and its engine starts before the async runtime is
    // built (a bad config is reported by the command itself).
    let serve_config = match &cli.command {
        Command::Serve {
            config,
            protocol,
            startup,
            cluster,
            ..
        } => Some(
            settings::read_config(config.as_deref()).and_then(|mut config| {
                config.server.handshake_only |= protocol.handshake_only;
                startup.apply(&mut config);
                cluster.clone().apply(&mut config)?;
                Ok(config)
            }),
        ),
        _ => None,
    };
    // Traces are asked for in the config of a command that serves.
    let traces = match &cli.command {
        Command::Serve {
            config: Some(_), ..
        } => serve_config
            .as_ref()
            .and_then(|c| c.as_ref().ok())
            .map(|c| {
                // A replica's spans say which one it is.
                let replica = c
                    .state
                    .url
                    .is_some()
                    .then(|| wasm_mcp::cluster::replica_name(c));
                (c.traces.clone(), replica)
            }),
        Command::Dev {
            config: Some(path), ..
        } => Config::load(path).ok().map(|c| (c.traces, None)),
        _ => None,
    };
    let traces = traces
        .map(|(t, replica)| wasm_mcp::traces::layer(&t, replica))
        .transpose();
    let log = log_layer(log_format()?).with_filter(
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
        Command::Config { command } => {
            match command {
                ConfigCommand::Schema { manifest } => print!("{}", cli::config::schema(manifest)),
                ConfigCommand::Check {
                    file,
                    no_files,
                    plugins,
                } => {
                    let files = match no_files {
                        true => wasm_mcp::config::Files::Skip,
                        false => wasm_mcp::config::Files::Open,
                    };
                    if !cli::config::check(&file, files, plugins.as_deref())? {
                        std::process::exit(1);
                    }
                }
            }
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
    let serving = match (&command, serve_config) {
        (
            Command::Serve {
                plugins, no_watch, ..
            },
            Some(config),
        ) => Some(serve_setup(plugins.clone(), config?, *no_watch)?),
        _ => None,
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
            Command::Serve { http, .. } => {
                let (starting, config, watch) = serving.context("serve was set up")?;
                launch::serve_folder(starting, config, watch, http.into(), None, Arc::default())
                    .await
            }
            Command::Dev {
                sources,
                release,
                config,
                protocol,
                startup,
                http,
            } => dev(sources, release, config, protocol, startup, http).await,
            Command::Warm { plugins, config } => cli::inspect::warm(plugins, config).await,
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
            Command::Inspect { file, config } => cli::inspect::inspect(file, config).await,
            Command::Lock { command, args } => {
                if !cli::lock::run(command, args).await? {
                    // Something differs (or did not load): said on stdout
                    // and stderr, written line by line already.
                    std::process::exit(1);
                }
                Ok(())
            }
            Command::Tenant { command } => cli::tenant::run(command).await,
            Command::Push {
                file,
                reference,
                config,
            } => cli::oci::push(file, reference, config).await,
            Command::Pull {
                reference,
                plugins,
                name,
                config,
            } => cli::oci::pull(reference, plugins, name, config).await,
            Command::Sign {
                reference,
                key,
                config,
            } => cli::oci::sign(reference, key, config).await,
            Command::New { .. }
            | Command::Wit
            | Command::WasiAdapter { .. }
            | Command::Config { .. } => {
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

/// `serve`'s set-up before its async runtime, from `config` (the command
/// line applied): the plugin folder's start begun (the engine starting
/// meanwhile), with whether the folder is watched.
fn serve_setup(
    plugins: Option<PathBuf>,
    config: Config,
    no_watch: bool,
) -> Result<(launch::Starting, Config, bool)> {
    let dir = plugins
        .or_else(|| config.server.plugins.clone())
        .context("no plugin folder: pass --plugins DIR or set server.plugins in the config")?;
    let watch = config.server.watch && !no_watch;
    let starting = launch::Starting::begin(&dir, &config)?;
    Ok((starting, config, watch))
}

/// `wasm-mcp dev`.
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
    // Plugins under development change all the time: never locked.
    if let Some(lock) = config.server.lock.take() {
        tracing::info!(lock = %lock.display(), "dev: the plugin lock ([server] lock) is not enforced");
    }
    dev::serve(sources, release, config, http.into()).await
}
