//! Plugins in OCI registries, in the CNCF layout for WebAssembly artifacts:
//! one `application/wasm` layer, a `application/vnd.wasm.config.v0+json`
//! config, and the plugin's manifest (what it asks for) in an annotation
//! (as JSON; it is written beside the component as TOML when pulled).
//!
//! A plugin's skills (`NAME.skills`) travel as one more layer
//! ([`skills_layer`]).
//!
//! `push` publishes a component file; `pull` fetches one (by tag or by
//! digest), checks its digest and size, keeps it in a store by digest, and
//! puts it in a plugin folder, where the folder's watcher loads it like
//! any other file. A pull checks the artifact's signatures first, as the
//! signature policy asks ([`signature`]).

pub mod docker;
pub mod fetch;
mod follow;
pub mod signature;
pub mod sigstore;
pub mod skills_layer;

use crate::config::{RegistryLogin, SignaturePolicy};
use crate::reload::folder;
use anyhow::{bail, Context as _, Result};
pub use follow::{follow, Following};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use signature::{PublicKey, Verdict};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The component layer's media type.
pub const WASM_LAYER: &str = "application/wasm";

/// The config's media type.
pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";

/// The older wasm-to-oci layer media type, accepted when pulling.
const OLD_WASM_LAYER: &str = "application/vnd.wasm.content.layer.v1+wasm";

/// The manifest annotation holding the plugin's manifest (what it asks
/// for), as compact JSON.
pub const MANIFEST_ANNOTATION: &str = "dev.wasm-mcp.manifest";

/// The largest plugin manifest carried, in bytes.
const MAX_MANIFEST_BYTES: usize = crate::files::MAX_MANIFEST_BYTES as usize;

/// What a pull asks of an artifact's signatures.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Whether they are checked, and what a missing one means.
    pub policy: SignaturePolicy,
    /// The keys a signature may verify with.
    pub keys: Arc<[PublicKey]>,
    /// Repositories (`REGISTRY/REPO`) besides the one pulled from whose
    /// signatures are accepted.
    pub repositories: Arc<[String]>,
    /// Who may sign keylessly.
    pub identities: Arc<[crate::config::SignerIdentity]>,
    /// The trusted root keyless signatures are checked against
    /// (`trusted_root.json`), read again at each check so that a refreshed
    /// file applies to the next pull.
    pub root: Option<PathBuf>,
}

impl Trust {
    /// Checks the signatures of manifest `digest` of `reference` under the
    /// policy: what they came to (`None`: not checked), or why the
    /// artifact is refused.
    async fn check(
        &self,
        repository: &fetch::Repository,
        reference: &Reference,
        digest: &str,
    ) -> Result<Option<Verdict>> {
        if self.policy == SignaturePolicy::Off {
            return Ok(None);
        }
        let verdict = signature::check(repository, reference, digest, self).await?;
        match (&verdict, self.policy) {
            (Verdict::Verified(_), _) => {}
            (Verdict::Unsigned, SignaturePolicy::IfPresent) => tracing::warn!(
                %reference,
                "it has no signature; installed (the signature policy is if-present)"
            ),
            (Verdict::Unsigned, _) => bail!(
                "refused {reference} ({digest}): it has no signature, and the signature policy \
                 requires one"
            ),
            (Verdict::Invalid(why), _) => {
                bail!("refused {reference} ({digest}): its signature does not verify: {why}")
            }
        }
        Ok(Some(verdict))
    }
}

pub use crate::config::oci_reference as reference;

/// The client that pushes and signs: registries on loopback are spoken to
/// in plain HTTP; every other one in HTTPS. (Pulls read through
/// [`fetch`], bounded.)
fn client(reference: &Reference) -> Client {
    let registry = reference.resolve_registry().to_owned();
    let protocol = if fetch::is_loopback(&registry) {
        ClientProtocol::HttpsExcept(vec![registry])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(Duration::from_secs(10)),
        read_timeout: Some(Duration::from_secs(60)),
        ..ClientConfig::default()
    })
}

