//! The checks a config passes before it is used: every count at least 1,
//! roots that exist and do not overlap, plugins that name known roots and
//! valid hosts, and relative paths resolved against the config's folder.

use super::{
    Config, HttpSection, LimitsSection, PluginSection, RootSection, ServerSection, TasksSection,
};
use crate::names::HostPattern;
use anyhow::{Context as _, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The problems one check found, each naming its key.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    /// Notes `problem` unless `ok`.
    fn ensure(&mut self, ok: bool, problem: impl FnOnce() -> String) {
        if !ok {
            self.0.push(problem());
        }
    }

    /// Notes each of `fields` of `section` that is 0.
    fn counts(&mut self, section: &str, fields: &[(&str, u64)]) {
        for (field, value) in fields {
            self.ensure(*value > 0, || {
                format!("{section}.{field} must be at least 1")
            });
        }
    }

    /// Every problem noted, a line each.
    fn done(self) -> Result<()> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(anyhow::anyhow!(self.0.join("\n"))),
        }
    }
}

/// `[server]`: every count at least 1.
pub(super) fn server(server: &ServerSection) -> Result<()> {
    let mut problems = Problems::default();
    problems.counts(
        "server",
        &[
            ("page_size", server.page_size as u64),
            ("cache_max_mb", server.cache_max_mb),
            ("max_plugin_mb", server.max_plugin_mb),
            ("skills_per_plugin", server.skills_per_plugin as u64),
            ("skill_file_kb", server.skill_file_kb),
            ("skills_mb", server.skills_mb),
            (
                "max_requests_per_connection",
                server.max_requests_per_connection as u64,
            ),
            (
                "max_requests_per_principal",
                server.max_requests_per_principal as u64,
            ),
            ("max_requests", server.max_requests as u64),
            (
                "max_requests_mb_per_principal",
                server.max_requests_mb_per_principal as u64,
            ),
            ("max_requests_mb", server.max_requests_mb as u64),
            (
                "max_waiting_per_principal",
                server.max_waiting_per_principal as u64,
            ),
        ],
    );
    let rate = server.calls_per_sec_per_principal;
    problems.ensure(rate.is_finite() && (0.0..=1e6).contains(&rate), || {
        "server.calls_per_sec_per_principal must be from 0 (no limit) to 1000000".into()
    });
    let ceiling = super::defaults::MAX_INSTANCES_CEILING;
    problems.ensure((1..=ceiling).contains(&server.max_instances), || {
        format!("server.max_instances must be from 1 to {ceiling}")
    });
    problems.done()
}

/// `[server] lock`: a file name, relative to `base`. (That it can be
/// read is checked when the host starts, and by `config check`.)
pub(super) fn lock(server: &mut ServerSection, base: &Path) -> Result<()> {
    if let Some(lock) = &mut server.lock {
        anyhow::ensure!(
            lock.file_name().is_some(),
            "server.lock must name a file (such as \"wasm-mcp.lock\")"
        );
        if lock.is_relative() {
            *lock = base.join(&*lock);
        }
    }
    Ok(())
}

/// `[roots.NAME]`: each an existing folder (relative to `base`), opened
/// now, and none inside another. `text` is the config, for line numbers.
pub(super) fn open_roots(
    roots: &mut BTreeMap<String, RootSection>,
    base: &Path,
    text: &str,
    files: super::Files,
) -> Result<()> {
    let mut problems = Vec::new();
    for (name, root) in roots.iter_mut() {
        if let Err(e) = open_root(name, root, base, text, files) {
            problems.push(format!("{e:#}"));
        }
    }
    // Overlaps say something only of roots that opened.
    anyhow::ensure!(problems.is_empty(), problems.join("\n"));
    let paths: Vec<(&String, &Path)> = roots
        .iter()
        .map(|(name, root)| (name, root.area()))
        .collect();
    for (i, (a, a_path)) in paths.iter().enumerate() {
        for (b, b_path) in &paths[i + 1..] {
            anyhow::ensure!(
                !overlap(a_path, b_path),
                "roots.{a} ({}) and roots.{b} ({}) overlap: one is inside the other, \
                 so a plugin granted one could change what the other shows; \
                 give each root a folder of its own",
                a_path.display(),
                b_path.display()
            );
        }
    }
    Ok(())
}

