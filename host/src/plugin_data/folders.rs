//! Each tenant's folders in the roots made per tenant (`path =
//! "/srv/files/{tenant}"`), as `wasm-mcp tenant` lists, exports and
//! deletes them, and the export's archive.
//!
//! A tenant's folder was written by plugins on that tenant's behalf, so
//! it is hostile: it is walked relative to open folders with
//! `O_NOFOLLOW`, never through a symlink (a symlink inside is neither
//! followed nor archived; deleting removes the link, never its target),
//! only regular files and folders are archived, each file checked with
//! `fstat` on its open descriptor, and at most [`MAX_DEPTH`] folders deep.
//! Blocking: run these on a blocking thread.
//!
//! The archive (`tar`): `keyvalue.jsonl`, one JSON object per key
//! (`plugin`, `bucket`, `key`, `value` in base64), then
//! `roots/<root>/...`, the tenant's folder of each root made per tenant.
//! Its key-value values and files together are at most the limit given
//! ([`DEFAULT_EXPORT_LIMIT`] by default), else nothing is written.

use crate::runtime::keyvalue::Entry;
use anyhow::{Context as _, Result};
use base64::Engine as _;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// Folders nested deeper than this in a tenant's folder are refused.
pub const MAX_DEPTH: usize = 128;

/// The most an export holds by default: 1 GiB of values and files.
pub const DEFAULT_EXPORT_LIMIT: u64 = 1 << 30;

/// A root made per tenant: its name, and the folder holding each
/// tenant's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRoot {
    /// The root's name (`[roots.NAME]`).
    pub name: String,
    /// The folder that holds each tenant's.
    pub parent: PathBuf,
}

/// The config's roots made per tenant.
pub fn tenant_roots(config: &crate::config::Config) -> Vec<TenantRoot> {
    config
        .roots
        .iter()
        .filter_map(|(name, root)| {
            Some(TenantRoot {
                name: name.clone(),
                parent: root.tenant_parent()?.to_owned(),
            })
        })
        .collect()
}

/// Whether `name` is a tenant's key (so a folder so named is a tenant's).
pub fn is_tenant_key(name: &str) -> bool {
    crate::tenant::decode(name).is_some()
        || name.strip_prefix('~').is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
}

/// What a folder holds: regular files, folders (itself not counted), the
/// files' bytes, and the entries that are neither (symlinks, FIFOs,
/// sockets, devices: never followed nor archived).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Regular files.
    pub files: u64,
    /// Folders inside it.
    pub folders: u64,
    /// Bytes of its regular files.
    pub bytes: u64,
    /// Entries that are neither.
    pub others: u64,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} files, {} folders, {} bytes",
            self.files, self.folders, self.bytes
        )?;
        if self.others > 0 {
            write!(f, ", {} other entries (symlinks and the like)", self.others)?;
        }
        Ok(())
    }
}

/// The tenants (their keys) with a folder in `parent`, sorted. A missing
/// parent has none.
pub fn tenant_folders(parent: &Path) -> Result<Vec<String>> {
    let dir = match open_dir(parent) {
        Ok(dir) => dir,
        Err(rustix::io::Errno::NOENT) => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("opening {}", parent.display())),
    };
    let mut keys = Vec::new();
    for name in names(&dir).with_context(|| format!("reading {}", parent.display()))? {
        let Some(key) = name.to_str() else { continue };
        if is_tenant_key(key) && kind_at(&dir, &name)? == FileType::Directory {
            keys.push(key.to_owned());
        }
    }
    keys.sort();
    Ok(keys)
}

/// The tenant `key`'s folder in `parent`, opened (not through a symlink);
/// `None` when it has none.
fn tenant_folder(parent: &Path, key: &str) -> Result<Option<(OwnedFd, OwnedFd)>> {
    anyhow::ensure!(is_tenant_key(key), "{key:?} is not a tenant's key");
    let parent_fd = match open_dir(parent) {
        Ok(dir) => dir,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("opening {}", parent.display())),
    };
    match open_dir_at(&parent_fd, OsStr::new(key)) {
        Ok(dir) => Ok(Some((parent_fd, dir))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(rustix::io::Errno::NOTDIR) | Err(rustix::io::Errno::LOOP) => anyhow::bail!(
            "{} is not a folder (a symlink is not followed)",
            parent.join(key).display()
        ),
        Err(e) => Err(e).with_context(|| format!("opening {}", parent.join(key).display())),
    }
}

