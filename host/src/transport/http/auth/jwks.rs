//! An identity provider's signing keys, as its JWKS publishes them:
//! fetched bounded in size and time, kept, fetched again on a schedule
//! (so a key removed from the set stops being accepted) and when a token
//! names a key not in the set, at most once per `min_refresh`. A token
//! whose key is known never waits for a fetch.

use anyhow::{bail, Context as _, Result};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Keys kept from one set, at most; more are ignored.
pub(super) const MAX_KEYS: usize = 64;

/// Where the keys come from, and the bounds of fetching them.
#[derive(Debug, Clone)]
pub struct JwksSource {
    /// The JWKS URL, or the discovery document's URL (its `jwks_uri`).
    pub location: Location,
    /// The issuer a discovery document must name.
    pub issuer: String,
    /// The most one fetch may take.
    pub timeout: Duration,
    /// The largest document read.
    pub max_bytes: usize,
    /// How often the set is fetched again.
    pub refresh: Duration,
    /// The least time between fetches for a token with an unknown key.
    pub min_refresh: Duration,
}

/// Where the set is found.
#[derive(Debug, Clone)]
pub enum Location {
    /// At this URL.
    Jwks(String),
    /// At the `jwks_uri` of the discovery document at this URL.
    Discovery(String),
}

/// One signing key of the set.
pub(super) struct Key {
    /// Its `kid`.
    pub kid: Option<String>,
    /// The algorithms it may verify.
    pub algorithms: Vec<Algorithm>,
    /// The key.
    pub key: DecodingKey,
}

/// The keys, kept and refreshed.
pub(super) struct Jwks {
    source: JwksSource,
    http: reqwest::Client,
    /// The keys, and how many fetches were tried when they were set.
    keys: RwLock<Held>,
    /// When the set was last asked for (whatever came of it).
    last_fetch: Mutex<Option<Instant>>,
    /// One fetch at a time; the others wait for its keys.
    fetching: tokio::sync::Mutex<()>,
}

/// The keys held, as of the `attempts`-th fetch tried.
#[derive(Clone, Default)]
pub(super) struct Held {
    /// The keys.
    pub keys: Arc<Vec<Key>>,
    attempts: u64,
}

/// Whether `url` is on loopback (there plain HTTP is allowed).
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Checks that `url` is HTTPS (or HTTP on loopback).
pub fn check_url(what: &str, url: &str) -> Result<()> {
    let parsed = url::Url::parse(url).with_context(|| format!("{what}: {url:?} is not a URL"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        _ => bail!("{what}: {url:?} must be https:// (plain http only on loopback)"),
    }
}

impl Jwks {
    /// Keys from `source`, none fetched yet.
    pub(super) fn new(source: JwksSource) -> Result<Arc<Self>> {
        let http = reqwest::Client::builder()
            .connect_timeout(source.timeout)
            .timeout(source.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("making the JWKS client")?;
        Ok(Arc::new(Jwks {
            source,
            http,
            keys: RwLock::default(),
            last_fetch: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }))
    }

    /// The keys held now.
    pub(super) fn held(&self) -> Held {
        self.keys.read().clone()
    }

    /// Fetches the set again now and then, while `self` lives.
    pub(super) fn keep_fresh(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = self.source.refresh;
        tokio::spawn(async move {
            loop {
                let Some(jwks) = weak.upgrade() else { return };
                jwks.fetch_now().await;
                drop(jwks);
                tokio::time::sleep(every).await;
            }
        });
    }

    /// The keys after a fetch for a token whose key was not among `seen`:
    /// fetched unless one was tried since `seen` (by another request) or
    /// within `min_refresh`; then the keys held.
    pub(super) async fn refreshed(&self, seen: &Held) -> Held {
        let _one = self.fetching.lock().await;
        let now = self.held();
        let recent = self
            .last_fetch
            .lock()
            .is_some_and(|at| at.elapsed() < self.source.min_refresh);
        if now.attempts != seen.attempts || recent {
            return now;
        }
        self.fetch_locked().await;
        self.held()
    }

    async fn fetch_now(&self) {
        let _one = self.fetching.lock().await;
        self.fetch_locked().await;
    }

    async fn fetch_locked(&self) {
        *self.last_fetch.lock() = Some(Instant::now());
        let fetched = tokio::time::timeout(self.source.timeout, self.fetch()).await;
        let mut held = self.keys.write();
        held.attempts += 1;
        match fetched {
            Ok(Ok(keys)) => {
                tracing::debug!(keys = keys.len(), "fetched the JWKS");
                held.keys = Arc::new(keys);
            }
            Ok(Err(error)) => {
                tracing::warn!("fetching the JWKS failed (the keys held stay): {error:#}")
            }
            Err(_) => tracing::warn!(
                "fetching the JWKS took over {:?} (the keys held stay)",
                self.source.timeout
            ),
        }
    }

    async fn fetch(&self) -> Result<Vec<Key>> {
        let url = match &self.source.location {
            Location::Jwks(url) => url.clone(),
            Location::Discovery(url) => {
                let document = self.get_json(url).await?;
                let issuer = document.get("issuer").and_then(Value::as_str);
                anyhow::ensure!(
                    issuer == Some(self.source.issuer.as_str()),
                    "the discovery document names issuer {issuer:?}, not {:?}",
                    self.source.issuer
                );
                let jwks_uri = document
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .context("the discovery document has no jwks_uri")?;
                check_url("jwks_uri", jwks_uri)?;
                jwks_uri.to_owned()
            }
        };
        parse_set(&self.get_json(&url).await?)
    }

    async fn get_json(&self, url: &str) -> Result<Value> {
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.without_url()))
            .with_context(|| format!("reaching {url}"))?;
        let status = response.status();
        anyhow::ensure!(status.is_success(), "{url} answered {status}");
        let max = self.source.max_bytes;
        anyhow::ensure!(
            response.content_length().is_none_or(|n| n <= max as u64),
            "{url} is over the limit of {max} bytes"
        );
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| anyhow::anyhow!("reading {url}: {}", e.without_url()))?
        {
            anyhow::ensure!(
                body.len() + chunk.len() <= max,
                "{url} is over the limit of {max} bytes"
            );
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).with_context(|| format!("{url} is not JSON"))
    }
}

