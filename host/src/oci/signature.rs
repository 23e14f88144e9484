//! Cosign-compatible signatures of artifacts: made with a key, in the
//! "simple signing" format that `cosign sign --key` writes by default, or
//! keyless (Sigstore, [`super::sigstore`]), in cosign's signature tag or as
//! a Sigstore bundle attached to the artifact.
//!
//! The signatures of the artifact whose manifest digest is `sha256:HEX`
//! are an OCI manifest at tag `sha256-HEX.sig` of the same repository. Each
//! layer is a payload (`application/vnd.dev.cosign.simplesigning.v1+json`)
//! naming that digest and its repository; the signature (ASN.1 DER,
//! base64) is the layer's `dev.cosignproject.cosign/signature` annotation.
//! A key-made one (ECDSA P-256, SHA-256) is checked with the configured
//! keys and no transparency log (as with cosign's `--insecure-ignore-tlog`,
//! or `--tlog-upload=false` when signing). A keyless one also carries its
//! certificate and its transparency log entry in annotations, and is
//! checked against the trusted root.

use anyhow::{bail, Context as _, Result};
use base64::Engine as _;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use ring::signature::{
    EcdsaKeyPair, UnparsedPublicKey, ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING,
};
use std::collections::BTreeMap;
use std::path::Path;

/// A signature payload layer's media type.
pub const PAYLOAD_LAYER: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The layer annotation holding the signature of its payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The layer annotation holding a keyless signature's certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";

/// The layer annotation holding a keyless signature's transparency log
/// entry (cosign's "bundle": the entry and its signed entry timestamp).
pub const LOG_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// What a payload says it is.
const PAYLOAD_TYPE: &str = "cosign container image signature";

/// The most signatures of one artifact looked at.
const MAX_SIGNATURES: usize = 16;

/// The largest payload read, in bytes (cosign's are a few hundred).
const MAX_PAYLOAD_BYTES: usize = 64 << 10;

/// The largest key file read, in bytes.
const MAX_KEY_BYTES: u64 = 64 << 10;

/// The DER of an ECDSA P-256 SubjectPublicKeyInfo up to its point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A public key signatures are checked with: ECDSA P-256, as PEM
/// (`PUBLIC KEY`), like `cosign.pub`.
#[derive(Debug, Clone)]
pub struct PublicKey {
    /// Where it came from, to say which key verified.
    pub name: String,
    /// `sha256:HEX` of its DER SubjectPublicKeyInfo.
    pub fingerprint: String,
    point: Vec<u8>,
}

impl PublicKey {
    /// Reads key file `path` (blocking).
    pub fn read(path: &Path) -> Result<Self> {
        let text = crate::files::read_regular_text(path, MAX_KEY_BYTES)
            .with_context(|| format!("reading key {}", path.display()))?;
        Self::parse(&path.display().to_string(), &text)
            .with_context(|| format!("key {}", path.display()))
    }

    /// Parses a PEM public key; `name` says where it came from.
    pub fn parse(name: &str, pem_text: &str) -> Result<Self> {
        let block = pem::parse(pem_text).context("not PEM")?;
        anyhow::ensure!(
            block.tag() == "PUBLIC KEY",
            "a {:?} PEM block, not a PUBLIC KEY",
            block.tag()
        );
        let der = block.contents();
        match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
            Some(point) if point.len() == 65 && point[0] == 4 => Ok(PublicKey {
                name: name.to_owned(),
                fingerprint: format!("sha256:{}", super::sha256_hex(der)),
                point: point.to_vec(),
            }),
            _ => bail!("not an ECDSA P-256 public key (the kind cosign generates)"),
        }
    }

    fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, signature)
            .is_ok()
    }
}

/// Who made a signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signer {
    /// A configured key: where it came from, and its fingerprint
    /// (`sha256:HEX` of its DER SubjectPublicKeyInfo).
    Key {
        /// The key file.
        name: String,
        /// Its fingerprint.
        fingerprint: String,
    },
    /// A keyless signer, by its certificate.
    Identity(super::sigstore::Keyless),
}

/// A signature that verified: who made it, and the repository it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// Who signed.
    pub signer: Signer,
    /// The repository (`REGISTRY/REPO`) the signature names.
    pub repository: String,
}

