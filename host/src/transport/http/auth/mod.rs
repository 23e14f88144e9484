//! Optional bearer authentication: static tokens, or JWTs checked for
//! signature, expiry, issuer and audience (against a secret, a public-key
//! file, or an identity provider's JWKS). A request without a valid token
//! gets 401 with a `WWW-Authenticate` challenge that points at the RFC 9728
//! protected-resource metadata and says why ([`Reason`]).

mod jwks;
mod reason;

use jwks::Jwks;
pub use jwks::{check_url as check_jwks_url, JwksSource, Location};
pub use reason::Reason;

use crate::protocol::{ErrorResponse, JsonRpc};
use crate::server::Caller;
use anyhow::{Context as _, Result};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The keys a JWT may be signed with.
enum Keys {
    /// One key, for one algorithm.
    Fixed(DecodingKey, Algorithm),
    /// An identity provider's published set.
    Published(Arc<Jwks>),
}

/// How a JWT is checked.
pub struct JwtCheck {
    keys: Keys,
    issuer: String,
    audience: String,
}

impl JwtCheck {
    /// Checks HS256 tokens signed with `secret`.
    pub fn hs256(secret: &[u8], issuer: &str, audience: &str) -> Self {
        Self::new(
            Keys::Fixed(DecodingKey::from_secret(secret), Algorithm::HS256),
            issuer,
            audience,
        )
    }

    /// Checks RS256 or ES256 tokens against a PEM public key.
    pub fn public_key(pem: &[u8], issuer: &str, audience: &str) -> Result<Self> {
        let (key, algorithm) = match DecodingKey::from_rsa_pem(pem) {
            Ok(key) => (key, Algorithm::RS256),
            Err(_) => (
                DecodingKey::from_ec_pem(pem).context("neither an RSA nor an EC public key")?,
                Algorithm::ES256,
            ),
        };
        Ok(Self::new(Keys::Fixed(key, algorithm), issuer, audience))
    }

    /// Checks tokens against the keys an identity provider publishes
    /// (fetched from now on, and kept fresh while the check lives).
    pub fn published(source: JwksSource, audience: &str) -> Result<Self> {
        let issuer = source.issuer.clone();
        let jwks = Jwks::new(source)?;
        jwks.keep_fresh();
        Ok(Self::new(Keys::Published(jwks), &issuer, audience))
    }

    fn new(keys: Keys, issuer: &str, audience: &str) -> Self {
        JwtCheck {
            keys,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
        }
    }

    fn validation(&self, algorithm: Algorithm) -> Validation {
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // A token is good from its `nbf` on, not before.
        validation.validate_nbf = true;
        validation
    }

    /// The claims of `token`, if it is valid; otherwise why not.
    async fn claims(&self, token: &str) -> Result<Map<String, Value>, Denied> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            let (reason, detail) = reason::of_unreadable_header(token);
            Denied::new(reason, detail)
        })?;
        let decode = |key: &DecodingKey, algorithm| {
            jsonwebtoken::decode::<Map<String, Value>>(token, key, &self.validation(algorithm))
                .map(|data| data.claims)
                .map_err(|e| {
                    let reason = Reason::of_jwt(e.kind());
                    let mut denied = Denied::new(reason, Some(e.to_string()));
                    if reason.signature_verified() {
                        denied.principal = reason::signed_principal(token);
                    }
                    denied
                })
        };
        let jwks = match &self.keys {
            Keys::Fixed(key, algorithm) => return decode(key, *algorithm),
            Keys::Published(jwks) => jwks,
        };
        let held = jwks.held();
        let held = if find(&held.keys, &header).is_some() {
            held
        } else {
            jwks.refreshed(&held).await
        };
        let key = find(&held.keys, &header).ok_or_else(|| {
            // A key it names that is held, for other algorithms, or none
            // for its algorithm: the algorithm is at fault.
            let reason = match &header.kid {
                Some(kid) if held.keys.iter().any(|k| k.kid.as_ref() == Some(kid)) => {
                    Reason::AlgorithmNotAllowed
                }
                None if !held.keys.is_empty() => Reason::AlgorithmNotAllowed,
                _ => Reason::UnknownKey,
            };
            let detail = match &header.kid {
                Some(kid) => format!("no key {kid} for {:?} in the JWKS", header.alg),
                None => format!("no key for {:?} in the JWKS", header.alg),
            };
            Denied::new(reason, Some(detail))
        })?;
        decode(&key.key, header.alg)
    }
}