/// The signing keys of a JWKS document. A key of a kind not understood (or
/// symmetric, which a published set must never hold) is skipped; a
/// document without a `keys` array is an error.
pub(super) fn parse_set(document: &Value) -> Result<Vec<Key>> {
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .context("the JWKS has no \"keys\" array")?;
    let mut parsed = Vec::new();
    for key in keys.iter() {
        if parsed.len() == MAX_KEYS {
            tracing::warn!("the JWKS holds over {MAX_KEYS} keys; the rest are ignored");
            break;
        }
        match parse_key(key) {
            Ok(Some(key)) => parsed.push(key),
            Ok(None) => {}
            Err(error) => tracing::warn!("a JWKS key is skipped: {error:#}"),
        }
    }
    Ok(parsed)
}

fn parse_key(key: &Value) -> Result<Option<Key>> {
    let field = |name: &str| key.get(name).and_then(Value::as_str);
    if field("use").is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    let required = |name: &str| field(name).with_context(|| format!("no \"{name}\""));
    let (key_value, family) = match (field("kty"), field("crv")) {
        (Some("RSA"), _) => (
            DecodingKey::from_rsa_components(required("n")?, required("e")?)?,
            vec![
                Algorithm::RS256,
                Algorithm::RS384,
                Algorithm::RS512,
                Algorithm::PS256,
                Algorithm::PS384,
                Algorithm::PS512,
            ],
        ),
        (Some("EC"), Some(curve @ ("P-256" | "P-384"))) => (
            DecodingKey::from_ec_components(required("x")?, required("y")?)?,
            vec![if curve == "P-256" {
                Algorithm::ES256
            } else {
                Algorithm::ES384
            }],
        ),
        (Some("OKP"), Some("Ed25519")) => (
            DecodingKey::from_ed_components(required("x")?)?,
            vec![Algorithm::EdDSA],
        ),
        (kty, crv) => {
            bail!("key type {kty:?} (curve {crv:?}) is not a signing key this host reads")
        }
    };
    let algorithms = match field("alg") {
        None => family,
        Some(alg) => {
            let alg: Algorithm = alg
                .parse()
                .with_context(|| format!("unknown alg {alg:?}"))?;
            anyhow::ensure!(
                family.contains(&alg),
                "alg {alg:?} does not fit its key type"
            );
            vec![alg]
        }
    };
    Ok(Some(Key {
        kid: field("kid").map(str::to_owned),
        algorithms,
        key: key_value,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_keep_signing_keys_and_skip_the_rest() {
        let set = json!({ "keys": [
            // RFC 7517 A.1's EC and RSA keys.
            { "kty": "EC", "crv": "P-256", "kid": "ec",
              "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4",
              "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM" },
            { "kty": "RSA", "kid": "rsa", "alg": "RS256", "e": "AQAB",
              "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw" },
            { "kty": "oct", "kid": "secret", "k": "c2VjcmV0" },
            { "kty": "RSA", "kid": "enc", "use": "enc", "e": "AQAB", "n": "AQAB" },
            { "kty": "EC", "crv": "P-521", "kid": "p521", "x": "AA", "y": "AA" },
            { "kty": "OKP", "crv": "Ed25519", "kid": "ed",
              "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" },
            { "kty": "RSA", "kid": "bad-alg", "alg": "ES256", "e": "AQAB", "n": "AQAB" },
            "not an object",
        ]});
        let keys = parse_set(&set).unwrap();
        let kids: Vec<_> = keys.iter().map(|k| k.kid.as_deref().unwrap()).collect();
        assert_eq!(kids, ["ec", "rsa", "ed"]);
        assert_eq!(keys[0].algorithms, [Algorithm::ES256]);
        assert_eq!(keys[1].algorithms, [Algorithm::RS256]);
        assert_eq!(keys[2].algorithms, [Algorithm::EdDSA]);
        assert!(parse_set(&json!({ "nokeys": [] })).is_err());
        let many = json!({ "keys": vec![set["keys"][0].clone(); 100] });
        assert_eq!(parse_set(&many).unwrap().len(), MAX_KEYS);
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("u", "https://idp.example/jwks").is_ok());
        assert!(check_url("u", "http://127.0.0.1:9/jwks").is_ok());
        assert!(check_url("u", "http://[::1]:9/jwks").is_ok());
        assert!(check_url("u", "http://idp.example/jwks").is_err());
        assert!(check_url("u", "file:///etc/passwd").is_err());
    }
}
