//! Precompiled components cached on disk, keyed by the component's content
//! hash and the engine's compatibility hash, so a plugin compiles once per
//! machine. Artifacts are native code: see [`ArtifactCache`] for why one
//! is trusted.

use crate::files;
use anyhow::{Context as _, Result};
use ring::hmac;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::io::{Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::component::Component;
use wasmtime::Engine;

/// A component's bytes and their SHA-256, which names it in the cache and
/// tells a changed file from a rewritten identical one. Cloned without
/// copying the bytes.
#[derive(Clone)]
pub struct ComponentSource {
    bytes: std::sync::Arc<Vec<u8>>,
    pub(super) hash: String,
}

impl ComponentSource {
    /// Wraps the bytes of a component file.
    pub fn new(bytes: Vec<u8>) -> Self {
        let hash = hex(&Sha256::digest(&bytes));
        ComponentSource {
            bytes: std::sync::Arc::new(bytes),
            hash,
        }
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

/// A folder of precompiled components. Compiled code runs in the host, so
/// an artifact is used only if it is this host's own: the folder is made
/// 0700 and must belong to this user, each file must belong to this user
/// and be writable by no one else, and each carries an HMAC-SHA256 (keyed
/// by a secret kept outside the cache) over its name and contents, checked
/// before the code is deserialized.
pub(super) struct ArtifactCache {
    dir: Option<PathBuf>,
    engine_key: String,
    key: hmac::Key,
}

/// The largest artifact read back.
const MAX_ARTIFACT_BYTES: u64 = 2 << 30;

impl ArtifactCache {
    /// A cache in `dir` whose artifacts are signed with the key in
    /// `key_file` (made on first use); `None` disables caching. A folder or
    /// key that cannot be trusted disables the cache, with a warning.
    pub(super) fn new(engine: &Engine, dir: Option<PathBuf>, key_file: Option<&Path>) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = format!("{:016x}", hasher.finish());
        let key = match key_file.map(load_or_make_key) {
            Some(Ok(key)) => Some(key),
            Some(Err(e)) => {
                tracing::warn!("compile cache disabled: its key cannot be used: {e:#}");
                None
            }
            None => None,
        };
        let dir = match (dir, &key) {
            (Some(dir), Some(_)) => match private_dir(&dir) {
                Ok(()) => Some(dir),
                Err(e) => {
                    tracing::warn!(folder = %dir.display(), "compile cache disabled: {e:#}");
                    None
                }
            },
            _ => None,
        };
        let key = key.unwrap_or_else(|| random_key().expect("the OS has randomness"));
        ArtifactCache {
            dir,
            engine_key,
            key,
        }
    }

    /// Whether `source` is in the cache already.
    pub(super) fn contains(&self, source: &ComponentSource) -> bool {
        self.path_of(source).is_some_and(|p| p.exists())
    }

    fn path_of(&self, source: &ComponentSource) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}-{}.cwasm", source.hash, self.engine_key)))
    }

    /// The compiled form of `source`: from the cache when present and
    /// genuine, otherwise compiled now and stored. Runs the compiler, so
    /// call it off the request path.
    pub(super) fn load(&self, engine: &Engine, source: &ComponentSource) -> Result<Component> {
        let bytes = &source.bytes;
        let Some(path) = self.path_of(source) else {
            return super::tier::compile_optimized(engine, bytes);
        };
        match self.read_genuine(&path) {
            Ok(Some(signed)) => {
                // SAFETY: the bytes carry this host's HMAC over their name and
                // contents, so `Component::serialize` of an engine with the
                // same compatibility hash (part of the name) wrote them.
                match unsafe { Component::deserialize(engine, signed.artifact()) } {
                    Ok(component) => return Ok(component),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "ignoring unusable cache entry: {e:#}")
                    }
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "ignoring untrusted cache entry: {e:#}")
            }
        }
        let started = std::time::Instant::now();
        let component = super::tier::compile_optimized(engine, bytes)?;
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

    /// The artifact at `path` without its tag, if present and genuine. It
    /// is read once, straight into the message its tag covers (an artifact
    /// is hundreds of KiB to MiBs: each copy costs its page faults).
    fn read_genuine(&self, path: &Path) -> Result<Option<Signed>> {
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let meta = file.metadata()?;
        anyhow::ensure!(meta.is_file(), "{}", files::kind_of(&meta));
        anyhow::ensure!(
            files::owned_and_private(&meta),
            "it belongs to another user or others may change it"
        );
        let mut tag = [0u8; TAG_LEN];
        file.read_exact(&mut tag).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => anyhow::anyhow!("too short to carry a tag"),
            _ => e.into(),
        })?;
        let expected = meta.len().saturating_sub(TAG_LEN as u64);
        let mut message = signed_prefix(path, expected.min(MAX_ARTIFACT_BYTES) as usize);
        let artifact_at = message.len();
        file.take(MAX_ARTIFACT_BYTES + 1)
            .read_to_end(&mut message)?;
        let size = (message.len() - artifact_at) as u64;
        anyhow::ensure!(
            size <= MAX_ARTIFACT_BYTES,
            "over the limit of {MAX_ARTIFACT_BYTES} bytes"
        );
        hmac::verify(&self.key, &message, &tag)
            .map_err(|_| anyhow::anyhow!("its tag does not match: not written by this host"))?;
        Ok(Some(Signed {
            message,
            artifact_at,
        }))
    }

    fn store(&self, path: &Path, component: &Component) -> Result<()> {
        let dir = path.parent().context("cache path has no folder")?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{}-{seq}.tmp", std::process::id()));
        let artifact = component.serialize()?;
        self.write_signed(path, &tmp, &artifact)
    }

    /// Writes `artifact` with its tag to `tmp`, then moves it to `path`.
    fn write_signed(&self, path: &Path, tmp: &Path, artifact: &[u8]) -> Result<()> {
        let mut tag = hmac::Context::with_key(&self.key);
        tag.update(&signed_prefix(path, 0));
        tag.update(artifact);
        let tag = tag.sign();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(tmp)?;
        let written = file
            .write_all(tag.as_ref())
            .and_then(|()| file.write_all(artifact))
            .and_then(|()| std::fs::rename(tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(tmp);
        }
        Ok(written?)
    }
}

