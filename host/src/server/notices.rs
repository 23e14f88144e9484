//! Plugins that are not served as their files or sources stand (a file
//! that did not load; under `dev`, a build that failed), told to every
//! client in the `instructions` of `initialize` and `server/discover`, so
//! a failing plugin is listed as failing instead of silently absent.
//! Notices are keyed by what failed and the plugin (`load:NAME`,
//! `build:NAME`), so each kind is set and cleared on its own.

use parking_lot::Mutex;
use std::collections::BTreeMap;

/// The most notices kept (each at most [`MAX_NOTICE_BYTES`]); more failing
/// plugins are only logged, so the instructions stay small.
pub(super) const MAX_NOTICES: usize = 16;

/// The longest notice kept; a longer one is cut.
pub(super) const MAX_NOTICE_BYTES: usize = 10 << 10;

/// The key of plugin `plugin`'s notice that its file did not load.
pub fn load_key(plugin: &str) -> String {
    format!("load:{plugin}")
}

/// The key of plugin `plugin`'s notice that its sources did not build.
pub fn build_key(plugin: &str) -> String {
    format!("build:{plugin}")
}

/// One notice per key, in key order.
#[derive(Debug, Default)]
pub struct Notices(Mutex<BTreeMap<String, String>>);

impl Notices {
    /// Sets the notice `key` (`load:NAME`, `build:NAME`), or clears it
    /// (`None`). Past `MAX_NOTICES`, a new key is not recorded.
    pub fn set(&self, key: &str, notice: Option<String>) {
        let mut notices = self.0.lock();
        match notice {
            Some(mut text) if notices.len() < MAX_NOTICES || notices.contains_key(key) => {
                if text.len() > MAX_NOTICE_BYTES {
                    text = format!("{}…", crate::text::head(&text, MAX_NOTICE_BYTES));
                }
                notices.insert(key.to_owned(), text);
            }
            Some(_) => {}
            None => {
                notices.remove(key);
            }
        }
    }

    /// `base` followed by every notice, one paragraph each; `None` when
    /// both are empty.
    pub fn instructions(&self, base: Option<&str>) -> Option<String> {
        let notices = self.0.lock();
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