impl Signed {
    /// The signer as one stable line (`key sha256:HEX`, or `identity
    /// ISSUER SUBJECT`): what a lock records, and what a pull writes
    /// beside the component (`NAME.signer`).
    pub fn signer_line(&self) -> String {
        match &self.signer {
            Signer::Key { fingerprint, .. } => format!("key {fingerprint}"),
            Signer::Identity(who) => format!("identity {} {}", who.issuer, who.subject),
        }
    }
}

impl std::fmt::Display for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.signer {
            Signer::Key { name, .. } => write!(f, "{name}")?,
            Signer::Identity(who) => write!(
                f,
                "{} (issuer {}, transparency log entry {})",
                who.subject, who.issuer, who.log_index
            )?,
        }
        write!(f, ", signed for {}", self.repository)
    }
}

/// What an artifact's signatures came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A signature of this digest, for this repository (or one the
    /// policy also accepts), verifies.
    Verified(Signed),
    /// It has no signature.
    Unsigned,
    /// It has signatures, and none of this digest verifies with a key or
    /// an accepted identity: why not, for each.
    Invalid(String),
}

/// The tag that holds the signatures of manifest `digest` in the
/// repository of `reference`.
fn signature_reference(reference: &Reference, digest: &str) -> Reference {
    Reference::with_tag(
        reference.resolve_registry().to_owned(),
        reference.repository().to_owned(),
        format!("{}.sig", digest.replace(':', "-")),
    )
}

/// The signatures of the artifact whose manifest digest is `digest`, in
/// the repository of `reference`, checked as `trust` says: those in
/// cosign's signature tag (made with a key, or keyless), and, when keyless
/// signers are configured, the Sigstore bundles attached to it. One counts
/// only if it names this digest and this repository (or one `trust` also
/// accepts).
pub async fn check(
    repository: &super::fetch::Repository,
    reference: &Reference,
    digest: &str,
    trust: &super::Trust,
) -> Result<Verdict> {
    let pulled_from = repository_of(reference);
    let keyless_root = match trust.root.clone().filter(|_| !trust.identities.is_empty()) {
        Some(file) => Some(
            tokio::task::spawn_blocking(move || super::sigstore::TrustedRoot::read(&file))
                .await??,
        ),
        None => None,
    };
    let trust = &Keyless {
        trust,
        root: keyless_root.as_ref(),
    };
    let mut why = Vec::new();
    let tagged = signatures(repository, reference, digest).await?;
    for layer in tagged
        .iter()
        .flat_map(|m| m.layers.iter().take(MAX_SIGNATURES))
    {
        let annotations = layer.annotations.as_ref();
        let Some(signature) = annotations.and_then(|a| a.get(SIGNATURE_ANNOTATION)) else {
            continue;
        };
        if layer.media_type != PAYLOAD_LAYER {
            continue;
        }
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signature) else {
            why.push("a signature is not base64".to_owned());
            continue;
        };
        if usize::try_from(layer.size).map_or(true, |size| size > MAX_PAYLOAD_BYTES) {
            why.push(format!("a payload is over {MAX_PAYLOAD_BYTES} bytes"));
            continue;
        }
        let payload = repository
            .blob_as_served(&layer.digest, MAX_PAYLOAD_BYTES)
            .await
            .with_context(|| format!("pulling a signature of {reference}"))?;
        if format!("sha256:{}", super::sha256_hex(&payload)) != layer.digest {
            why.push("a payload does not match its digest".to_owned());
            continue;
        }
        let Some(claim) = signed_identity(&payload) else {
            why.push("a signed payload is not a cosign image signature".to_owned());
            continue;
        };
        let outcome = match annotations.and_then(|a| a.get(CERTIFICATE_ANNOTATION)) {
            Some(certificate) => {
                let logged = annotations.and_then(|a| a.get(LOG_ANNOTATION));
                let evidence = logged
                    .context("a keyless signature carries no transparency log entry")
                    .and_then(|logged| {
                        super::sigstore::bundle::from_cosign_layer(
                            payload,
                            signature,
                            certificate,
                            logged,
                            vec![(claim.0, Some(claim.1))],
                        )
                    });
                evidence
                    .map_err(|e| format!("{e:#}"))
                    .and_then(|evidence| keyless(&evidence, digest, &pulled_from, trust))
            }
            None => with_key(&payload, &signature, claim, digest, &pulled_from, trust),
        };
        match outcome {
            Ok(signed) => return Ok(Verdict::Verified(signed)),
            Err(reason) => why.push(reason),
        }
    }
    let mut bundles = 0;
    if keyless_root.is_some() {
        let attached = super::sigstore::attached::bundles(repository, digest)
            .await
            .with_context(|| format!("asking {reference} for its Sigstore bundles"))?;
        bundles = attached.len();
        for evidence in attached {
            let outcome = evidence
                .map_err(|e| format!("{e:#}"))
                .and_then(|evidence| keyless(&evidence, digest, &pulled_from, trust));
            match outcome {
                Ok(signed) => return Ok(Verdict::Verified(signed)),
                Err(reason) => why.push(reason),
            }
        }
    }
    if tagged.is_none() && bundles == 0 {
        return Ok(Verdict::Unsigned);
    }
    if why.is_empty() {
        why.push("its signature manifest holds no cosign signature".to_owned());
    }
    why.dedup();
    Ok(Verdict::Invalid(why.join("; ")))
}