/// One `[roots.NAME]`: a valid name and, unless `files` skips the disk,
/// an existing folder, whose canonical path replaces the one written.
fn open_root(
    name: &str,
    root: &mut RootSection,
    base: &Path,
    text: &str,
    files: super::Files,
) -> Result<()> {
    let at = |span: std::ops::Range<usize>| format!("line {}", line_of(text, span.start));
    anyhow::ensure!(
        crate::names::is_valid(name),
        "roots.{name}: a root name must be letters, digits, '-' or '_'"
    );
    let span = root.path.span();
    let written = root.path.get_ref();
    anyhow::ensure!(
        written
            .parent()
            .is_none_or(|p| !p.to_string_lossy().contains(RootSection::TENANT))
            && (written.file_name().is_none_or(|f| f == RootSection::TENANT)
                || !written.to_string_lossy().contains(RootSection::TENANT)),
        "{}: roots.{name}.path {}: {{tenant}} must be the path's last part \
         (\"/srv/files/{{tenant}}\": each tenant's folder is made inside /srv/files)",
        at(span.clone()),
        written.display()
    );
    let per_tenant = root.tenant_parent().is_some();
    // A root per tenant: its parent is what must exist.
    let path = match root.tenant_parent() {
        Some(parent) => base.join(parent),
        None => base.join(written),
    };
    let tenant = |path: PathBuf| match per_tenant {
        true => path.join(RootSection::TENANT),
        false => path,
    };
    if files == super::Files::Skip {
        *root.path.get_mut() = tenant(std::path::absolute(&path).unwrap_or(path));
        return Ok(());
    }
    let path = path
        .canonicalize()
        .with_context(|| format!("{}: roots.{name}.path {}", at(span.clone()), path.display()))?;
    anyhow::ensure!(
        path.is_dir(),
        "{}: roots.{name}.path {} is not a folder",
        at(span),
        path.display()
    );
    *root.path.get_mut() = tenant(path);
    Ok(())
}

/// Where a registry is asked for, as a plugin's `source` names it:
/// `oci://REGISTRY/REPO:TAG` or `oci://REGISTRY/REPO@sha256:DIGEST`.
pub fn oci_reference(text: &str) -> Result<oci_client::Reference> {
    let Some(rest) = text.strip_prefix("oci://") else {
        anyhow::bail!(
            "{text:?} is not an OCI reference (oci://REGISTRY/REPO:TAG or @sha256:DIGEST)"
        );
    };
    rest.parse()
        .with_context(|| format!("{text:?} is not an OCI reference"))
}

