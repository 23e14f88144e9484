//! What one keyless signature brings, read from where it travels: a
//! Sigstore bundle (attached to the artifact as an OCI referrer, as
//! cosign's bundle format does), or a layer of cosign's signature tag
//! whose annotations carry the certificate and the log entry.

use super::log::{Entry, Proof, Recorded};
use anyhow::{bail, Context as _, Result};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

/// The media types of Sigstore bundles start so (`…bundle.v0.3+json`).
pub(crate) const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle";

/// The largest bundle read, in bytes (one is about 5 KiB).
pub(crate) const MAX_BUNDLE_BYTES: usize = 64 << 10;

/// The payload type of an in-toto statement in a DSSE envelope.
const IN_TOTO: &str = "application/vnd.in-toto+json";

/// The most subjects of one statement looked at.
const MAX_SUBJECTS: usize = 16;

/// The predicate type of cosign's signature statement (`cosign sign` in
/// its bundle format): the only statement that is a signature; other
/// attestations (SBOMs, provenance, scans) say something else about the
/// artifact.
pub(crate) const SIGNATURE_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";

/// One keyless signature and what it needs to be checked.
#[derive(Debug, Clone)]
pub(crate) struct Evidence {
    /// The signing certificate (DER).
    pub(crate) certificate: Vec<u8>,
    /// The signature.
    pub(crate) signature: Vec<u8>,
    /// The bytes signed.
    pub(crate) message: Vec<u8>,
    /// What the log entry must record.
    pub(crate) recorded: Recorded,
    /// The log entry.
    pub(crate) entry: Entry,
    /// What it vouches for: manifest digests (`sha256:HEX`), each with the
    /// repository it names (`REGISTRY/REPO`; `None`: it names none, as
    /// cosign's bundle format does).
    pub(crate) claims: Vec<(String, Option<String>)>,
}

/// The evidence of a cosign signature-tag layer: its `payload` (what
/// `claims` were read from), the `signature` annotation, the certificate
/// annotation (PEM) and the bundle annotation (the log entry, as JSON).
pub(crate) fn from_cosign_layer(
    payload: Vec<u8>,
    signature: Vec<u8>,
    certificate: &str,
    logged: &str,
    claims: Vec<(String, Option<String>)>,
) -> Result<Evidence> {
    anyhow::ensure!(
        certificate.len() <= 2 * super::certificate::MAX_CERTIFICATE_BYTES,
        "its certificate is over {} bytes",
        super::certificate::MAX_CERTIFICATE_BYTES
    );
    let certificate = pem::parse(certificate)
        .map_err(|_| anyhow::anyhow!("its certificate annotation is not PEM"))?
        .into_contents();
    anyhow::ensure!(
        logged.len() <= 2 * super::log::MAX_ENTRY_BYTES,
        "its log entry annotation is over {} bytes",
        2 * super::log::MAX_ENTRY_BYTES
    );
    let logged: CosignLogged = serde_json::from_str(logged)
        .map_err(|_| anyhow::anyhow!("its log entry annotation is not cosign's bundle"))?;
    let entry = Entry {
        body: super::root::decode(&logged.payload.body).context("its logged body")?,
        integrated_time: logged.payload.integrated_time,
        log_index: logged.payload.log_index,
        log_id: from_hex(&logged.payload.log_id).context("its log id is not hex")?,
        promise: Some(
            super::root::decode(&logged.signed_entry_timestamp)
                .context("its signed entry timestamp")?,
        ),
        proof: None,
    };
    Ok(Evidence {
        certificate,
        signature,
        recorded: Recorded::Hashed(Sha256::digest(&payload).into()),
        message: payload,
        entry,
        claims,
    })
}

/// The evidence of a Sigstore bundle (JSON, versions 0.1 to 0.3) whose
/// content is a DSSE envelope holding an in-toto statement about the
/// artifact.
pub(crate) fn from_bundle(bytes: &[u8]) -> Result<Evidence> {
    anyhow::ensure!(
        bytes.len() <= MAX_BUNDLE_BYTES,
        "a bundle is over {MAX_BUNDLE_BYTES} bytes"
    );
    let bundle: files::Bundle = serde_json::from_slice(bytes).map_err(|e| {
        anyhow::anyhow!(
            "a bundle is not a Sigstore bundle: {}",
            crate::text::excerpt(&e.to_string())
        )
    })?;
    anyhow::ensure!(
        bundle.media_type.starts_with(BUNDLE_MEDIA_TYPE),
        "a bundle's mediaType is {}",
        crate::text::excerpt(&bundle.media_type)
    );
    let material = bundle.verification_material;
    let certificate = match (material.certificate, material.x509_certificate_chain) {
        (Some(one), _) => one.raw_bytes,
        (None, Some(chain)) => {
            chain
                .certificates
                .into_iter()
                .next()
                .context("a bundle's certificate chain is empty")?
                .raw_bytes
        }
        (None, None) => bail!(
            "a bundle holds no certificate (one signed with a key is checked against \
             [signatures] keys only in cosign's signature tag)"
        ),
    };
    let certificate = super::root::decode(&certificate).context("a bundle's certificate")?;
    let logged = material
        .tlog_entries
        .into_iter()
        .next()
        .context("a bundle holds no transparency log entry")?;
    let entry = entry(logged).context("a bundle's log entry")?;
    let Some(envelope) = bundle.dsse_envelope else {
        bail!(
            "a bundle holds a message signature, which names no repository: only in-toto \
             statements (cosign's bundle format) and cosign's signature tag bind a signature \
             to a repository"
        );
    };
    anyhow::ensure!(
        envelope.payload_type == IN_TOTO,
        "a bundle's envelope holds {}, not an in-toto statement",
        crate::text::excerpt(&envelope.payload_type)
    );
    let payload = super::root::decode(&envelope.payload).context("a bundle's payload")?;
    let signature = envelope
        .signatures
        .first()
        .context("a bundle's envelope holds no signature")?;
    let signature = super::root::decode(&signature.sig).context("a bundle's signature")?;
    let statement: files::Statement = serde_json::from_slice(&payload)
        .map_err(|_| anyhow::anyhow!("a bundle's payload is not an in-toto statement"))?;
    anyhow::ensure!(
        statement.predicate_type == SIGNATURE_PREDICATE,
        "a bundle is an attestation ({}), not a signature ({SIGNATURE_PREDICATE})",
        crate::text::excerpt(&statement.predicate_type)
    );
    let claims = statement
        .subject
        .iter()
        .take(MAX_SUBJECTS)
        .filter_map(|s| {
            let hex = s.digest.sha256.as_deref()?;
            let named = Some(s.name.as_str()).filter(|n| !n.is_empty());
            Some((
                format!("sha256:{}", hex.to_ascii_lowercase()),
                named.map(|n| crate::oci::signature::repository_named(n).to_owned()),
            ))
        })
        .collect();
    Ok(Evidence {
        certificate,
        signature,
        message: pae(&envelope.payload_type, &payload),
        recorded: Recorded::Envelope(Sha256::digest(&payload).into()),
        entry,
        claims,
    })
}