/// A key-made signature of `payload`, which names `claim`: whose key made
/// it, or why it does not count.
fn with_key(
    payload: &[u8],
    signature: &[u8],
    claim: (String, String),
    digest: &str,
    pulled_from: &str,
    trust: &super::Trust,
) -> std::result::Result<Signed, String> {
    let Some(key) = trust.keys.iter().find(|k| k.verifies(payload, signature)) else {
        return Err("a signature verifies with none of the keys".to_owned());
    };
    let (signed, repository) = claim;
    let repository = vouches(&[(signed, Some(repository))], digest, pulled_from, trust)?
        .ok_or_else(|| "a signature names no repository".to_owned())?;
    Ok(Signed {
        signer: Signer::Key {
            name: key.name.clone(),
            fingerprint: key.fingerprint.clone(),
        },
        repository,
    })
}

/// A keyless signature: who made it, if the trusted root verifies it and
/// the policy accepts its signer, or why it does not count.
fn keyless(
    evidence: &super::sigstore::Evidence,
    digest: &str,
    pulled_from: &str,
    trust: &Keyless<'_>,
) -> std::result::Result<Signed, String> {
    let Some(root) = trust.root else {
        return Err(
            "a signature is keyless, and no keyless signer is configured ([signatures] identities \
             and trusted_root)"
                .to_owned(),
        );
    };
    let who = super::sigstore::verify(evidence, root).map_err(|e| format!("{e:#}"))?;
    let named = vouches(&evidence.claims, digest, pulled_from, trust)?;
    let accepting = |i: &&crate::config::SignerIdentity| {
        i.accepts(
            &who.issuer,
            &who.subject,
            who.source_repository.as_deref(),
            pulled_from,
        )
    };
    let Some(identity) = trust.identities.iter().find(accepting) else {
        return Err(unaccepted(&trust.identities, &who, pulled_from));
    };
    let repository = match named {
        Some(repository) => repository,
        // Only an identity bound to repositories binds one.
        None if trust
            .identities
            .iter()
            .filter(accepting)
            .any(|i| i.repository.is_some()) =>
        {
            pulled_from.to_owned()
        }
        None => {
            return Err(format!(
                "a signature names no repository (cosign's bundle format binds a signature to a \
                 digest only), and the [signatures] identities entry that accepts its signer \
                 ({}) is bound to no repository: add repository = \"{pulled_from}\" (or a \
                 pattern) to it",
                crate::text::excerpt(&identity.subject)
            ))
        }
    };
    Ok(Signed {
        signer: Signer::Identity(who),
        repository,
    })
}

/// A pull's trust, with the trusted root read for it (`None`: no keyless
/// signer is configured).
struct Keyless<'a> {
    trust: &'a super::Trust,
    root: Option<&'a super::sigstore::TrustedRoot>,
}

impl std::ops::Deref for Keyless<'_> {
    type Target = super::Trust;

    fn deref(&self) -> &super::Trust {
        self.trust
    }
}

