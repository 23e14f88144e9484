//! Who may use what: scopes and claims a plugin (and one tool, resource or
//! prompt of it) requires of a caller's token, call rates, and `[audit]`.

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A claim's required value: one string, or any of several.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ClaimValues {
    /// This value.
    One(String),
    /// Any of these.
    Any(Vec<String>),
}

impl ClaimValues {
    /// The accepted values.
    pub fn values(&self) -> &[String] {
        match self {
            ClaimValues::One(one) => std::slice::from_ref(one),
            ClaimValues::Any(any) => any,
        }
    }
}

/// `[plugins.<name>.tools.<tool>]` (and `prompts`, `resources`): what one
/// item requires beyond what its plugin does.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ItemAccess {
    /// Scopes the caller's token must carry, all of them.
    pub scopes: Vec<String>,
    /// Claims the caller's token must carry with one of the values given.
    pub claims: BTreeMap<String, ClaimValues>,
    /// Calls of this tool per second, per principal (tools only; `None`:
    /// no limit of its own).
    pub calls_per_sec: Option<f64>,
}

/// `[plugins.<name>] tool_rules`: what the plugin's tools selected by
/// their annotations require beyond what the plugin does. A tool matches
/// when every hint in `annotated` has the value given and every hint in
/// `unless_annotated` has not; a hint the tool leaves out counts as the
/// protocol's default (`readOnlyHint` false, `destructiveHint` true,
/// `idempotentHint` false, `openWorldHint` true). A tool the plugin adds
/// later is selected the same way: `unless_annotated = { readOnlyHint =
/// true }` covers every tool that does not promise to only read.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ToolRule {
    /// Hints a tool must carry with these values to be selected.
    pub annotated: BTreeMap<String, bool>,
    /// Hints a tool must not carry with these values to be selected.
    pub unless_annotated: BTreeMap<String, bool>,
    /// Scopes the caller's token must carry, all of them.
    pub scopes: Vec<String>,
    /// Claims the caller's token must carry with one of the values given.
    pub claims: BTreeMap<String, ClaimValues>,
}

/// The tool annotation hints a [`ToolRule`] may name, with the value the
/// protocol gives one a tool leaves out.
pub const TOOL_HINTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// `[access]`: what is served when the config names no rule for it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSection {
    /// Who may use a plugin that no `[plugins.NAME]` section names, once
    /// any plugin, tool, resource or prompt requires scopes or claims:
    /// `"deny"` (the default): no caller with a token or none (over stdio
    /// the operator still sees everything), so a typo in a section's name
    /// or a plugin added to the folder is not served to everyone;
    /// `"open"`: everyone, as before any rule.
    pub unnamed_plugins: UnnamedPlugins,
}

/// `[access] unnamed_plugins`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnnamedPlugins {
    /// Served to no caller over the network.
    #[default]
    Deny,
    /// Served to everyone.
    Open,
}

/// `[profiles.<name>]`: a named set of tools (and resources and prompts),
/// served at an HTTP path of its own or chosen by a token claim.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ProfileSection {
    /// `PLUGIN.NAME` patterns (`*` matches any run of characters) of what
    /// it offers; empty: everything. NAME is a tool's or prompt's name (the
    /// plugin's own), or a resource's URI or a template's URI template.
    pub include: Vec<String>,
    /// Patterns of what it leaves out (after `include`).
    pub exclude: Vec<String>,
    /// Where it is served over HTTP (default: `[http] path` then `/NAME`).
    pub path: Option<String>,
}

/// Checks `[profiles.NAME]`.
pub(super) fn check_profile(name: &str, profile: &ProfileSection) -> Result<()> {
    anyhow::ensure!(
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "profiles.{name:?}: a profile's name is letters, digits, - and _"
    );
    for pattern in profile.include.iter().chain(&profile.exclude) {
        anyhow::ensure!(
            pattern.contains('.') && !pattern.starts_with('.'),
            "profiles.{name}: {pattern:?} is not a PLUGIN.NAME pattern (like \"files.*\")"
        );
    }
    if let Some(path) = &profile.path {
        anyhow::ensure!(
            path.starts_with('/') && !path.contains(['?', '#', '{', '}', '*', ':']),
            "profiles.{name}.path {path:?} must be a plain absolute path"
        );
    }
    Ok(())
}