const TAG_LEN: usize = 32;

/// What an artifact's tag covers is its file name, a zero byte, then its
/// bytes: the first two, with room for `room` bytes more.
fn signed_prefix(path: &Path, room: usize) -> Vec<u8> {
    let name = path.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    let mut message = Vec::with_capacity(name.len() + 1 + room);
    message.extend_from_slice(name);
    message.push(0);
    message
}

/// An artifact read back with what its tag covers.
struct Signed {
    message: Vec<u8>,
    artifact_at: usize,
}

impl Signed {
    fn artifact(&self) -> &[u8] {
        &self.message[self.artifact_at..]
    }
}

/// Makes `dir` (0700) if needed; it must be a folder of this user that no
/// one else may change (a folder of ours with a wider mode is narrowed).
fn private_dir(dir: &Path) -> Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let meta = std::fs::metadata(dir)?;
    anyhow::ensure!(meta.is_dir(), "{} is not a folder", dir.display());
    anyhow::ensure!(
        meta.uid() == files::effective_uid(),
        "{} belongs to another user",
        dir.display()
    );
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The cache key from `path`, made (32 random bytes, 0600) if absent.
fn load_or_make_key(path: &Path) -> Result<hmac::Key> {
    if let Some(parent) = path.parent() {
        private_dir(parent)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            let mut secret = [0u8; TAG_LEN];
            getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("{e}"))?;
            file.write_all(&secret)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
    }
    let (file, meta) = files::open_regular(path, TAG_LEN as u64)
        .with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        meta.uid() == files::effective_uid() && meta.mode() & 0o077 == 0,
        "{} must belong to this user and be readable by no one else",
        path.display()
    );
    let secret = files::read_capped(file, meta.len(), TAG_LEN as u64)?;
    anyhow::ensure!(secret.len() == TAG_LEN, "{} is not a key", path.display());
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &secret))
}

fn random_key() -> Result<hmac::Key> {
    let mut secret = [0u8; TAG_LEN];
    getrandom::fill(&mut secret).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &secret))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_reads_back_only_whole_and_with_its_own_tag() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::new(
            &Engine::default(),
            Some(dir.path().join("cache")),
            Some(&dir.path().join("cache.key")),
        );
        let path = dir.path().join("cache").join("abc-0123.cwasm");
        let tmp = dir.path().join("cache").join(".abc.tmp");
        let artifact: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        cache.write_signed(&path, &tmp, &artifact).unwrap();
        let read = cache.read_genuine(&path).unwrap().unwrap();
        assert_eq!(read.artifact(), &artifact[..]);

        // The tag covers the name: the same bytes under another name are refused.
        let renamed = dir.path().join("cache").join("abd-0123.cwasm");
        std::fs::copy(&path, &renamed).unwrap();
        let error = cache.read_genuine(&renamed).err().unwrap().to_string();
        assert!(error.contains("tag does not match"), "{error}");

        // One byte changed anywhere, or a byte cut off, is refused.
        let mut bytes = std::fs::read(&path).unwrap();
        for at in [0, TAG_LEN, bytes.len() - 1] {
            bytes[at] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
            assert!(cache.read_genuine(&path).is_err(), "byte {at} changed");
            bytes[at] ^= 1;
        }
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(cache.read_genuine(&path).is_err());
        std::fs::write(&path, &bytes[..TAG_LEN - 1]).unwrap();
        let error = cache.read_genuine(&path).err().unwrap().to_string();
        assert!(error.contains("too short"), "{error}");
        std::fs::write(&path, &bytes).unwrap();
        assert!(cache.read_genuine(&path).unwrap().is_some());

        std::fs::remove_file(&path).unwrap();
        assert!(cache.read_genuine(&path).unwrap().is_none());
    }
}
