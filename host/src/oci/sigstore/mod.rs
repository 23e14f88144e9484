//! Keyless signatures (Sigstore), checked offline: a short-lived
//! certificate from a certificate authority (Fulcio) names who signed (an
//! OIDC issuer and a subject, such as a CI workflow), and a transparency
//! log (Rekor) says when, both trusted through a `trusted_root.json` the
//! operator provides.
//!
//! `bundle` reads a signature's evidence from where it travels (`attached`
//! finds the bundles attached to an artifact); `verify` checks it: the log
//! entry first (its signed entry timestamp, its inclusion proof and
//! checkpoint when carried, and that it records this signature by this
//! certificate), then the certificate chain at the logged time, then the
//! signature. Who it names, and what it vouches for, are the caller's to
//! match against the policy.

pub(crate) mod attached;
pub(crate) mod bundle;
mod certificate;
mod log;
mod root;

pub(crate) use bundle::Evidence;
pub use root::TrustedRoot;

use anyhow::Result;

/// The signature algorithms certificates and logs are checked with.
static ALGORITHMS: &[&dyn rustls_pki_types::SignatureVerificationAlgorithm] = &[
    webpki::ring::ECDSA_P256_SHA256,
    webpki::ring::ECDSA_P384_SHA384,
    webpki::ring::ECDSA_P256_SHA384,
    webpki::ring::ECDSA_P384_SHA256,
    webpki::ring::ED25519,
    webpki::ring::RSA_PKCS1_2048_8192_SHA256,
    webpki::ring::RSA_PKCS1_2048_8192_SHA384,
    webpki::ring::RSA_PKCS1_2048_8192_SHA512,
    webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
];

/// Who made a verified keyless signature, and where the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyless {
    /// The OIDC issuer that vouched for the signer.
    pub issuer: String,
    /// The signer (a workflow URI, an email address).
    pub subject: String,
    /// The repository whose workflow signed, when the certificate names
    /// one.
    pub source_repository: Option<String>,
    /// The signature's index in the transparency log.
    pub log_index: i64,
}

/// Checks `evidence` against `root`: who signed, or why it does not verify.
pub(crate) fn verify(evidence: &Evidence, root: &TrustedRoot) -> Result<Keyless> {
    let time = log::verify(
        &evidence.entry,
        root,
        &evidence.recorded,
        &evidence.signature,
        &evidence.certificate,
    )?;
    certificate::issued(&evidence.certificate, root, time)?;
    anyhow::ensure!(
        certificate::signed(
            &evidence.certificate,
            &evidence.message,
            &evidence.signature
        ),
        "its signature does not verify with its certificate's key"
    );
    let certificate::Named {
        issuer,
        subject,
        source_repository,
    } = certificate::named(&evidence.certificate)?;
    Ok(Keyless {
        issuer,
        subject,
        source_repository,
        log_index: evidence.entry.log_index,
    })
}
