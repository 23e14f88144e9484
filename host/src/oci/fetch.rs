//! Reading from a registry for a pull, every answer bounded: manifests,
//! blobs, tokens and error bodies are read as they arrive and refused past
//! their cap, so a hostile registry costs the host at most the caps (and
//! the pull's deadline), whatever it sends.
//!
//! It speaks the OCI distribution API's read side: `GET
//! /v2/REPO/manifests/REF` and `/v2/REPO/blobs/DIGEST`, answering a 401
//! with the challenge it names (`Bearer`: a token from its realm; `Basic`:
//! the login). Pushing and signing stay with `oci-client`.

use anyhow::{bail, Context as _, Result};
use oci_client::secrets::RegistryAuth;
use oci_client::Reference;
use sha2::Digest as _;
use std::time::Duration;

/// The most of an error body read, in bytes (then quoted short).
pub const MAX_ERROR_BYTES: usize = 4 << 10;

/// The media types a manifest request accepts.
const ACCEPT_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json, \
    application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, \
    application/vnd.docker.distribution.manifest.list.v2+json";

/// The most a pull reads of each kind of answer, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// A manifest or an index (`[server] oci_max_manifest_kb`).
    pub manifest: usize,
    /// A token answer (`[server] oci_max_token_kb`).
    pub token: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            manifest: crate::config::defaults::OCI_MAX_MANIFEST_KB << 10,
            token: crate::config::defaults::OCI_MAX_TOKEN_KB << 10,
        }
    }
}

/// One repository of a registry, read with bounded answers.
pub struct Repository {
    http: reqwest::Client,
    caps: Caps,
    /// `http(s)://HOST[:PORT]/v2/REPO`
    base: String,
    repository: String,
    login: RegistryAuth,
    /// What requests carry once a challenge was answered.
    authorization: tokio::sync::Mutex<Option<String>>,
}

impl Repository {
    /// The repository of `reference`, read with `login` within `caps`.
    /// Registries on loopback are spoken to in plain HTTP, every other one
    /// in HTTPS.
    pub fn new(reference: &Reference, login: &RegistryAuth, caps: Caps) -> Result<Self> {
        let registry = reference.resolve_registry();
        let scheme = if is_loopback(registry) {
            "http"
        } else {
            "https"
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(60))
            .build()
            .context("making the registry client")?;
        Ok(Repository {
            http,
            caps,
            base: format!("{scheme}://{registry}/v2/{}", reference.repository()),
            repository: reference.repository().to_owned(),
            login: login.clone(),
            authorization: tokio::sync::Mutex::new(None),
        })
    }

    /// The manifest (or index) `reference` (a tag or a digest) names, at
    /// most [`Caps::manifest`], and its digest (checked against the
    /// reference when that is a digest). A missing one is an error quoting
    /// the registry.
    pub async fn manifest(&self, reference: &str) -> Result<(Vec<u8>, String)> {
        let url = format!("{}/manifests/{reference}", self.base);
        let response = self.get(&url, ACCEPT_MANIFEST).await?;
        self.manifest_body(response, reference).await
    }

    /// [`Repository::manifest`], `None` when the registry has none.
    pub async fn manifest_if_any(&self, reference: &str) -> Result<Option<(Vec<u8>, String)>> {
        let url = format!("{}/manifests/{reference}", self.base);
        let response = self.get(&url, ACCEPT_MANIFEST).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        self.manifest_body(response, reference).await.map(Some)
    }

    async fn manifest_body(
        &self,
        response: reqwest::Response,
        reference: &str,
    ) -> Result<(Vec<u8>, String)> {
        let body = read_success(response, self.caps.manifest, "the manifest").await?;
        let digest = format!("sha256:{:x}", sha2::Sha256::digest(&body));
        if reference.starts_with("sha256:") && reference != digest {
            bail!("the registry answered a manifest of digest {digest}, not {reference}");
        }
        Ok((body, digest))
    }