/// Why no configured identity accepts signer `who` for `repository`.
fn unaccepted(
    identities: &[crate::config::SignerIdentity],
    who: &super::sigstore::Keyless,
    repository: &str,
) -> String {
    use crate::config::unmatched::glob_matches;
    let excerpt = crate::text::excerpt;
    let (subject, issuer) = (excerpt(&who.subject), excerpt(&who.issuer));
    let named: Vec<_> = identities
        .iter()
        .filter(|i| i.names(&who.subject))
        .collect();
    let vouched: Vec<_> = named
        .iter()
        .filter(|i| glob_matches(&i.issuer, &who.issuer))
        .collect();
    if named.is_empty() {
        return format!(
            "a signature's subject is {subject} (issuer {issuer}), which no [signatures] \
             identities entry names"
        );
    }
    if vouched.is_empty() {
        return format!(
            "a signature's issuer is {issuer}, not the one [signatures] identities names for its \
             subject {subject}"
        );
    }
    let source = who.source_repository.as_deref();
    let from_elsewhere = vouched.iter().all(|i| {
        i.source_repository
            .as_deref()
            .is_some_and(|pattern| !source.is_some_and(|named| glob_matches(pattern, named)))
    });
    if from_elsewhere {
        format!(
            "a signature is by {subject} (issuer {issuer}) run from source repository {}, which \
             [signatures] identities does not accept for it",
            excerpt(source.unwrap_or("(none named)"))
        )
    } else {
        format!(
            "a signature is by {subject} (issuer {issuer}), which [signatures] identities accepts \
             only for other repositories than {repository}"
        )
    }
}

/// Which of `claims` vouches for manifest `digest` pulled from
/// `pulled_from`: the repository it names (`None`: a claim of this digest
/// names no repository), or why none does.
fn vouches(
    claims: &[(String, Option<String>)],
    digest: &str,
    pulled_from: &str,
    trust: &super::Trust,
) -> std::result::Result<Option<String>, String> {
    let of_this: Vec<Option<&String>> = claims
        .iter()
        .filter(|(signed, _)| signed == digest)
        .map(|(_, repository)| repository.as_ref())
        .collect();
    if let Some(repository) = of_this
        .iter()
        .flatten()
        .find(|r| **r == pulled_from || trust.repositories.contains(r))
    {
        return Ok(Some((*repository).clone()));
    }
    if of_this.iter().any(Option::is_none) {
        return Ok(None);
    }
    match (of_this.first(), claims.first()) {
        (Some(Some(repository)), _) => Err(format!(
            "a signature is for another repository ({}, not {pulled_from}; \
             [signatures] repositories may accept it)",
            crate::text::excerpt(repository)
        )),
        (_, Some((signed, _))) => Err(format!(
            "a signature is of another artifact ({})",
            crate::text::excerpt(signed)
        )),
        _ => Err("a signature names no artifact".to_owned()),
    }
}

/// The signature manifest of `digest` in `reference`'s repository (read
/// bounded), or `None` when it has none.
async fn signatures(
    repository: &super::fetch::Repository,
    reference: &Reference,
    digest: &str,
) -> Result<Option<OciImageManifest>> {
    let tag = signature_reference(reference, digest);
    let Some((manifest, _)) = repository
        .manifest_if_any(tag.tag().unwrap_or_default())
        .await
        .with_context(|| format!("asking {reference} for its signatures"))?
    else {
        return Ok(None);
    };
    let manifest = serde_json::from_slice(&manifest).map_err(|e| {
        anyhow::anyhow!(
            "{reference}: its signature manifest is not an OCI image manifest: {}",
            crate::text::excerpt(&e.to_string())
        )
    })?;
    Ok(Some(manifest))
}

/// What a cosign payload vouches for: the manifest digest, and the
/// repository (`REGISTRY/REPO`, any tag or digest left out); `None` when
/// it is not a cosign image signature.
pub fn signed_identity(payload: &[u8]) -> Option<(String, String)> {
    let payload: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let critical = &payload["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return None;
    }
    let digest = critical["image"]["docker-manifest-digest"].as_str()?;
    let named = critical["identity"]["docker-reference"].as_str()?;
    Some((digest.to_owned(), repository_named(named).to_owned()))
}

