//! Granting: a plugin gets the intersection of what its manifest asks for
//! and what the config allows it. Everything else is denied, and the
//! decision is reported item by item.

use crate::config::{Config, Manifest, Mode};
use crate::runtime::keyvalue::KeyValueGrant;
use crate::runtime::{
    DirGrant, DirHandle, Grants, HostPattern, Limits, Secret, TenantDirs, ToolCallGrant,
};
use anyhow::{Context as _, Result};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The config's rules for granting, and its roots' folders, opened once.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    config: Config,
    dirs: BTreeMap<String, Arc<DirHandle>>,
    /// The roots per tenant: their tenants' folders.
    tenants: BTreeMap<String, Arc<TenantDirs>>,
    /// The store of plugins granted `keyvalue`.
    keyvalue: Option<KeyValueGrant>,
}

/// What was granted to one plugin, and why each asked-for item was or was
/// not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// What the runtime enforces.
    pub grants: Grants,
    /// Items granted as asked, e.g. `root notes (read-write) at /notes`.
    pub granted: Vec<String>,
    /// Items denied or narrowed, each with the reason.
    pub denied: Vec<String>,
}

impl Decision {
    /// A one-line account for the log.
    pub fn summary(&self) -> String {
        let list = |items: &[String]| match items {
            [] => "nothing".to_owned(),
            items => items.join("; "),
        };
        format!(
            "granted: {}. denied: {}.",
            list(&self.granted),
            list(&self.denied)
        )
    }
}

impl Policy {
    /// The policy of a checked config: every root's folder is opened now
    /// (a plugin granted one sees that very folder, even if its path is
    /// later replaced).
    pub fn new(config: Config) -> Result<Self> {
        let mut dirs = BTreeMap::new();
        let mut tenants = BTreeMap::new();
        for (name, root) in &config.roots {
            let path = root.area();
            let dir = DirHandle::open(path)
                .with_context(|| format!("opening roots.{name}.path {}", path.display()))?;
            let dir = Arc::new(dir);
            if root.tenant_parent().is_some() {
                tenants.insert(name.clone(), Arc::new(TenantDirs::new(dir.clone())));
            }
            dirs.insert(name.clone(), dir);
        }
        Ok(Policy {
            config,
            dirs,
            tenants,
            keyvalue: None,
        })
    }

    /// This policy, granting `store` to the plugins allowed `keyvalue`
    /// (without one, none is granted: `inspect` says so).
    pub fn with_keyvalue(mut self, store: KeyValueGrant) -> Self {
        self.keyvalue = Some(store);
        self
    }

