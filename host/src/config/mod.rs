//! The TOML config file (where plugins live, caching, paging, limits,
//! roots and what each plugin may be granted), plugin manifests, and the
//! policy that grants a plugin what it asks for and the config allows.

mod access;
pub mod card;
mod check;
mod cluster;
pub mod defaults;
mod http;
mod limits;
mod manifest;
mod reachable;
pub mod schema;
pub mod serving;
mod tasks;
pub mod unmatched;

pub use access::{
    AccessSection, AuditSection, ClaimValues, ItemAccess, ProfileSection, ToolRule,
    ToolSearchSetting, UnnamedPlugins, TOOL_HINTS,
};
pub use check::oci_reference;
pub use cluster::{
    check_url as check_state_url, client_url as state_client_url, valid_replica_name,
    ClusterSection, StateSection,
};
pub use http::{AuthSection, HttpSection, JwtSection};
pub use limits::{LimitsOverride, LimitsSection, SpareMode};
pub use manifest::Manifest;
pub use reachable::Findings;
pub use tasks::TasksSection;

use anyhow::{Context as _, Result};
use check::{check_limits, overlap};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// The whole config file. Every field has a default, so an empty file (or
/// no file) is valid.
#[derive(Debug, Clone, Deserialize, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[server]`
    pub server: ServerSection,
    /// `[limits]`
    pub limits: LimitsSection,
    /// `[roots.<name>]`
    pub roots: BTreeMap<String, RootSection>,
    /// `[plugins.<name>]`
    pub plugins: BTreeMap<String, PluginSection>,
    /// `[http]`
    pub http: HttpSection,
    /// `[tasks]`
    pub tasks: TasksSection,
    /// `[metrics]`
    pub metrics: MetricsSection,
    /// `[signatures]`
    pub signatures: SignaturesSection,
    /// `[traces]`
    pub traces: TracesSection,
    /// `[state]`: the database replicas share.
    pub state: StateSection,
    /// `[cluster]`: this replica's name and lease.
    pub cluster: ClusterSection,
    /// `[registries."HOST[:PORT]"]`: credentials for OCI registries.
    pub registries: BTreeMap<String, RegistryLogin>,
    /// `[audit]`
    pub audit: AuditSection,
    /// `[profiles.<name>]`: named sets of tools.
    pub profiles: BTreeMap<String, ProfileSection>,
    /// `[access]`: what is served when no rule names it.
    pub access: AccessSection,
    /// `[tenancy]`: whose plugin data a caller reaches.
    pub tenancy: Option<TenancySection>,
}

/// `[tenancy]`: which token claim names a caller's tenant, whose own
/// folder in each `{tenant}` root and own key-value data it reaches.
/// Without it, an authenticated caller's tenant is its `sub` (else its
/// principal), and every other caller's is `local`. With it, a token
/// without the claim is refused.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TenancySection {
    /// The claim: a name, or a dotted path into nested objects (`org.id`).
    /// `sub` (the default) makes each principal its own tenant; `org`
    /// (say) puts a whole team in one.
    pub claim: String,
}

impl Default for TenancySection {
    fn default() -> Self {
        TenancySection {
            claim: "sub".into(),
        }
    }
}

/// `[registries."HOST[:PORT]"]`: the login for one OCI registry, named as
/// in references (`oci://HOST[:PORT]/...`). The password comes from a
/// secret's source, never from the config itself.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegistryLogin {
    /// The user name.
    pub username: String,
    /// Where the password (or token) comes from: `{ file = "..." }` or
    /// `{ env = "VAR" }`.
    pub password: SecretSource,
}

/// `[traces]`: OpenTelemetry traces, sent over OTLP/HTTP (JSON); off
/// unless an endpoint is given.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TracesSection {
    /// The OTLP/HTTP traces endpoint, e.g. `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: Option<String>,
    /// The `service.name` the spans carry.
    pub service_name: String,
}

impl Default for TracesSection {
    fn default() -> Self {
        TracesSection {
            endpoint: None,
            service_name: "wasm-mcp".to_owned(),
        }
    }
}

