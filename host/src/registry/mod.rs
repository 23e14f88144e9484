//! The loaded plugins and the catalogue merged from them. Swapped whole and
//! atomically: a reader holds an `Arc<Catalogue>` that never changes under it.

mod catalogue;
pub mod pagination;
pub mod schema_limits;
mod uri_template;
pub mod views;

#[cfg(test)]
pub(crate) mod tests;

pub use catalogue::{
    compile_input_schema, warm_schema_checks, Catalogue, InputSchemaError, PluginEntry,
    PromptEntry, ResourceEntry, SkillEntry, TemplateEntry, ToolEntry, ToolSchemas,
};
pub use uri_template::UriTemplate;

use crate::runtime::host_types::ListKind;
use crate::runtime::{ComponentSource, Grants, Listing, LoadedPlugin, Runtime};
use crate::skills::Skills;
use anyhow::{Context as _, Result};
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

/// The plugins the host serves.
pub struct Registry {
    runtime: Arc<Runtime>,
    current: RwLock<Arc<Catalogue>>,
    /// Serializes read-modify-write updates of `current`.
    writer: Mutex<()>,
    /// Decides whether a plugin's lists, asked again while it serves, may
    /// be served (the plugin lock).
    relist_gate: std::sync::OnceLock<RelistGate>,
}

/// Whether plugin `name` may serve `listing`, asked again while it
/// serves (see [`Registry::gate_relisting`]).
pub type RelistGate = Box<dyn Fn(&str, &Listing) -> bool + Send + Sync>;

/// What one update of the registry did.
pub struct Change {
    /// The client-visible lists that differ before and after.
    pub lists: Vec<ListKind>,
}

/// What [`Registry::update_plugin`] did.
pub enum Reload {
    /// The file holds the component already loaded (or is absent and no
    /// plugin of that name is loaded): nothing changed.
    Unchanged,
    /// The plugin was loaded for the first time.
    Added(Change),
    /// A new version of the plugin replaced the old one.
    Replaced(Change),
    /// The file is gone and so is the plugin.
    Removed(Change),
    /// Only its skills changed: the plugin in place keeps serving.
    Reskilled(Change),
}