/// The repository (`REGISTRY/REPO`) of a reference as a signature names
/// it: any tag or digest left out.
pub fn repository_named(named: &str) -> &str {
    let named = named.split_once('@').map_or(named, |(name, _)| name);
    match named.rsplit_once(':') {
        // A tag, not a registry's port (which a '/' follows).
        Some((name, tag)) if !tag.contains('/') && name.contains('/') => name,
        _ => named,
    }
}

/// `REGISTRY/REPO` of `reference`, as a signature names it.
fn repository_of(reference: &Reference) -> String {
    format!(
        "{}/{}",
        reference.resolve_registry(),
        reference.repository()
    )
}

/// A cosign "simple signing" payload (each object's members in the order
/// a sorted JSON object has them, as cosign writes them).
#[derive(serde::Serialize)]
struct SimpleSigning<'a> {
    critical: Critical<'a>,
    /// Always `null`.
    optional: (),
}

/// What a signature vouches for.
#[derive(serde::Serialize)]
struct Critical<'a> {
    identity: Identity,
    image: Image<'a>,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The repository signed for.
#[derive(serde::Serialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

/// The manifest signed.
#[derive(serde::Serialize)]
struct Image<'a> {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: &'a str,
}

/// The config blob of a signature image, as cosign writes it.
#[derive(serde::Serialize)]
struct SignatureConfig {
    architecture: &'static str,
    config: Empty,
    created: &'static str,
    history: [History; 1],
    os: &'static str,
    rootfs: RootFs,
}

/// `{}`.
#[derive(serde::Serialize)]
struct Empty {}

/// One entry of [`SignatureConfig`]'s history.
#[derive(serde::Serialize)]
struct History {
    created: &'static str,
}

/// The layers of a signature image.
#[derive(serde::Serialize)]
struct RootFs {
    diff_ids: Vec<String>,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// The creation time cosign writes: none.
const EPOCH: &str = "0001-01-01T00:00:00Z";

/// The payload that vouches for manifest `digest` of `reference`'s
/// repository, as cosign writes it.
fn payload(reference: &Reference, digest: &str) -> Vec<u8> {
    let payload = SimpleSigning {
        critical: Critical {
            identity: Identity {
                docker_reference: repository_of(reference),
            },
            image: Image {
                docker_manifest_digest: digest,
            },
            kind: PAYLOAD_TYPE,
        },
        optional: (),
    };
    serde_json::to_vec(&payload).expect("a JSON value serializes")
}

/// A private key that signs: ECDSA P-256 as PKCS#8 PEM (`PRIVATE KEY`),
/// e.g. from `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`.
pub struct SigningKey(EcdsaKeyPair);

impl SigningKey {
    /// Reads key file `path` (blocking).
    pub fn read(path: &Path) -> Result<Self> {
        let text = crate::files::read_regular_text(path, MAX_KEY_BYTES)
            .with_context(|| format!("reading key {}", path.display()))?;
        let block = pem::parse(&text).with_context(|| format!("{} is not PEM", path.display()))?;
        anyhow::ensure!(
            block.tag() == "PRIVATE KEY",
            "{} holds a {:?} PEM block, not a PKCS#8 PRIVATE KEY",
            path.display(),
            block.tag()
        );
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            block.contents(),
            &ring::rand::SystemRandom::new(),
        )
        .map_err(|e| anyhow::anyhow!("{} is not an ECDSA P-256 key: {e}", path.display()))?;
        Ok(SigningKey(pair))
    }
}