/// The registry logins of the config (`[registries."HOST"]`), by registry.
#[derive(Debug, Clone, Default)]
pub struct Logins(Arc<BTreeMap<String, RegistryLogin>>);

impl Logins {
    /// The logins of `config`.
    pub fn of(config: &crate::config::Config) -> Self {
        Logins(Arc::new(config.registries.clone()))
    }
}

/// The credentials for `registry`: its entry in `logins` (the password
/// read from its source now, off the async workers), else
/// `WASM_MCP_OCI_USERNAME` and `WASM_MCP_OCI_PASSWORD`, else what docker
/// keeps for it (see [`docker`]), else none.
pub async fn credentials(registry: &str, logins: &Logins) -> Result<RegistryAuth> {
    if let Some(login) = logins.0.get(registry).cloned() {
        let password = tokio::task::spawn_blocking(move || login.password.read())
            .await?
            .map_err(|why| anyhow::anyhow!("registries.\"{registry}\".password: {why}"))?;
        return Ok(RegistryAuth::Basic(login.username, password));
    }
    if let (Ok(user), Ok(password)) = (
        std::env::var("WASM_MCP_OCI_USERNAME"),
        std::env::var("WASM_MCP_OCI_PASSWORD"),
    ) {
        return Ok(RegistryAuth::Basic(user, password));
    }
    docker::credentials(registry).await
}

/// The config blob of a pushed component (the members in the order a
/// sorted JSON object has them).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct WasmConfig {
    architecture: &'static str,
    layer_digests: Vec<String>,
    os: &'static str,
}

