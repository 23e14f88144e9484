//! The shared engine: configuration, the epoch ticker that enforces
//! deadlines, and the linker every plugin is instantiated through.

use super::cache::{ArtifactCache, ComponentSource};
use super::grants::{Grants, Limits};
use super::plugin::LoadedPlugin;
use super::ticker::Ticker;
use super::tier::Tier;
use anyhow::{Context as _, Result};
use std::path::PathBuf;
use std::sync::Arc;
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

/// Settings of the runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where precompiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The secret that signs cached artifacts (made on first use), kept
    /// outside the cache folder.
    pub cache_key_file: Option<PathBuf>,
    /// The most the cache folder keeps, in bytes ([`crate::cache_folder`]).
    pub cache_max_bytes: u64,
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
            cache_key_file: None,
            cache_max_bytes: crate::config::defaults::CACHE_MAX_MB << 20,
            max_memory_bytes: Limits::default().memory_bytes,
            max_instances: 1000,
        }
    }
}

/// The engines, their linkers and the artifact cache, shared by every plugin.
pub struct Runtime {
    optimized: Tier,
    /// The baseline compiler's tier, built on its first use (`None` inside:
    /// this machine has no baseline compiler).
    quick: std::sync::OnceLock<Option<Tier>>,
    cache: ArtifactCache,
    pub(super) config: RuntimeConfig,
    ticker: Arc<Ticker>,
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
            // A finished call's memory is reset in place: PAGEMAP_SCAN
            // (Linux 6.7+) finds the pages it wrote, and up to 4 MiB of
            // them per memory (64 KiB per table) are copied back from the
            // image; only the rest is given back with madvise. Without
            // this, every call paid copy-on-write faults and the TLB
            // shootdowns of madvise: 2.5x the CPU per call. 4 MiB covers a
            // CPython call that reads and parses a file (the memory plugin
            // writes ~300 pages; 1 MiB left it ~160 faults per call). A slot
            // stays that much resident at most, and one reset whole is
            // handed out again at once, so a plugin cycles through few
            // slots (the vendored wasmtime's patches: vendor/README.md).
            .linear_memory_keep_resident(4 << 20)
            .table_keep_resident(64 << 10)
            .pagemap_scan(wasmtime::Enabled::Auto)
            .max_unused_warm_slots(64)
            // One madvise per 32 freed instances with pages to give back,
            // instead of one each: with HTTP load, decommits were ~10% of
            // the host's time.
            .decommit_batch_size(32);

        // The pool has room for as many instances as there are slots; the
        // baseline tier allocates on demand but takes the same slots.
        let instances = super::slots::Slots::new(config.max_instances as usize);
        let ticker = Ticker::new();
        let optimized = Tier::new(
            Strategy::Cranelift,
            InstanceAllocationStrategy::Pooling(pool),
            instances,
            ticker.clone(),
        )
        .with_context(|| {
            format!(
                "reserving address space for {} plugin instances \
                 (fewer: [server] max_instances)",
                config.max_instances
            )
        })?;
        ticker.start(vec![optimized.engine.clone()])?;

