//! `wasm-mcp dev`: build plugins from source, serve them, and rebuild one
//! when its sources change. A build installs its component into the served
//! folder by an atomic rename, and hot reload takes it from there; a failed
//! build is shown on stderr and the last good build keeps serving.
//! `wasm-mcp build` is one such build, into the source folder.

mod build_error;
mod serve;
mod toolchain;
mod wit_docs;

pub use serve::serve;
pub use toolchain::{write_wit, Contract, Toolchain, WIT, WIT_FILES};

use anyhow::{bail, Context as _, Result};
use notify::event::{EventKind, ModifyKind};
use notify::{RecursiveMode, Watcher as _};
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long sources must be quiet before a rebuild starts.
const QUIET: Duration = Duration::from_millis(100);

/// Folders whose changes never trigger a rebuild: build output, caches,
/// dependencies, version control.
const IGNORED: &[&str] = &["target", "node_modules", "__pycache__", "dist", "build"];

/// One plugin built from source.
pub struct Source {
    /// The source folder.
    pub dir: PathBuf,
    /// The plugin's name: what `serve` would call the component the
    /// toolchain makes (a Cargo package's library name, else the folder's).
    pub name: String,
    /// How it is built.
    pub toolchain: Toolchain,
}

/// The folders `dev` works in: the contract for the generators, and the
/// plugin folder it serves.
pub struct Workspace {
    /// Private (0700, a fresh random name), removed when dropped: held
    /// for that.
    _root: tempfile::TempDir,
    /// The folder of built components that the server loads and watches.
    pub plugins: PathBuf,
    wit: PathBuf,
    release: bool,
    /// How its messages on stderr begin (`wasm-mcp dev`, `wasm-mcp build`).
    label: &'static str,
    /// Whether skills are linked (`dev`: served as they are edited) or
    /// copied (`build`: the output stands alone).
    link_skills: bool,
}

impl Workspace {
    /// A fresh workspace under the system's temporary folder: a new
    /// folder of a random name that only this user may enter (another
    /// local user can neither predict it nor prepare it), removed when the
    /// workspace is dropped. Its builds link each source's skills
    /// (`link_skills`) or copy them.
    pub fn create(release: bool, label: &'static str, link_skills: bool) -> Result<Self> {
        let root = crate::files::private_temp_dir("wasm-mcp-dev-")?;
        let plugins = root.path().join("plugins");
        let wit = root.path().join("wit");
        std::fs::create_dir(&plugins)
            .and_then(|()| std::fs::create_dir(&wit))
            .and_then(|()| toolchain::write_wit(&wit))
            .with_context(|| format!("creating {}", root.path().display()))?;
        Ok(Workspace {
            _root: root,
            plugins,
            wit,
            release,
            label,
            link_skills,
        })
    }

    /// Builds `source` and installs the component for serving. Errors say
    /// why; the previously installed component stays in place.
    pub async fn build(&self, source: &Source) -> Result<()> {
        self.build_into(source, &self.plugins).await
    }

    /// Builds `source` and installs the component, `NAME.wasm`, with its
    /// manifest `NAME.toml` if the source folder has one, into `folder`
    /// (an atomic rename: what was there stays in place if the build
    /// fails).
    pub async fn build_into(&self, source: &Source, folder: &Path) -> Result<()> {
        let started = Instant::now();
        eprintln!(
            "{}: building {} ({})",
            self.label,
            source.name,
            source.dir.display()
        );
        let staging = crate::reload::folder::staging_path(folder, &source.name, "wasm");
        let built = source
            .toolchain
            .build(&source.dir, &staging, &self.wit, self.release)
            .await;
        if let Err(e) = built {
            let _ = tokio::fs::remove_file(&staging).await;
            return Err(e);
        }
        let manifest = source_manifest(source).await?;
        if folder == source.dir {
            // The manifest is there already.
            let component = folder.join(format!("{}.wasm", source.name));
            tokio::fs::rename(&staging, &component)
                .await
                .with_context(|| format!("installing {}", component.display()))?;
        } else {
            if self.link_skills {
                link_skills(source, folder).await?;
            } else {
                self.copy_skills(source, folder).await?;
            }
            crate::reload::folder::install(folder, &source.name, &staging, manifest.as_deref())
                .await?;
        }
        eprintln!(
            "{}: built {} in {:.1}s ({})",
            self.label,
            source.name,
            started.elapsed().as_secs_f64(),
            folder.join(format!("{}.wasm", source.name)).display(),
        );
        Ok(())
    }