/// `[signatures]`: what a plugin pulled from an OCI registry must carry
/// (cosign-compatible signatures, checked with these keys).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SignaturesSection {
    /// For every pulled plugin, unless its `[plugins.NAME] signatures` says
    /// otherwise.
    pub policy: SignaturePolicy,
    /// Public keys (PEM, ECDSA P-256, like `cosign.pub`); relative paths
    /// are relative to the config.
    pub keys: Vec<PathBuf>,
    /// Repositories (`REGISTRY/REPO`) whose signatures also vouch for an
    /// artifact pulled from another one (a mirror of a signed original);
    /// by default a signature vouches only for the repository it names.
    pub repositories: Vec<String>,
    /// Who may sign keylessly (Sigstore): a signature whose certificate
    /// names one of these issuers and subjects verifies, checked against
    /// `trusted_root`.
    pub identities: Vec<SignerIdentity>,
    /// The Sigstore trusted root (`trusted_root.json`): the certificate
    /// authorities and transparency logs keyless signatures are checked
    /// against, offline; relative to the config. Needed by `identities`.
    pub trusted_root: Option<PathBuf>,
}

/// A keyless signer a policy accepts. `*` matches any run of characters,
/// except in `subject`, where it matches none holding `@`
/// (`https://github.com/ORG/REPO/.github/workflows/release.yml@refs/tags/*`,
/// `*@acme.example`): so that a branch or tag named with an `@` cannot pass
/// for another ref.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignerIdentity {
    /// The OIDC issuer its certificate names, e.g.
    /// `https://token.actions.githubusercontent.com`.
    pub issuer: String,
    /// The identity its certificate names (its subject alternative name):
    /// a workflow URI or an email address.
    pub subject: String,
    /// Only for artifacts pulled from these repositories
    /// (`REGISTRY/REPO`, `*` allowed: `ghcr.io/acme/*`); any by default.
    /// A signature that names no repository (cosign's bundle format binds
    /// one to a digest only) counts only through an identity that has one.
    pub repository: Option<String>,
    /// Only certificates naming this source repository (Fulcio's
    /// extension, set for CI identities: `https://github.com/acme/tools`):
    /// the repository whose run signed, which differs from the subject's
    /// when another repository calls a reusable workflow.
    pub source_repository: Option<String>,
}

impl SignerIdentity {
    /// Whether a signature by `subject` vouched for by `issuer` (from a run
    /// of `source_repository`, if named) of an artifact pulled from
    /// `repository` is accepted.
    pub fn accepts(
        &self,
        issuer: &str,
        subject: &str,
        source_repository: Option<&str>,
        repository: &str,
    ) -> bool {
        unmatched::glob_matches(&self.issuer, issuer)
            && subject_matches(&self.subject, subject)
            && self
                .repository
                .as_deref()
                .is_none_or(|pattern| unmatched::glob_matches(pattern, repository))
            && self.source_repository.as_deref().is_none_or(|pattern| {
                source_repository.is_some_and(|named| unmatched::glob_matches(pattern, named))
            })
    }

    /// Whether its subject pattern matches `subject` (and nothing else).
    pub fn names(&self, subject: &str) -> bool {
        subject_matches(&self.subject, subject)
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters without an `@`.
fn subject_matches(pattern: &str, text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    // matched[j]: the pattern so far matches text[..j].
    let mut matched = vec![false; text.len() + 1];
    matched[0] = true;
    for p in pattern.chars() {
        let mut next = vec![false; text.len() + 1];
        if p == '*' {
            next[0] = matched[0];
            for j in 1..=text.len() {
                next[j] = matched[j] || (next[j - 1] && text[j - 1] != '@');
            }
        } else {
            for j in 1..=text.len() {
                next[j] = matched[j - 1] && text[j - 1] == p;
            }
        }
        matched = next;
    }
    matched[text.len()]
}

/// Whether a pulled plugin's signature is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SignaturePolicy {
    /// Not looked at.
    #[default]
    Off,
    /// A plugin without a signature loads (with a warning); one with
    /// signatures loads only if one of them verifies.
    IfPresent,
    /// A plugin loads only if a signature of it verifies.
    Required,
}

/// `[metrics]`: where operators scrape the host besides the MCP listener.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSection {
    /// An address of its own for `/metrics`, `/healthz` and `/readyz`
    /// (unauthenticated); also when the MCP clients speak stdio.
    pub listen: Option<String>,
}

