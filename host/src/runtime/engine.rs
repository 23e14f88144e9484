//! The shared engine: configuration, the epoch ticker that enforces
//! deadlines, and the linker every plugin is instantiated through.

use super::bindings;
use super::cache::{ArtifactCache, ComponentSource};
use super::grants::Grants;
use super::plugin::LoadedPlugin;
use super::state::CallState;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances; the granularity of deadlines and of the
/// cooperative yields that keep a busy plugin from starving other tasks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Settings of the runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where precompiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The most linear memory any instance may be granted, in bytes (the
    /// size of a pooled memory slot; each plugin's own cap is in its grants).
    pub max_memory_bytes: usize,
    /// How many instances may be alive at once, across all plugins.
    pub max_instances: u32,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_memory_bytes: 256 << 20,
            max_instances: 1000,
        }
    }
}

/// The engine, the linker and the artifact cache, shared by every plugin.
pub struct Runtime {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
    cache: ArtifactCache,
    pub(super) config: RuntimeConfig,
    ticker_stop: Arc<AtomicBool>,
}

impl Runtime {
    /// Builds the engine and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Arc<Self>> {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(config.max_instances)
            .total_core_instances(config.max_instances * 4)
            .total_memories(config.max_instances * 2)
            .total_tables(config.max_instances * 4)
            .total_stacks(config.max_instances)
            .max_core_instances_per_component(64)
            .max_memories_per_component(8)
            .max_tables_per_component(16)
            .max_memories_per_module(2)
            .max_tables_per_module(4)
            .table_elements(200_000)
            .max_component_instance_size(1 << 20)
            .max_core_instance_size(1 << 20)
            .max_memory_size(config.max_memory_bytes)
            .linear_memory_keep_resident(64 << 10)
            .max_unused_warm_slots(64);

        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::wasm_mcp::plugin::types::add_to_linker::<_, HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )?;
        bindings::wasm_mcp::plugin::host::add_to_linker::<_, HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = ticker_stop.clone();
            std::thread::Builder::new()
                .name("epoch-ticker".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        engine.increment_epoch();
                    }
                })?;
        }

        let cache = ArtifactCache::new(&engine, config.cache_dir.clone());
        Ok(Arc::new(Runtime {
            engine,
            linker,
            cache,
            config,
            ticker_stop,
        }))
    }

    /// Compiles (or loads from the cache) and links a component. CPU-heavy:
    /// runs on a blocking thread. Fails with a clear message when the file is
    /// not a component or imports something the host does not provide.
    pub async fn load(
        self: &Arc<Self>,
        name: &str,
        source: ComponentSource,
        grants: Grants,
    ) -> Result<Arc<LoadedPlugin>> {
        anyhow::ensure!(
            grants.limits.memory_bytes <= self.config.max_memory_bytes,
            "its memory limit ({} MiB) is above the host's largest ({} MiB)",
            grants.limits.memory_bytes >> 20,
            self.config.max_memory_bytes >> 20
        );
        source.check_header()?;
        let this = self.clone();
        let name: Arc<str> = name.into();
        tokio::task::spawn_blocking(move || {
            let component = this.cache.load(&this.engine, &source)?;
            LoadedPlugin::link(this.clone(), name, component, source.hash, grants)
        })
        .await?
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The settings the runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
