//! The plugin folder: which files are plugins, their names, and reading a
//! component with its manifest (checked, off the async workers).

use crate::config::Manifest;
use crate::runtime::ComponentSource;
use crate::skills::{Limits, Skills};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};

/// Reads a component file, its manifest and (with `skills`' limits) its
/// skills (`NAME.skills` beside it), checked (regular files, at most
/// `limit` bytes; skills as [`crate::skills`] bounds them) and off the
/// async workers; `None` when the component file does not exist.
pub async fn read_plugin(
    path: &Path,
    limit: u64,
    skills: Option<Limits>,
) -> Result<Option<(ComponentSource, Manifest, Skills)>> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let bytes = match crate::files::read_regular(&path, limit) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let manifest = Manifest::beside(&path)?;
        let name = plugin_name(&path)?;
        let skills = match skills {
            Some(limits) => crate::skills::read_folder(&skills_folder(&path), &name, &limits),
            None => Skills::default(),
        };
        Ok(Some((ComponentSource::new(bytes), manifest, skills)))
    })
    .await?
}

/// The skills folder of the component at `path`: `NAME.skills` beside
/// `NAME.wasm`.
pub fn skills_folder(path: &Path) -> PathBuf {
    path.with_extension(&crate::skills::FOLDER_SUFFIX[1..])
}

/// The name of a hidden file beside plugin `name` in `folder`, where its
/// component or manifest is written before [`install`] moves it in place
/// (the watcher ignores hidden files).
pub fn staging_path(folder: &Path, name: &str, what: &str) -> PathBuf {
    folder.join(format!(".{name}.{what}.staged"))
}

/// Puts plugin `name` into `folder` as the watcher expects it: its
/// manifest first (`NAME.toml`, or a stale one removed when `manifest` is
/// `None`), then its component, moved from `staged` (see
/// [`staging_path`]); each in one step, so no half-written file is ever
/// loaded.
pub async fn install(
    folder: &Path,
    name: &str,
    staged: &Path,
    manifest: Option<&str>,
) -> Result<()> {
    let component = folder.join(format!("{name}.wasm"));
    let manifest_file = Manifest::path_for(&component);
    match manifest {
        Some(text) => {
            let staged_manifest = staging_path(folder, name, "toml");
            let installing = || format!("installing {}", manifest_file.display());
            tokio::fs::write(&staged_manifest, text)
                .await
                .with_context(installing)?;
            tokio::fs::rename(&staged_manifest, &manifest_file)
                .await
                .with_context(installing)?;
        }
        None => match tokio::fs::remove_file(&manifest_file).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", manifest_file.display()))
            }
            _ => {}
        },
    }
    tokio::fs::rename(staged, &component)
        .await
        .with_context(|| format!("installing {}", component.display()))
}

/// The `*.wasm` entries directly in `dir` (folders aside), sorted. What
/// is not a regular file is refused, with the reason, when it is loaded.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the plugin folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| is_plugin_file(p) && !p.is_dir())
        .collect();
    files.sort();
    Ok(files)
}

/// The component a changed file in plugin folder `dir` belongs to:
/// itself for `*.wasm`, the component beside it for a manifest (`*.toml`)
/// or a skills folder (`NAME.skills`, and anything within it); `None` for
/// anything else.
pub fn component_of(dir: &Path, path: &Path) -> Option<PathBuf> {
    let first = path.strip_prefix(dir).ok()?.components().next()?;
    let top = dir.join(first);
    let skills = top
        .extension()
        .is_some_and(|x| x == &crate::skills::FOLDER_SUFFIX[1..]);
    if skills && !is_hidden(&top) {
        return Some(top.with_extension("wasm"));
    }
    if top != path {
        return None;
    }
    if is_plugin_file(path) {
        return Some(path.to_owned());
    }
    let manifest = path.extension().is_some_and(|x| x == "toml");
    let wasm = path.with_extension("wasm");
    (manifest && is_plugin_file(&wasm)).then_some(wasm)
}

/// Whether `path` names a plugin component: `*.wasm`, not hidden (editors
/// and copy tools write hidden temporary files).
pub fn is_plugin_file(path: &Path) -> bool {
    !is_hidden(path) && path.extension().is_some_and(|x| x == "wasm")
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// A plugin's name: its file stem, which must be letters, digits, `-` or `_`.
pub fn plugin_name(path: &Path) -> Result<String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let valid = crate::names::is_valid(stem);
    anyhow::ensure!(
        valid,
        "{}: a plugin file name must be letters, digits, '-' or '_' before .wasm",
        path.display()
    );
    Ok(stem.to_owned())
}
