//! A transparency log's record of one signature (Rekor's): the signed
//! entry timestamp that says when it was logged, the inclusion proof and
//! signed checkpoint when the entry carries them, and that the entry
//! records this very signature by this very certificate.

use super::root::{Log, TrustedRoot};
use anyhow::{bail, Context as _, Result};
use base64::Engine as _;
use rustls_pki_types::SubjectPublicKeyInfoDer;
use sha2::{Digest as _, Sha256};

/// The largest logged entry read, in bytes (a hashedrekord entry with a
/// certificate is about 3 KiB).
pub(super) const MAX_ENTRY_BYTES: usize = 32 << 10;

/// The most hashes of one inclusion proof (a log of 2^64 entries needs
/// 64).
const MAX_PROOF_HASHES: usize = 64;

/// The largest checkpoint read, in bytes.
const MAX_CHECKPOINT_BYTES: usize = 4 << 10;

/// One log entry, as a bundle or cosign's annotation carries it.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The entry as logged (Rekor's canonicalized body).
    pub(crate) body: Vec<u8>,
    /// When the log recorded it (Unix seconds), as the log says.
    pub(crate) integrated_time: i64,
    /// Its index in the log.
    pub(crate) log_index: i64,
    /// The id of the log (the SHA-256 of its key).
    pub(crate) log_id: Vec<u8>,
    /// The log's signed entry timestamp (its promise to include it).
    pub(crate) promise: Option<Vec<u8>>,
    /// Its inclusion proof, if carried.
    pub(crate) proof: Option<Proof>,
}

/// That an entry is in the log: the path from its leaf to the root of a
/// tree of `tree_size` entries, and the log's signed checkpoint of that
/// tree.
#[derive(Debug, Clone)]
pub(crate) struct Proof {
    pub(crate) log_index: u64,
    pub(crate) root: Vec<u8>,
    pub(crate) tree_size: u64,
    pub(crate) hashes: Vec<Vec<u8>>,
    pub(crate) checkpoint: String,
}

/// What the entry must record.
#[derive(Debug, Clone)]
pub(crate) enum Recorded {
    /// A signature of content with this SHA-256 (a `hashedrekord` entry).
    Hashed([u8; 32]),
    /// A DSSE envelope whose payload has this SHA-256 (a `dsse` entry).
    Envelope([u8; 32]),
}

/// Checks `entry` against `root`: its log is trusted, its signed entry
/// timestamp verifies, its inclusion proof and checkpoint verify when
/// present, and it records `signature` over `recorded` by `certificate`
/// (DER). Returns when it was logged (Unix seconds).
pub(crate) fn verify(
    entry: &Entry,
    root: &TrustedRoot,
    recorded: &Recorded,
    signature: &[u8],
    certificate: &[u8],
) -> Result<i64> {
    anyhow::ensure!(
        entry.body.len() <= MAX_ENTRY_BYTES,
        "its transparency log entry is over {MAX_ENTRY_BYTES} bytes"
    );
    let log = root.log(&entry.log_id).with_context(|| {
        format!(
            "its transparency log ({}) is not one of the trusted root's",
            hex(&entry.log_id)
        )
    })?;
    let Some(promise) = &entry.promise else {
        bail!(
            "its transparency log entry carries no signed entry timestamp, so nothing vouches \
             for when it was logged (timestamp authorities are not read)"
        );
    };
    anyhow::ensure!(
        verifies(&log.key, &promised(entry), promise),
        "its transparency log entry's signed entry timestamp does not verify with the log's key \
         (the entry was altered, or another log signed it)"
    );
    anyhow::ensure!(
        log.valid.holds(entry.integrated_time),
        "its transparency log was not in service at the time it names"
    );
    if let Some(proof) = &entry.proof {
        included(entry, proof, log).context("its inclusion proof")?;
    }
    records(&entry.body, recorded, signature, certificate)?;
    Ok(entry.integrated_time)
}

/// The bytes a signed entry timestamp signs: the entry as canonical JSON
/// (members sorted, no spaces).
fn promised(entry: &Entry) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Promised<'a> {
        body: &'a str,
        #[serde(rename = "integratedTime")]
        integrated_time: i64,
        #[serde(rename = "logID")]
        log_id: &'a str,
        #[serde(rename = "logIndex")]
        log_index: i64,
    }
    let body = base64::engine::general_purpose::STANDARD.encode(&entry.body);
    serde_json::to_vec(&Promised {
        body: &body,
        integrated_time: entry.integrated_time,
        log_id: &hex(&entry.log_id),
        log_index: entry.log_index,
    })
    .expect("a JSON value serializes")
}