/// The key of `keys` that `header` names (by `kid`, or the first for its
/// algorithm when it names none).
fn find<'k>(keys: &'k [jwks::Key], header: &jsonwebtoken::Header) -> Option<&'k jwks::Key> {
    keys.iter().find(|key| {
        key.algorithms.contains(&header.alg) && (header.kid.is_none() || key.kid == header.kid)
    })
}

/// The RFC 9728 protected-resource metadata document (its members in
/// the order a sorted JSON object has them).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ResourceMetadata {
    /// The authorization servers that issue tokens for this resource.
    pub authorization_servers: Vec<String>,
    /// How a token may be presented: `["header"]`.
    pub bearer_methods_supported: Vec<&'static str>,
    /// The resource's URL.
    pub resource: String,
}

/// The JSON-RPC error object of a refused request (code -32001, outside
/// [`crate::protocol::ErrorCode`]: HTTP answers it, not the server).
#[derive(Debug, serde::Serialize)]
struct Refusal {
    code: i64,
    data: RefusalData,
    message: String,
}

/// [`Refusal`]'s `data`: the reason's code.
#[derive(Debug, serde::Serialize)]
struct RefusalData {
    reason: &'static str,
}

/// Who may call the server.
pub struct Auth {
    /// SHA-256 digests of the static tokens.
    token_digests: Vec<[u8; 32]>,
    jwt: Option<JwtCheck>,
    /// The RFC 9728 metadata document.
    pub metadata: ResourceMetadata,
    /// Where the metadata document is served (absolute URL).
    pub metadata_url: String,
}

/// Why a request was refused: the reason, and what the operator's log
/// adds to it.
#[derive(Debug)]
pub struct Denied {
    /// Why.
    pub reason: Reason,
    /// More for the log (may quote the caller; logged escaped).
    pub detail: Option<String>,
    /// Who the token says it is, when its signature verified.
    pub principal: Option<String>,
}

impl Denied {
    /// Refused for `reason`, with `detail` for the log.
    pub fn new(reason: Reason, detail: Option<String>) -> Self {
        Denied {
            reason,
            detail,
            principal: None,
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Auth {
    /// Authentication by `tokens` and/or `jwt`, for the resource at
    /// `resource_url`, whose tokens come from `authorization_servers`.
    pub fn new(
        tokens: &[String],
        jwt: Option<JwtCheck>,
        resource_url: &str,
        metadata_url: String,
        authorization_servers: &[String],
    ) -> Self {
        Auth {
            token_digests: tokens.iter().map(|t| digest(t)).collect(),
            jwt,
            metadata: ResourceMetadata {
                authorization_servers: authorization_servers.to_vec(),
                bearer_methods_supported: vec!["header"],
                resource: resource_url.to_owned(),
            },
            metadata_url,
        }
    }

    /// Who a request acts for, and what its token grants.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Denied> {
        let value = headers
            .get(http::header::AUTHORIZATION)
            .ok_or_else(|| Denied::new(Reason::MissingToken, None))?
            .to_str()
            .map_err(|_| {
                Denied::new(
                    Reason::NotBearer,
                    Some("unreadable Authorization header".into()),
                )
            })?;
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                let scheme = value.split(' ').next().unwrap_or_default();
                let detail = format!("scheme {}", crate::text::head(scheme, 40));
                Denied::new(Reason::NotBearer, Some(detail))
            })?;
        let token_digest = digest(token);
        // Comparing digests leaks nothing useful about the tokens.
        if self.token_digests.contains(&token_digest) {
            let hex: String = token_digest[..6]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            return Ok(Caller::with_token(Some(format!("token:{hex}")), Map::new()));
        }
        if let Some(jwt) = &self.jwt {
            let claims = jwt.claims(token).await?;
            let issuer = claims["iss"].as_str().unwrap_or_default();
            let subject = claims["sub"].as_str().unwrap_or_default();
            let principal = format!("jwt:{issuer}#{subject}");
            return Ok(Caller::with_token(Some(principal), claims));
        }
        Err(Denied::new(Reason::UnknownToken, None))
    }