/// `[server]`: what to serve and how.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// The folder of plugin components (`*.wasm`).
    pub plugins: Option<PathBuf>,
    /// Where compiled components are cached; `""` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// The most the cache folder keeps, in MiB: compiled components and
    /// OCI pulls together. Past it, the least recently used are removed
    /// (each is made again when next needed); the one just written stays.
    pub cache_max_mb: u64,
    /// Items per page of `tools/list` and the other lists.
    pub page_size: usize,
    /// Instructions for the model, sent in `initialize` and `server/discover`.
    pub instructions: Option<String>,
    /// How long clients may cache list results, in milliseconds (2026-07-28).
    pub list_ttl_ms: u64,
    /// Whether to reload plugins when their files change.
    pub watch: bool,
    /// How long a plugin waits for the client to answer its question
    /// (elicitation, sampling, roots), in milliseconds.
    pub input_timeout_ms: u64,
    /// The largest plugin component file read, in MiB.
    pub max_plugin_mb: u64,
    /// Skills one plugin may ship (in `NAME.skills`).
    pub skills_per_plugin: usize,
    /// The largest file of a skill, in KiB.
    pub skill_file_kb: u64,
    /// All the skills of one plugin together (held in memory), in MiB.
    pub skills_mb: u64,
    /// Requests in progress on one connection (stdio, an HTTP session).
    pub max_requests_per_connection: usize,
    /// Requests in progress for one principal (all unauthenticated
    /// clients are one).
    pub max_requests_per_principal: usize,
    /// Requests in progress in all.
    pub max_requests: usize,
    /// MiB of requests (as received) in progress for one principal.
    pub max_requests_mb_per_principal: usize,
    /// MiB of requests in progress in all.
    pub max_requests_mb: usize,
    /// Calls of one principal waiting for its answers at once.
    pub max_waiting_per_principal: usize,
    /// Offer only the handshake revisions (up to 2025-11-25).
    pub handshake_only: bool,
    /// How long a request that arrives while the plugins first load waits
    /// for them, in milliseconds; then it is answered with the plugins
    /// loaded so far, and the others are announced with `list_changed`.
    pub startup_wait_ms: u64,
    /// When a stdio client closes stdin, how long the requests it sent may
    /// still run to their answers, in milliseconds; those still running
    /// then are cancelled and answered with an error saying so.
    pub stdin_eof_grace_ms: u64,
    /// Plugin instances alive at once, across all plugins (each call has
    /// its own); the host reserves address space for this many at start.
    pub max_instances: u32,
    /// How often a plugin's OCI `source` given by tag is asked again, in
    /// seconds; a moved tag reloads the plugin. 0: only at start.
    pub oci_poll_secs: u64,
    /// The most one pull from an OCI registry may take, all its requests
    /// together, in seconds (each source is pulled on its own).
    pub oci_pull_timeout_secs: u64,
    /// The largest OCI manifest or index a pull reads, in KiB.
    pub oci_max_manifest_kb: usize,
    /// The largest token answer a pull reads from a registry's token
    /// service, in KiB.
    pub oci_max_token_kb: usize,
    /// Calls (into plugins: `tools/call`, `resources/read`, `prompts/get`,
    /// `completion/complete`) one principal may make per second, with a
    /// burst of one second's worth; 0: no limit. Over it, a call is
    /// refused with when to retry (HTTP: 429 and `Retry-After`).
    pub calls_per_sec_per_principal: f64,
    /// Offer tool search: `true` beside the tools, `"only"` instead of
    /// listing them (for catalogues too big to hand a model whole).
    pub tool_search: ToolSearchSetting,
    /// The plugin lock to enforce (written by `wasm-mcp lock`; relative to
    /// the config): a plugin version whose component, signer, grants asked
    /// for or definitions differ from its entry is not served. Never
    /// enforced under `dev`.
    pub lock: Option<PathBuf>,
    /// The name its server card gives it: `NAMESPACE/NAME` in reverse-DNS
    /// form (`com.example/tools`); each profile's card adds `-PROFILE`.
    /// Not the `serverInfo` name, which stays `wasm-mcp`.
    pub name: String,
    /// What its server card says it offers, in 1 to 100 characters.
    pub description: String,
    /// A web page its server card links to (`http://` or `https://`).
    pub website: Option<String>,
    /// Icons its server card shows (`[[server.icons]]`, at most 8): each a
    /// `src` (an `https:` URL, or a `data:` URI of at most 64 KiB) and, if
    /// known, its `mime_type`, `sizes` (`48x48`, `any`) and `theme`
    /// (`light` or `dark`).
    pub icons: Vec<card::IconSection>,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            plugins: None,
            cache_dir: None,
            cache_max_mb: defaults::CACHE_MAX_MB,
            page_size: defaults::PAGE_SIZE,
            instructions: None,
            list_ttl_ms: defaults::LIST_TTL_MS,
            watch: true,
            input_timeout_ms: defaults::INPUT_TIMEOUT_MS,
            max_plugin_mb: 256,
            skills_per_plugin: 64,
            skill_file_kb: 4096,
            skills_mb: 32,
            max_requests_per_connection: 1024,
            max_requests_per_principal: 4096,
            max_requests: 16384,
            max_requests_mb_per_principal: 64,
            max_requests_mb: 256,
            max_waiting_per_principal: defaults::MAX_WAITING_PER_PRINCIPAL,
            startup_wait_ms: defaults::STARTUP_WAIT_MS,
            stdin_eof_grace_ms: defaults::STDIN_EOF_GRACE_MS,
            max_instances: defaults::MAX_INSTANCES,
            oci_poll_secs: defaults::OCI_POLL_SECS,
            oci_pull_timeout_secs: defaults::OCI_PULL_TIMEOUT_SECS,
            oci_max_manifest_kb: defaults::OCI_MAX_MANIFEST_KB,
            oci_max_token_kb: defaults::OCI_MAX_TOKEN_KB,
            handshake_only: false,
            calls_per_sec_per_principal: 0.0,
            tool_search: ToolSearchSetting::default(),
            lock: None,
            name: card::DEFAULT_NAME.to_owned(),
            description: card::DEFAULT_DESCRIPTION.to_owned(),
            website: None,
            icons: Vec::new(),
        }
    }
}