/// Signs the artifact whose manifest digest is `digest` in `reference`'s
/// repository with `key`: its signature is added to those already there.
pub async fn sign(
    client: &Client,
    repository: &super::fetch::Repository,
    reference: &Reference,
    digest: &str,
    key: &SigningKey,
    auth: &RegistryAuth,
) -> Result<()> {
    let payload = payload(reference, digest);
    let signature = key
        .0
        .sign(&ring::rand::SystemRandom::new(), &payload)
        .map_err(|_| anyhow::anyhow!("signing failed"))?;
    let annotation = base64::engine::general_purpose::STANDARD.encode(signature.as_ref());
    let tag = signature_reference(reference, digest);
    // The signatures already there (read through `repository`) stay:
    // their payloads are small.
    let mut layers = Vec::new();
    if let Some(existing) = signatures(repository, reference, digest).await? {
        for layer in existing.layers.iter().take(MAX_SIGNATURES - 1) {
            if layer.media_type != PAYLOAD_LAYER
                || usize::try_from(layer.size).map_or(true, |size| size > MAX_PAYLOAD_BYTES)
            {
                continue;
            }
            let data = repository
                .blob(&layer.digest, MAX_PAYLOAD_BYTES)
                .await
                .with_context(|| format!("pulling a signature of {reference}"))?;
            layers.push(ImageLayer::new(
                data,
                layer.media_type.clone(),
                layer.annotations.clone(),
            ));
        }
    }
    layers.push(ImageLayer::new(
        payload,
        PAYLOAD_LAYER.to_owned(),
        Some(BTreeMap::from([(
            SIGNATURE_ANNOTATION.to_owned(),
            annotation,
        )])),
    ));
    let diff_ids: Vec<String> = layers.iter().map(ImageLayer::sha256_digest).collect();
    let config = SignatureConfig {
        architecture: "",
        config: Empty {},
        created: EPOCH,
        history: [History { created: EPOCH }],
        os: "",
        rootfs: RootFs {
            diff_ids,
            kind: "layers",
        },
    };
    let config = Config::oci_v1(serde_json::to_vec(&config)?, None);
    let manifest = OciImageManifest::build(&layers, &config, None);
    client
        .push(&tag, &layers, config, auth, Some(manifest))
        .await
        .map_err(super::registry_error)
        .with_context(|| format!("pushing the signature of {reference}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A P-256 key pair made by `openssl genpkey` (test only).
    const PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgzmRhTRgy43LlPIaf
oArCpVPuabsWVOW4Lcenzb+QCr+hRANCAATqZXeFIWmj7ieslT8l0iFz2+BKg3mE
fC9KqKlqOXxJWI10Cl2lIeIRFOaw/GZsUxEYd5FG/OdzEcCRbkF/gMBo
-----END PRIVATE KEY-----
";

    #[test]
    fn a_payload_names_the_digest_and_signs_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key.pem");
        std::fs::write(&file, PRIVATE).unwrap();
        let key = SigningKey::read(&file).unwrap();
        let public = {
            use ring::signature::KeyPair as _;
            let mut der = P256_SPKI_PREFIX.to_vec();
            der.extend_from_slice(key.0.public_key().as_ref());
            pem::encode(&pem::Pem::new("PUBLIC KEY", der))
        };
        let public = PublicKey::parse("test.pub", &public).unwrap();
        let reference: Reference = "localhost:5000/plugins/hello:1".parse().unwrap();
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = payload(&reference, &digest);
        assert_eq!(
            signed_identity(&payload),
            Some((digest.clone(), "localhost:5000/plugins/hello".to_owned()))
        );
        for (named, repository) in [
            ("ghcr.io/a/b:1", "ghcr.io/a/b"),
            ("ghcr.io/a/b@sha256:00", "ghcr.io/a/b"),
            ("localhost:5000/a", "localhost:5000/a"),
            ("localhost:5000/a:v2", "localhost:5000/a"),
        ] {
            let text = serde_json::json!({"critical": {"type": PAYLOAD_TYPE,
                "identity": {"docker-reference": named}, "image": {"docker-manifest-digest": "d"}}});
            let identity = signed_identity(text.to_string().as_bytes()).unwrap();
            assert_eq!(identity.1, repository, "{named}");
        }
        let signature = key
            .0
            .sign(&ring::rand::SystemRandom::new(), &payload)
            .unwrap();
        assert!(public.verifies(&payload, signature.as_ref()));
        let mut other = payload.clone();
        other[10] ^= 1;
        assert!(!public.verifies(&other, signature.as_ref()));
    }

    #[test]
    fn keys_of_other_kinds_are_refused_clearly() {
        let rsa = "-----BEGIN PUBLIC KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAL1=\n-----END PUBLIC KEY-----\n";
        assert!(PublicKey::parse("x", rsa).is_err());
        assert!(PublicKey::parse("x", "not pem").is_err());
        let private = PRIVATE;
        let error = PublicKey::parse("x", private).unwrap_err().to_string();
        assert!(error.contains("not a PUBLIC KEY"), "{error}");
    }
}
