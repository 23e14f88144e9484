//! `[http]`: the Streamable HTTP endpoint and its security.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `[http]`
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSection {
    /// Where to listen (`127.0.0.1:8080`); `serve --http` overrides it.
    pub listen: Option<String>,
    /// The MCP endpoint's path.
    pub path: String,
    /// Answer requests with JSON, never SSE.
    pub json_response: bool,
    /// Also serve the deprecated HTTP+SSE transport of 2024-11-05.
    pub legacy_sse: bool,
    /// Host names accepted besides loopback names (when listening on
    /// loopback) or instead of any name (otherwise).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the endpoint (CORS); `*` for any.
    pub allowed_origins: Vec<String>,
    /// The largest request body, in MiB.
    pub max_body_mb: usize,
    /// Sessions idle this many seconds are ended.
    pub session_idle_secs: u64,
    /// Seconds a session's request goes on after its stream was lost (the
    /// client may resume it meanwhile); then it is cancelled.
    pub resume_grace_secs: u64,
    /// The endpoint's public URL, for the auth metadata (default:
    /// `http://<listen><path>`).
    pub public_url: Option<String>,
    /// Connections open at once; beyond, the longest-idle one is closed.
    pub max_connections: usize,
    /// Seconds a client may take to send a request's headers.
    pub header_timeout_secs: u64,
    /// Seconds a client may take to send a request's body.
    pub body_timeout_secs: u64,
    /// Seconds a connection may wait for its next request.
    pub idle_timeout_secs: u64,
    /// Sessions open at once; beyond, the longest-idle one is ended.
    pub max_sessions: usize,
    /// Sessions of one principal (all unauthenticated clients are one).
    pub max_sessions_per_principal: usize,
    /// `[http.auth]`: bearer authentication; absent means none.
    pub auth: Option<AuthSection>,
    /// Serve HTTPS: the certificate chain (PEM), read again when it
    /// changes; relative to the config file. With `tls_key_file`.
    pub tls_cert_file: Option<PathBuf>,
    /// The certificate's private key (PEM); relative to the config file.
    pub tls_key_file: Option<PathBuf>,
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            listen: None,
            path: "/mcp".into(),
            json_response: false,
            legacy_sse: false,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_mb: 4,
            session_idle_secs: 30 * 60,
            resume_grace_secs: 30,
            public_url: None,
            max_connections: 512,
            header_timeout_secs: 10,
            body_timeout_secs: 30,
            idle_timeout_secs: 60,
            max_sessions: super::defaults::MAX_SESSIONS,
            max_sessions_per_principal: 1_000,
            auth: None,
            tls_cert_file: None,
            tls_key_file: None,
        }
    }
}

/// `[http.auth]`
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AuthSection {
    /// Static bearer tokens.
    pub tokens: Vec<String>,
    /// An environment variable holding more tokens, comma-separated.
    pub tokens_env: Option<String>,
    /// The authorization servers that issue tokens (RFC 9728 metadata).
    pub authorization_servers: Vec<String>,
    /// `[http.auth.jwt]`: accept JWTs.
    pub jwt: Option<JwtSection>,
    /// A token claim naming the `[profiles]` entry the caller is served on
    /// the main path (a name not in `[profiles]` offers nothing).
    pub profile_claim: Option<String>,
}

/// `[http.auth.jwt]`: JWTs signed with HS256 (a secret from the
/// environment), RS256/ES256 (a PEM public key), or any key an identity
/// provider publishes in its JWKS (RS*, PS*, ES256, ES384, EdDSA). Exactly
/// one of `secret_env`, `public_key_file`, `jwks_url` and `discovery`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtSection {
    /// The required `iss`.
    pub issuer: String,
    /// The required `aud`.
    pub audience: String,
    /// An environment variable holding the HS256 secret.
    pub secret_env: Option<String>,
    /// A PEM public key file (RS256 or ES256); relative to the config file.
    pub public_key_file: Option<PathBuf>,
    /// The identity provider's JWKS (`https://`, or `http://` on loopback).
    pub jwks_url: Option<String>,
    /// Find the JWKS through the issuer's discovery document
    /// (`ISSUER/.well-known/openid-configuration`).
    #[serde(default)]
    pub discovery: bool,
    /// How often the JWKS is fetched again, in seconds: a key removed from
    /// it is refused from then on.
    #[serde(default = "default_jwks_refresh_secs")]
    pub jwks_refresh_secs: u64,
    /// A token naming a key not in the JWKS fetches it again, at most once
    /// in this many seconds.
    #[serde(default = "default_jwks_min_refresh_secs")]
    pub jwks_min_refresh_secs: u64,
    /// The most one fetch of the JWKS (or discovery document) may take,
    /// in milliseconds.
    #[serde(default = "default_jwks_timeout_ms")]
    pub jwks_timeout_ms: u64,
    /// The largest JWKS (or discovery document) read, in KiB.
    #[serde(default = "default_jwks_max_kb")]
    pub jwks_max_kb: usize,
}

fn default_jwks_refresh_secs() -> u64 {
    300
}

fn default_jwks_min_refresh_secs() -> u64 {
    30
}

fn default_jwks_timeout_ms() -> u64 {
    5000
}

fn default_jwks_max_kb() -> usize {
    256
}