/// What tenant `key`'s folder in `parent` holds; `None` when it has none.
pub fn measure(parent: &Path, key: &str) -> Result<Option<Tally>> {
    let Some((_, dir)) = tenant_folder(parent, key)? else {
        return Ok(None);
    };
    let mut tally = Tally::default();
    walk(&dir, Path::new(""), 0, &mut |found| {
        match found {
            Found::Folder(_) => tally.folders += 1,
            Found::File { size, .. } => {
                tally.files += 1;
                tally.bytes += size;
            }
            Found::Other => tally.others += 1,
        }
        Ok(())
    })
    .with_context(|| format!("reading {}", parent.join(key).display()))?;
    Ok(Some(tally))
}

/// Removes tenant `key`'s folder in `parent` and all it holds (symlinks
/// removed, never followed); what it held, `None` when it had none.
pub fn remove(parent: &Path, key: &str) -> Result<Option<Tally>> {
    let Some((parent_fd, dir)) = tenant_folder(parent, key)? else {
        return Ok(None);
    };
    let mut tally = Tally::default();
    empty(&dir, 0, &mut tally)
        .with_context(|| format!("removing what {} holds", parent.join(key).display()))?;
    drop(dir);
    rustix::fs::unlinkat(&parent_fd, key, AtFlags::REMOVEDIR)
        .with_context(|| format!("removing {}", parent.join(key).display()))?;
    Ok(Some(tally))
}

/// Removes everything in `dir`, counting it.
fn empty(dir: &OwnedFd, depth: usize, tally: &mut Tally) -> Result<()> {
    for name in names(dir)? {
        let kind = kind_at(dir, &name)?;
        if kind == FileType::Directory {
            anyhow::ensure!(
                depth < MAX_DEPTH,
                "folders are nested deeper than {MAX_DEPTH}: remove them by hand"
            );
            let inner = open_dir_at(dir, &name)
                .with_context(|| format!("opening {}", name.to_string_lossy()))?;
            empty(&inner, depth + 1, tally)?;
            drop(inner);
            rustix::fs::unlinkat(dir, &name, AtFlags::REMOVEDIR)
                .with_context(|| format!("removing {}", name.to_string_lossy()))?;
            tally.folders += 1;
        } else {
            if kind == FileType::RegularFile {
                let stat = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)?;
                tally.files += 1;
                tally.bytes += stat.st_size as u64;
            } else {
                tally.others += 1;
            }
            rustix::fs::unlinkat(dir, &name, AtFlags::empty())
                .with_context(|| format!("removing {}", name.to_string_lossy()))?;
        }
    }
    Ok(())
}

/// One entry met in a walk: its path from the walked folder.
enum Found<'a> {
    Folder(&'a Path),
    File {
        path: &'a Path,
        dir: &'a OwnedFd,
        name: &'a OsStr,
        size: u64,
    },
    Other,
}

/// Walks the folder `dir` (at `rel`), folders before what they hold.
fn walk(
    dir: &OwnedFd,
    rel: &Path,
    depth: usize,
    visit: &mut dyn FnMut(Found<'_>) -> Result<()>,
) -> Result<()> {
    let mut names = names(dir)?;
    names.sort();
    for name in names {
        let path = rel.join(&name);
        let stat = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
            .with_context(|| format!("{}", path.display()))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => {
                anyhow::ensure!(
                    depth < MAX_DEPTH,
                    "{}: folders are nested deeper than {MAX_DEPTH}",
                    path.display()
                );
                visit(Found::Folder(&path))?;
                let inner =
                    open_dir_at(dir, &name).with_context(|| format!("{}", path.display()))?;
                walk(&inner, &path, depth + 1, visit)?;
            }
            FileType::RegularFile => visit(Found::File {
                path: &path,
                dir,
                name: &name,
                size: stat.st_size as u64,
            })?,
            _ => visit(Found::Other)?,
        }
    }
    Ok(())
}

fn open_dir(path: &Path) -> rustix::io::Result<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
}

fn open_dir_at(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The names in an open folder (`.` and `..` left out).
fn names(dir: &OwnedFd) -> Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_owned());
        }
    }
    Ok(names)
}

fn kind_at(dir: &OwnedFd, name: &OsStr) -> Result<FileType> {
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .with_context(|| name.to_string_lossy().into_owned())?;
    Ok(FileType::from_raw_mode(stat.st_mode))
}

/// What an archive holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Exported {
    /// Keys, and the bytes of their values.
    pub keys: u64,
    /// Bytes of the keys' values.
    pub value_bytes: u64,
    /// Each root's folder archived and what it held.
    pub folders: Vec<(String, Tally)>,
}

/// One line of `keyvalue.jsonl`: a key, its value as base64 (the members
/// in the order a sorted JSON object has them).
#[derive(serde::Serialize)]
struct KeyValueLine<'a> {
    bucket: &'a str,
    key: &'a str,
    plugin: &'a str,
    value: String,
}