/// Whether a root may be changed.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Deserialize,
    serde::Serialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Only reads.
    #[default]
    ReadOnly,
    /// Reads, writes, creates, renames and deletes.
    ReadWrite,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::ReadOnly => "read-only",
            Mode::ReadWrite => "read-write",
        })
    }
}

/// `[roots.<name>]`: a host folder that plugins may be granted. A plugin
/// sees a granted root at `/<name>`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RootSection {
    /// The folder on the host; relative paths are relative to the config file.
    #[schemars(with = "PathBuf")]
    pub path: Spanned<PathBuf>,
    /// The most any plugin may do in it.
    #[serde(default)]
    pub mode: Mode,
}

impl RootSection {
    /// The last component of a root's path that makes it a root per
    /// tenant: `path = "/srv/files/{tenant}"`.
    pub const TENANT: &'static str = "{tenant}";

    /// The folder that holds each tenant's folder, when the path ends in
    /// `{tenant}`.
    pub fn tenant_parent(&self) -> Option<&Path> {
        let path = self.path.get_ref();
        (path.file_name()? == Self::TENANT).then(|| path.parent())?
    }

    /// The folder the root takes up on the host: its own, or the one that
    /// holds each tenant's.
    pub fn area(&self) -> &Path {
        self.tenant_parent().unwrap_or(self.path.get_ref())
    }
}