    /// Rebuilds `source` whenever its files change, until the process ends;
    /// each build's outcome is also given to `built` (the plugin's name,
    /// and why it failed).
    pub async fn rebuild_on_change(
        &self,
        source: Source,
        built: impl Fn(&str, Result<(), String>) + Send,
    ) -> Result<()> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })?;
        watcher
            .watch(&source.dir, RecursiveMode::Recursive)
            .with_context(|| format!("watching {}", source.dir.display()))?;
        loop {
            // Wait for a change that matters, then for the sources to be quiet.
            loop {
                match rx.recv().await {
                    Some(Ok(event)) if triggers_build(&event, &source.dir) => break,
                    Some(_) => continue,
                    None => return Ok(()),
                }
            }
            while let Ok(Some(_)) = tokio::time::timeout(QUIET, rx.recv()).await {}
            match self.build(&source).await {
                Ok(()) => built(&source.name, Ok(())),
                Err(e) => {
                    eprintln!("{}: {} did not build: {e:#}", self.label, source.name);
                    built(&source.name, Err(format!("{e:#}")));
                }
            }
        }
    }
}

/// `wasm-mcp build`: builds each source folder once, as `dev` does (the
/// same toolchain, and for Python and JavaScript the world that covers
/// what the module defines; `world`, when given, must be that one), and
/// installs `NAME.wasm` into `out`, else into the source folder itself.
/// Stops at the first folder that does not build.
pub async fn build(
    dirs: Vec<PathBuf>,
    out: Option<PathBuf>,
    release: bool,
    world: Option<String>,
) -> Result<()> {
    let sources = tokio::task::spawn_blocking(move || sources(&dirs)).await??;
    if let Some(world) = &world {
        for source in &sources {
            source.toolchain.check_world(world)?;
        }
    }
    let out = match out {
        Some(out) => {
            tokio::fs::create_dir_all(&out)
                .await
                .with_context(|| format!("creating {}", out.display()))?;
            Some(tokio::fs::canonicalize(&out).await?)
        }
        None => None,
    };
    let workspace = Workspace::create(release, "wasm-mcp build", false)?;
    for source in &sources {
        let folder = out.as_deref().unwrap_or(&source.dir);
        if let Err(e) = workspace.build_into(source, folder).await {
            // The tool's whole output is above; its first error is repeated.
            let output = format!("{e:#}");
            match build_error::first_error(&output) {
                Some(first) => bail!("{} did not build:\n{first}", source.name),
                None => bail!("{} did not build: {output}", source.name),
            }
        }
    }
    Ok(())
}

/// Reads the source folders given on the command line: each must exist,
/// have a known toolchain and a distinct name.
pub fn sources(dirs: &[PathBuf]) -> Result<Vec<Source>> {
    let mut names = HashSet::new();
    let mut sources = Vec::new();
    for dir in dirs {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("plugin source folder {}", dir.display()))?;
        let toolchain = Toolchain::detect(&dir)?;
        let name = match toolchain {
            Toolchain::Cargo => cargo_library_name(&dir)?,
            _ => plugin_name_for(&dir),
        };
        if !names.insert(name.clone()) {
            bail!("two source folders are both named {name}; plugin names must differ");
        }
        sources.push(Source {
            dir,
            name,
            toolchain,
        });
    }
    Ok(sources)
}

/// The name of the component Cargo builds in `dir`: its `[lib] name`, else
/// its package name with `-` as `_` (as in `target/wasm32-wasip2/*/NAME.wasm`).
fn cargo_library_name(dir: &Path) -> Result<String> {
    #[derive(serde::Deserialize)]
    struct Manifest {
        package: Option<Named>,
        lib: Option<Named>,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        name: Option<String>,
    }
    let path = dir.join("Cargo.toml");
    let text = crate::files::read_regular_text(&path, crate::files::MAX_CONFIG_BYTES)
        .with_context(|| format!("reading {}", path.display()))?;
    let manifest: Manifest =
        toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    let name = manifest
        .lib
        .and_then(|l| l.name)
        .or_else(|| manifest.package.and_then(|p| p.name))
        .with_context(|| format!("{} names no package", path.display()))?;
    Ok(name.replace('-', "_"))
}

/// The plugin name for a source folder: its name, with anything but
/// letters, digits, `-` and `_` replaced by `-`.
fn plugin_name_for(dir: &Path) -> String {
    let raw = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.is_empty() {
        "plugin".into()
    } else {
        name
    }
}

/// Whether a file event in a source folder calls for a rebuild: a content
/// change to a file outside build output, caches and hidden folders.
fn triggers_build(event: &notify::Event, root: &Path) -> bool {
    let changes_content = matches!(
        event.kind,
        EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
    );
    changes_content && event.paths.iter().any(|p| is_source_path(p, root))
}

/// The folder of a plugin's skills in its source folder: served as they
/// are, never built.
const SKILLS: &str = "skills";

