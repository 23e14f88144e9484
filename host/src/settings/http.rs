//! The HTTP endpoint's settings: `[http]` and its `[http.auth]`.

use crate::config::{AuthSection, Config, HttpSection, JwtSection};
use crate::transport::http::tls::TlsFiles;
use crate::transport::http::{
    check_jwks_url, Auth, CardOptions, ConnectionLimits, Guard, HttpOptions, Icon, JwksSource,
    JwtCheck, Location, SessionLimits,
};
use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::time::Duration;

/// The HTTP endpoint's settings from the config, for a listener bound to
/// `local`; `json_response` and `legacy_sse` also come from the command
/// line.
pub fn http_options(
    config: &Config,
    local: SocketAddr,
    json_response: bool,
    legacy_sse: bool,
) -> Result<HttpOptions> {
    let section = &config.http;
    let lower = |list: &[String]| list.iter().map(|s| s.to_ascii_lowercase()).collect();
    let auth = match &section.auth {
        None => None,
        Some(auth) => Some(auth_of(section, auth, local)?),
    };
    if auth.is_none() && !local.ip().is_loopback() {
        tracing::warn!(
            address = %local,
            "serving HTTP beyond loopback without authentication: anyone who can reach \
             this address can call every plugin (set [http.auth])"
        );
    } else if section.tls_cert_file.is_none() && !local.ip().is_loopback() {
        tracing::warn!(
            address = %local,
            "serving plain HTTP beyond loopback: bearer tokens cross the network in clear \
             text unless a TLS proxy is in front (or set [http] tls_cert_file and tls_key_file)"
        );
    }
    let secs = Duration::from_secs;
    let mut profile_paths = Vec::new();
    for (name, profile) in &config.profiles {
        let path = profile
            .path
            .clone()
            .unwrap_or_else(|| format!("{}/{name}", section.path.trim_end_matches('/')));
        anyhow::ensure!(
            path != section.path && profile_paths.iter().all(|(p, _)| *p != path),
            "profiles.{name}: its path {path} is already served"
        );
        profile_paths.push((path, name.clone()));
    }
    let profile_claim = section.auth.as_ref().and_then(|a| a.profile_claim.clone());
    let tls = match (&section.tls_cert_file, &section.tls_key_file) {
        (Some(cert), Some(key)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    let card = card_options(config, auth.as_ref());
    Ok(HttpOptions {
        card,
        tls,
        profile_paths,
        profile_claim,
        tenant_claim: config.tenancy.as_ref().map(|t| t.claim.clone()),
        path: section.path.clone(),
        json_response: section.json_response || json_response,
        legacy_sse: section.legacy_sse || legacy_sse,
        guard: Guard {
            loopback: local.ip().is_loopback(),
            allowed_hosts: lower(&section.allowed_hosts),
            allowed_origins: lower(&section.allowed_origins),
        },
        auth,
        max_body_bytes: section.max_body_mb << 20,
        session_idle: secs(section.session_idle_secs),
        resume_grace: secs(section.resume_grace_secs),
        sessions: SessionLimits {
            max_sessions: section.max_sessions,
            max_per_principal: section.max_sessions_per_principal,
        },
        connections: ConnectionLimits {
            max_connections: section.max_connections,
            header_timeout: secs(section.header_timeout_secs),
            body_timeout: secs(section.body_timeout_secs),
            idle_timeout: secs(section.idle_timeout_secs),
        },
        drain: config
            .state
            .url
            .is_some()
            .then(|| secs(config.cluster.drain_secs)),
    })
}

/// What the server cards say: `[server] name`, `description`, `website`
/// and `icons`, and the main endpoint's public URL when the config names
/// one (`auth`'s resource, else `[http] public_url`).
fn card_options(config: &Config, auth: Option<&Auth>) -> CardOptions {
    let server = &config.server;
    CardOptions {
        name: server.name.clone(),
        description: server.description.clone(),
        website: server.website.clone(),
        icons: server
            .icons
            .iter()
            .map(|icon| Icon {
                src: icon.src.clone(),
                mime_type: icon.mime_type.clone(),
                sizes: icon.sizes.clone(),
                theme: icon.theme.map(|t| t.as_str()),
            })
            .collect(),
        public_url: auth
            .map(|auth| auth.metadata.resource.clone())
            .or_else(|| config.http.public_url.clone()),
        ..CardOptions::default()
    }
}

/// `[http.auth]`: the tokens (from the config and the environment), the
/// JWT check, and the protected-resource metadata.
fn auth_of(section: &HttpSection, auth: &AuthSection, local: SocketAddr) -> Result<Auth> {
    let mut tokens = auth.tokens.clone();
    if let Some(var) = &auth.tokens_env {
        let value = std::env::var(var)
            .with_context(|| format!("http.auth.tokens_env: {var} is not set"))?;
        tokens.extend(
            value
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned),
        );
    }
    let jwt = auth.jwt.as_ref().map(jwt_check).transpose()?;
    anyhow::ensure!(
        !tokens.is_empty() || jwt.is_some(),
        "http.auth is set but names no token and no JWT check"
    );
    anyhow::ensure!(
        section.public_url.is_some() || !local.ip().is_unspecified(),
        "http.public_url is needed with http.auth when listening on {local}: \
         the authorization metadata must name the URL clients use"
    );
    let resource = section.public_url.clone().unwrap_or_else(|| {
        let scheme = if section.tls_cert_file.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{local}{}", section.path)
    });
    let origin = url::Url::parse(&resource)
        .with_context(|| format!("http.public_url {resource:?} is not a URL"))?;
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource{}",
        origin.origin().ascii_serialization(),
        origin.path().trim_end_matches('/')
    );
    Ok(Auth::new(
        &tokens,
        jwt,
        &resource,
        metadata_url,
        &auth.authorization_servers,
    ))
}

