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
    /// The most the cache folder keeps, in bytes.
    max_bytes: u64,
}

/// The largest artifact read back.
const MAX_ARTIFACT_BYTES: u64 = 2 << 30;

impl ArtifactCache {
    /// A cache in `dir` whose artifacts are signed with the key in
    /// `key_file` (made on first use), the folder kept within `max_bytes`;
    /// `None` disables caching. A folder or key that cannot be trusted
    /// disables the cache, with a warning.
    pub(super) fn new(
        engine: &Engine,
        dir: Option<PathBuf>,
        key_file: Option<&Path>,
        max_bytes: u64,
    ) -> Self {
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
            max_bytes,
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
        match self.load_genuine(engine, &path) {
            Ok(Some(component)) => return Ok(component),
            Ok(None) => {}
            Err(Refused::Untrusted(e)) => {
                tracing::warn!(path = %path.display(), "ignoring untrusted cache entry: {e:#}")
            }
            Err(Refused::Unusable(e)) => {
                tracing::warn!(path = %path.display(), "ignoring unusable cache entry: {e:#}")
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

    /// The component in the artifact at `path`, if present and genuine.
    /// The artifact is read once, straight into the memory its code will
    /// run from, and its tag is checked there before it is deserialized
    /// (an artifact is hundreds of KiB to tens of MiB: each copy of it
    /// costs a page fault per 4 KiB).
    fn load_genuine(&self, engine: &Engine, path: &Path) -> Result<Option<Component>, Refused> {
        let Some(mut entry) = Entry::open(path).map_err(Refused::Untrusted)? else {
            return Ok(None);
        };
        let mut refused = None;
        // SAFETY: `deserialize_filled` loads only what `fill` wrote, and it
        // writes only bytes that carry this host's HMAC over their name and
        // contents: `Component::serialize` of an engine with the same
        // compatibility hash (part of the name) wrote them.
        let loaded = unsafe {
            Component::deserialize_filled(engine, entry.size, |artifact| {
                self.read_checked(path, &mut entry, artifact).map_err(|e| {
                    refused = Some(e);
                    wasmtime::format_err!("refused")
                })
            })
        };
        match (loaded, refused) {
            (Ok(component), _) => {
                crate::cache_folder::touch(&entry.file);
                Ok(Some(component))
            }
            (Err(_), Some(e)) => Err(Refused::Untrusted(e)),
            (Err(e), None) => Err(Refused::Unusable(e.into())),
        }
    }

    /// Reads `entry`'s artifact into `artifact` (its size) and checks that
    /// it is all of the file and that its tag is this host's.
    fn read_checked(&self, path: &Path, entry: &mut Entry, artifact: &mut [u8]) -> Result<()> {
        entry
            .file
            .read_exact(artifact)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => anyhow::anyhow!("shorter than it was"),
                _ => e.into(),
            })?;
        anyhow::ensure!(entry.file.read(&mut [0u8; 1])? == 0, "longer than it was");
        let mut tag = hmac::Context::with_key(&self.key);
        tag.update(&signed_prefix(path));
        tag.update(artifact);
        anyhow::ensure!(
            same_tag(tag.sign().as_ref(), &entry.tag),
            "its tag does not match: not written by this host"
        );
        Ok(())
    }

    fn store(&self, path: &Path, component: &Component) -> Result<()> {
        let dir = path.parent().context("cache path has no folder")?;
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{}-{seq}.tmp", std::process::id()));
        let artifact = component.serialize()?;
        self.write_signed(path, &tmp, &artifact)?;
        crate::cache_folder::prune_logged(dir, self.max_bytes, path);
        Ok(())
    }

    /// Writes `artifact` with its tag to `tmp`, then moves it to `path`.
    fn write_signed(&self, path: &Path, tmp: &Path, artifact: &[u8]) -> Result<()> {
        let mut tag = hmac::Context::with_key(&self.key);
        tag.update(&signed_prefix(path));
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

/// Whether two tags are equal, in a time that does not depend on where they
/// differ. (Written out rather than taken from a crate: a new dependency
/// renames the host's symbols, and `host/hot-functions.txt`, which lays out
/// the code that serves requests, names them.)
fn same_tag(a: &[u8], b: &[u8]) -> bool {
    let differ = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    a.len() == b.len() && std::hint::black_box(differ) == 0
}

/// Why a cache entry was not used.
enum Refused {
    /// It is not this host's (or not whole): its tag, owner, mode or size.
    Untrusted(anyhow::Error),
    /// It is this host's but does not load (the engine refused it).
    Unusable(anyhow::Error),
}

/// An artifact file opened to be read: its tag read, its size checked.
struct Entry {
    file: std::fs::File,
    tag: [u8; TAG_LEN],
    /// The artifact's size: the file's, less the tag.
    size: usize,
}

impl Entry {
    /// The entry at `path`; `None` when there is none.
    fn open(path: &Path) -> Result<Option<Self>> {
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
        let size = meta.len().saturating_sub(TAG_LEN as u64);
        anyhow::ensure!(size > 0, "it holds a tag and nothing else");
        anyhow::ensure!(
            size <= MAX_ARTIFACT_BYTES,
            "over the limit of {MAX_ARTIFACT_BYTES} bytes"
        );
        Ok(Some(Entry {
            file,
            tag,
            size: size as usize,
        }))
    }
}

/// What an artifact's tag covers is its file name, a zero byte, then its
/// bytes: the first two.
fn signed_prefix(path: &Path) -> Vec<u8> {
    let name = path.file_name().map(|n| n.as_bytes()).unwrap_or_default();
    let mut message = Vec::with_capacity(name.len() + 1);
    message.extend_from_slice(name);
    message.push(0);
    message
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

    /// A cache in `dir` (its key beside it) kept within `max_bytes`.
    fn cache_in(dir: &Path, engine: &Engine, max_bytes: u64) -> ArtifactCache {
        ArtifactCache::new(
            engine,
            Some(dir.join("cache")),
            Some(&dir.join("cache.key")),
            max_bytes,
        )
    }

    /// `artifact` read back from `path` as the cache reads it.
    fn read_back(cache: &ArtifactCache, path: &Path) -> Result<Option<Vec<u8>>> {
        let Some(mut entry) = Entry::open(path)? else {
            return Ok(None);
        };
        let mut artifact = vec![0; entry.size];
        cache.read_checked(path, &mut entry, &mut artifact)?;
        Ok(Some(artifact))
    }

    #[test]
    fn an_artifact_reads_back_only_whole_and_with_its_own_tag() {
        let dir = tempfile::tempdir().unwrap();
        let cache = cache_in(dir.path(), &Engine::default(), 1 << 30);
        let path = dir.path().join("cache").join("abc-0123.cwasm");
        let tmp = dir.path().join("cache").join(".abc.tmp");
        let artifact: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        cache.write_signed(&path, &tmp, &artifact).unwrap();
        assert_eq!(read_back(&cache, &path).unwrap().unwrap(), artifact);

        // The tag covers the name: the same bytes under another name are refused.
        let renamed = dir.path().join("cache").join("abd-0123.cwasm");
        std::fs::copy(&path, &renamed).unwrap();
        let error = read_back(&cache, &renamed).err().unwrap().to_string();
        assert!(error.contains("tag does not match"), "{error}");

        // One byte changed anywhere, or a byte cut off, is refused.
        let mut bytes = std::fs::read(&path).unwrap();
        for at in [0, TAG_LEN, bytes.len() - 1] {
            bytes[at] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
            assert!(read_back(&cache, &path).is_err(), "byte {at} changed");
            bytes[at] ^= 1;
        }
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(read_back(&cache, &path).is_err());
        for short in [TAG_LEN - 1, TAG_LEN] {
            std::fs::write(&path, &bytes[..short]).unwrap();
            let error = read_back(&cache, &path).err().unwrap().to_string();
            assert!(
                error.contains("too short") || error.contains("nothing else"),
                "{error}"
            );
        }
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_back(&cache, &path).unwrap().is_some());

        // Grown or cut after it was opened: refused, not read in part.
        let mut entry = Entry::open(&path).unwrap().unwrap();
        let mut longer = bytes.clone();
        longer.push(0);
        std::fs::write(&path, &longer).unwrap();
        let mut read = vec![0; entry.size];
        let error = cache
            .read_checked(&path, &mut entry, &mut read)
            .unwrap_err();
        assert!(error.to_string().contains("longer"), "{error}");
        let mut entry = Entry::open(&path).unwrap().unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let mut read = vec![0; entry.size];
        let error = cache
            .read_checked(&path, &mut entry, &mut read)
            .unwrap_err();
        assert!(error.to_string().contains("shorter"), "{error}");

        std::fs::remove_file(&path).unwrap();
        assert!(read_back(&cache, &path).unwrap().is_none());
    }

    #[test]
    fn a_component_loads_from_its_own_artifact_and_from_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        let cache = cache_in(dir.path(), &engine, 1 << 30);
        // The smallest component: the preamble alone.
        let source = ComponentSource::new(b"\0asm\x0d\0\x01\0".to_vec());
        let path = cache.path_of(&source).unwrap();
        assert!(matches!(cache.load_genuine(&engine, &path), Ok(None)));
        let compiled = cache.load(&engine, &source).unwrap();
        assert!(cache.contains(&source));
        let loaded = cache.load_genuine(&engine, &path).ok().flatten().unwrap();
        assert_eq!(
            loaded.component_type().imports(&engine).count(),
            compiled.component_type().imports(&engine).count()
        );

        // Its tag checked before anything is loaded.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        match cache.load_genuine(&engine, &path) {
            Err(Refused::Untrusted(e)) => assert!(e.to_string().contains("tag"), "{e}"),
            _ => panic!("a changed artifact was not refused as untrusted"),
        }
        // Genuine but not a component the engine loads: unusable.
        let tmp = dir.path().join("cache").join(".x.tmp");
        cache.write_signed(&path, &tmp, b"not an artifact").unwrap();
        assert!(matches!(
            cache.load_genuine(&engine, &path),
            Err(Refused::Unusable(_))
        ));
        // And the load compiles it again.
        cache.load(&engine, &source).unwrap();
        assert!(cache.load_genuine(&engine, &path).ok().flatten().is_some());
    }

    #[test]
    fn storing_keeps_the_folder_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::default();
        // A bound below any artifact: each new one replaces the one before.
        let cache = cache_in(dir.path(), &engine, 1);
        let first = ComponentSource::new(b"\0asm\x0d\0\x01\0".to_vec());
        // The same, with a custom section: another component.
        let second = ComponentSource::new(b"\0asm\x0d\0\x01\0\0\x03\x01x\0".to_vec());
        cache.load(&engine, &first).unwrap();
        assert!(cache.contains(&first));
        cache.load(&engine, &second).unwrap();
        assert!(cache.contains(&second), "the entry just written stays");
        assert!(!cache.contains(&first), "the one before went");
    }
}
