//! Loading plugin files: each component is read with its manifest, granted
//! what the policy allows, and handed to the registry.

use super::folder::{plugin_name, read_plugin};
use super::{Decision, Policy};
use crate::config::Manifest;
use crate::lock::{self, Entry, Lock, Observed};
use crate::registry::{PluginEntry, Registry, Reload};
use crate::runtime::{ComponentSource, Grants, Listing};
use crate::skills::Skills;
use anyhow::{Context as _, Result};
use std::path::Path;
use std::sync::Arc;

/// A plugin's component, grants and skills, as read, with the manifest
/// that asked for the grants.
type Version = (ComponentSource, Grants, Arc<Skills>, Manifest);

/// Loads plugin files into a registry under a policy.
pub struct Loader {
    registry: Arc<Registry>,
    policy: Policy,
    /// The plugin lock new versions must match (`[server] lock`).
    lock: Option<Arc<Lock>>,
}

impl Loader {
    /// Loads into `registry`, granting what `policy` allows.
    pub fn new(registry: Arc<Registry>, policy: Policy) -> Arc<Self> {
        Self::locked(registry, policy, None)
    }

    /// [`Loader::new`], serving only what `lock` (when given) admits.
    pub fn locked(registry: Arc<Registry>, policy: Policy, lock: Option<Arc<Lock>>) -> Arc<Self> {
        if let Some(lock) = &lock {
            registry.gate_relisting(lock.relist_gate());
        }
        Arc::new(Loader {
            registry,
            policy,
            lock,
        })
    }

    /// The plugin lock it enforces, if any.
    pub fn lock(&self) -> Option<&Arc<Lock>> {
        self.lock.as_ref()
    }

    /// The bounds on each plugin's skills.
    pub fn skill_limits(&self) -> crate::skills::Limits {
        self.policy.skill_limits()
    }

    /// The config it grants under.
    pub fn config(&self) -> &crate::config::Config {
        self.policy.config()
    }

    /// The registry plugins are loaded into.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// What plugin `name` is granted for what its manifest asks (decided
    /// off the async workers: secret files are read).
    pub async fn decide(&self, name: &str, manifest: &Manifest) -> Result<Decision> {
        let (policy, name, manifest) = (self.policy.clone(), name.to_owned(), manifest.clone());
        Ok(tokio::task::spawn_blocking(move || policy.decide(&name, &manifest)).await?)
    }

    /// Reads plugin `name`'s file and skills and decides its grants;
    /// `None` when the file is gone.
    async fn read(&self, name: &str, path: &Path) -> Result<Option<Version>> {
        let Some((source, manifest, skills)) = read_plugin(
            path,
            self.policy.max_plugin_bytes(),
            Some(self.skill_limits()),
        )
        .await?
        else {
            return Ok(None);
        };
        let decision = self.decide(name, &manifest).await?;
        if !decision.granted.is_empty() || !decision.denied.is_empty() {
            tracing::info!(plugin = name, "{}", decision.summary());
        }
        for problem in &skills.problems {
            tracing::warn!(plugin = name, "{problem}");
        }
        Ok(Some((source, decision.grants, Arc::new(skills), manifest)))
    }

    /// Loads one component file and asks for its lists (not installed).
    pub async fn load_file(&self, path: &Path) -> Result<PluginEntry> {
        let name = plugin_name(path)?;
        let (source, grants, skills, _) = self
            .read(&name, path)
            .await?
            .with_context(|| format!("{} is gone", path.display()))?;
        let mut entry = self
            .registry
            .load(&name, source, grants, false)
            .await
            .with_context(|| format!("loading {}", path.display()))?;
        entry.skills = skills;
        Ok(entry)
    }

    /// Brings the plugin of one `*.wasm` path up to date with the file
    /// (see [`Registry::update_plugin`]).
    ///
    /// Under a plugin lock, a version that differs from its entry is not
    /// installed: the error is a [`crate::lock::Refused`].
    pub async fn reload_file(&self, path: &Path) -> Result<Reload> {
        let name = plugin_name(path)?;
        let version = self.read(&name, path).await?;
        let loading = || format!("loading {}", path.display());
        let Some(lock) = &self.lock else {
            let version = version.map(|(source, grants, skills, _)| (source, grants, skills));
            return self
                .registry
                .update_plugin(&name, version)
                .await
                .with_context(loading);
        };
        let Some((source, grants, skills, manifest)) = version else {
            lock.release(&name);
            return self
                .registry
                .update_plugin(&name, None)
                .await
                .with_context(loading);
        };
        let wasm = path.to_owned();
        let signer = tokio::task::spawn_blocking(move || lock::read_signer(&wasm)).await??;
        let file = lock.current().await.map_err(|e| format!("{e:#}"));
        let (origin, hash) = (
            lock::source_of(self.config(), &name),
            source.hash().to_owned(),
        );
        let admit = |listing: &Listing| -> Result<()> {
            let now = Entry::of(Observed {
                source: origin,
                component_hash: &hash,
                signer,
                manifest: &manifest,
                listing,
            });
            Ok(lock.check(&file, &name, &now)?)
        };
        let version = Some((source, grants, skills));
        match self
            .registry
            .update_plugin_gated(&name, version, admit)
            .await
        {
            Ok(reload) => {
                lock.release(&name);
                Ok(reload)
            }
            Err(e) => {
                if e.downcast_ref::<lock::Refused>().is_some() {
                    lock.hold(&name, path);
                }
                Err(e.context(loading()))
            }
        }
    }
}