    /// Decides what `plugin` gets for what `manifest` asks.
    pub fn decide(&self, plugin: &str, manifest: &Manifest) -> Decision {
        let allowed = self.config.plugins.get(plugin).cloned().unwrap_or_default();
        let mut d = Decision::default();
        d.grants.limits = Limits::from(&self.config.limits.with(&allowed.limits));

        // `*` asks for every root the config allows the plugin, as far as
        // the mode it names; a root also named on its own keeps its mode.
        let mut asked: Vec<(&String, Mode)> = manifest
            .roots
            .iter()
            .filter(|(name, _)| name.as_str() != Manifest::ANY)
            .map(|(name, &mode)| (name, mode))
            .collect();
        if let Some(&any) = manifest.roots.get(Manifest::ANY) {
            for name in allowed.roots.iter().map(|r| r.get_ref()) {
                if !manifest.roots.contains_key(name) {
                    asked.push((name, any));
                }
            }
        }
        asked.sort();
        for (name, wanted) in asked {
            let Some(root) = self.config.roots.get(name) else {
                d.denied
                    .push(format!("root {name}: no such root in the config"));
                continue;
            };
            if !allowed.roots.iter().any(|r| r.get_ref() == name) {
                d.denied
                    .push(format!("root {name}: not allowed to plugin {plugin}"));
                continue;
            }
            let mode = wanted.min(root.mode);
            let guest_path = format!("/{name}");
            if mode < wanted {
                d.denied.push(format!(
                    "root {name}: write access (the root is {})",
                    root.mode
                ));
            }
            let Some(dir) = self.dirs.get(name).cloned() else {
                d.denied
                    .push(format!("root {name}: its folder was not opened"));
                continue;
            };
            let tenants = self.tenants.get(name).cloned();
            let per_tenant = if tenants.is_some() {
                ", per tenant"
            } else {
                ""
            };
            d.granted
                .push(format!("root {name} ({mode}{per_tenant}) at {guest_path}"));
            d.grants.dirs.push(DirGrant {
                host_path: root.area().to_owned(),
                dir,
                guest_path,
                writable: mode == Mode::ReadWrite,
                tenants,
            });
        }

        match (allowed.keyvalue, &self.keyvalue) {
            (true, Some(store)) => {
                d.granted.push("keyvalue (per tenant)".into());
                d.grants.keyvalue = Some(store.clone());
            }
            (true, None) => d.denied.push("keyvalue: no store is open here".into()),
            (false, _) if manifest.keyvalue => d.denied.push(format!(
                "keyvalue: not allowed to plugin {plugin} ([plugins.{plugin}] keyvalue = true)"
            )),
            (false, _) => {}
        }

        if !allowed.call_tools.is_empty() {
            d.granted
                .push(format!("call_tools {}", allowed.call_tools.join(", ")));
            d.grants.tool_calls = Some(ToolCallGrant::new(&allowed.call_tools));
        }

        let allowed_hosts: Vec<HostPattern> = allowed
            .hosts
            .iter()
            .filter_map(|h| HostPattern::parse(h.get_ref()))
            .collect();
        // `*` asks for every host the config allows the plugin.
        let asked_hosts: Vec<&String> = if manifest.hosts.iter().any(|h| h == Manifest::ANY) {
            allowed.hosts.iter().map(|h| h.get_ref()).collect()
        } else {
            manifest.hosts.iter().collect()
        };
        for asked in asked_hosts {
            let Some(pattern) = HostPattern::parse(asked) else {
                d.denied
                    .push(format!("host {asked:?}: not a host name or *.domain"));
                continue;
            };
            if allowed_hosts.iter().any(|a| pattern.within(a)) {
                d.granted.push(format!("host {pattern}"));
                d.grants.hosts.push(pattern);
            } else {
                d.denied
                    .push(format!("host {pattern}: not allowed to plugin {plugin}"));
            }
        }

        for var in &manifest.env {
            let value = if let Some(source) = allowed.secrets.get(var) {
                source.read().map_err(|e| e.to_string())
            } else if allowed.env.iter().any(|a| a.get_ref() == var) {
                std::env::var(var).map_err(|_| "not set on the host".to_owned())
            } else {
                Err(format!("not allowed to plugin {plugin}"))
            };
            match value {
                Ok(value) => {
                    d.granted.push(format!("env {var}"));
                    d.grants.env.push((var.clone(), Secret::new(value)));
                }
                Err(why) => d.denied.push(format!("env {var}: {why}")),
            }
        }
        d
    }

    /// The config it grants under.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The largest memory cap any plugin may get, in bytes.
    pub fn max_memory_bytes(&self) -> usize {
        self.config.max_memory_bytes()
    }

    /// The largest plugin component file read, in bytes.
    pub fn max_plugin_bytes(&self) -> u64 {
        self.config.server.max_plugin_mb << 20
    }