    /// The index of what refers to manifest `digest`: from the referrers
    /// API, or from the referrers tag (`sha256-HEX`) where the registry has
    /// no such API; at most [`Caps::manifest`], `None` when there is none.
    pub async fn referrers(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        anyhow::ensure!(
            is_digest(digest),
            "{} is not a sha256 digest",
            crate::text::excerpt(digest)
        );
        let url = format!("{}/referrers/{digest}", self.base);
        let response = self
            .get(&url, "application/vnd.oci.image.index.v1+json")
            .await?;
        if response.status().is_success() {
            let body = read_success(response, self.caps.manifest, "the referrers").await?;
            return Ok(Some(body));
        }
        drop(response);
        let tag = digest.replace(':', "-");
        Ok(self.manifest_if_any(&tag).await?.map(|(body, _)| body))
    }

    /// Blob `digest` (`sha256:HEX`), at most `max` bytes, its digest
    /// checked.
    pub async fn blob(&self, digest: &str, max: usize) -> Result<Vec<u8>> {
        let body = self.blob_as_served(digest, max).await?;
        let actual = format!("sha256:{:x}", sha2::Sha256::digest(&body));
        anyhow::ensure!(
            actual == digest,
            "the registry answered a blob of digest {actual}, not {digest}"
        );
        Ok(body)
    }

    /// Blob `digest`, at most `max` bytes, as the registry serves it (its
    /// digest is the caller's to check).
    pub async fn blob_as_served(&self, digest: &str, max: usize) -> Result<Vec<u8>> {
        let url = format!("{}/blobs/{digest}", self.base);
        let response = self.get(&url, "*/*").await?;
        read_success(response, max, "the blob").await
    }

    /// GETs `url`, answering one authentication challenge if the registry
    /// makes one.
    async fn get(&self, url: &str, accept: &str) -> Result<reqwest::Response> {
        let mut authorization = self.authorization.lock().await;
        let response = self.send(url, accept, authorization.as_deref()).await?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        drop(response);
        let Some(challenge) = challenge else {
            bail!("the registry refused the request (401) and names no way to authenticate");
        };
        *authorization = Some(self.answer(&challenge).await?);
        self.send(url, accept, authorization.as_deref()).await
    }

    async fn send(
        &self,
        url: &str,
        accept: &str,
        authorization: Option<&str>,
    ) -> Result<reqwest::Response> {
        let mut request = self.http.get(url).header(reqwest::header::ACCEPT, accept);
        if let Some(value) = authorization {
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        request.send().await.map_err(transport_error)
    }

    /// The `Authorization` value that answers `challenge`.
    async fn answer(&self, challenge: &str) -> Result<String> {
        let (scheme, params) = parse_challenge(challenge).with_context(|| {
            format!(
                "an unreadable challenge: {}",
                crate::text::excerpt(challenge)
            )
        })?;
        if scheme.eq_ignore_ascii_case("basic") {
            return match &self.login {
                RegistryAuth::Basic(user, password) => Ok(basic(user, password)),
                _ => bail!("the registry asks for a login, and none is configured for it"),
            };
        }
        anyhow::ensure!(
            scheme.eq_ignore_ascii_case("bearer"),
            "the registry asks for {} authentication, which this host does not speak",
            crate::text::excerpt(&scheme)
        );
        if let RegistryAuth::Bearer(token) = &self.login {
            return Ok(format!("Bearer {token}"));
        }
        let realm = params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("realm"))
            .map(|(_, v)| v.as_str())
            .context("its Bearer challenge names no realm")?;
        let mut url = url::Url::parse(realm).with_context(|| {
            format!(
                "its token realm is not a URL: {}",
                crate::text::excerpt(realm)
            )
        })?;
        anyhow::ensure!(
            matches!(url.scheme(), "http" | "https"),
            "its token realm is not an HTTP URL"
        );
        {
            let mut query = url.query_pairs_mut();
            if let Some((_, service)) = params
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("service"))
            {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{}:pull", self.repository));
        }
        let mut request = self.http.get(url);
        if let RegistryAuth::Basic(user, password) = &self.login {
            request = request.header(reqwest::header::AUTHORIZATION, basic(user, password));
        }
        let response = request.send().await.map_err(transport_error)?;
        let body = read_success(response, self.caps.token, "the token").await?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).context("the token answer is not JSON")?;
        let token = token
            .token
            .or(token.access_token)
            .context("the token answer holds no token")?;
        Ok(format!("Bearer {token}"))
    }
}

