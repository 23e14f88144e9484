//! Optional bearer authentication: static tokens, or JWTs checked for
//! signature, expiry, issuer and audience. A request without a valid token
//! gets 401 with a `WWW-Authenticate` challenge that points at the RFC 9728
//! protected-resource metadata.

use anyhow::{Context as _, Result};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// How a JWT is checked.
pub struct JwtCheck {
    key: DecodingKey,
    validation: Validation,
}

impl JwtCheck {
    /// Checks HS256 tokens signed with `secret`.
    pub fn hs256(secret: &[u8], issuer: &str, audience: &str) -> Self {
        Self::new(
            DecodingKey::from_secret(secret),
            Algorithm::HS256,
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
        Ok(Self::new(key, algorithm, issuer, audience))
    }

    fn new(key: DecodingKey, algorithm: Algorithm, issuer: &str, audience: &str) -> Self {
        let mut validation = Validation::new(algorithm);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // A token is good from its `nbf` on, not before.
        validation.validate_nbf = true;
        JwtCheck { key, validation }
    }
}

/// Who may call the server.
pub struct Auth {
    /// SHA-256 digests of the static tokens.
    token_digests: Vec<[u8; 32]>,
    jwt: Option<JwtCheck>,
    /// The RFC 9728 metadata document.
    pub metadata: Value,
    /// Where the metadata document is served (absolute URL).
    pub metadata_url: String,
}

/// Why a request was refused.
#[derive(Debug)]
pub enum Denied {
    /// No bearer token.
    Missing,
    /// A token that is not valid.
    Invalid(String),
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
            metadata: json!({
                "resource": resource_url,
                "authorization_servers": authorization_servers,
                "bearer_methods_supported": ["header"],
            }),
            metadata_url,
        }
    }

    /// The principal a request acts for.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<String, Denied> {
        let value = headers
            .get(http::header::AUTHORIZATION)
            .ok_or(Denied::Missing)?
            .to_str()
            .map_err(|_| Denied::Invalid("unreadable Authorization header".into()))?;
        let token = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| Denied::Invalid("the Authorization scheme must be Bearer".into()))?;
        let token_digest = digest(token);
        // Comparing digests leaks nothing useful about the tokens.
        if self.token_digests.contains(&token_digest) {
            let hex: String = token_digest[..6]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            return Ok(format!("token:{hex}"));
        }
        if let Some(jwt) = &self.jwt {
            let data = jsonwebtoken::decode::<Value>(token, &jwt.key, &jwt.validation)
                .map_err(|e| Denied::Invalid(format!("the token was rejected: {e}")))?;
            let issuer = data.claims["iss"].as_str().unwrap_or_default();
            let subject = data.claims["sub"].as_str().unwrap_or_default();
            return Ok(format!("jwt:{issuer}#{subject}"));
        }
        Err(Denied::Invalid("unknown token".into()))
    }

    /// The 401 answer to a refused request.
    pub fn challenge(&self, denied: &Denied) -> Response {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
        let message = match denied {
            Denied::Missing => "Unauthorized: a bearer token is required".to_owned(),
            Denied::Invalid(why) => {
                challenge.push_str(", error=\"invalid_token\"");
                format!("Unauthorized: {why}")
            }
        };
        let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32001, "message": message } });
        (
            StatusCode::UNAUTHORIZED,
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

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        h
    }

    #[test]
    fn static_tokens_and_jwts_name_their_principal() {
        let auth = Auth::new(
            &["s3cret".into()],
            Some(JwtCheck::hs256(b"key", "https://issuer", "https://mcp")),
            "https://mcp",
            "https://mcp/.well-known/oauth-protected-resource".into(),
            &[],
        );
        assert!(auth
            .authenticate(&bearer("s3cret"))
            .unwrap()
            .starts_with("token:"));
        assert!(matches!(
            auth.authenticate(&HeaderMap::new()),
            Err(Denied::Missing)
        ));
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
                .unwrap(),
            "jwt:https://issuer#ada"
        );
        assert!(auth
            .authenticate(&bearer(&sign("https://other", "https://mcp")))
            .is_err());
        assert!(auth
            .authenticate(&bearer(&sign("https://issuer", "https://elsewhere")))
            .is_err());
        // Not valid before an hour from now: refused.
        let early = encode(
            &Header::default(),
            &json!({ "iss": "https://issuer", "aud": "https://mcp", "sub": "ada",
                     "exp": exp + 7200, "nbf": exp + 3000 }),
            &EncodingKey::from_secret(b"key"),
        )
        .unwrap();
        assert!(auth.authenticate(&bearer(&early)).is_err());
    }
}