/// `[http.auth.jwt]`: an HS256 secret from the environment, a PEM public
/// key file, or an identity provider's JWKS (at its URL, or found through
/// the issuer's discovery document).
fn jwt_check(jwt: &JwtSection) -> Result<JwtCheck> {
    let location = match (&jwt.jwks_url, jwt.discovery) {
        (Some(url), _) => {
            check_jwks_url("http.auth.jwt.jwks_url", url)?;
            Some(Location::Jwks(url.clone()))
        }
        (None, true) => {
            let url = format!(
                "{}/.well-known/openid-configuration",
                jwt.issuer.trim_end_matches('/')
            );
            check_jwks_url("http.auth.jwt.issuer (for discovery)", &url)?;
            Some(Location::Discovery(url))
        }
        (None, false) => None,
    };
    if let Some(location) = location {
        let source = JwksSource {
            location,
            issuer: jwt.issuer.clone(),
            timeout: Duration::from_millis(jwt.jwks_timeout_ms),
            max_bytes: jwt.jwks_max_kb << 10,
            refresh: Duration::from_secs(jwt.jwks_refresh_secs),
            min_refresh: Duration::from_secs(jwt.jwks_min_refresh_secs),
        };
        return JwtCheck::published(source, &jwt.audience);
    }
    match (&jwt.secret_env, &jwt.public_key_file) {
        (Some(var), _) => {
            let secret = std::env::var(var)
                .with_context(|| format!("http.auth.jwt.secret_env: {var} is not set"))?;
            Ok(JwtCheck::hs256(
                secret.as_bytes(),
                &jwt.issuer,
                &jwt.audience,
            ))
        }
        (None, Some(file)) => {
            let pem = crate::files::read_regular(file, 1 << 20)
                .with_context(|| format!("reading {}", file.display()))?;
            JwtCheck::public_key(&pem, &jwt.issuer, &jwt.audience)
        }
        (None, None) => anyhow::bail!(
            "http.auth.jwt needs secret_env, public_key_file, jwks_url or discovery = true"
        ),
    }
}
