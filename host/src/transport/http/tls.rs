//! HTTPS without a proxy: the certificate and key from PEM files, offered
//! over HTTP/1.1 and HTTP/2 (ALPN), and read again when either file
//! changes (certificate managers replace them before they expire). A
//! change that does not load (a half-written file, a key that does not fit
//! the certificate) keeps the pair that was serving, and says why.

use anyhow::{Context as _, Result};
use parking_lot::RwLock;
use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};
use tokio_rustls::TlsAcceptor;

/// The largest certificate chain or key file read.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// How often the files are looked at for a change.
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

/// Where the certificate chain and its key are.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain (PEM), the server's own first.
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// What is known of a file to notice it changed.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &PathBuf) -> Stamp {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(path).ok()?;
    Some((metadata.modified().ok()?, metadata.len(), metadata.ino()))
}

/// Reads and checks the pair (blocking).
fn load(files: &TlsFiles) -> Result<Arc<CertifiedKey>> {
    let read = |path: &PathBuf| {
        crate::files::read_regular(path, MAX_PEM_BYTES)
            .with_context(|| format!("reading {}", path.display()))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read(&files.cert)?)
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} is not a PEM certificate chain", files.cert.display()))?;
    anyhow::ensure!(
        !chain.is_empty(),
        "{} holds no certificate",
        files.cert.display()
    );
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key)?)
        .with_context(|| format!("{} is not a PEM private key", files.key.display()))?;
    let signing = any_supported_type(&key)
        .with_context(|| format!("{} is not a key this host signs with", files.key.display()))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().with_context(|| {
        format!(
            "the key in {} does not fit the certificate in {}",
            files.key.display(),
            files.cert.display()
        )
    })?;
    Ok(Arc::new(certified))
}

/// The pair served now.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().clone())
    }
}

/// Accepts TLS connections with the pair `files` name (read now), and
/// watches the files while the acceptor lives.
pub async fn acceptor(files: TlsFiles) -> Result<TlsAcceptor> {
    let first = {
        let files = files.clone();
        tokio::task::spawn_blocking(move || (load(&files), stamp(&files.cert), stamp(&files.key)))
            .await?
    };
    let (pair, cert_stamp, key_stamp) = first;
    let current = Arc::new(Current(RwLock::new(pair?)));
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(current.clone());
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio::spawn(watch(
        Arc::downgrade(&current),
        files,
        (cert_stamp, key_stamp),
    ));
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Loads the pair again whenever either file changes, while `current` is
/// served.
async fn watch(current: Weak<Current>, files: TlsFiles, mut seen: (Stamp, Stamp)) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        if current.strong_count() == 0 {
            return;
        }
        let look = files.clone();
        let Ok(now) =
            tokio::task::spawn_blocking(move || (stamp(&look.cert), stamp(&look.key))).await
        else {
            continue;
        };
        if now == seen {
            continue;
        }
        seen = now;
        let again = files.clone();
        let Ok(loaded) = tokio::task::spawn_blocking(move || load(&again)).await else {
            continue;
        };
        let Some(current) = current.upgrade() else {
            return;
        };
        match loaded {
            Ok(pair) => {
                *current.0.write() = pair;
                tracing::info!(cert = %files.cert.display(), "the TLS certificate changed: serving the new one");
            }
            Err(error) => tracing::warn!(
                "the TLS certificate files changed but do not load (the old pair is served): {error:#}"
            ),
        }
    }
}