/// Whether `signature` of `message` verifies with `key` (a DER
/// SubjectPublicKeyInfo of any kind the logs use).
pub(super) fn verifies(key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let key = SubjectPublicKeyInfoDer::from(key);
    let Ok(entity) = webpki::RawPublicKeyEntity::try_from(&key) else {
        return false;
    };
    super::ALGORITHMS
        .iter()
        .any(|alg| entity.verify_signature(*alg, message, signature).is_ok())
}

/// Checks that the entry is in the tree `proof` names, and that the log
/// signed that tree's checkpoint.
fn included(entry: &Entry, proof: &Proof, log: &Log) -> Result<()> {
    anyhow::ensure!(
        proof.hashes.len() <= MAX_PROOF_HASHES,
        "it holds more than {MAX_PROOF_HASHES} hashes"
    );
    let leaf: [u8; 32] = Sha256::new()
        .chain_update([0u8])
        .chain_update(&entry.body)
        .finalize()
        .into();
    let computed = root_from(proof.log_index, proof.tree_size, leaf, &proof.hashes)
        .context("it does not lead from the entry to a root")?;
    anyhow::ensure!(
        computed[..] == proof.root[..],
        "it leads to another root than the one it names"
    );
    let (size, root_hash) = checkpoint(&proof.checkpoint, log)?;
    anyhow::ensure!(
        size == proof.tree_size && root_hash == proof.root,
        "its checkpoint is of another tree (size {size})"
    );
    Ok(())
}

