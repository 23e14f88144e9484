//! A plugin's skills as one layer of its artifact
//! (`application/vnd.wasm-mcp.skills.v1+json`): every file of every
//! served skill, by path within the skills folder, its bytes in base64.
//! The manifest names the layer by digest, so a signature over the
//! manifest covers the skills too. A pull checks every path (no `..`, no
//! hidden or empty segment, a valid skill name first) and every limit of
//! [`crate::skills`] before anything is written, then swaps the folder in
//! whole.

use crate::skills::{self, Limits, Skills};
use anyhow::{bail, ensure, Context as _, Result};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The skills layer's media type.
pub const SKILLS_LAYER: &str = "application/vnd.wasm-mcp.skills.v1+json";

/// The largest skills layer read under `limits`: the most a plugin's
/// skills may hold, in base64, with room for the paths.
pub fn max_layer_bytes(limits: &Limits) -> u64 {
    (limits.plugin_bytes / 3 + 1).saturating_mul(4) + (16 << 20)
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Layer {
    files: Vec<LayerFile>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    path: String,
    base64: String,
}

/// The files of a skills folder: path (`skill/path/in/it`) to bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

/// The layer of `skills`, or `None` when there are none.
pub fn encode(skills: &Skills) -> Option<Vec<u8>> {
    let files: Vec<LayerFile> = skills
        .files()
        .map(|(skill, file)| LayerFile {
            path: format!("{}/{}", skill.name, file.path),
            base64: B64.encode(&file.bytes),
        })
        .collect();
    (!files.is_empty()).then(|| serde_json::to_vec(&Layer { files }).expect("serializes"))
}

/// The files a layer holds, each path and limit checked (`limits`).
pub fn decode(layer: &[u8], limits: &Limits) -> Result<Files> {
    let layer: Layer = serde_json::from_slice(layer).context("its skills layer is not valid")?;
    ensure!(
        layer.files.len() <= limits.skills * skills::MAX_FILES,
        "its skills layer holds more than {} files",
        limits.skills * skills::MAX_FILES
    );
    let mut files = Files::new();
    let mut total = 0u64;
    for file in layer.files {
        check_path(&file.path)?;
        let bytes = B64
            .decode(&file.base64)
            .with_context(|| format!("skills layer: {} is not base64", file.path))?;
        ensure!(
            bytes.len() as u64 <= limits.file_bytes,
            "skills layer: {} is over {} bytes ([server] skill_file_kb)",
            file.path,
            limits.file_bytes
        );
        total += bytes.len() as u64;
        ensure!(
            total <= limits.plugin_bytes,
            "its skills are over {} bytes ([server] skills_mb)",
            limits.plugin_bytes
        );
        ensure!(
            files.insert(file.path.clone(), bytes).is_none(),
            "skills layer: {} twice",
            file.path
        );
    }
    Ok(files)
}

/// Refuses a path that could leave the skills folder, hide, or name no
/// skill.
fn check_path(path: &str) -> Result<()> {
    let segments: Vec<&str> = path.split('/').collect();
    let bad = segments.len() < 2
        || segments.len() > skills::MAX_DEPTH + 2
        || !skills::is_valid_name(segments[0])
        || segments.iter().any(|s| {
            s.is_empty() || s.starts_with('.') || s.len() > 255 || s.contains(['\0', '\\'])
        });
    if bad {
        bail!(
            "skills layer: the path {:?} is not a file within a skill",
            crate::text::excerpt(path)
        );
    }
    Ok(())
}

/// The files of the skills `skills` serves, by path in their folder.
pub fn files_of(skills: &Skills) -> Files {
    skills
        .files()
        .map(|(skill, file)| (format!("{}/{}", skill.name, file.path), file.bytes.to_vec()))
        .collect()
}

/// Whether the skills folder `folder` serves exactly `files` now.
pub fn matches_folder(folder: &Path, name: &str, files: &Files, limits: &Limits) -> bool {
    let held = skills::read_folder(folder, name, limits);
    if !held.problems.is_empty() {
        return false;
    }
    files_of(&held) == *files
}

/// Puts `files` in place as the skills folder `folder` (none: removes
/// it), written beside it under a hidden name first and swapped in, so
/// the watcher never reads half of it. Blocking.
pub fn install(folder: &Path, files: &Files) -> Result<()> {
    let parent = folder.parent().context("a skills folder has a parent")?;
    let base = folder
        .file_name()
        .and_then(|n| n.to_str())
        .context("a skills folder has a name")?;
    let pid = std::process::id();
    let staged = parent.join(format!(".{base}.{pid}.staged"));
    let old = parent.join(format!(".{base}.{pid}.old"));
    remove(&staged)?;
    remove(&old)?;
    if !files.is_empty() {
        std::fs::create_dir(&staged).with_context(|| format!("creating {}", staged.display()))?;
        for (path, bytes) in files {
            let target = staged.join(path);
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&target, bytes)
                .with_context(|| format!("writing {}", target.display()))?;
        }
    }
    if std::fs::symlink_metadata(folder).is_ok() {
        std::fs::rename(folder, &old).with_context(|| format!("moving {}", folder.display()))?;
    }
    if !files.is_empty() {
        std::fs::rename(&staged, folder)
            .with_context(|| format!("installing {}", folder.display()))?;
    }
    remove(&old)
}

/// Removes `path` (a folder and what is in it, or a file or symlink) if
/// it exists; a symlink is removed, never followed.
fn remove(path: &Path) -> Result<()> {
    let removed = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => Err(e),
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
    };
    removed.with_context(|| format!("removing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_round_trips_and_hostile_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("p.skills");
        std::fs::create_dir_all(source.join("s/refs")).unwrap();
        std::fs::write(
            source.join("s/SKILL.md"),
            "---\nname: s\ndescription: d\n---\n",
        )
        .unwrap();
        std::fs::write(source.join("s/refs/a.md"), "A").unwrap();
        let limits = Limits::default();
        let layer = encode(&skills::read_folder(&source, "p", &limits)).unwrap();
        let files = decode(&layer, &limits).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["s/SKILL.md", "s/refs/a.md"]
        );
        let target = dir.path().join("q.skills");
        assert!(!matches_folder(&target, "q", &files, &limits));
        install(&target, &files).unwrap();
        assert!(matches_folder(&target, "q", &files, &limits));
        install(&target, &Files::new()).unwrap();
        assert!(!target.exists());
        assert!(encode(&skills::read_folder(&target, "q", &limits)).is_none());
        for path in [
            "../x/SKILL.md",
            "s/../../etc",
            "s//a",
            "s/.hidden",
            "Bad/SKILL.md",
            "s",
            "/s/a",
            "s/a\\b",
        ] {
            let layer = format!(r#"{{"files":[{{"path":{path:?},"base64":""}}]}}"#);
            assert!(decode(layer.as_bytes(), &limits).is_err(), "{path}");
        }
    }
}
