//! The cache folder's bound (`[server] cache_max_mb`): compiled components
//! (`*.cwasm`) and OCI pulls (`oci/sha256-*.wasm`) are kept until together
//! they take more than it; then the least recently used go first. Each is
//! only a copy (a component compiles again, a pull is pulled again), so
//! dropping one costs time, never a plugin.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A write left behind (`.*.tmp`) by a host that stopped while writing is
/// removed once it is this old: no write takes that long.
const STALE_WRITE: Duration = Duration::from_secs(3600);

/// The most entries one pruning looks at; beyond, the rest wait for the
/// next one (a folder of the host's own, so only ever a runaway).
const MAX_ENTRIES: usize = 100_000;

/// What one pruning removed.
#[derive(Debug, Default, PartialEq)]
pub struct Pruned {
    /// Entries removed.
    pub entries: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Marks `entry` as used now, so that it is among the last to go. Fails
/// quietly (a read-only cache, an entry pruned meanwhile). Blocking.
pub fn touch(entry: &std::fs::File) {
    let _ = entry.set_modified(SystemTime::now());
}

/// Removes the least recently used entries of the cache folder `dir`
/// until they take at most `max_bytes`; `keep` (the entry just written) is
/// never removed, even alone over the bound. Writes left behind go too.
/// Another host pruning the same folder at once is harmless. Blocking.
pub fn prune(dir: &Path, max_bytes: u64, keep: &Path) -> Pruned {
    let mut entries = Vec::new();
    let mut pruned = Pruned::default();
    let now = SystemTime::now();
    for file in scan(dir) {
        match file.found {
            Found::Entry => entries.push((file.modified, file.len, file.path)),
            Found::Write => {
                let age = now.duration_since(file.modified).unwrap_or_default();
                if age > STALE_WRITE && std::fs::remove_file(&file.path).is_ok() {
                    pruned.entries += 1;
                    pruned.bytes += file.len;
                }
            }
        }
    }
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort_by_key(|e| e.0);
    for (_, len, path) in entries {
        if total <= max_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        // Gone already (another host pruned it): no longer counted either.
        let _ = std::fs::remove_file(&path);
        total = total.saturating_sub(len);
        pruned.entries += 1;
        pruned.bytes += len;
    }
    pruned
}

/// Prunes as [`prune`] does and says so when it removed anything.
pub fn prune_logged(dir: &Path, max_bytes: u64, keep: &Path) {
    let pruned = prune(dir, max_bytes, keep);
    if pruned.entries > 0 {
        tracing::info!(
            folder = %dir.display(),
            removed = pruned.entries,
            freed_kb = pruned.bytes >> 10,
            limit_mb = max_bytes >> 20,
            "cache folder kept within its limit ([server] cache_max_mb): least recently used entries removed"
        );
    }
}

/// What a file of the cache folder is, by its name.
enum Found {
    /// An entry, counted against the bound.
    Entry,
    /// A write in progress, or left behind.
    Write,
}

type Kind = fn(&str) -> Option<Found>;

/// In the folder itself: `HASH-ENGINE.cwasm`, written as `.PID-N.tmp`.
fn artifact(name: &str) -> Option<Found> {
    if name.ends_with(".cwasm") {
        Some(Found::Entry)
    } else if name.starts_with('.') && name.ends_with(".tmp") {
        Some(Found::Write)
    } else {
        None
    }
}

/// In `oci/`: `sha256-HEX.wasm`, written as `sha256-HEX.pulling-PID`.
fn pull(name: &str) -> Option<Found> {
    let rest = name.strip_prefix("sha256-")?;
    if rest.ends_with(".wasm") {
        Some(Found::Entry)
    } else if rest.contains(".pulling-") {
        Some(Found::Write)
    } else {
        None
    }
}

/// One file of the cache folder that is an entry or a write.
struct Listed {
    found: Found,
    modified: SystemTime,
    len: u64,
    path: PathBuf,
}

/// The entries and writes of the cache folder `dir` (regular files only:
/// a link or a folder is never one), at most [`MAX_ENTRIES`] per folder.
fn scan(dir: &Path) -> Vec<Listed> {
    let mut files = Vec::new();
    for (folder, kind) in [(dir.to_owned(), artifact as Kind), (dir.join("oci"), pull)] {
        let Ok(listing) = std::fs::read_dir(&folder) else {
            continue;
        };
        for item in listing.flatten().take(MAX_ENTRIES) {
            let Some(found) = item.file_name().to_str().and_then(kind) else {
                continue;
            };
            // Not followed.
            let Ok(meta) = item.metadata() else { continue };
            if meta.is_file() {
                files.push(Listed {
                    found,
                    modified: meta.modified().unwrap_or_else(|_| SystemTime::now()),
                    len: meta.len(),
                    path: item.path(),
                });
            }
        }
    }
    files
}

/// The entries of `dir` that count against the bound, oldest use first.
#[cfg(test)]
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<_> = scan(dir)
        .into_iter()
        .filter(|f| matches!(f.found, Found::Entry))
        .map(|f| (f.modified, f.path))
        .collect();
    found.sort();
    found.into_iter().map(|(_, path)| path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, len: usize, age_secs: u64) {
        std::fs::write(path, vec![7u8; len]).unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
            .unwrap();
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_new_entry_stays() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::create_dir(dir.join("oci")).unwrap();
        let kib = 1024;
        write(&dir.join("a-1.cwasm"), 100 * kib, 500);
        write(&dir.join("oci/sha256-b.wasm"), 100 * kib, 400);
        write(&dir.join("c-1.cwasm"), 100 * kib, 300);
        write(&dir.join("d-1.cwasm"), 100 * kib, 200);
        // Not entries: never counted, never removed (but for old writes).
        write(&dir.join("cache.key"), 100 * kib, 900);
        write(&dir.join("oci/notes.wasm"), 100 * kib, 900);
        write(&dir.join(".1-2.tmp"), 100 * kib, 2 * 3600);
        write(&dir.join(".1-3.tmp"), 100 * kib, 10);
        write(&dir.join("oci/sha256-f.pulling-7"), 100 * kib, 2 * 3600);
        std::fs::create_dir(dir.join("x.cwasm")).unwrap();

        // Used since: `c` is now the most recently used.
        touch(&std::fs::File::open(dir.join("c-1.cwasm")).unwrap());
        // The newest, just written and alone over the bound, stays.
        write(&dir.join("e-1.cwasm"), 300 * kib, 0);
        let pruned = prune(dir, 450 * kib as u64, &dir.join("e-1.cwasm"));
        assert_eq!(pruned.entries, 5, "{pruned:?}");
        assert_eq!(
            entries(dir),
            [dir.join("c-1.cwasm"), dir.join("e-1.cwasm")],
            "a, b and d (least recently used) removed; c (used) and e (new) kept"
        );
        for old in [".1-2.tmp", "oci/sha256-f.pulling-7"] {
            assert!(!dir.join(old).exists(), "{old}: an old write is removed");
        }
        for kept in ["cache.key", "oci/notes.wasm", ".1-3.tmp", "x.cwasm"] {
            assert!(dir.join(kept).exists(), "{kept}");
        }

        // Within the bound: nothing goes.
        assert_eq!(prune(dir, 10 << 20, &dir.join("none")), Pruned::default());
        // The entry kept is kept even when it is the oldest.
        let pruned = prune(dir, 0, &dir.join("c-1.cwasm"));
        assert_eq!(pruned.entries, 1);
        assert_eq!(entries(dir), [dir.join("c-1.cwasm")]);
    }
}