impl Registry {
    /// An empty registry whose plugins run in `runtime`.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Registry {
            runtime,
            current: RwLock::new(Arc::new(Catalogue::build(Vec::new()))),
            writer: Mutex::new(()),
            relist_gate: std::sync::OnceLock::new(),
        }
    }

    /// Has [`Registry::relisted`] keep the lists in place when `gate`
    /// refuses the fresh ones (set once; later calls change nothing).
    pub fn gate_relisting(&self, gate: RelistGate) {
        let _ = self.relist_gate.set(gate);
    }

    /// The catalogue as it is now.
    pub fn catalogue(&self) -> Arc<Catalogue> {
        self.current.read().clone()
    }

    /// The runtime plugins run in.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Compiles and instantiates plugin `name` from `source` with
    /// `grants` (by the baseline compiler when `quick`), and asks for its
    /// lists. Nothing is installed.
    pub async fn load(
        &self,
        name: &str,
        source: ComponentSource,
        grants: Grants,
        quick: bool,
    ) -> Result<PluginEntry> {
        let plugin = if quick {
            self.runtime.load_quick(name, source, grants).await
        } else {
            self.runtime.load(name, source, grants).await
        }?;
        Self::describe(plugin).await
    }

    /// Asks a loaded plugin for its lists.
    pub async fn describe(plugin: Arc<LoadedPlugin>) -> Result<PluginEntry> {
        let listing = plugin
            .list()
            .await
            .with_context(|| format!("listing what plugin {} offers", plugin.name()))?;
        views::check(&listing)
            .with_context(|| format!("plugin {} offers a view wrongly", plugin.name()))?;
        Ok(PluginEntry::new(plugin, Arc::new(listing), Arc::default()))
    }

    /// Brings plugin `name` up to date with `version` (its component,
    /// grants and skills; `None` when it is gone): loads it when new or
    /// changed, takes new skills without loading it again, drops it when
    /// gone. A version that does not load leaves the registry as it was
    /// and is an error.
    ///
    /// To be serving soon, a component not compiled before is built by the
    /// baseline compiler first and replaced, silently, by its optimised
    /// build once that is ready.
    pub async fn update_plugin(
        self: &Arc<Self>,
        name: &str,
        version: Option<(ComponentSource, Grants, Arc<Skills>)>,
    ) -> Result<Reload> {
        self.update_plugin_gated(name, version, |_| Ok(())).await
    }

    /// [`Registry::update_plugin`], where `admit` decides whether the
    /// version may be served, from what it lists (the plugin lock): a
    /// version it refuses is not installed (the one in place keeps
    /// serving), and its error is returned. A version whose component and
    /// grants are those in place is asked about with the lists in place.
    pub async fn update_plugin_gated(
        self: &Arc<Self>,
        name: &str,
        version: Option<(ComponentSource, Grants, Arc<Skills>)>,
        admit: impl FnOnce(&Listing) -> Result<()>,
    ) -> Result<Reload> {
        let current = self.catalogue().plugin(name).cloned();
        let loaded = current.as_ref().map(|e| e.plugin.clone());
        let Some((source, grants, skills)) = version else {
            return Ok(match self.remove(name) {
                Some(change) => {
                    tracing::info!(plugin = name, "plugin removed");
                    Reload::Removed(change)
                }
                None => Reload::Unchanged,
            });
        };
        if loaded
            .as_ref()
            .is_some_and(|p| p.hash() == source.hash() && *p.grants() == grants)
        {
            if let Some(current) = &current {
                admit(&current.listing)?;
            }
            let Some(change) = self.reskilled(name, skills) else {
                return Ok(Reload::Unchanged);
            };
            tracing::info!(plugin = name, "skills changed");
            return Ok(Reload::Reskilled(change));
        }
        let started = std::time::Instant::now();
        let mut entry = self
            .load(name, source.clone(), grants.clone(), true)
            .await?;
        entry.skills = skills;
        admit(&entry.listing)?;
        tracing::debug!(
            plugin = name,
            load_ms = started.elapsed().as_secs_f64() * 1e3,
            "loaded and listed"
        );
        let replaced = loaded.is_some();
        let what = if replaced {
            "plugin reloaded"
        } else {
            "plugin added"
        };
        let quick = entry.plugin.is_quick().then(|| entry.plugin.clone());
        let installed = entry.clone();
        let change = self.install(entry);
        // Logged once serving, so the log never runs ahead of the catalogue.
        log_loaded(&installed, what);
        if let Some(quick) = quick {
            self.optimize_later(quick, source, grants);
        }
        Ok(if replaced {
            Reload::Replaced(change)
        } else {
            Reload::Added(change)
        })
    }

    /// Builds the optimised version of a plugin loaded by the baseline
    /// compiler, and swaps it in if that plugin is still current.
    fn optimize_later(
        self: &Arc<Self>,
        quick: Arc<LoadedPlugin>,
        source: ComponentSource,
        grants: Grants,
    ) {
        let this = self.clone();
        tokio::spawn(async move {
            let name = quick.name().to_owned();
            match this.runtime.load(&name, source, grants).await {
                Ok(optimized) => {
                    if this.upgrade(&quick, optimized) {
                        tracing::debug!(plugin = name, "optimised build in place");
                    }
                }
                Err(e) => tracing::warn!(plugin = name, "no optimised build: {e:#}"),
            }
        });
    }

    /// Puts `optimized` in place of `quick`, with the same lists, if `quick`
    /// is still the plugin of its name. Clients see no change.
    fn upgrade(&self, quick: &Arc<LoadedPlugin>, optimized: Arc<LoadedPlugin>) -> bool {
        self.replace_entry(quick.name(), |current| {
            Arc::ptr_eq(&current.plugin, quick)
                .then(|| current.with(optimized, current.skills.clone()))
        })
        .is_some()
    }

    /// Adds a plugin, or replaces the one of the same name.
    pub fn install(&self, entry: PluginEntry) -> Change {
        self.update(|old| {
            let name = entry.plugin.name().to_owned();
            let mut entries = others(old, &name);
            entries.push(entry);
            entries
        })
    }

    /// Gives a plugin the fresh listing `entry` holds, unless that version
    /// of the plugin was replaced or removed meanwhile, or the relisting
    /// gate refuses it. (The plugin in place
    /// stays: it may be the optimised build of the one that was asked.)
    pub fn relisted(&self, entry: PluginEntry) -> Option<Change> {
        let asked = entry.plugin.clone();
        if let Some(gate) = self.relist_gate.get() {
            if !gate(asked.name(), &entry.listing) {
                return None;
            }
        }
        self.replace_entry(asked.name(), |current| {
            let same_version =
                current.plugin.hash() == asked.hash() && current.plugin.grants() == asked.grants();
            same_version.then(|| PluginEntry {
                plugin: current.plugin.clone(),
                listing: entry.listing,
                schemas: entry.schemas,
                skills: current.skills.clone(),
            })
        })
    }

    /// Gives plugin `name` the skills `skills` unless it has them already
    /// (by digest).
    fn reskilled(&self, name: &str, skills: Arc<Skills>) -> Option<Change> {
        self.replace_entry(name, |current| {
            (current.skills.digest != skills.digest)
                .then(|| current.with(current.plugin.clone(), skills))
        })
    }

    /// Replaces the entry of plugin `name` with what `f` makes of it; when
    /// `f` returns `None` (or no such plugin is loaded) nothing changes.
    fn replace_entry(
        &self,
        name: &str,
        f: impl FnOnce(&PluginEntry) -> Option<PluginEntry>,
    ) -> Option<Change> {
        let _writing = self.writer.lock();
        let old = self.catalogue();
        let replacement = f(old.plugin(name)?)?;
        let mut entries = others(&old, name);
        entries.push(replacement);
        Some(self.swap(old, Catalogue::build(entries)))
    }

    /// Removes the plugin called `name`, if loaded.
    pub fn remove(&self, name: &str) -> Option<Change> {
        let _writing = self.writer.lock();
        let old = self.catalogue();
        old.plugin(name)?;
        let entries = others(&old, name);
        Some(self.swap(old, Catalogue::build(entries)))
    }

    /// Builds a new catalogue from the plugins `f` returns for the current
    /// one, and installs it.
    fn update(&self, f: impl FnOnce(&Catalogue) -> Vec<PluginEntry>) -> Change {
        let _writing = self.writer.lock();
        let old = self.catalogue();
        let new = Catalogue::build(f(&old));
        self.swap(old, new)
    }

    /// Installs `new` in place of `old`; the caller holds `writer`.
    fn swap(&self, old: Arc<Catalogue>, new: Catalogue) -> Change {
        let lists = changed_lists(&old, &new);
        *self.current.write() = Arc::new(new);
        Change { lists }
    }
}

/// The entries of `catalogue` except the plugin called `name`.
fn others(catalogue: &Catalogue, name: &str) -> Vec<PluginEntry> {
    catalogue
        .plugins
        .iter()
        .filter(|p| p.plugin.name() != name)
        .cloned()
        .collect()
}

/// Logs what a plugin offers, once it is in the catalogue.
fn log_loaded(entry: &PluginEntry, what: &str) {
    let l = &entry.listing;
    tracing::info!(
        plugin = entry.plugin.name(),
        tools = l.tools.len(),
        resources = l.resources.len(),
        templates = l.templates.len(),
        prompts = l.prompts.len(),
        skills = entry.skills.skills.len(),
        "{what}"
    );
}

/// Which client-visible lists differ between two catalogues.
pub fn changed_lists(old: &Catalogue, new: &Catalogue) -> Vec<ListKind> {
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
            // A skill file's bytes may change and its listing not.
            c.plugins
                .iter()
                .filter(|p| !p.skills.skills.is_empty())
                .map(|p| (p.plugin.name().to_owned(), p.skills.digest.clone()))
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