/// Publishes component `file` (with the manifest beside it, if any) as
/// `reference`; the manifest's digest.
pub async fn push(
    file: &Path,
    reference: &Reference,
    max_bytes: u64,
    skill_limits: &crate::skills::Limits,
    logins: &Logins,
) -> Result<String> {
    let component = read(file, max_bytes)
        .await
        .with_context(|| format!("reading {}", file.display()))?;
    let manifest_file = crate::config::Manifest::path_for(file);
    let manifest = match read(&manifest_file, crate::files::MAX_MANIFEST_BYTES).await {
        Ok(text) => {
            let text = String::from_utf8(text)
                .with_context(|| format!("{} is not UTF-8", manifest_file.display()))?;
            let manifest = crate::config::Manifest::parse(&text)
                .with_context(|| format!("reading {}", manifest_file.display()))?;
            // As compact JSON: registries refuse raw newlines in annotations.
            Some(serde_json::to_string(&manifest)?)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", manifest_file.display())),
    };
    let layer = ImageLayer::new(component, WASM_LAYER.into(), None);
    let config = WasmConfig {
        architecture: "wasm",
        layer_digests: vec![layer.sha256_digest()],
        os: "wasip2",
    };
    let config = Config::new(serde_json::to_vec(&config)?, WASM_CONFIG.into(), None);
    let mut layers = vec![layer];
    if let Some(skills) = skills_of(file, *skill_limits).await? {
        layers.push(ImageLayer::new(
            skills,
            skills_layer::SKILLS_LAYER.into(),
            None,
        ));
    }
    let annotations = manifest.map(|m| BTreeMap::from([(MANIFEST_ANNOTATION.to_owned(), m)]));
    let image = OciImageManifest::build(&layers, &config, annotations);
    let client = client(reference);
    let auth = credentials(reference.resolve_registry(), logins).await?;
    client
        .push(reference, &layers, config, &auth, Some(image))
        .await
        .map_err(registry_error)
        .with_context(|| format!("pushing to {reference}"))?;
    let digest = client
        .fetch_manifest_digest(reference, &auth)
        .await
        .map_err(registry_error)
        .with_context(|| format!("asking {reference} for its digest"))?;
    Ok(digest)
}

/// The skills layer of the component at `file` (from `NAME.skills`
/// beside it), if it ships skills; a skill the host would refuse stops
/// the push.
async fn skills_of(file: &Path, limits: crate::skills::Limits) -> Result<Option<Vec<u8>>> {
    let name = folder::plugin_name(file)?;
    let skills_folder = folder::skills_folder(file);
    let read = skills_folder.clone();
    let skills =
        tokio::task::spawn_blocking(move || crate::skills::read_folder(&read, &name, &limits))
            .await?;
    if !skills.problems.is_empty() {
        bail!(
            "{}: {}",
            skills_folder.display(),
            skills.problems.join("; ")
        );
    }
    Ok(skills_layer::encode(&skills))
}

/// The most a pull reads and takes.
#[derive(Debug, Clone, Copy)]
pub struct PullLimits {
    /// The component, in bytes (`[server] max_plugin_mb`).
    pub component: u64,
    /// Manifests and tokens.
    pub registry: fetch::Caps,
    /// All its requests together (`[server] oci_pull_timeout_secs`).
    pub deadline: Duration,
    /// Its skills (`[server] skills_per_plugin`, `skill_file_kb`,
    /// `skills_mb`).
    pub skills: crate::skills::Limits,
    /// The cache folder the store is in, in bytes (`[server]
    /// cache_max_mb`).
    pub cache: u64,
}

impl PullLimits {
    /// The limits `config` sets.
    pub fn of(config: &crate::config::Config) -> Self {
        let server = &config.server;
        PullLimits {
            component: server.max_plugin_mb << 20,
            registry: fetch::Caps {
                manifest: server.oci_max_manifest_kb << 10,
                token: server.oci_max_token_kb << 10,
            },
            deadline: Duration::from_secs(server.oci_pull_timeout_secs),
            skills: crate::skills::Limits::of(config),
            cache: server.cache_max_mb << 20,
        }
    }
}

/// What [`pull`] put in place.
#[derive(Debug)]
pub struct Pulled {
    /// The artifact's manifest digest.
    pub digest: String,
    /// The component in the plugin folder.
    pub file: PathBuf,
    /// Whether the folder changed (false: it held this version already).
    pub changed: bool,
    /// What its signatures came to (`None`: not checked).
    pub signature: Option<Verdict>,
}

/// Fetches `reference` (within `limits`: its component, its manifest and
/// token, the time all its requests take; its digest checked, its
/// signatures as `trust` asks), keeps it in `store` by digest, and puts it
/// in folder `into` as `NAME.wasm` (with its manifest as `NAME.toml`, or
/// none, and its skills as `NAME.skills`, or none), replacing what was
/// there in one step each. One that fails
/// changes nothing.
pub async fn pull(
    reference: &Reference,
    name: &str,
    store: &Path,
    into: &Path,
    limits: &PullLimits,
    trust: &Trust,
    logins: &Logins,
) -> Result<Pulled> {
    let pulling = pull_within(reference, name, store, into, limits, trust, logins);
    tokio::time::timeout(limits.deadline, pulling)
        .await
        .unwrap_or_else(|_| {
            bail!(
                "pulling {reference} took longer than {} s ([server] oci_pull_timeout_secs)",
                limits.deadline.as_secs()
            )
        })
}

/// [`pull`] without its deadline.
async fn pull_within(
    reference: &Reference,
    name: &str,
    store: &Path,
    into: &Path,
    limits: &PullLimits,
    trust: &Trust,
    logins: &Logins,
) -> Result<Pulled> {
    let max_bytes = limits.component;
    anyhow::ensure!(
        crate::names::is_valid(name),
        "{name:?} cannot name a plugin (letters, digits, '-' or '_')"
    );
    let auth = credentials(reference.resolve_registry(), logins).await?;
    let repository = fetch::Repository::new(reference, &auth, limits.registry)?;
    let (manifest, digest) = image_manifest(&repository, reference)
        .await
        .with_context(|| format!("pulling the manifest of {reference}"))?;
    let signature = trust.check(&repository, reference, &digest).await?;
    let Artifact {
        layer,
        hex,
        plugin_manifest,
        skills,
    } = artifact(&manifest, max_bytes).with_context(|| reference.to_string())?;
    let skill_limits = limits.skills;
    let skills = match skills {
        None => skills_layer::Files::new(),
        Some(descriptor) => {
            let max = skills_layer::max_layer_bytes(&skill_limits);
            anyhow::ensure!(
                u64::try_from(descriptor.size).is_ok_and(|size| size <= max),
                "{reference}: its skills layer is {} bytes, over the limit of {max}",
                descriptor.size
            );
            let body = repository
                .blob(
                    &descriptor.digest,
                    usize::try_from(max).unwrap_or(usize::MAX),
                )
                .await
                .with_context(|| format!("pulling the skills of {reference}"))?;
            tokio::task::spawn_blocking(move || skills_layer::decode(&body, &skill_limits))
                .await?
                .with_context(|| reference.to_string())?
        }
    };
    // Kept by the component's digest; what is kept is checked again on use.
    let stored = store.join(format!("sha256-{hex}.wasm"));
    let component = match read(&stored, max_bytes).await {
        Ok(kept) if sha256_hex(&kept) == hex => {
            let used = stored.clone();
            tokio::task::spawn_blocking(move || {
                if let Ok(file) = std::fs::File::open(used) {
                    crate::cache_folder::touch(&file);
                }
            })
            .await?;
            kept
        }
        _ => {
            let body = repository
                .blob(
                    &layer.digest,
                    usize::try_from(max_bytes).unwrap_or(usize::MAX),
                )
                .await
                .with_context(|| format!("pulling the component of {reference}"))?;
            tokio::fs::create_dir_all(store)
                .await
                .with_context(|| format!("creating {}", store.display()))?;
            replace(&stored, &body).await?;
            // The store is `oci/` in the cache folder, which it shares
            // with the compiled components.
            if let Some(folder) = store.parent() {
                let (folder, kept, limit) = (folder.to_owned(), stored.clone(), limits.cache);
                tokio::task::spawn_blocking(move || {
                    crate::cache_folder::prune_logged(&folder, limit, &kept)
                })
                .await?;
            }
            body
        }
    };
    let file = into.join(format!("{name}.wasm"));
    let manifest_file = crate::config::Manifest::path_for(&file);
    let held = read(&file, max_bytes).await.ok();
    let held_manifest = read(&manifest_file, crate::files::MAX_MANIFEST_BYTES)
        .await
        .ok();
    let skills_folder = folder::skills_folder(&file);
    let held_skills = {
        let (folder, name, skills) = (skills_folder.clone(), name.to_owned(), skills.clone());
        tokio::task::spawn_blocking(move || {
            skills_layer::matches_folder(&folder, &name, &skills, &skill_limits)
        })
    };
    let same_skills = held_skills.await?;
    // Who signed it, for what reads the folder (the lock): in place
    // before the component is.
    let signer = match &signature {
        Some(Verdict::Verified(signed)) => Some(signed.signer_line()),
        _ => None,
    };
    let held_signer = record_signer(into, name, signer.as_deref()).await?;
    if held.is_some_and(|h| sha256_hex(&h) == hex)
        && held_manifest.as_deref() == plugin_manifest.as_deref().map(str::as_bytes)
        && same_skills
    {
        return Ok(Pulled {
            digest,
            file,
            changed: false,
            signature,
        });
    }
    // The skills first: the component's load then finds them in place.
    if !same_skills {
        tokio::task::spawn_blocking(move || skills_layer::install(&skills_folder, &skills))
            .await??;
    }
    // Staged under a hidden name of its own (this process's), then moved in.
    let staged = folder::staging_path(into, name, &format!("wasm.{}", std::process::id()));
    tokio::fs::write(&staged, &component)
        .await
        .with_context(|| format!("writing {}", staged.display()))?;
    if let Err(e) = folder::install(into, name, &staged, plugin_manifest.as_deref()).await {
        // The version left in place keeps its own signer line.
        if let Some(held) = held_signer {
            let held = held.as_deref().map(String::from_utf8_lossy);
            let _ = record_signer(into, name, held.as_deref().map(str::trim_end)).await;
        }
        return Err(e);
    }
    Ok(Pulled {
        digest,
        file,
        changed: true,
        signature,
    })
}

/// The largest `NAME.signer` file read, in bytes.
pub const MAX_SIGNER_BYTES: u64 = 4 << 10;

/// Writes `NAME.signer` in folder `into`: one line naming who signed the
/// version pulled ([`signature::Signed::signer_line`]), or no file when it
/// was not checked or not signed. Left alone when it already says so;
/// what it replaced (`Some(None)`: no file) is returned.
async fn record_signer(
    into: &Path,
    name: &str,
    signer: Option<&str>,
) -> Result<Option<Option<Vec<u8>>>> {
    let file = into.join(format!("{name}.signer"));
    let wanted = signer.map(|line| format!("{line}\n"));
    let held = read(&file, MAX_SIGNER_BYTES).await.ok();
    if held.as_deref() == wanted.as_deref().map(str::as_bytes) {
        return Ok(None);
    }
    match wanted {
        Some(text) => {
            let staged =
                folder::staging_path(into, name, &format!("signer.{}", std::process::id()));
            tokio::fs::write(&staged, text)
                .await
                .with_context(|| format!("writing {}", staged.display()))?;
            tokio::fs::rename(&staged, &file)
                .await
                .with_context(|| format!("writing {}", file.display()))?;
        }
        None => match tokio::fs::remove_file(&file).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", file.display()));
            }
            _ => {}
        },
    }
    Ok(Some(held))
}