/// DSSE's pre-authentication encoding: what an envelope's signature signs.
fn pae(kind: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {kind} {} ", kind.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

fn entry(logged: files::Entry) -> Result<Entry> {
    let proof = logged
        .inclusion_proof
        .map(|p| -> Result<Proof> {
            anyhow::ensure!(p.hashes.len() <= 64, "its inclusion proof is too long");
            Ok(Proof {
                log_index: u64::try_from(p.log_index.value()?)?,
                root: super::root::decode(&p.root_hash)?,
                tree_size: u64::try_from(p.tree_size.value()?)?,
                hashes: p
                    .hashes
                    .iter()
                    .map(|h| super::root::decode(h))
                    .collect::<Result<_>>()?,
                checkpoint: p.checkpoint.envelope,
            })
        })
        .transpose()
        .context("its inclusion proof does not read")?;
    Ok(Entry {
        body: super::root::decode(&logged.canonicalized_body).context("its body")?,
        integrated_time: logged.integrated_time.value()?,
        log_index: logged.log_index.value()?,
        log_id: super::root::decode(&logged.log_id.key_id).context("its log id")?,
        promise: logged
            .inclusion_promise
            .map(|p| super::root::decode(&p.signed_entry_timestamp))
            .transpose()
            .context("its signed entry timestamp")?,
        proof,
    })
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// cosign's `dev.sigstore.cosign/bundle` annotation.
#[derive(Deserialize)]
struct CosignLogged {
    #[serde(rename = "SignedEntryTimestamp")]
    signed_entry_timestamp: String,
    #[serde(rename = "Payload")]
    payload: CosignPayload,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CosignPayload {
    body: String,
    integrated_time: i64,
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

/// A bundle's shape (protobuf's JSON; what is read of it).
mod files {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Bundle {
        pub(super) media_type: String,
        pub(super) verification_material: Material,
        pub(super) dsse_envelope: Option<Envelope>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Material {
        pub(super) certificate: Option<Raw>,
        pub(super) x509_certificate_chain: Option<Chain>,
        #[serde(default)]
        pub(super) tlog_entries: Vec<Entry>,
    }

    #[derive(Deserialize)]
    pub(super) struct Chain {
        pub(super) certificates: Vec<Raw>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Raw {
        pub(super) raw_bytes: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Entry {
        pub(super) log_index: Int,
        pub(super) log_id: LogId,
        pub(super) integrated_time: Int,
        pub(super) inclusion_promise: Option<Promise>,
        pub(super) inclusion_proof: Option<Proof>,
        pub(super) canonicalized_body: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct LogId {
        pub(super) key_id: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Promise {
        pub(super) signed_entry_timestamp: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Proof {
        pub(super) log_index: Int,
        pub(super) root_hash: String,
        pub(super) tree_size: Int,
        pub(super) hashes: Vec<String>,
        pub(super) checkpoint: Checkpoint,
    }

    #[derive(Deserialize)]
    pub(super) struct Checkpoint {
        pub(super) envelope: String,
    }

    /// An int64, which protobuf's JSON writes as a string.
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(super) enum Int {
        Text(String),
        Number(i64),
    }

    impl Int {
        pub(super) fn value(&self) -> anyhow::Result<i64> {
            match self {
                Int::Number(n) => Ok(*n),
                Int::Text(t) => t
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{} is not an integer", crate::text::excerpt(t))),
            }
        }
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Envelope {
        pub(super) payload: String,
        pub(super) payload_type: String,
        pub(super) signatures: Vec<Signature>,
    }

    #[derive(Deserialize)]
    pub(super) struct Signature {
        pub(super) sig: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Statement {
        #[serde(default)]
        pub(super) subject: Vec<Subject>,
        #[serde(default)]
        pub(super) predicate_type: String,
    }

    #[derive(Deserialize)]
    pub(super) struct Subject {
        #[serde(default)]
        pub(super) name: String,
        pub(super) digest: Digests,
    }

    #[derive(Deserialize)]
    pub(super) struct Digests {
        pub(super) sha256: Option<String>,
    }
}