/// `[server] tool_search`: `false` (the default), `true` (the host offers
/// `search_tools` and `call_tool` beside every tool) or `"only"` (instead
/// of listing the tools).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolSearchSetting {
    /// Off, or beside every tool.
    Flag(bool),
    /// Instead of listing the tools.
    Only(OnlyWord),
}

impl Default for ToolSearchSetting {
    fn default() -> Self {
        ToolSearchSetting::Flag(false)
    }
}

/// The word `"only"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum OnlyWord {
    /// `"only"`.
    #[serde(rename = "only")]
    Only,
}

/// `[audit]`: one JSON line per call and per refused request.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuditSection {
    /// Where the lines go: a file (relative to the config file), `-` for
    /// stderr; absent: no audit log.
    pub file: Option<PathBuf>,
    /// A file is rotated when it reaches this size, in MiB.
    pub max_file_mb: u64,
    /// Rotated files kept (`FILE.1` the newest).
    pub keep_files: u32,
    /// Lines waiting to be written at most; beyond, lines are dropped and
    /// counted (`wasm_mcp_audit_dropped_total`).
    pub queue: usize,
}

impl Default for AuditSection {
    fn default() -> Self {
        AuditSection {
            file: None,
            max_file_mb: 100,
            keep_files: 5,
            queue: 8192,
        }
    }
}

/// A scope as RFC 6749 §3.3 allows one (it goes into `WWW-Authenticate`).
fn check_scope(what: &str, scope: &str) -> Result<()> {
    anyhow::ensure!(
        !scope.is_empty()
            && scope
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b)),
        "{what}: scope {scope:?} is not a valid OAuth scope (printable ASCII, no spaces, \
         quotes or backslashes)"
    );
    Ok(())
}

/// Checks what `what` requires.
pub(super) fn check_requirement(
    what: &str,
    scopes: &[String],
    claims: &BTreeMap<String, ClaimValues>,
) -> Result<()> {
    for scope in scopes {
        check_scope(what, scope)?;
    }
    for (claim, values) in claims {
        anyhow::ensure!(!claim.is_empty(), "{what}: a claim name is empty");
        anyhow::ensure!(
            !values.values().is_empty(),
            "{what}: claims.{claim} lists no value"
        );
    }
    Ok(())
}

/// Checks `[plugins.NAME] tool_rules`.
pub(super) fn check_tool_rules(plugin: &str, rules: &[ToolRule]) -> Result<()> {
    for (i, rule) in rules.iter().enumerate() {
        let what = format!("plugins.{plugin}.tool_rules[{i}]");
        for hint in rule.annotated.keys().chain(rule.unless_annotated.keys()) {
            anyhow::ensure!(
                TOOL_HINTS.iter().any(|(h, _)| h == hint),
                "{what}: {hint:?} is not a tool annotation hint (one of {})",
                TOOL_HINTS.map(|(h, _)| h).join(", ")
            );
        }
        anyhow::ensure!(
            !rule.annotated.is_empty() || !rule.unless_annotated.is_empty(),
            "{what}: selects every tool; put its scopes and claims on the plugin instead, \
             or name hints in annotated or unless_annotated"
        );
        anyhow::ensure!(
            !rule.scopes.is_empty() || !rule.claims.is_empty(),
            "{what}: requires nothing; give it scopes or claims"
        );
        check_requirement(&what, &rule.scopes, &rule.claims)?;
    }
    Ok(())
}

/// Checks a call rate.
pub(super) fn check_rate(what: &str, rate: Option<f64>) -> Result<()> {
    if let Some(rate) = rate {
        anyhow::ensure!(
            rate.is_finite() && rate > 0.0 && rate <= 1e6,
            "{what}: calls_per_sec must be above 0 and at most 1000000 (leave it out for no limit)"
        );
    }
    Ok(())
}

/// Checks `[audit]`, making its file absolute.
pub(super) fn check_audit(audit: &mut AuditSection, base: &Path) -> Result<()> {
    anyhow::ensure!(
        audit.max_file_mb >= 1,
        "audit.max_file_mb must be at least 1"
    );
    anyhow::ensure!(audit.queue >= 1, "audit.queue must be at least 1");
    if let Some(file) = &mut audit.file {
        if file.as_os_str() != "-" && file.is_relative() {
            *file = base.join(&*file);
        }
    }
    Ok(())
}