impl Workspace {
    /// Copies the skills of `source` (its `skills/` folder, as the host
    /// would serve them; what it would refuse is said and left out) into
    /// `folder` as `NAME.skills`, replacing what was there.
    async fn copy_skills(&self, source: &Source, folder: &Path) -> Result<()> {
        let skills = source.dir.join(SKILLS);
        if !tokio::fs::metadata(&skills).await.is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        let target = served_skills(source, folder);
        let (name, label) = (source.name.clone(), self.label);
        tokio::task::spawn_blocking(move || {
            let read = crate::skills::read_folder(&skills, &name, &Default::default());
            for problem in &read.problems {
                eprintln!("{label}: {name}: {problem}");
            }
            let files = crate::oci::skills_layer::files_of(&read);
            crate::oci::skills_layer::install(&target, &files)
        })
        .await?
    }
}

/// Where `folder` holds the skills of `source`'s component: `NAME.skills`.
fn served_skills(source: &Source, folder: &Path) -> PathBuf {
    crate::reload::folder::skills_folder(&folder.join(format!("{}.wasm", source.name)))
}

/// Serves the skills of `source` (its `skills/` folder) from `folder`
/// through a symlink `NAME.skills` to them, made once: an edit there is
/// served at once, without a build.
async fn link_skills(source: &Source, folder: &Path) -> Result<()> {
    let skills = source.dir.join(SKILLS);
    let link = served_skills(source, folder);
    if !tokio::fs::metadata(&skills).await.is_ok_and(|m| m.is_dir())
        || tokio::fs::symlink_metadata(&link).await.is_ok()
    {
        return Ok(());
    }
    let target = tokio::fs::canonicalize(&skills)
        .await
        .with_context(|| format!("reading {}", skills.display()))?;
    tokio::fs::symlink(&target, &link)
        .await
        .with_context(|| format!("linking {}", link.display()))
}

fn is_source_path(path: &Path, root: &Path) -> bool {
    let Ok(relative) = path.strip_prefix(root) else {
        return false;
    };
    let parts: Vec<_> = relative.components().collect();
    if parts.first().is_some_and(|c| c.as_os_str() == SKILLS) {
        return false;
    }
    let ignored_dir = parts.iter().any(|c| match c {
        Component::Normal(name) => {
            let name = name.to_string_lossy();
            name.starts_with('.') || IGNORED.contains(&name.as_ref())
        }
        _ => false,
    });
    let file = relative.to_string_lossy();
    let editor_temp = file.ends_with('~') || file.ends_with(".swp") || file.ends_with(".tmp");
    // A component is build output (a build.sh writes it beside itself).
    let component = file.ends_with(".wasm");
    !ignored_dir && !editor_temp && !component
}

/// What clients are told of a plugin that did not build: whether an
/// earlier build still serves, and the compiler's output, its first error
/// leading and backtraces left out.
pub fn build_notice(plugin: &str, why: &str, serving: bool) -> String {
    let state = if serving {
        "the last good build keeps serving"
    } else {
        "it is not served until it builds"
    };
    let summary = build_error::summarize(why);
    format!(
        "wasm-mcp dev: plugin {plugin} did not build; {state}:\n{}",
        crate::text::head(&summary, DEV_ERROR_BYTES)
    )
}

/// The most of a build error sent to clients under `dev`.
const DEV_ERROR_BYTES: usize = 8 << 10;

/// The manifest in a source folder (`NAME.toml`), checked; `None` when it
/// has none.
async fn source_manifest(source: &Source) -> Result<Option<String>> {
    let path = source.dir.join(format!("{}.toml", source.name));
    let read = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            crate::files::read_regular_text(&path, crate::files::MAX_MANIFEST_BYTES)
        })
        .await?
    };
    let text = match read {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    crate::config::Manifest::parse(&text)
        .with_context(|| format!("invalid manifest {}", path.display()))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_source_files_trigger_a_build() {
        let root = Path::new("/src/hello");
        assert!(is_source_path(Path::new("/src/hello/src/lib.rs"), root));
        assert!(is_source_path(Path::new("/src/hello/Cargo.toml"), root));
        assert!(!is_source_path(
            Path::new("/src/hello/target/debug/x.wasm"),
            root
        ));
        assert!(!is_source_path(Path::new("/src/hello/.git/index"), root));
        assert!(!is_source_path(
            Path::new("/src/hello/__pycache__/app.pyc"),
            root
        ));
        assert!(!is_source_path(
            Path::new("/src/hello/src/.lib.rs.swp"),
            root
        ));
        assert!(!is_source_path(Path::new("/src/hello/app.py~"), root));
        assert!(!is_source_path(Path::new("/src/hello/hello.wasm"), root));
        assert!(is_source_path(Path::new("/src/hello/plugin.c"), root));
        assert!(!is_source_path(Path::new("/elsewhere/lib.rs"), root));
    }

    #[test]
    fn plugin_names_come_from_folder_names() {
        assert_eq!(plugin_name_for(Path::new("/a/hello-rust")), "hello-rust");
        assert_eq!(
            plugin_name_for(Path::new("/a/my plugin.v2")),
            "my-plugin-v2"
        );
    }
}
