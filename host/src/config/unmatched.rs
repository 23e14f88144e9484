//! What the config names that matches nothing loaded: a `[plugins.NAME]`
//! section naming no plugin, a rule for a tool, prompt or resource its
//! plugin does not offer, a profile pattern matching no item, and a
//! loaded plugin that no section names while access rules exist. Each is
//! most likely a typo, and a typo in a rule's name leaves what it meant
//! to guard open. Pure: `config check --plugins` and `serve` (after the
//! first load and after each reload) hand it what the plugins offer.

use super::Config;

/// What one loaded plugin offers, by the names the config uses.
#[derive(Debug, Clone, Default)]
pub struct Offered {
    /// The plugin's name (its file's).
    pub plugin: String,
    /// Its tools' names.
    pub tools: Vec<String>,
    /// Its prompts' names.
    pub prompts: Vec<String>,
    /// Its resources' URIs, its templates' URI templates and its skills'
    /// files' URIs.
    pub resources: Vec<String>,
}

impl Offered {
    /// Every `PLUGIN.NAME` a profile pattern may match.
    fn full_names(&self) -> impl Iterator<Item = String> + '_ {
        self.tools
            .iter()
            .chain(&self.prompts)
            .chain(&self.resources)
            .map(|name| format!("{}.{name}", self.plugin))
    }
}

/// One thing the config names that matches nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The plugin it is about, when it is about one (for a profile
    /// pattern, the plugin its text names, if it names one without `*`).
    pub plugin: Option<String>,
    /// The config's line, when the text was given.
    pub line: Option<usize>,
    /// What matches nothing, by its key path, and what may have been meant.
    pub text: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

/// Whether the config has access rules: scopes or claims on a plugin, on
/// one of its items or in its tool rules (as `server::access::Policy`
/// counts them: then a plugin no section names is denied, unless
/// `[access] unnamed_plugins = "open"`).
pub fn has_rules(config: &Config) -> bool {
    config.plugins.values().any(|p| {
        let items = [&p.tools, &p.prompts, &p.resources];
        !p.scopes.is_empty()
            || !p.claims.is_empty()
            || !p.tool_rules.is_empty()
            || items.iter().any(|i| {
                i.values()
                    .any(|i| !i.scopes.is_empty() || !i.claims.is_empty())
            })
    })
}

/// What `config` names that matches nothing `offered` holds (every
/// plugin loaded); `text`, the config's own, gives the lines. A section
/// of a plugin with an OCI `source` is not looked for: it is pulled
/// into the folder when the host starts.
pub fn findings(config: &Config, text: Option<&str>, offered: &[Offered]) -> Vec<Finding> {
    let lines = text.map(super::serving::Lines::of);
    let line = |keys: &[&str]| lines.as_ref().and_then(|l| l.line(keys));
    let loaded: Vec<&str> = offered.iter().map(|o| o.plugin.as_str()).collect();
    let mut found = Vec::new();
    for (name, section) in &config.plugins {
        let Some(offers) = offered.iter().find(|o| o.plugin == *name) else {
            if section.source.is_none() {
                found.push(Finding {
                    plugin: Some(name.clone()),
                    line: line(&["plugins", name]),
                    text: format!(
                        "plugins.{name}: no plugin of that name is loaded ({}){}: its grants \
                         and rules apply to nothing",
                        match loaded.is_empty() {
                            true => "none is".to_owned(),
                            false => format!("loaded: {}", loaded.join(", ")),
                        },
                        did_you_mean(name, loaded.iter().copied())
                    ),
                });
            }
            continue;
        };
        for (kind, rules, names) in [
            ("tools", &section.tools, &offers.tools),
            ("prompts", &section.prompts, &offers.prompts),
            ("resources", &section.resources, &offers.resources),
        ] {
            for item in rules.keys().filter(|item| !names.contains(item)) {
                found.push(Finding {
                    plugin: Some(name.clone()),
                    line: line(&["plugins", name, kind, item]),
                    text: format!(
                        "plugins.{name}.{kind}.{item:?}: plugin {name} offers no such {}{}: \
                         the rule applies to nothing",
                        kind.trim_end_matches('s'),
                        did_you_mean(item, names.iter().map(String::as_str))
                    ),
                });
            }
        }
    }
    let everything: Vec<String> = offered.iter().flat_map(Offered::full_names).collect();
    for (profile, section) in &config.profiles {
        for (key, patterns) in [("include", &section.include), ("exclude", &section.exclude)] {
            for pattern in patterns {
                if everything.iter().any(|full| glob_matches(pattern, full)) {
                    continue;
                }
                let plugin = pattern
                    .split_once('.')
                    .map(|(p, _)| p)
                    .filter(|p| !p.contains('*'))
                    .map(str::to_owned);
                found.push(Finding {
                    plugin,
                    line: line(&["profiles", profile, key]),
                    text: format!(
                        "profiles.{profile}.{key}: {pattern:?} matches no item of the plugins \
                         loaded{}",
                        did_you_mean(pattern, everything.iter().map(String::as_str))
                    ),
                });
            }
        }
    }
    let tools: Vec<String> = offered
        .iter()
        .flat_map(|o| o.tools.iter().map(move |t| format!("{}.{t}", o.plugin)))
        .collect();
    for (name, section) in &config.plugins {
        for pattern in &section.call_tools {
            if tools.iter().any(|full| glob_matches(pattern, full)) {
                continue;
            }
            // Whether it matches changes as the plugin it names comes and
            // goes: a reload of that plugin shows it again, as a profile's.
            let named = pattern
                .split_once('.')
                .map(|(p, _)| p)
                .filter(|p| !p.contains('*'))
                .map(str::to_owned);
            found.push(Finding {
                plugin: named,
                line: line(&["plugins", name, "call_tools"]),
                text: format!(
                    "plugins.{name}.call_tools: {pattern:?} matches no tool of the plugins \
                     loaded{}: plugin {name} may call no tool through it",
                    did_you_mean(pattern, tools.iter().map(String::as_str))
                ),
            });
        }
    }
    if has_rules(config) {
        for offers in offered {
            if !config.plugins.contains_key(&offers.plugin) {
                found.push(Finding {
                    plugin: Some(offers.plugin.clone()),
                    line: None,
                    text: format!(
                        "plugin {} is loaded but no section plugins.{} names it: {}{}",
                        offers.plugin,
                        offers.plugin,
                        match config.access.unnamed_plugins {
                            super::UnnamedPlugins::Deny => {
                                "it is served to no caller over the network ([access] \
                                 unnamed_plugins = \"deny\")"
                            }
                            super::UnnamedPlugins::Open => {
                                "no rule applies to it, every caller may use it ([access] \
                                 unnamed_plugins = \"open\")"
                            }
                        },
                        did_you_mean(&offers.plugin, config.plugins.keys().map(String::as_str))
                    ),
                });
            }
        }
    }
    found
}

