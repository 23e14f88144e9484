//! Plugins that are not served as their files or sources stand (a file
//! that did not load; under `dev`, a build that failed), told to every
//! client in the `instructions` of `initialize` and `server/discover`, so
//! a failing plugin is listed as failing instead of silently absent.
//! Notices are keyed by what failed and the plugin (`load:NAME`,
//! `build:NAME`), so each kind is set and cleared on its own.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The most plugins with a notice; `dev` has one per source folder given
/// on its command line, far fewer.
pub const MAX_NOTICES: usize = 256;

/// One notice per plugin, in plugin-name order.
#[derive(Debug, Default)]
pub struct Notices(Mutex<BTreeMap<String, String>>);

impl Notices {
    /// Sets plugin `plugin`'s notice (`Some`), or clears it (`None`). Past
    /// [`MAX_NOTICES`] plugins, a new one is not recorded.
    pub fn set(&self, plugin: &str, notice: Option<String>) {
        let mut notices = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match notice {
            Some(text) if notices.len() < MAX_NOTICES || notices.contains_key(plugin) => {
                notices.insert(plugin.to_owned(), text);
            }
            Some(_) => {}
            None => {
                notices.remove(plugin);
            }
        }
    }

    /// `base` followed by every notice, one paragraph each; `None` when
    /// both are empty.
    pub fn instructions(&self, base: Option<&str>) -> Option<String> {
        let notices = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let parts: Vec<&str> = base
            .into_iter()
            .chain(notices.values().map(String::as_str))
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_follow_the_instructions_until_cleared() {
        let notices = Notices::default();
        assert_eq!(notices.instructions(None), None);
        assert_eq!(
            notices.instructions(Some("Be kind.")).as_deref(),
            Some("Be kind.")
        );
        notices.set("b", Some("b did not build".into()));
        notices.set("a", Some("a did not build".into()));
        assert_eq!(
            notices.instructions(Some("Be kind.")).as_deref(),
            Some("Be kind.\n\na did not build\n\nb did not build")
        );
        notices.set("a", None);
        assert_eq!(
            notices.instructions(None).as_deref(),
            Some("b did not build")
        );
    }
}
