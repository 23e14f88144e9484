//! Sigstore bundles attached to an artifact as OCI referrers (cosign's
//! bundle format): found through the registry's referrers API, or the
//! referrers tag (`sha256-HEX`) where the registry has no such API.

use super::bundle::{self, Evidence, BUNDLE_MEDIA_TYPE, MAX_BUNDLE_BYTES};
use crate::oci::fetch::Repository;
use anyhow::Result;
use serde::Deserialize;

/// The most bundles of one artifact looked at.
const MAX_BUNDLES: usize = 16;

/// The referrer annotation naming a bundle's predicate type.
const PREDICATE_ANNOTATION: &str = "dev.sigstore.bundle.predicateType";

/// The evidence of each Sigstore bundle attached to manifest `digest`
/// (one that does not read is the reason why); empty when there is none.
pub(crate) async fn bundles(
    repository: &Repository,
    digest: &str,
) -> Result<Vec<Result<Evidence>>> {
    let Some(index) = repository.referrers(digest).await? else {
        return Ok(Vec::new());
    };
    let Ok(index) = serde_json::from_slice::<Index>(&index) else {
        anyhow::bail!("its referrers are not an OCI image index");
    };
    let mut found = Vec::new();
    // Bundles, and of them the signatures: attestations that say which
    // predicate they hold are not read.
    let attached = index.manifests.iter().filter(|m| {
        m.artifact_type
            .as_deref()
            .is_none_or(|kind| kind.starts_with(BUNDLE_MEDIA_TYPE))
            && m.annotations
                .get(PREDICATE_ANNOTATION)
                .is_none_or(|kind| kind == bundle::SIGNATURE_PREDICATE)
    });
    for descriptor in attached.take(MAX_BUNDLES) {
        if !crate::oci::fetch::is_digest(&descriptor.digest) {
            found.push(Err(anyhow::anyhow!(
                "a referrer is named by no sha256 digest"
            )));
            continue;
        }
        // One that cannot be read is a reason, not the end of the check.
        let manifest = match repository.manifest(&descriptor.digest).await {
            Ok((manifest, _)) => manifest,
            Err(e) => {
                found.push(Err(e.context("a bundle's manifest")));
                continue;
            }
        };
        let Ok(manifest) = serde_json::from_slice::<Manifest>(&manifest) else {
            continue;
        };
        let layer = manifest
            .layers
            .iter()
            .find(|l| l.media_type.starts_with(BUNDLE_MEDIA_TYPE));
        let Some(layer) = layer.filter(|l| crate::oci::fetch::is_digest(&l.digest)) else {
            continue;
        };
        if layer.size > MAX_BUNDLE_BYTES as u64 {
            found.push(Err(anyhow::anyhow!(
                "a bundle is over {MAX_BUNDLE_BYTES} bytes"
            )));
            continue;
        }
        match repository.blob(&layer.digest, MAX_BUNDLE_BYTES).await {
            Ok(bytes) => found.push(bundle::from_bundle(&bytes)),
            Err(e) => found.push(Err(e.context("a bundle"))),
        }
    }
    Ok(found)
}

/// An image index (what is read of it).
#[derive(Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    digest: String,
    artifact_type: Option<String>,
    #[serde(default)]
    annotations: std::collections::BTreeMap<String, String>,
}

/// An image manifest (what is read of it).
#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    layers: Vec<Layer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Layer {
    media_type: String,
    digest: String,
    size: u64,
}