/// The image manifest `reference` names (read bounded) and its digest.
async fn image_manifest(
    repository: &fetch::Repository,
    reference: &Reference,
) -> Result<(OciImageManifest, String)> {
    let named = reference.digest().or(reference.tag()).unwrap_or("latest");
    let (bytes, digest) = repository.manifest(named).await?;
    /// Enough of a manifest to tell an index.
    #[derive(serde::Deserialize)]
    struct Kind {
        manifests: Option<serde::de::IgnoredAny>,
    }
    let not_a_manifest = |e: serde_json::Error| {
        anyhow::anyhow!(
            "not an OCI image manifest: {}",
            crate::text::excerpt(&e.to_string())
        )
    };
    let kind: Kind = serde_json::from_slice(&bytes).map_err(not_a_manifest)?;
    anyhow::ensure!(
        kind.manifests.is_none(),
        "an image index, not a manifest: name one of its manifests by digest"
    );
    let manifest = serde_json::from_slice(&bytes).map_err(not_a_manifest)?;
    Ok((manifest, digest))
}

/// What a pull takes from an artifact's manifest.
#[derive(Debug)]
pub struct Artifact<'a> {
    /// The component layer.
    pub layer: &'a oci_client::manifest::OciDescriptor,
    /// Its SHA-256 digest, in hex.
    pub hex: &'a str,
    /// The plugin manifest it carries, as TOML.
    pub plugin_manifest: Option<String>,
    /// Its skills layer, if it has one.
    pub skills: Option<&'a oci_client::manifest::OciDescriptor>,
}

