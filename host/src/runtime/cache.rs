//! Precompiled components cached on disk, keyed by the component's content
//! hash and the engine's compatibility hash, so a plugin compiles once per
//! machine and later loads are a memory map.

use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::component::Component;
use wasmtime::Engine;

/// A component's bytes and their SHA-256, which names it in the cache and
/// tells a changed file from a rewritten identical one.
#[derive(Clone)]
pub struct ComponentSource {
    bytes: Vec<u8>,
    pub(super) hash: String,
}

impl ComponentSource {
    /// Wraps the bytes of a component file.
    pub fn new(bytes: Vec<u8>) -> Self {
        let hash = hex(&Sha256::digest(&bytes));
        ComponentSource { bytes, hash }
    }

    /// The SHA-256 of the bytes, in hex.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Says plainly what the file is when it is not a component at all,
    /// before the compiler says it less plainly.
    pub fn check_header(&self) -> Result<()> {
        const MAGIC: &[u8] = b"\0asm";
        const CORE_MODULE: &[u8] = &[1, 0, 0, 0];
        let bytes = &self.bytes;
        if bytes.len() < 8 || &bytes[..4] != MAGIC {
            anyhow::bail!(
                "not a WebAssembly file ({} bytes; it may still be being written)",
                bytes.len()
            );
        }
        if &bytes[4..8] == CORE_MODULE {
            anyhow::bail!(
                "a core WebAssembly module, not a component: build for wasm32-wasip2, \
                 or wrap it with `wasm-tools component new`"
            );
        }
        Ok(())
    }
}

/// A folder of precompiled components.
pub struct ArtifactCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl ArtifactCache {
    /// A cache in `dir`; `None` disables caching.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = format!("{:016x}", hasher.finish());
        ArtifactCache { dir, engine_key }
    }

    /// Whether `source` is in the cache already.
    pub fn contains(&self, source: &ComponentSource) -> bool {
        self.dir
            .as_ref()
            .is_some_and(|_| self.path_of(source).is_some_and(|p| p.exists()))
    }

    fn path_of(&self, source: &ComponentSource) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}.cwasm", source.hash, self.engine_key)))
    }

    /// The compiled form of `source`: from the cache when present, otherwise
    /// compiled now and stored. Runs the compiler, so call it off the request path.
    pub fn load(&self, engine: &Engine, source: &ComponentSource) -> Result<Component> {
        let bytes = &source.bytes;
        let Some(path) = self.path_of(source) else {
            return Ok(Component::new(engine, bytes)?);
        };
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of an engine
            // with the same compatibility hash (part of the file name), in a
            // folder owned by this host.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => return Ok(component),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "ignoring unusable cache entry: {e:#}")
                }
            }
        }
        let started = std::time::Instant::now();
        let component = Component::new(engine, bytes)?;
        let compiled = started.elapsed();
        if let Err(e) = self.store(&path, &component) {
            tracing::warn!(path = %path.display(), "could not cache the compiled component: {e:#}");
        }
        tracing::debug!(
            compile_ms = compiled.as_secs_f64() * 1e3,
            store_ms = (started.elapsed() - compiled).as_secs_f64() * 1e3,
            "compiled a component"
        );
        Ok(component)
    }

    fn store(&self, path: &std::path::Path, component: &Component) -> Result<()> {
        let dir = path.parent().context("cache path has no folder")?;
        std::fs::create_dir_all(dir)?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{}-{seq}.tmp", std::process::id()));
        std::fs::write(&tmp, component.serialize()?)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