/// Writes a new archive at `out` (refused if it exists; mode 0600) of
/// `entries` and tenant `key`'s folder in each of `roots`, at most
/// `limit` bytes of values and files; nothing is left at `out` when it
/// fails.
pub fn write_archive(
    out: &Path,
    key: &str,
    entries: &[Entry],
    roots: &[TenantRoot],
    limit: u64,
) -> Result<Exported> {
    let mut exported = Exported {
        keys: entries.len() as u64,
        value_bytes: entries.iter().map(|e| e.value.len() as u64).sum(),
        folders: Vec::new(),
    };
    // Measured first: refused before anything is written.
    let mut total = exported.value_bytes;
    for root in roots {
        if let Some(tally) = measure(&root.parent, key)? {
            total += tally.bytes;
            exported.folders.push((root.name.clone(), tally));
        }
    }
    anyhow::ensure!(
        total <= limit,
        "the tenant's data is {total} bytes of values and files, over the export's limit of \
         {limit} bytes (--max-mb); nothing was written"
    );
    let file = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(out)
            .with_context(|| match out.exists() {
                true => format!(
                    "{} exists: an export never overwrites a file",
                    out.display()
                ),
                false => format!("creating {}", out.display()),
            })?
    };
    let written = archive(io::BufWriter::new(file), key, entries, roots, limit);
    if written.is_err() {
        let _ = std::fs::remove_file(out);
    }
    written.with_context(|| format!("writing {}", out.display()))?;
    Ok(exported)
}

fn archive(
    out: impl Write,
    key: &str,
    entries: &[Entry],
    roots: &[TenantRoot],
    limit: u64,
) -> Result<()> {
    let mut tar = tar::Builder::new(out);
    let mut lines = Vec::new();
    for entry in entries {
        let line = KeyValueLine {
            bucket: &entry.bucket,
            key: &entry.key,
            plugin: &entry.plugin,
            value: base64::engine::general_purpose::STANDARD.encode(&entry.value),
        };
        serde_json::to_writer(&mut lines, &line)?;
        lines.push(b'\n');
    }
    let mut budget = limit.saturating_sub(entries.iter().map(|e| e.value.len() as u64).sum());
    tar.append_data(
        &mut header(tar::EntryType::Regular, lines.len() as u64, 0o600),
        "keyvalue.jsonl",
        &lines[..],
    )?;
    for root in roots {
        let Some((_, dir)) = tenant_folder(&root.parent, key)? else {
            continue;
        };
        let base = Path::new("roots").join(&root.name);
        tar.append_data(
            &mut header(tar::EntryType::Directory, 0, 0o700),
            &base,
            io::empty(),
        )?;
        walk(&dir, Path::new(""), 0, &mut |found| {
            match found {
                Found::Folder(path) => tar.append_data(
                    &mut header(tar::EntryType::Directory, 0, 0o700),
                    base.join(path),
                    io::empty(),
                )?,
                Found::File {
                    path, dir, name, ..
                } => {
                    let Some((file, size)) = open_file(dir, name)? else {
                        return Ok(());
                    };
                    anyhow::ensure!(
                        size <= budget,
                        "the tenant's files grew past the export's limit of {limit} bytes while \
                         it was written"
                    );
                    budget -= size;
                    tar.append_data(
                        &mut header(tar::EntryType::Regular, size, 0o600),
                        base.join(path),
                        Exact(std::fs::File::from(file).take(size), size),
                    )?;
                }
                Found::Other => {}
            }
            Ok(())
        })?;
    }
    tar.into_inner()?.flush()?;
    Ok(())
}

/// Opens regular file `name` in `dir` (not through a symlink, nor a FIFO
/// that would block); its size. `None` when it is gone or no longer a
/// regular file.
fn open_file(dir: &OwnedFd, name: &OsStr) -> Result<Option<(OwnedFd, u64)>> {
    let file = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(file) => file,
        Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::LOOP) => return Ok(None),
        Err(e) => return Err(e).with_context(|| name.to_string_lossy().into_owned()),
    };
    let stat = rustix::fs::fstat(&file)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    Ok(Some((file, stat.st_size as u64)))
}

fn header(kind: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    header
}