    /// The bounds on each plugin's skills.
    pub fn skill_limits(&self) -> crate::skills::Limits {
        crate::skills::Limits::of(&self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn policy(base: &Path) -> Policy {
        std::fs::create_dir_all(base.join("ro")).unwrap();
        std::fs::create_dir_all(base.join("rw")).unwrap();
        let text = r#"
[roots.docs]
path = "ro"
[roots.scratch]
path = "rw"
mode = "read-write"
[plugins.p]
roots = ["docs", "scratch"]
hosts = ["*.example.com", "127.0.0.1"]
env = ["WASM_MCP_POLICY_TEST", "WASM_MCP_POLICY_UNSET"]
[plugins.p.limits]
call_timeout_ms = 500
"#;
        Policy::new(Config::parse(text, base).unwrap()).unwrap()
    }

    #[test]
    fn a_star_asks_for_every_root_the_config_allows() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        let dirs = |text: &str, plugin: &str| {
            let manifest: Manifest = toml::from_str(text).unwrap();
            let d = policy.decide(plugin, &manifest);
            d.grants
                .dirs
                .iter()
                .map(|g| (g.guest_path.clone(), g.writable))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            dirs("[roots]\n\"*\" = \"read-write\"\n", "p"),
            [("/docs".to_owned(), false), ("/scratch".to_owned(), true)]
        );
        assert_eq!(
            dirs("[roots]\n\"*\" = \"read-only\"\n", "p"),
            [("/docs".to_owned(), false), ("/scratch".to_owned(), false)]
        );
        // A root named on its own keeps its own mode; an unknown plugin gets nothing.
        assert_eq!(
            dirs(
                "[roots]\n\"*\" = \"read-only\"\nscratch = \"read-write\"\n",
                "p"
            ),
            [("/docs".to_owned(), false), ("/scratch".to_owned(), true)]
        );
        assert!(dirs("[roots]\n\"*\" = \"read-write\"\n", "other").is_empty());
        let hosts = |plugin: &str| {
            let manifest: Manifest = toml::from_str("hosts = [\"*\"]\n").unwrap();
            let d = policy.decide(plugin, &manifest);
            d.grants
                .hosts
                .iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(hosts("p"), ["*.example.com", "127.0.0.1"]);
        assert!(hosts("other").is_empty());
    }

    #[test]
    fn grants_the_intersection_and_reports_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        std::env::set_var("WASM_MCP_POLICY_TEST", "yes");
        let manifest: Manifest = toml::from_str(
            r#"
hosts = ["api.example.com", "example.org", "127.0.0.1"]
env = ["WASM_MCP_POLICY_TEST", "WASM_MCP_POLICY_UNSET", "HOME"]
[roots]
docs = "read-write"
scratch = "read-write"
secrets = "read-only"
"#,
        )
        .unwrap();
        let d = policy.decide("p", &manifest);
        let dirs: Vec<_> = d
            .grants
            .dirs
            .iter()
            .map(|g| (g.guest_path.as_str(), g.writable))
            .collect();
        assert_eq!(dirs, [("/docs", false), ("/scratch", true)]);
        let hosts: Vec<_> = d.grants.hosts.iter().map(|h| h.as_str()).collect();
        assert_eq!(hosts, ["api.example.com", "127.0.0.1"]);
        assert_eq!(
            d.grants.env,
            [("WASM_MCP_POLICY_TEST".into(), Secret::new("yes"))]
        );
        assert_eq!(d.grants.limits.call_timeout.as_millis(), 500);
        let denied = d.denied.join("\n");
        for expected in [
            "root docs: write access",
            "root secrets: no such root",
            "host example.org: not allowed",
            "env WASM_MCP_POLICY_UNSET: not set",
            "env HOME: not allowed",
        ] {
            assert!(denied.contains(expected), "{expected} in {denied}");
        }
        // Values never show in debug output.
        assert!(!format!("{:?}", d.grants).contains("yes"));
        // Another plugin, same manifest: nothing but the default limits.
        let other = policy.decide("q", &manifest);
        assert_eq!(other.grants.dirs, []);
        assert_eq!(other.grants.limits.call_timeout.as_secs(), 60);
    }

    #[test]
    fn secrets_come_from_a_file_or_another_variable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "s3cr3t\r\n").unwrap();
        std::fs::write(dir.path().join("big"), vec![b'x'; 65 << 10]).unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::env::set_var("WASM_MCP_POLICY_SOURCE", "from-the-host");
        let text = r#"
[plugins.p.secrets]
TOKEN = { file = "token" }
RENAMED = { env = "WASM_MCP_POLICY_SOURCE" }
GONE = { file = "missing" }
BIG = { file = "big" }
FIFO = { file = "fifo" }
UNSET = { env = "WASM_MCP_POLICY_NEVER_SET" }
"#;
        let policy = Policy::new(Config::parse(text, dir.path()).unwrap()).unwrap();
        let manifest: Manifest = toml::from_str(
            r#"env = ["TOKEN", "RENAMED", "GONE", "BIG", "FIFO", "UNSET", "WASM_MCP_POLICY_SOURCE"]"#,
        )
        .unwrap();
        let d = policy.decide("p", &manifest);
        assert_eq!(
            d.grants.env,
            [
                ("TOKEN".into(), Secret::new("s3cr3t")),
                ("RENAMED".into(), Secret::new("from-the-host")),
            ]
        );
        let denied = d.denied.join("\n");
        for expected in [
            "env GONE: secret file",
            "env BIG: secret file",
            "over the limit of 65536 bytes",
            "env FIFO: secret file",
            "not a regular file",
            "env UNSET: host variable WASM_MCP_POLICY_NEVER_SET is not set",
            "env WASM_MCP_POLICY_SOURCE: not allowed",
        ] {
            assert!(denied.contains(expected), "{expected} in {denied}");
        }
        let shown = format!("{d:?} {}", d.summary());
        assert!(
            !shown.contains("s3cr3t") && !shown.contains("from-the-host"),
            "{shown}"
        );
        // One source each, and not also in `env`.
        for wrong in [
            "[plugins.p.secrets]\nA = {}\n",
            "[plugins.p.secrets]\nA = { file = \"f\", env = \"B\" }\n",
            "[plugins.p]\nenv = [\"A\"]\n[plugins.p.secrets]\nA = { env = \"B\" }\n",
        ] {
            assert!(Config::parse(wrong, dir.path()).is_err(), "{wrong}");
        }
    }
}