        let cache = ArtifactCache::new(
            &optimized.engine,
            config.cache_dir.clone(),
            config.cache_key_file.as_deref(),
            config.cache_max_bytes,
        );
        Ok(Arc::new(Runtime {
            optimized,
            quick: std::sync::OnceLock::new(),
            cache,
            config,
            ticker,
        }))
    }

    /// The baseline compiler's tier, for reloads: a few times faster to
    /// compile, slower to run; its instances are few and short-lived, so
    /// they are allocated on demand (from the same slots). Built on first
    /// use (a host that never compiles a new component never builds it);
    /// `None` where this machine has no baseline compiler. CPU-heavy the
    /// first time: call it on a blocking thread.
    fn quick(&self) -> Option<&Tier> {
        self.quick
            .get_or_init(|| {
                let tier = Tier::new(
                    Strategy::Winch,
                    InstanceAllocationStrategy::OnDemand,
                    self.optimized.instances.clone(),
                    self.ticker.clone(),
                )
                .map_err(|e| tracing::debug!("no baseline compiler: {e:#}"))
                .ok()?;
                self.ticker.add(tier.engine.clone());
                Some(tier)
            })
            .as_ref()
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
        self.check_memory_limit(&grants)?;
        source.check_header()?;
        let this = self.clone();
        let name: Arc<str> = name.into();
        let span = tracing::debug_span!("plugin.compile", plugin = %name, compiler = "optimizing");
        tokio::task::spawn_blocking(move || {
            let _compiling = span.enter();
            this.build_optimized(name, &source, grants)
        })
        .await?
    }

    /// [`Runtime::load`]'s work, on the blocking thread it runs on.
    fn build_optimized(
        &self,
        name: Arc<str>,
        source: &ComponentSource,
        grants: Grants,
    ) -> Result<Arc<LoadedPlugin>> {
        let tier = &self.optimized;
        let component = self.cache.load(&tier.engine, source)?;
        let hash = source.hash.clone();
        LoadedPlugin::link(tier, name, component, source.bytes(), hash, grants, false)
    }

    /// Like [`Runtime::load`], but quick to be ready: a component compiled
    /// before comes from the cache; a new one is compiled by the baseline
    /// compiler ([`LoadedPlugin::is_quick`]), for the caller to replace with
    /// [`Runtime::load`]'s optimised build when that is ready.
    pub async fn load_quick(
        self: &Arc<Self>,
        name: &str,
        source: ComponentSource,
        grants: Grants,
    ) -> Result<Arc<LoadedPlugin>> {
        if self.cache.contains(&source) {
            return self.load(name, source, grants).await;
        }
        self.check_memory_limit(&grants)?;
        source.check_header()?;
        let this = self.clone();
        let name: Arc<str> = name.into();
        let span = tracing::debug_span!("plugin.compile", plugin = %name, compiler = "baseline");
        tokio::task::spawn_blocking(move || {
            let _compiling = span.enter();
            let Some(tier) = this.quick() else {
                // No baseline compiler here: the optimising one builds it.
                return this.build_optimized(name, &source, grants);
            };
            let started = std::time::Instant::now();
            let component = wasmtime::component::Component::new(&tier.engine, source.bytes())?;
            tracing::debug!(
                compile_ms = started.elapsed().as_secs_f64() * 1e3,
                "compiled a component with the baseline compiler"
            );
            let hash = source.hash.clone();
            LoadedPlugin::link(tier, name, component, source.bytes(), hash, grants, true)
        })
        .await?
    }

    /// Refuses grants whose memory limit is above a memory slot's size.
    fn check_memory_limit(&self, grants: &Grants) -> Result<()> {
        anyhow::ensure!(
            grants.limits.memory_bytes <= self.config.max_memory_bytes,
            "its memory limit ({} MiB) is above the host's largest ({} MiB)",
            grants.limits.memory_bytes >> 20,
            self.config.max_memory_bytes >> 20
        );
        Ok(())
    }

    /// The wasmtime engine of optimised code.
    pub fn engine(&self) -> &Engine {
        &self.optimized.engine
    }

    /// The settings the runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Plugin instances alive now, in both tiers.
    pub fn instances_in_use(&self) -> usize {
        let free = self.optimized.instances.free();
        (self.config.max_instances as usize).saturating_sub(free)
    }

    /// Of those, the fresh instances made ahead of a call (see the
    /// `spare` module), at most one per plugin.
    pub fn spare_instances(&self) -> usize {
        self.optimized.instances.spares.count()
    }

    /// Bytes of linear memory and tables the live instances hold.
    pub fn memory_in_use(&self) -> usize {
        super::limiter::memory_in_use()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::{Runtime, RuntimeConfig};

    /// `(module (table 1 funcref) (memory 1))`: a table of less than a page,
    /// reset with memset, and a memory, reset from its pages found written.
    const TABLE_AND_MEMORY: &[u8] = &[
        0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // header
        0x04, 0x04, 0x01, 0x70, 0x00, 0x01, // one funcref table, 1 element
        0x05, 0x03, 0x01, 0x00, 0x01, // one memory, 1 page
    ];

    /// An instance torn down gives its table and memory slots back to the
    /// pool at once, with nothing queued for `madvise`: the next instance
    /// gets the same warm slots, instead of the pool cycling through a
    /// batch of them (`decommit_batch_size`) while the queue fills with
    /// empty ranges (vendor/README.md, changes 2 and 6).
    #[tokio::test]
    async fn a_torn_down_instance_gives_its_slots_back_at_once() {
        let runtime = Runtime::new(RuntimeConfig {
            max_instances: 8,
            ..RuntimeConfig::default()
        })
        .unwrap();
        let engine = runtime.engine();
        let module = wasmtime::Module::new(engine, TABLE_AND_MEMORY).unwrap();
        for _ in 0..100 {
            let mut store = wasmtime::Store::new(engine, ());
            wasmtime::Instance::new_async(&mut store, &module, &[])
                .await
                .unwrap();
        }
        let pool = engine.pooling_allocator_metrics().unwrap();
        assert_eq!(pool.unused_warm_tables(), 1, "table slots used");
        assert_eq!(pool.unused_warm_memories(), 1, "memory slots used");
    }
}