/// Whether `text` is a `sha256:HEX` digest (64 lowercase hex digits).
pub fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Whether `registry` (`HOST[:PORT]`) is on loopback.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => registry,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// A failure to reach the registry, without the URL's query (a token
/// realm's may carry what it was given).
fn transport_error(error: reqwest::Error) -> anyhow::Error {
    anyhow::anyhow!(
        "reaching the registry failed: {}",
        crate::text::excerpt(&error.without_url().to_string())
    )
}

/// The body of a successful `response`, at most `max` bytes; an
/// unsuccessful one is an error quoting a short excerpt of its body.
async fn read_success(mut response: reqwest::Response, max: usize, what: &str) -> Result<Vec<u8>> {
    let status = response.status();
    if !status.is_success() {
        let body = read_capped(&mut response, MAX_ERROR_BYTES)
            .await
            .unwrap_or_default();
        bail!(
            "the registry answered {status} for {what}: {}",
            crate::text::excerpt(&String::from_utf8_lossy(&body))
        );
    }
    if response.content_length().is_some_and(|n| n > max as u64) {
        bail!(
            "{what} is {} bytes, over the limit of {max}",
            response.content_length().unwrap_or_default()
        );
    }
    let body = read_capped(&mut response, max + 1).await?;
    anyhow::ensure!(body.len() <= max, "{what} is over the limit of {max} bytes");
    Ok(body)
}

/// At most `max` bytes of `response`'s body, read as they arrive.
async fn read_capped(response: &mut reqwest::Response, max: usize) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        let room = max - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == max {
            break;
        }
    }
    Ok(body)
}

/// `Scheme k="v", k2=v2` as the scheme and its parameters.
fn parse_challenge(text: &str) -> Option<(String, Vec<(String, String)>)> {
    let text = text.trim();
    let (scheme, rest) = text.split_once(' ').unwrap_or((text, ""));
    let mut params = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        chars.next()?; // '='
        let value = if chars.next_if_eq(&'"').is_some() {
            let mut value = String::new();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => value.push(chars.next()?),
                    c => value.push(c),
                }
            }
            value
        } else {
            std::iter::from_fn(|| chars.next_if(|c| *c != ',')).collect::<String>()
        };
        params.push((key.trim().to_owned(), value.trim().to_owned()));
        if params.len() > 16 {
            return None;
        }
    }
    (!scheme.is_empty()).then(|| (scheme.to_owned(), params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_registries_write_them() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:a/b:pull,push""#,
        )
        .unwrap();
        assert_eq!(scheme, "Bearer");
        assert_eq!(
            params,
            vec![
                (
                    "realm".to_owned(),
                    "https://auth.example.com/token".to_owned()
                ),
                ("service".to_owned(), "registry.example.com".to_owned()),
                ("scope".to_owned(), "repository:a/b:pull,push".to_owned()),
            ]
        );
        let (scheme, params) = parse_challenge(r#"Basic realm="test""#).unwrap();
        assert_eq!((scheme.as_str(), params.len()), ("Basic", 1));
        assert_eq!(
            parse_challenge("Bearer realm=plain").unwrap().1[0].1,
            "plain"
        );
        assert!(parse_challenge(r#"Bearer realm="unterminated"#).is_none());
        assert!(parse_challenge("").is_none());
        let many = (0..100)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(parse_challenge(&format!("Bearer {many}")).is_none());
    }

    #[test]
    fn loopback_registries() {
        assert!(is_loopback("127.0.0.1:5000"));
        assert!(is_loopback("localhost"));
        assert!(is_loopback("[::1]:5000"));
        assert!(!is_loopback("ghcr.io"));
        assert!(!is_loopback("127.0.0.1.evil.com:5000"));
    }
}