/// The root of a tree of `size` leaves computed from leaf `index`'s hash
/// and its audit path (RFC 9162, 2.1.3.2).
fn root_from(index: u64, size: u64, leaf: [u8; 32], path: &[Vec<u8>]) -> Option<[u8; 32]> {
    if index >= size {
        return None;
    }
    let (mut fn_, mut sn, mut r) = (index, size - 1, leaf);
    for p in path {
        if sn == 0 || p.len() != 32 {
            return None;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    (sn == 0).then_some(r)
}

fn node(left: &[u8], right: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update([1u8])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// Checks a signed checkpoint (a signed note: origin, tree size, root hash
/// in base64, then signature lines) with `log`'s key; returns its size and
/// root hash.
fn checkpoint(text: &str, log: &Log) -> Result<(u64, Vec<u8>)> {
    anyhow::ensure!(
        text.len() <= MAX_CHECKPOINT_BYTES,
        "its checkpoint is over {MAX_CHECKPOINT_BYTES} bytes"
    );
    let (note, signatures) = text
        .split_once("\n\n")
        .context("its checkpoint is not a signed note")?;
    let mut lines = note.lines();
    let (_origin, size, root) = (lines.next(), lines.next(), lines.next());
    let size: u64 = size
        .and_then(|s| s.parse().ok())
        .context("its checkpoint names no tree size")?;
    let root = root
        .and_then(|r| super::root::decode(r).ok())
        .context("its checkpoint names no root hash")?;
    let signed = format!("{note}\n");
    let verified = signatures.lines().take(16).any(|line| {
        let Some(signature) = line
            .strip_prefix("\u{2014} ")
            .and_then(|rest| rest.rsplit_once(' '))
            .and_then(|(_, b64)| super::root::decode(b64).ok())
        else {
            return false;
        };
        // A 4-byte key hint, then the signature.
        signature.len() > 4 && verifies(&log.key, signed.as_bytes(), &signature[4..])
    });
    anyhow::ensure!(verified, "its checkpoint is not signed by the log");
    Ok((size, root))
}

/// Checks that the logged entry `body` records `signature` over
/// `recorded` by `certificate`.
fn records(body: &[u8], recorded: &Recorded, signature: &[u8], certificate: &[u8]) -> Result<()> {
    let entry: Logged = serde_json::from_slice(body)
        .map_err(|_| anyhow::anyhow!("its transparency log entry is not a Rekor entry"))?;
    let what = match (entry.kind.as_str(), recorded) {
        ("hashedrekord", Recorded::Hashed(digest)) => {
            let spec: HashedRekord = serde_json::from_value(entry.spec).map_err(|_| {
                anyhow::anyhow!("its transparency log entry is not a hashedrekord entry")
            })?;
            spec.data.hash.algorithm == "sha256"
                && spec.data.hash.value.eq_ignore_ascii_case(&hex(digest))
                && decoded(&spec.signature.content).as_deref() == Some(signature)
                && pem_der(&spec.signature.public_key.content).as_deref() == Some(certificate)
        }
        ("dsse", Recorded::Envelope(digest)) => {
            let spec: Dsse = serde_json::from_value(entry.spec)
                .map_err(|_| anyhow::anyhow!("its transparency log entry is not a dsse entry"))?;
            spec.payload_hash.algorithm == "sha256"
                && spec.payload_hash.value.eq_ignore_ascii_case(&hex(digest))
                && spec.signatures.iter().take(16).any(|s| {
                    decoded(&s.signature).as_deref() == Some(signature)
                        && pem_der(&s.verifier).as_deref() == Some(certificate)
                })
        }
        (kind, _) => bail!(
            "its transparency log entry is of kind {}, which does not record this kind of \
             signature",
            crate::text::excerpt(kind)
        ),
    };
    anyhow::ensure!(
        what,
        "its transparency log entry records another signature, certificate or content"
    );
    Ok(())
}

fn decoded(b64: &str) -> Option<Vec<u8>> {
    super::root::decode(b64).ok()
}

/// The DER of a base64-encoded PEM certificate (how Rekor keeps one).
fn pem_der(b64: &str) -> Option<Vec<u8>> {
    let text = String::from_utf8(decoded(b64)?).ok()?;
    Some(pem::parse(text).ok()?.into_contents())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A Rekor entry's outside.
#[derive(serde::Deserialize)]
struct Logged {
    kind: String,
    spec: serde_json::Value,
}

#[derive(serde::Deserialize)]
struct HashedRekord {
    data: HashedData,
    signature: HashedSignature,
}

#[derive(serde::Deserialize)]
struct HashedData {
    hash: Hash,
}

#[derive(serde::Deserialize)]
struct Hash {
    algorithm: String,
    value: String,
}

#[derive(serde::Deserialize)]
struct HashedSignature {
    content: String,
    #[serde(rename = "publicKey")]
    public_key: Content,
}

#[derive(serde::Deserialize)]
struct Content {
    content: String,
}

#[derive(serde::Deserialize)]
struct Dsse {
    #[serde(rename = "payloadHash")]
    payload_hash: Hash,
    signatures: Vec<DsseSignature>,
}

#[derive(serde::Deserialize)]
struct DsseSignature {
    signature: String,
    verifier: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(n: u8) -> [u8; 32] {
        Sha256::new().chain_update([0u8, n]).finalize().into()
    }

    /// The root of leaves `hashes` (RFC 9162's MTH).
    fn tree(hashes: &[[u8; 32]]) -> [u8; 32] {
        if hashes.len() == 1 {
            return hashes[0];
        }
        let k = hashes.len().next_power_of_two() / 2;
        node(&tree(&hashes[..k]), &tree(&hashes[k..]))
    }

    /// The audit path of leaf `m` (RFC 9162's PATH).
    fn path(m: usize, hashes: &[[u8; 32]]) -> Vec<Vec<u8>> {
        if hashes.len() == 1 {
            return Vec::new();
        }
        let k = hashes.len().next_power_of_two() / 2;
        if m < k {
            let mut p = path(m, &hashes[..k]);
            p.push(tree(&hashes[k..]).to_vec());
            p
        } else {
            let mut p = path(m - k, &hashes[k..]);
            p.push(tree(&hashes[..k]).to_vec());
            p
        }
    }

    #[test]
    fn every_leaf_of_trees_of_every_size_up_to_20_leads_to_the_root() {
        for size in 1..=20usize {
            let leaves: Vec<[u8; 32]> = (0..size as u8).map(leaf).collect();
            let root = tree(&leaves);
            for m in 0..size {
                let p = path(m, &leaves);
                let got = root_from(m as u64, size as u64, leaves[m], &p);
                assert_eq!(got, Some(root), "leaf {m} of {size}");
                // Another leaf, index or size does not.
                assert_ne!(root_from(m as u64, size as u64, leaf(99), &p), Some(root));
                if size > 1 {
                    let other = (m + 1) % size;
                    assert_ne!(
                        root_from(other as u64, size as u64, leaves[m], &p),
                        Some(root)
                    );
                }
            }
        }
        assert_eq!(root_from(3, 3, leaf(0), &[]), None);
    }
}