/// `[plugins.<name>]`: what the operator allows one plugin. A plugin gets
/// what its manifest asks for and this allows, nothing more.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PluginSection {
    /// Names of `[roots]` it may be granted.
    #[schemars(with = "Vec<String>")]
    pub roots: Vec<Spanned<String>>,
    /// Hosts it may send HTTP requests to: `api.example.com` or `*.example.com`.
    #[schemars(with = "Vec<String>")]
    pub hosts: Vec<Spanned<String>>,
    /// Environment variables of the host it may read.
    #[schemars(with = "Vec<String>")]
    pub env: Vec<Spanned<String>>,
    /// Variables it may read whose values come from elsewhere than the host
    /// variable of the same name: a file, or another host variable.
    pub secrets: BTreeMap<String, SecretSource>,
    /// Its own limits.
    pub limits: LimitsOverride,
    /// Where the host fetches it from: `oci://REGISTRY/REPO:TAG` or
    /// `@sha256:DIGEST`, pulled into the plugin folder at start (and, for a
    /// tag, again every `[server] oci_poll_secs`).
    pub source: Option<String>,
    /// Its own signature policy (instead of `[signatures] policy`).
    pub signatures: Option<SignaturePolicy>,
    /// Who may sign it keylessly (instead of `[signatures] identities`).
    pub identities: Option<Vec<SignerIdentity>>,
    /// Scopes a caller's token must carry to see or use anything of it.
    pub scopes: Vec<String>,
    /// Claims a caller's token must carry (`groups = "admins"`, or any of
    /// a list), to see or use anything of it.
    pub claims: BTreeMap<String, ClaimValues>,
    /// What one of its tools requires beyond that, by the plugin's own
    /// name for it, and how often one principal may call it.
    pub tools: BTreeMap<String, ItemAccess>,
    /// What one of its prompts requires beyond that.
    pub prompts: BTreeMap<String, ItemAccess>,
    /// What one of its resources (by URI) or templates (by URI template)
    /// requires beyond that.
    pub resources: BTreeMap<String, ItemAccess>,
    /// What its tools selected by their annotations require beyond what
    /// it does (`[[plugins.NAME.tool_rules]]`).
    pub tool_rules: Vec<ToolRule>,
    /// A key-value store (`wasi:keyvalue`): one namespace per tenant, in
    /// the host's store (SQLite, or `[state] url`'s PostgreSQL).
    pub keyvalue: bool,
    /// Tools it may call while it serves a call (code mode), as
    /// `PLUGIN.TOOL` patterns (`*` matches any run of characters), each
    /// for the caller of that call and only as that caller may.
    pub call_tools: Vec<String>,
}

/// `[plugins.<name>.secrets] VAR = { file = "..." }` or `{ env = "..." }`:
/// where the value of the plugin's variable `VAR` comes from. Exactly one.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SecretSource {
    /// A file holding the value (less one trailing newline); relative paths
    /// are relative to the config. Read each time the plugin loads, so a
    /// rotated secret reaches the plugin at its next reload.
    pub file: Option<PathBuf>,
    /// A host environment variable holding the value.
    pub env: Option<String>,
}

/// Whether checking a config looks at the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Files {
    /// Root folders are opened (they must exist), as when serving.
    Open,
    /// Nothing on disk is looked at: a config written for another machine.
    Skip,
}

/// The largest secret file read, in bytes.
pub const MAX_SECRET_BYTES: u64 = 64 << 10;

/// Why a [`SecretSource`] gives no value. The messages never quote what
/// was read.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// Its host variable is not set.
    #[error("host variable {0} is not set")]
    Unset(String),
    /// It names neither a variable nor a file.
    #[error("no source")]
    NoSource,
    /// Its file cannot be read.
    #[error("secret file {} unreadable: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its file is not UTF-8.
    #[error("secret file {} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
}

impl SecretSource {
    /// The value this names; the error says why there is none (never
    /// quoting what was read). Reads a file: call it off the async workers.
    pub fn read(&self) -> Result<String, SecretError> {
        if let Some(var) = &self.env {
            return std::env::var(var).map_err(|_| SecretError::Unset(var.clone()));
        }
        let Some(path) = &self.file else {
            return Err(SecretError::NoSource);
        };
        // A regular file only (a FIFO would block the load), and not a big one.
        let bytes = crate::files::read_regular(path, MAX_SECRET_BYTES).map_err(|source| {
            SecretError::Unreadable {
                path: path.clone(),
                source,
            }
        })?;
        let mut value = String::from_utf8(bytes).map_err(|_| SecretError::NotUtf8(path.clone()))?;
        if value.ends_with('\n') {
            value.pop();
            if value.ends_with('\r') {
                value.pop();
            }
        }
        Ok(value)
    }
}