/// Checks that `manifest` is a WebAssembly component artifact of at most
/// `max_bytes` (one component layer, a SHA-256 digest, a valid plugin
/// manifest if any, and at most one skills layer after the component;
/// the pull bounds that one): what a pull takes from it, or why it is
/// refused.
pub fn artifact(manifest: &OciImageManifest, max_bytes: u64) -> Result<Artifact<'_>> {
    let is_wasm = |l: &&oci_client::manifest::OciDescriptor| {
        [WASM_LAYER, OLD_WASM_LAYER].contains(&l.media_type.as_str())
    };
    let is_skills =
        |l: &&oci_client::manifest::OciDescriptor| l.media_type == skills_layer::SKILLS_LAYER;
    let (layer, skills) = match manifest.layers.as_slice() {
        [layer] if is_wasm(&layer) => (layer, None),
        [layer, skills] if is_wasm(&layer) && is_skills(&skills) => (layer, Some(skills)),
        _ => bail!(
            "not a WebAssembly component artifact (one {WASM_LAYER} layer, and at most one \
             {} layer after it)",
            skills_layer::SKILLS_LAYER
        ),
    };
    anyhow::ensure!(
        u64::try_from(layer.size).is_ok_and(|size| size <= max_bytes),
        "the component is {} bytes, over the limit of {max_bytes} ([server] max_plugin_mb)",
        layer.size
    );
    let plugin_manifest = match manifest
        .annotations
        .as_ref()
        .and_then(|a| a.get(MANIFEST_ANNOTATION))
    {
        Some(text) if text.len() > MAX_MANIFEST_BYTES => {
            bail!("its plugin manifest is over {MAX_MANIFEST_BYTES} bytes")
        }
        Some(json) => {
            // Checked now, so a bad one is refused here rather than at load.
            let manifest: crate::config::Manifest =
                serde_json::from_str(json).context("its plugin manifest")?;
            Some(toml::to_string(&manifest)?)
        }
        None => None,
    };
    let hex = layer
        .digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .with_context(|| {
            format!(
                "unexpected layer digest {}",
                crate::text::excerpt(&layer.digest)
            )
        })?;
    Ok(Artifact {
        layer,
        hex,
        plugin_manifest,
        skills,
    })
}

