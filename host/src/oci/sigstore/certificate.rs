//! The signing certificate: that a certificate authority of the trusted
//! root issued it for code signing and that it was valid when the log
//! recorded the signature, that its key made the signature, and who it
//! names (Fulcio's OIDC issuer extension and its subject alternative
//! name).

use super::root::TrustedRoot;
use anyhow::{bail, Context as _, Result};
use rustls_pki_types::{CertificateDer, UnixTime};
use std::time::Duration;
use x509_cert::der::asn1::{Ia5String, Utf8StringRef};
use x509_cert::der::oid::ObjectIdentifier;
use x509_cert::der::Decode as _;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::SubjectAltName;

/// The largest certificate read, in bytes (Fulcio's are under 2 KiB).
pub(super) const MAX_CERTIFICATE_BYTES: usize = 16 << 10;

/// Extended key usage: code signing (1.3.6.1.5.5.7.3.3), its DER value.
static CODE_SIGNING: [u8; 8] = [0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// Subject alternative name.
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");

/// Fulcio's OIDC issuer, as a DER UTF8String.
const ISSUER_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");

/// Fulcio's OIDC issuer, as raw bytes (older certificates).
const ISSUER_V1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");

/// Fulcio's source repository URI (the repository whose workflow ran), as
/// a DER UTF8String.
const SOURCE_REPOSITORY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.12");

/// Who a certificate names: the OIDC issuer that vouched, and the
/// identity it vouched for (a workflow URI, an email address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) issuer: String,
    pub(crate) subject: String,
    /// The repository whose workflow signed, when the certificate names
    /// one (CI identities).
    pub(crate) source_repository: Option<String>,
}

/// Checks that `leaf` (DER) chains to a certificate authority of `root`
/// that was issuing at `time` (Unix seconds), is for code signing, and was
/// valid at `time`.
pub(super) fn issued(leaf: &[u8], root: &TrustedRoot, time: i64) -> Result<()> {
    anyhow::ensure!(
        leaf.len() <= MAX_CERTIFICATE_BYTES,
        "its certificate is over {MAX_CERTIFICATE_BYTES} bytes"
    );
    let leaf = CertificateDer::from(leaf);
    let end = webpki::EndEntityCert::try_from(&leaf)
        .map_err(|e| anyhow::anyhow!("its certificate does not parse ({e})"))?;
    let at = UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(time).unwrap_or(0)));
    let mut last = None;
    for authority in root.authorities.iter().filter(|a| a.valid.holds(time)) {
        let Some((anchor, intermediates)) = authority.chain.split_last() else {
            continue;
        };
        let Ok(anchor) = webpki::anchor_from_trusted_cert(anchor) else {
            continue;
        };
        match end.verify_for_usage(
            super::ALGORITHMS,
            &[anchor],
            intermediates,
            at,
            webpki::KeyUsage::required(&CODE_SIGNING),
            None,
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    match last {
        None => {
            bail!("no certificate authority of the trusted root was issuing when it was logged")
        }
        Some(webpki::Error::CertExpired { .. } | webpki::Error::CertNotValidYet { .. }) => bail!(
            "its certificate was not valid when the transparency log recorded the signature \
             (expired, or not yet valid)"
        ),
        Some(webpki::Error::RequiredEkuNotFoundContext(_)) => {
            bail!("its certificate is not for code signing")
        }
        Some(webpki::Error::UnknownIssuer) => {
            bail!("its certificate is not issued by a certificate authority of the trusted root")
        }
        Some(e) => bail!("its certificate does not chain to the trusted root ({e})"),
    }
}

/// Whether `signature` of `message` verifies with `leaf`'s key.
pub(super) fn signed(leaf: &[u8], message: &[u8], signature: &[u8]) -> bool {
    let leaf = CertificateDer::from(leaf);
    let Ok(end) = webpki::EndEntityCert::try_from(&leaf) else {
        return false;
    };
    super::ALGORITHMS
        .iter()
        .any(|alg| end.verify_signature(*alg, message, signature).is_ok())
}

/// Who `leaf` (DER) names.
pub(super) fn named(leaf: &[u8]) -> Result<Named> {
    let certificate = x509_cert::Certificate::from_der(leaf)
        .map_err(|e| anyhow::anyhow!("its certificate does not parse ({e})"))?;
    let mut issuer = None;
    let mut subject = None;
    let mut source_repository = None;
    for extension in certificate
        .tbs_certificate
        .extensions
        .iter()
        .flatten()
        .take(64)
    {
        let value = extension.extn_value.as_bytes();
        if extension.extn_id == ISSUER_V2 {
            let text = Utf8StringRef::from_der(value)
                .map_err(|_| anyhow::anyhow!("its OIDC issuer extension is not a UTF8String"))?;
            issuer = Some(text.as_str().to_owned());
        } else if extension.extn_id == ISSUER_V1 && issuer.is_none() {
            issuer = Some(
                String::from_utf8(value.to_vec())
                    .context("its OIDC issuer extension is not text")?,
            );
        } else if extension.extn_id == SOURCE_REPOSITORY {
            let text = Utf8StringRef::from_der(value).map_err(|_| {
                anyhow::anyhow!("its source repository extension is not a UTF8String")
            })?;
            source_repository = Some(text.as_str().to_owned());
        } else if extension.extn_id == SUBJECT_ALT_NAME {
            let names = SubjectAltName::from_der(value)
                .map_err(|_| anyhow::anyhow!("its subject alternative name does not parse"))?;
            subject = names.0.iter().find_map(|name| match name {
                GeneralName::UniformResourceIdentifier(uri) => Some(ia5(uri)),
                GeneralName::Rfc822Name(email) => Some(ia5(email)),
                _ => None,
            });
        }
    }
    let named = Named {
        issuer: issuer.context("its certificate names no OIDC issuer (Fulcio's extension)")?,
        subject: subject
            .context("its certificate names no subject (a URI or email alternative name)")?,
        source_repository,
    };
    // Names are matched and recorded as one line each: nothing that could
    // split or blur one.
    let plain =
        |text: &str| !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    anyhow::ensure!(
        plain(&named.issuer)
            && plain(&named.subject)
            && named.source_repository.as_deref().is_none_or(plain),
        "its certificate names an identity with spaces or control characters"
    );
    Ok(named)
}

fn ia5(text: &Ia5String) -> String {
    text.as_str().to_owned()
}
