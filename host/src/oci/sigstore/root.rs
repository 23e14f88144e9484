//! The trusted root: which certificate authorities may issue signing
//! certificates and which transparency logs may record signatures, read
//! from a `trusted_root.json` in Sigstore's format (the TUF target of that
//! name, `application/vnd.dev.sigstore.trustedroot+json`).

use anyhow::{bail, Context as _, Result};
use base64::Engine as _;
use rustls_pki_types::CertificateDer;
use std::path::Path;

/// The largest trusted root read, in bytes (the public one is about 7 KiB).
const MAX_ROOT_BYTES: u64 = 1 << 20;

/// The most certificate authorities or logs one root names.
const MAX_ENTRIES: usize = 64;

/// The most certificates in one authority's chain.
pub(super) const MAX_CHAIN: usize = 4;

/// A trusted root: the authorities and logs signatures are checked
/// against.
#[derive(Debug, Clone)]
pub struct TrustedRoot {
    /// Certificate authorities (Fulcio instances).
    pub(super) authorities: Vec<Authority>,
    /// Transparency logs (Rekor instances).
    pub(super) logs: Vec<Log>,
}

/// A certificate authority: its chain (leaf-most first, the root last) and
/// when it issued.
#[derive(Debug, Clone)]
pub(super) struct Authority {
    pub(super) chain: Vec<CertificateDer<'static>>,
    pub(super) valid: Window,
}

/// A transparency log: its id (the SHA-256 of its key), its key (DER
/// SubjectPublicKeyInfo) and when it signed.
#[derive(Debug, Clone)]
pub(super) struct Log {
    pub(super) id: Vec<u8>,
    pub(super) key: Vec<u8>,
    pub(super) valid: Window,
}

/// When something was in service, in Unix seconds (no end: still is).
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    start: i64,
    end: Option<i64>,
}

impl Window {
    /// Whether `time` (Unix seconds) falls in it.
    pub(super) fn holds(&self, time: i64) -> bool {
        time >= self.start && self.end.is_none_or(|end| time <= end)
    }
}

impl TrustedRoot {
    /// Reads `path` (blocking).
    pub fn read(path: &Path) -> Result<Self> {
        let text = crate::files::read_regular_text(path, MAX_ROOT_BYTES)
            .with_context(|| format!("reading the trusted root {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("the trusted root {}", path.display()))
    }

    /// Parses a `trusted_root.json`.
    pub fn parse(text: &str) -> Result<Self> {
        let file: files::Root = serde_json::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "not a Sigstore trusted root: {}",
                crate::text::excerpt(&e.to_string())
            )
        })?;
        if let Some(kind) = &file.media_type {
            anyhow::ensure!(
                kind.starts_with("application/vnd.dev.sigstore.trustedroot"),
                "its mediaType is {}, not a Sigstore trusted root",
                crate::text::excerpt(kind)
            );
        }
        anyhow::ensure!(
            file.certificate_authorities.len() <= MAX_ENTRIES && file.tlogs.len() <= MAX_ENTRIES,
            "it names more than {MAX_ENTRIES} certificate authorities or logs"
        );
        let authorities = file
            .certificate_authorities
            .into_iter()
            .enumerate()
            .map(|(i, ca)| authority(ca).with_context(|| format!("certificateAuthorities[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        let logs = file
            .tlogs
            .into_iter()
            .enumerate()
            .map(|(i, log)| self::log(log).with_context(|| format!("tlogs[{i}]")))
            .collect::<Result<Vec<_>>>()?;
        anyhow::ensure!(
            !authorities.is_empty(),
            "it names no certificate authority (certificateAuthorities)"
        );
        anyhow::ensure!(!logs.is_empty(), "it names no transparency log (tlogs)");
        Ok(TrustedRoot { authorities, logs })
    }

    /// The log whose id is `id`.
    pub(super) fn log(&self, id: &[u8]) -> Option<&Log> {
        self.logs.iter().find(|log| log.id == id)
    }
}

fn authority(ca: files::Authority) -> Result<Authority> {
    let certificates = ca.cert_chain.certificates;
    anyhow::ensure!(!certificates.is_empty(), "its certChain is empty");
    anyhow::ensure!(
        certificates.len() <= MAX_CHAIN,
        "its certChain holds more than {MAX_CHAIN} certificates"
    );
    let chain = certificates
        .iter()
        .map(|c| decode(&c.raw_bytes).map(CertificateDer::from))
        .collect::<Result<Vec<_>>>()
        .context("a certificate")?;
    Ok(Authority {
        chain,
        valid: window(ca.valid_for.as_ref())?,
    })
}

fn log(log: files::Log) -> Result<Log> {
    let key = decode(&log.public_key.raw_bytes).context("its publicKey")?;
    let id = decode(&log.log_id.key_id).context("its logId")?;
    anyhow::ensure!(!key.is_empty(), "its publicKey is empty");
    Ok(Log {
        id,
        key,
        valid: window(log.public_key.valid_for.as_ref())?,
    })
}

fn window(valid_for: Option<&files::ValidFor>) -> Result<Window> {
    let Some(valid_for) = valid_for else {
        return Ok(Window {
            start: i64::MIN,
            end: None,
        });
    };
    Ok(Window {
        start: valid_for
            .start
            .as_deref()
            .map_or(Ok(i64::MIN), unix_seconds)?,
        end: valid_for.end.as_deref().map(unix_seconds).transpose()?,
    })
}

/// Unix seconds of an RFC 3339 time.
fn unix_seconds(text: &str) -> Result<i64> {
    let Ok(time) =
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
    else {
        bail!("{} is not an RFC 3339 time", crate::text::excerpt(text));
    };
    Ok(time.unix_timestamp())
}

/// Standard base64, as protobuf's JSON writes bytes.
pub(super) fn decode(text: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| anyhow::anyhow!("not base64"))
}

/// The file's shape (what is read of it; the rest is ignored).
mod files {
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Root {
        pub(super) media_type: Option<String>,
        #[serde(default)]
        pub(super) tlogs: Vec<Log>,
        #[serde(default)]
        pub(super) certificate_authorities: Vec<Authority>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Log {
        pub(super) public_key: PublicKey,
        pub(super) log_id: LogId,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct PublicKey {
        pub(super) raw_bytes: String,
        pub(super) valid_for: Option<ValidFor>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct LogId {
        pub(super) key_id: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Authority {
        pub(super) cert_chain: Chain,
        pub(super) valid_for: Option<ValidFor>,
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
    pub(super) struct ValidFor {
        pub(super) start: Option<String>,
        pub(super) end: Option<String>,
    }
}