/// Signs what `reference` names (see [`signature::sign`]); its manifest
/// digest.
pub async fn sign(
    reference: &Reference,
    key: &signature::SigningKey,
    logins: &Logins,
    caps: fetch::Caps,
) -> Result<String> {
    let client = client(reference);
    let auth = credentials(reference.resolve_registry(), logins).await?;
    let digest = match reference.digest() {
        Some(digest) => digest.to_owned(),
        None => client
            .fetch_manifest_digest(reference, &auth)
            .await
            .map_err(registry_error)
            .with_context(|| format!("asking {reference} for its digest"))?,
    };
    let existing = fetch::Repository::new(reference, &auth, caps)?;
    signature::sign(&client, &existing, reference, &digest, key, &auth).await?;
    Ok(digest)
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    format!("{:x}", sha2::Sha256::digest(data))
}

/// Reads regular file `path` of at most `limit` bytes, off the async workers.
async fn read(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || crate::files::read_regular(&path, limit))
        .await
        .map_err(std::io::Error::other)?
}

/// An error of the registry client that pushes and signs: what the
/// registry said is quoted short and escaped (it may be any size, and hold
/// line breaks).
pub(crate) fn registry_error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{}", crate::text::excerpt(&error.to_string()))
}

/// Writes `data` to `path` in one step: a temporary file beside it, renamed.
async fn replace(path: &Path, data: &[u8]) -> Result<()> {
    let temporary = path.with_extension(format!("pulling-{}", std::process::id()));
    tokio::fs::write(&temporary, data)
        .await
        .with_context(|| format!("writing {}", temporary.display()))?;
    tokio::fs::rename(&temporary, path)
        .await
        .with_context(|| format!("renaming {} to {}", temporary.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let r = reference("oci://127.0.0.1:5000/tools/hello:1.0").unwrap();
        assert_eq!(r.resolve_registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "tools/hello");
        assert_eq!(r.tag(), Some("1.0"));
        let digest = format!("sha256:{}", "a".repeat(64));
        let r = reference(&format!("oci://ghcr.io/x/y@{digest}")).unwrap();
        assert_eq!(r.digest(), Some(digest.as_str()));
        assert!(reference("ghcr.io/x/y:1").is_err());
    }
}