/// A reader that gives exactly its count of bytes, or fails (a file that
/// shrank while archived would otherwise break the archive).
struct Exact<R>(R, u64);

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.read(buf)?;
        if n == 0 && self.1 > 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a file shrank while it was archived",
            ));
        }
        self.1 -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tenant_tree(parent: &Path, outside: &Path) {
        let alice = parent.join("alice");
        std::fs::create_dir_all(alice.join("notes/deep")).unwrap();
        std::fs::write(alice.join("a.txt"), b"hello").unwrap();
        std::fs::write(alice.join("notes/deep/b.bin"), [0u8; 300]).unwrap();
        std::fs::write(outside.join("secret"), b"not alice's").unwrap();
        symlink(outside, alice.join("escape")).unwrap();
        symlink(outside.join("secret"), alice.join("notes/secret")).unwrap();
        std::fs::create_dir(parent.join("bob")).unwrap();
        std::fs::write(parent.join("bob/x"), b"bob's").unwrap();
        // Not tenants: a stray file, a name that is no key, a symlink.
        std::fs::write(parent.join("stray"), b"").unwrap();
        std::fs::create_dir(parent.join("Not-A-Key")).unwrap();
        symlink(outside, parent.join("carol")).unwrap();
    }

    #[test]
    fn tenants_are_the_folders_named_by_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let (parent, outside) = (dir.path().join("p"), dir.path().join("o"));
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&parent).unwrap();
        tenant_tree(&parent, &outside);
        let hashed = crate::tenant::encode(&"x".repeat(300));
        std::fs::create_dir(parent.join(&hashed)).unwrap();
        let mut expected = vec!["alice".to_owned(), "bob".into(), hashed];
        expected.sort();
        assert_eq!(tenant_folders(&parent).unwrap(), expected);
        assert!(tenant_folders(&dir.path().join("missing"))
            .unwrap()
            .is_empty());
        assert!(!is_tenant_key("..") && !is_tenant_key("~abc") && !is_tenant_key("A"));
        let tally = measure(&parent, "alice").unwrap().unwrap();
        assert_eq!(
            tally,
            Tally {
                files: 2,
                folders: 2,
                bytes: 305,
                others: 2
            }
        );
        assert_eq!(measure(&parent, "nobody").unwrap(), None);
        // A tenant's "folder" that is a symlink is not followed.
        assert!(measure(&parent, "carol").is_err());
    }

    #[test]
    fn an_archive_holds_the_keys_and_the_folders_and_nothing_outside() {
        let dir = tempfile::tempdir().unwrap();
        let (parent, outside) = (dir.path().join("p"), dir.path().join("o"));
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&parent).unwrap();
        tenant_tree(&parent, &outside);
        let roots = [
            TenantRoot {
                name: "files".into(),
                parent: parent.clone(),
            },
            TenantRoot {
                name: "empty".into(),
                parent: dir.path().join("none"),
            },
        ];
        let entries = [Entry {
            plugin: "memory".into(),
            bucket: "graph".into(),
            key: "nul\0key".into(),
            value: vec![0, 1, 255],
        }];
        let out = dir.path().join("alice.tar");
        let done = write_archive(&out, "alice", &entries, &roots, 1 << 20).unwrap();
        assert_eq!(done.keys, 1);
        assert_eq!(done.folders.len(), 1);
        let mut archive = tar::Archive::new(std::fs::File::open(&out).unwrap());
        let mut found = std::collections::BTreeMap::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).unwrap();
            found.insert(path, bytes);
        }
        let names: Vec<&str> = found.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "keyvalue.jsonl",
                "roots/files",
                "roots/files/a.txt",
                "roots/files/notes",
                "roots/files/notes/deep",
                "roots/files/notes/deep/b.bin",
            ]
        );
        let line: serde_json::Value = serde_json::from_slice(&found["keyvalue.jsonl"]).unwrap();
        assert_eq!(
            line,
            serde_json::json!({"plugin": "memory", "bucket": "graph", "key": "nul\0key", "value": "AAH/"})
        );
        assert_eq!(found["roots/files/a.txt"], b"hello");
        // Never overwritten; over the limit, nothing is written.
        assert!(write_archive(&out, "alice", &entries, &roots, 1 << 20).is_err());
        let small = dir.path().join("small.tar");
        let err = write_archive(&small, "alice", &entries, &roots, 100).unwrap_err();
        assert!(format!("{err:#}").contains("limit of 100 bytes"), "{err:#}");
        assert!(!small.exists());
    }

    #[test]
    fn removing_a_tenant_removes_its_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        let (parent, outside) = (dir.path().join("p"), dir.path().join("o"));
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::create_dir_all(&parent).unwrap();
        tenant_tree(&parent, &outside);
        let removed = remove(&parent, "alice").unwrap().unwrap();
        assert_eq!(
            (
                removed.files,
                removed.folders,
                removed.bytes,
                removed.others
            ),
            (2, 2, 305, 2)
        );
        assert!(!parent.join("alice").exists());
        assert_eq!(
            std::fs::read(outside.join("secret")).unwrap(),
            b"not alice's"
        );
        assert_eq!(std::fs::read(parent.join("bob/x")).unwrap(), b"bob's");
        assert_eq!(remove(&parent, "alice").unwrap(), None);
        assert!(remove(&parent, "carol").is_err());
        assert!(outside.exists());
        assert!(remove(&parent, "..").is_err());
    }
}