impl Config {
    /// Reads and checks `path`. Errors name the file and the line.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::files::read_regular_text(path, crate::files::MAX_CONFIG_BYTES)
            .with_context(|| format!("reading config {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base).with_context(|| format!("invalid config {}", path.display()))
    }

    /// Parses config text; relative root paths are taken from `base`. The
    /// error lists every problem found, one per line.
    pub fn parse(text: &str, base: &Path) -> Result<Self> {
        Self::parse_all(text, base).map_err(|problems| anyhow::anyhow!(problems.join("\n")))
    }

    /// Parses config text and runs every check, each section's even when
    /// another failed: `Err` holds every problem found, each naming its
    /// key (of `[state]`, `[cluster]`, `[audit]`, `[signatures]`, each
    /// registry and profile, and each plugin's secrets, the first).
    pub fn parse_all(text: &str, base: &Path) -> Result<Self, Vec<String>> {
        Self::parse_with(text, base, Files::Open)
    }

    /// [`Config::parse_all`], opening the root folders or not.
    pub fn parse_with(text: &str, base: &Path, files: Files) -> Result<Self, Vec<String>> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            // The parser stops at the first problem; the schema walk finds
            // them all (and is not asked when the parser found none).
            let problems = schema::shape_problems(text);
            if problems.is_empty() {
                vec![e.to_string()]
            } else {
                problems
            }
        })?;
        let mut problems = Vec::new();
        let mut keep = |result: Result<()>| {
            if let Err(e) = result {
                // A check that looked at several items holds a line each.
                problems.extend(format!("{e:#}").lines().map(str::to_owned));
            }
        };
        keep(check::server(&config.server));
        keep(check::lock(&mut config.server, base));
        keep(card::check(&config));
        keep(check_limits("limits", &config.limits));
        keep(check::open_roots(&mut config.roots, base, text, files));
        keep(check::plugins(&mut config, text, base));
        keep(check::http(&mut config.http, base));
        keep(check::tasks(&mut config.tasks, base));
        keep(check::signatures(&mut config, base));
        keep(check::registries(&mut config.registries, base));
        keep(cluster::check_state(&mut config.state, base));
        keep(cluster::check_cluster(&config.cluster));
        keep(access::check_audit(&mut config.audit, base));
        for (name, profile) in &config.profiles {
            keep(access::check_profile(name, profile));
        }
        keep(serving::check(&config, text));
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(problems)
        }
    }

    /// Refuses a folder of the host's own (`what`: the plugin folder, the
    /// compile cache, ...) that lies inside a root or holds one: a plugin
    /// granted that root could change what the host loads or trusts.
    pub fn check_outside_roots(&self, what: &str, path: &Path) -> Result<()> {
        let path = canonical_or_nearest(path);
        for (name, root) in &self.roots {
            anyhow::ensure!(
                !overlap(&path, root.area()),
                "{what} {} overlaps roots.{name} ({}): a plugin granted that root could \
                 change it; keep the host's own folders outside every root",
                path.display(),
                root.area().display()
            );
        }
        Ok(())
    }

    /// The signature policy of plugin `name` (`None`: one not named in
    /// the config).
    pub fn signature_policy(&self, name: Option<&str>) -> SignaturePolicy {
        name.and_then(|n| self.plugins.get(n))
            .and_then(|p| p.signatures)
            .unwrap_or(self.signatures.policy)
    }

    /// The largest memory cap any plugin may get, in bytes.
    pub fn max_memory_bytes(&self) -> usize {
        self.plugins
            .values()
            .map(|p| self.limits.with(&p.limits).memory_mb)
            .chain([self.limits.memory_mb])
            .max()
            .unwrap_or_default()
            << 20
    }
}

/// `path` canonicalized, or for a path not made yet, its nearest existing
/// ancestor canonicalized with the rest appended.
fn canonical_or_nearest(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut missing = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(found) = at.canonicalize() {
            return missing.iter().rev().fold(found, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_owned());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests;
