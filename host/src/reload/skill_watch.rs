//! Watching plugins' skills folders. The plugin folder is watched alone
//! (not its subfolders); each plugin's `NAME.skills` folder, and the
//! folders within it, are watched one by one, as many as a skills folder
//! may hold ([`crate::skills::folders`]): never a whole tree, however deep
//! or wide, and never through a symlink.

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The skills folders watched, per plugin component path.
pub(super) struct SkillWatch {
    watcher: Mutex<RecommendedWatcher>,
    watched: Mutex<HashMap<PathBuf, BTreeSet<PathBuf>>>,
}

impl SkillWatch {
    /// Watches skills folders with `watcher` (the plugin folder's).
    pub(super) fn new(watcher: RecommendedWatcher) -> Arc<Self> {
        Arc::new(SkillWatch {
            watcher: Mutex::new(watcher),
            watched: Mutex::default(),
        })
    }

    /// Watches the folders of the skills folder of the component at
    /// `component` as they are now (none when the component is gone; as
    /// many as `max_skills` skills may hold), and stops watching those
    /// that went. Runs on a blocking thread.
    pub(super) async fn refresh(self: &Arc<Self>, component: &Path, max_skills: usize) {
        let (this, component) = (self.clone(), component.to_owned());
        let _ = tokio::task::spawn_blocking(move || this.refresh_now(&component, max_skills)).await;
    }

    fn refresh_now(&self, component: &Path, max_skills: usize) {
        let now: BTreeSet<PathBuf> = if component.exists() {
            crate::skills::folders(&super::folder::skills_folder(component), max_skills)
                .into_iter()
                .collect()
        } else {
            BTreeSet::new()
        };
        let mut watched = self.watched.lock();
        let before = watched.remove(component).unwrap_or_default();
        let mut watcher = self.watcher.lock();
        for gone in before.difference(&now) {
            let _ = watcher.unwatch(gone);
        }
        let mut kept = BTreeSet::new();
        for folder in now {
            if before.contains(&folder) {
                kept.insert(folder);
                continue;
            }
            match watcher.watch(&folder, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    kept.insert(folder);
                }
                Err(e) => {
                    tracing::warn!(folder = %folder.display(), "not watching a skills folder: {e}")
                }
            }
        }
        if !kept.is_empty() {
            watched.insert(component.to_owned(), kept);
        }
    }
}