/// ` (did you mean X?)` for the closest of `known` to `name`, if one is
/// close.
fn did_you_mean<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    known
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!(" (did you mean {k:?}?)"))
        .unwrap_or_default()
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters (a profile's `PLUGIN.NAME` pattern).
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return text == first;
    }
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(plugin: &str, tools: &[&str]) -> Offered {
        Offered {
            plugin: plugin.into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            ..Offered::default()
        }
    }

    fn parse(text: &str) -> Config {
        Config::parse_with(text, std::path::Path::new("/"), super::super::Files::Skip).unwrap()
    }

    #[test]
    fn names_every_kind_of_typo_with_its_line() {
        let text = "\
[plugins.filesytem]
scopes = [\"files\"]

[plugins.echo.tools.ech]
scopes = [\"x\"]

[profiles.p]
include = [\"eho.*\", \"echo.*\"]
exclude = [\"*.nothing\"]
";
        let config = parse(text);
        let loaded = [
            offered("filesystem", &["read", "write"]),
            offered("echo", &["echo"]),
        ];
        let found = findings(&config, Some(text), &loaded);
        let texts: Vec<String> = found.iter().map(|f| f.to_string()).collect();
        assert_eq!(found.len(), 5, "{texts:#?}");
        for expected in [
            "line 1: plugins.filesytem: no plugin of that name is loaded (loaded: filesystem, \
             echo) (did you mean \"filesystem\"?)",
            "line 4: plugins.echo.tools.\"ech\": plugin echo offers no such tool (did you \
             mean \"echo\"?)",
            "line 8: profiles.p.include: \"eho.*\" matches no item",
            "line 9: profiles.p.exclude: \"*.nothing\" matches no item",
            "plugin filesystem is loaded but no section plugins.filesystem names it",
        ] {
            assert!(
                texts.iter().any(|t| t.starts_with(expected)),
                "{expected} in {texts:#?}"
            );
        }
        let about = |start: &str| found.iter().find(|f| f.text.starts_with(start)).unwrap();
        assert_eq!(about("profiles.p.include").plugin.as_deref(), Some("eho"));
        assert_eq!(about("profiles.p.exclude").plugin, None);
    }

    #[test]
    fn a_config_that_matches_says_nothing() {
        let text = "[plugins.echo]\nscopes = [\"x\"]\n[plugins.echo.tools.echo]\nscopes = [\"y\"]\n\
                    [profiles.p]\ninclude = [\"echo.*\"]\n[plugins.pulled]\nsource = \"oci://r.example/a:1\"\n";
        let config = parse(text);
        assert_eq!(
            findings(&config, Some(text), &[offered("echo", &["echo"])]),
            []
        );
        // Without rules, a plugin no section names is not worth a word.
        let config = parse("[plugins.echo]\n");
        assert_eq!(
            findings(
                &config,
                None,
                &[offered("echo", &[]), offered("other", &[])]
            ),
            []
        );
    }

    #[test]
    fn a_call_tools_pattern_that_matches_no_tool_is_named() {
        let text = "[plugins.code]\ncall_tools = [\"filesytem.*\", \"echo.echo\", \"*.read\"]\n";
        let config = parse(text);
        let loaded = [
            offered("filesystem", &["read", "write"]),
            offered("echo", &["echo"]),
            offered("code", &["run_python"]),
        ];
        let found = findings(&config, Some(text), &loaded);
        let texts: Vec<String> = found.iter().map(|f| f.to_string()).collect();
        assert_eq!(found.len(), 1, "{texts:#?}");
        assert!(
            texts[0].starts_with(
                "line 2: plugins.code.call_tools: \"filesytem.*\" matches no tool of the \
                 plugins loaded (did you mean"
            ),
            "{texts:#?}"
        );
        // Told again when the plugin it names loads or goes.
        assert_eq!(found[0].plugin.as_deref(), Some("filesytem"));
    }

    #[test]
    fn globs_match_as_the_profiles_do() {
        assert!(glob_matches("a.*", "a.b"));
        assert!(glob_matches("*.b", "a.b"));
        assert!(glob_matches("a.*x*", "a.yxz"));
        assert!(!glob_matches("a.*x*y", "a.y"));
        assert!(!glob_matches("ab*ba", "aba"));
        assert!(glob_matches("a.b", "a.b"));
        assert!(!glob_matches("a.b", "a.bc"));
    }
}
