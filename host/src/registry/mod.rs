//! The loaded plugins and the catalogue merged from them. Swapped whole and
//! atomically: a reader holds an `Arc<Catalogue>` that never changes under it.

mod catalogue;
pub mod pagination;
mod uri_template;

pub use catalogue::{Catalogue, PluginEntry, PromptEntry, ResourceEntry, TemplateEntry, ToolEntry};
pub use uri_template::UriTemplate;

use crate::runtime::{LoadedPlugin, Runtime};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The plugins the host serves.
pub struct Registry {
    runtime: Arc<Runtime>,
    current: RwLock<Arc<Catalogue>>,
}

impl Registry {
    /// An empty registry.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Registry {
            runtime,
            current: RwLock::new(Arc::new(Catalogue::default())),
        }
    }

    /// The catalogue as it is now.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Installs `catalogue`, returning the previous one.
    pub fn swap(&self, catalogue: Catalogue) -> Arc<Catalogue> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *current, Arc::new(catalogue))
    }

    /// The runtime plugins run in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Loads one component file and asks for its lists.
    pub async fn load_file(&self, path: &Path) -> Result<PluginEntry> {
        let name = plugin_name(path)?;
        let bytes = tokio::fs::read(path)
            .await
            .with_context(|| format!("reading {}", path.display()))?;
        let plugin = self
            .runtime
            .load(&name, bytes)
            .await
            .with_context(|| format!("loading {}", path.display()))?;
        Self::describe(plugin).await
    }

    /// Asks a loaded plugin for its lists.
    pub async fn describe(plugin: Arc<LoadedPlugin>) -> Result<PluginEntry> {
        let listing = plugin
            .list()
            .await
            .with_context(|| format!("listing what plugin {} offers", plugin.name()))?;
        Ok(PluginEntry {
            plugin,
            listing: Arc::new(listing),
        })
    }

    /// Loads every `*.wasm` in `dir` (concurrently) and installs the merged
    /// catalogue. A file that fails to load is logged and skipped.
    pub async fn load_dir(self: &Arc<Self>, dir: &Path) -> Result<()> {
        let files = wasm_files(dir)?;
        let mut tasks = tokio::task::JoinSet::new();
        for path in files {
            let this = self.clone();
            tasks.spawn(async move { (this.load_file(&path).await, path) });
        }
        let mut entries = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            match joined? {
                (Ok(entry), path) => {
                    let l = &entry.listing;
                    tracing::info!(
                        plugin = entry.plugin.name(), path = %path.display(),
                        tools = l.tools.len(), resources = l.resources.len(),
                        templates = l.templates.len(), prompts = l.prompts.len(), "plugin loaded"
                    );
                    entries.push(entry);
                }
                (Err(e), path) => {
                    tracing::error!(path = %path.display(), "plugin not loaded: {e:#}")
                }
            }
        }
        self.swap(Catalogue::build(entries));
        Ok(())
    }
}

/// The `*.wasm` files directly in `dir`, sorted.
pub fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the plugin folder {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// A plugin's name: its file stem, which must be letters, digits, `-` or `_`.
pub fn plugin_name(path: &Path) -> Result<String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let valid = !stem.is_empty()
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    anyhow::ensure!(
        valid,
        "{}: a plugin file name must be letters, digits, '-' or '_' before .wasm",
        path.display()
    );
    Ok(stem.to_owned())
}

/// Which client-visible lists differ between two catalogues.
pub fn changed_lists(
    old: &Catalogue,
    new: &Catalogue,
) -> Vec<crate::runtime::host_types::ListKind> {
    use crate::runtime::host_types::ListKind;
    let tools = |c: &Catalogue| {
        c.tools
            .iter()
            .map(|t| (t.name.clone(), t.tool.clone()))
            .collect::<Vec<_>>()
    };
    let prompts = |c: &Catalogue| {
        c.prompts
            .iter()
            .map(|p| (p.name.clone(), p.prompt.clone()))
            .collect::<Vec<_>>()
    };
    let resources = |c: &Catalogue| {
        (
            c.resources
                .iter()
                .map(|r| r.resource.clone())
                .collect::<Vec<_>>(),
            c.templates
                .iter()
                .map(|t| t.template.clone())
                .collect::<Vec<_>>(),
        )
    };
    let mut changed = Vec::new();
    if tools(old) != tools(new) {
        changed.push(ListKind::Tools);
    }
    if resources(old) != resources(new) {
        changed.push(ListKind::Resources);
    }
    if prompts(old) != prompts(new) {
        changed.push(ListKind::Prompts);
    }
    changed
}