    /// The `WWW-Authenticate` challenge of a 403 for a token without the
    /// scopes (`scope`, space-separated) a request needs.
    pub fn insufficient_scope(&self, scope: &str) -> String {
        let mut challenge = format!(
            "Bearer error=\"insufficient_scope\", resource_metadata=\"{}\"",
            self.metadata_url
        );
        if !scope.is_empty() {
            challenge.push_str(&format!(", scope=\"{scope}\""));
        }
        challenge
    }

    /// The 401 answer to a refused request: the challenge says why, as
    /// RFC 6750 lets it (no error for a request without a token), and so
    /// does the body.
    pub fn challenge(&self, denied: &Denied) -> Response {
        let reason = denied.reason;
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        if let Some(error) = reason.error() {
            challenge.push_str(&format!(
                ", error=\"{error}\", error_description=\"{}\"",
                reason.description()
            ));
        }
        // A valid token that names no tenant may not be served: 403.
        let (status, what) = match reason {
            Reason::NoTenant => (StatusCode::FORBIDDEN, "Forbidden"),
            _ => (StatusCode::UNAUTHORIZED, "Unauthorized"),
        };
        let message = format!("{what}: {}", reason.description());
        let error = Refusal {
            code: -32001,
            data: RefusalData {
                reason: reason.code(),
            },
            message,
        };
        let body = ErrorResponse {
            jsonrpc: JsonRpc,
            id: &Value::Null,
            error: &error,
        };
        (
            status,
            [(http::header::WWW_AUTHENTICATE, challenge)],
            axum::Json(body),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::json;

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        h
    }

    #[tokio::test]
    async fn static_tokens_and_jwts_name_their_principal() {
        let auth = Auth::new(
            &["s3cret".into()],
            Some(JwtCheck::hs256(b"key", "https://issuer", "https://mcp")),
            "https://mcp",
            "https://mcp/.well-known/oauth-protected-resource".into(),
            &[],
        );
        assert!(auth
            .authenticate(&bearer("s3cret"))
            .await
            .unwrap()
            .principal
            .unwrap()
            .starts_with("token:"));
        let reason = |result: Result<Caller, Denied>| result.err().map(|d| d.reason);
        assert_eq!(
            reason(auth.authenticate(&HeaderMap::new()).await),
            Some(Reason::MissingToken)
        );
        let exp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 600;
        let sign = |iss: &str, aud: &str| {
            encode(
                &Header::default(),
                &json!({ "iss": iss, "aud": aud, "sub": "ada", "exp": exp }),
                &EncodingKey::from_secret(b"key"),
            )
            .unwrap()
        };
        assert_eq!(
            auth.authenticate(&bearer(&sign("https://issuer", "https://mcp")))
                .await
                .unwrap()
                .principal
                .unwrap(),
            "jwt:https://issuer#ada"
        );
        let other = auth
            .authenticate(&bearer(&sign("https://other", "https://mcp")))
            .await
            .unwrap_err();
        assert_eq!(other.reason, Reason::WrongIssuer);
        assert_eq!(other.principal.as_deref(), Some("jwt:https://other#ada"));
        assert_eq!(
            reason(
                auth.authenticate(&bearer(&sign("https://issuer", "https://elsewhere")))
                    .await
            ),
            Some(Reason::WrongAudience)
        );
        let forged = encode(
            &Header::default(),
            &json!({ "iss": "https://issuer", "aud": "https://mcp", "sub": "eve", "exp": exp }),
            &EncodingKey::from_secret(b"not the key"),
        )
        .unwrap();
        let forged = auth.authenticate(&bearer(&forged)).await.unwrap_err();
        assert_eq!(forged.reason, Reason::BadSignature);
        assert_eq!(forged.principal, None);
        assert_eq!(
            reason(auth.authenticate(&bearer("not.a.jwt")).await),
            Some(Reason::Malformed)
        );
        // Not valid before an hour from now: refused.
        let early = encode(
            &Header::default(),
            &json!({ "iss": "https://issuer", "aud": "https://mcp", "sub": "ada",
                     "exp": exp + 7200, "nbf": exp + 3000 }),
            &EncodingKey::from_secret(b"key"),
        )
        .unwrap();
        assert_eq!(
            reason(auth.authenticate(&bearer(&early)).await),
            Some(Reason::NotYetValid)
        );
    }
}