/// `[plugins.NAME]`: known roots, valid host patterns and variable names,
/// and limits that pass. Each plugin is checked even when another failed:
/// the error holds each one's first problem, a line each.
pub(super) fn plugins(config: &mut Config, text: &str, base: &Path) -> Result<()> {
    let mut problems = Vec::new();
    for (plugin, section) in config.plugins.iter_mut() {
        if let Err(e) = secrets(plugin, section, base) {
            problems.push(format!("{e:#}"));
        }
    }
    for (plugin, section) in &config.plugins {
        if let Err(e) = plugin_grants(config, plugin, section, text) {
            problems.push(format!("{e:#}"));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(anyhow::anyhow!(problems.join("\n"))),
    }
}

/// One `[plugins.NAME]`'s grants, source, variables, limits and access:
/// every problem, a line each.
fn plugin_grants(config: &Config, plugin: &str, section: &PluginSection, text: &str) -> Result<()> {
    let at = |span: std::ops::Range<usize>| format!("line {}", line_of(text, span.start));
    let mut problems = Problems::default();
    for root in &section.roots {
        problems.ensure(config.roots.contains_key(root.get_ref()), || {
            format!(
                "{}: plugins.{plugin}.roots names {:?}, which is not in [roots]",
                at(root.span()),
                root.get_ref()
            )
        });
    }
    for host in &section.hosts {
        problems.ensure(HostPattern::parse(host.get_ref()).is_some(), || {
            format!(
                "{}: plugins.{plugin}.hosts: {:?} is not a host name or *.domain",
                at(host.span()),
                host.get_ref()
            )
        });
    }
    if let Some(source) = &section.source {
        if let Err(e) = oci_reference(source) {
            problems.0.push(format!("plugins.{plugin}.source: {e:#}"));
        }
        problems.ensure(crate::names::is_valid(plugin), || {
            format!("plugins.{plugin}.source: {plugin:?} cannot name a plugin file")
        });
    }
    for pattern in &section.call_tools {
        let plugin_tool = pattern
            .split_once('.')
            .is_some_and(|(p, t)| !p.is_empty() && !t.is_empty());
        problems.ensure(plugin_tool || pattern == "*", || {
            format!(
                "plugins.{plugin}.call_tools: {pattern:?} is not a PLUGIN.TOOL pattern \
                     (`*` matches any run of characters, e.g. \"filesystem.*\"; \"*\" is every \
                     tool)"
            )
        });
    }
    problems.ensure(
        section.call_tools.is_empty()
            || config.limits.with(&section.limits).calls_per_instance <= 1,
        || {
            format!(
                "plugins.{plugin}: call_tools and calls_per_instance above 1 do not go together: \
                 an instance kept for the next call could hand it what one caller's tools \
                 returned (set plugins.{plugin}.limits.calls_per_instance = 1)"
            )
        },
    );
    for var in &section.env {
        let var_name = var.get_ref();
        problems.ensure(!var_name.is_empty() && !var_name.contains('='), || {
            format!(
                "{}: plugins.{plugin}.env: {var_name:?} is not a variable name",
                at(var.span())
            )
        });
    }
    let limits = check_limits(
        &format!("plugins.{plugin}.limits"),
        &config.limits.with(&section.limits),
    );
    for result in [limits, access(plugin, section)] {
        if let Err(e) = result {
            problems
                .0
                .extend(format!("{e:#}").lines().map(str::to_owned));
        }
    }
    problems.done()
}

/// What plugin `plugin` and its items require of callers, and their rates.
fn access(plugin: &str, section: &super::PluginSection) -> Result<()> {
    use super::access::{check_rate, check_requirement, check_tool_rules};
    check_requirement(
        &format!("plugins.{plugin}"),
        &section.scopes,
        &section.claims,
    )?;
    check_tool_rules(plugin, &section.tool_rules)?;
    for (kind, items) in [
        ("tools", &section.tools),
        ("prompts", &section.prompts),
        ("resources", &section.resources),
    ] {
        for (name, item) in items {
            let what = format!("plugins.{plugin}.{kind}.{name:?}");
            check_requirement(&what, &item.scopes, &item.claims)?;
            anyhow::ensure!(
                kind == "tools" || item.calls_per_sec.is_none(),
                "{what}: calls_per_sec is for tools only"
            );
            check_rate(&what, item.calls_per_sec)?;
        }
    }
    Ok(())
}

/// `[registries."HOST"]`: a registry name, and a password with exactly
/// one source; files made relative to `base`.
pub(super) fn registries(
    registries: &mut BTreeMap<String, super::RegistryLogin>,
    base: &Path,
) -> Result<()> {
    for (registry, login) in registries.iter_mut() {
        anyhow::ensure!(
            !registry.is_empty() && !registry.contains(['/', ' ']),
            "registries: {registry:?} is not a registry (HOST or HOST:PORT)"
        );
        let source = &mut login.password;
        anyhow::ensure!(
            source.file.is_some() != source.env.is_some(),
            "registries.\"{registry}\".password needs exactly one of file and env"
        );
        if let Some(file) = &mut source.file {
            *file = base.join(&*file);
        }
    }
    Ok(())
}

/// `[plugins.NAME.secrets]`: variable names, each with exactly one source,
/// none also in `env`; files made relative to `base`.
fn secrets(plugin: &str, section: &mut PluginSection, base: &Path) -> Result<()> {
    for (var, source) in section.secrets.iter_mut() {
        anyhow::ensure!(
            !var.is_empty() && !var.contains('='),
            "plugins.{plugin}.secrets: {var:?} is not a variable name"
        );
        anyhow::ensure!(
            source.file.is_some() != source.env.is_some(),
            "plugins.{plugin}.secrets.{var} needs exactly one of file and env"
        );
        anyhow::ensure!(
            !section.env.iter().any(|e| e.get_ref() == var),
            "plugins.{plugin}.secrets.{var} is also in plugins.{plugin}.env: name one source"
        );
        if let Some(file) = &mut source.file {
            *file = base.join(&*file);
        }
        if let Some(env) = &source.env {
            anyhow::ensure!(
                !env.is_empty() && !env.contains('='),
                "plugins.{plugin}.secrets.{var}.env: {env:?} is not a variable name"
            );
        }
    }
    Ok(())
}

/// `[http]`: a path from `/`, counts at least 1, one JWT key source (a
/// key file relative to `base`).
pub(super) fn http(h: &mut HttpSection, base: &Path) -> Result<()> {
    let mut problems = Problems::default();
    problems.ensure(h.path.starts_with('/'), || {
        "http.path must start with /".into()
    });
    problems.ensure(!h.path.contains(['{', '}', '*']), || {
        format!("http.path {} cannot hold {{, }} or *", h.path)
    });
    problems.ensure(
        !["/healthz", "/readyz", "/metrics", "/sse", "/messages"].contains(&h.path.as_str())
            && !h.path.starts_with("/.well-known/"),
        || {
            format!(
                "http.path {} is taken by the host (/healthz, /readyz, /metrics, /sse, \
                 /messages and /.well-known/ are its own)",
                h.path
            )
        },
    );
    problems.counts(
        "http",
        &[
            ("max_body_mb", h.max_body_mb as u64),
            ("session_idle_secs", h.session_idle_secs),
            ("max_connections", h.max_connections as u64),
            ("header_timeout_secs", h.header_timeout_secs),
            ("body_timeout_secs", h.body_timeout_secs),
            ("idle_timeout_secs", h.idle_timeout_secs),
            ("max_sessions", h.max_sessions as u64),
            (
                "max_sessions_per_principal",
                h.max_sessions_per_principal as u64,
            ),
        ],
    );
    problems.ensure(
        h.tls_cert_file.is_some() == h.tls_key_file.is_some(),
        || "http: tls_cert_file and tls_key_file go together".into(),
    );
    for file in [&mut h.tls_cert_file, &mut h.tls_key_file]
        .into_iter()
        .flatten()
    {
        *file = base.join(&*file);
    }
    if let Some(jwt) = h.auth.as_mut().and_then(|a| a.jwt.as_mut()) {
        let sources = [
            jwt.secret_env.is_some(),
            jwt.public_key_file.is_some(),
            jwt.jwks_url.is_some(),
            jwt.discovery,
        ];
        problems.ensure(sources.iter().filter(|&&s| s).count() == 1, || {
            "http.auth.jwt needs exactly one of secret_env, public_key_file, jwks_url and \
             discovery = true"
                .into()
        });
        problems.ensure(
            jwt.jwks_refresh_secs >= 1 && jwt.jwks_timeout_ms >= 1 && jwt.jwks_max_kb >= 1,
            || {
                "http.auth.jwt: jwks_refresh_secs, jwks_timeout_ms and jwks_max_kb must be at \
                 least 1"
                    .into()
            },
        );
        if let Some(file) = &mut jwt.public_key_file {
            *file = base.join(&*file);
        }
    }
    problems.done()
}

/// `[tasks]`: times and counts that make sense, the store relative to
/// `base`.
pub(super) fn tasks(t: &mut TasksSection, base: &Path) -> Result<()> {
    let mut problems = Problems::default();
    problems.ensure(t.ttl_ms >= 1000 && t.max_ttl_ms >= t.ttl_ms, || {
        "tasks.ttl_ms must be at least 1000, and tasks.max_ttl_ms at least tasks.ttl_ms".into()
    });
    problems.counts(
        "tasks",
        &[
            ("poll_interval_ms", t.poll_interval_ms),
            ("max_running", t.max_running as u64),
            ("max_running_per_owner", t.max_running_per_owner as u64),
            ("max_stored_per_owner", t.max_stored_per_owner as u64),
            ("max_stored_mb_per_owner", t.max_stored_mb_per_owner as u64),
            ("max_stored", t.max_stored as u64),
            ("max_stored_mb", t.max_stored_mb as u64),
            ("max_result_mb", t.max_result_mb as u64),
        ],
    );
    if let Some(store) = &mut t.store {
        if !store.as_os_str().is_empty() {
            *store = base.join(&*store);
        }
    }
    problems.done()
}

/// Whether one of two canonical paths is inside the other (or they are equal).
pub(super) fn overlap(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The most calls one instance may serve: what a long-lived instance
/// gathers (its heap, the handles it never closed) stays bounded.
const MAX_CALLS_PER_INSTANCE: u32 = 1_000_000;

/// The limits of `section`: every count at least 1, memory within wasm32.
pub(super) fn check_limits(section: &str, limits: &LimitsSection) -> Result<()> {
    let mut problems = Problems::default();
    problems.counts(
        section,
        &[
            ("memory_mb", limits.memory_mb as u64),
            ("call_timeout_ms", limits.call_timeout_ms),
            ("max_result_mb", limits.max_result_mb as u64),
            ("max_concurrent_calls", limits.max_concurrent_calls as u64),
            ("max_result_items", limits.max_result_items as u64),
            ("max_message_kb", limits.max_message_kb as u64),
            ("max_view_kb", limits.max_view_kb as u64),
            ("notifications_per_sec", limits.notifications_per_sec as u64),
            ("load_timeout_ms", limits.load_timeout_ms),
            ("max_blocking_threads", limits.max_blocking_threads as u64),
            ("calls_per_instance", limits.calls_per_instance as u64),
        ],
    );
    problems.ensure(limits.calls_per_instance <= MAX_CALLS_PER_INSTANCE, || {
        format!("{section}.calls_per_instance must be at most {MAX_CALLS_PER_INSTANCE}")
    });
    problems.ensure(limits.memory_mb <= 4096, || {
        format!("{section}.memory_mb must be at most 4096 (the wasm32 address space)")
    });
    problems.done()
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// `[signatures]`: key and trusted-root paths resolved against `base`; a
/// policy that checks signatures needs a key or an identity, and
/// identities need a trusted root.
pub(super) fn signatures(config: &mut Config, base: &Path) -> Result<()> {
    let signatures = &mut config.signatures;
    for key in signatures
        .keys
        .iter_mut()
        .chain(&mut signatures.trusted_root)
    {
        if key.is_relative() {
            *key = base.join(&*key);
        }
    }
    let identities = config
        .signatures
        .identities
        .iter()
        .map(|i| ("signatures.identities".to_owned(), i));
    let identities = identities.chain(config.plugins.iter().flat_map(|(name, p)| {
        p.identities
            .iter()
            .flatten()
            .map(move |i| (format!("plugins.{name}.identities"), i))
    }));
    for (field, identity) in identities {
        anyhow::ensure!(
            !identity.issuer.is_empty() && !identity.subject.is_empty(),
            "{field}: an identity needs an issuer and a subject (`*` matches any run of characters)"
        );
        anyhow::ensure!(
            config.signatures.trusted_root.is_some(),
            "{field} names keyless signers, but [signatures] trusted_root names no trusted root \
             (a Sigstore trusted_root.json)"
        );
    }
    let checking = std::iter::once(("signatures.policy".to_owned(), config.signatures.policy))
        .chain(config.plugins.iter().filter_map(|(name, p)| {
            p.signatures
                .map(|policy| (format!("plugins.{name}.signatures"), policy))
        }))
        .find(|(_, policy)| *policy != super::SignaturePolicy::Off);
    if let Some((field, _)) = checking {
        let keyless = !config.signatures.identities.is_empty()
            || config
                .plugins
                .values()
                .any(|p| p.identities.as_ref().is_some_and(|i| !i.is_empty()));
        anyhow::ensure!(
            !config.signatures.keys.is_empty() || keyless,
            "{field} checks signatures, but [signatures] names no public key (keys) and no \
             keyless signer (identities)"
        );
    }
    Ok(())
}
