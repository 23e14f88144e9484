//! Why a bearer token was refused: a short code for the log (and the
//! audit), and a fixed description the client is told in the
//! `WWW-Authenticate` challenge's `error_description` (RFC 6750). A
//! description never quotes the token or anything else the caller sent.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::Algorithm;
use serde_json::{Map, Value};

/// Why a request was refused its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No `Authorization` header.
    MissingToken,
    /// An `Authorization` header that is not `Bearer <token>`.
    NotBearer,
    /// Not a JWT (nor one of the static tokens).
    Malformed,
    /// Signed with an algorithm the host does not accept (`none`, or one
    /// its keys are not for).
    AlgorithmNotAllowed,
    /// Names a key the host does not hold (after fetching the JWKS again).
    UnknownKey,
    /// Its signature does not verify.
    BadSignature,
    /// Past its `exp`.
    Expired,
    /// Before its `nbf`.
    NotYetValid,
    /// For another audience.
    WrongAudience,
    /// From another issuer.
    WrongIssuer,
    /// Without `exp`, `iss`, `aud` or `sub`.
    MissingClaim,
    /// Not one of the static tokens, and no JWTs are accepted.
    UnknownToken,
    /// Valid, but without the claim that names its tenant (`[tenancy]
    /// claim`), or with one that is empty or not a string: refused with
    /// 403, as a token that is valid but may not be served.
    NoTenant,
}

impl Reason {
    /// The code logged (`reason=...`) and audited.
    pub fn code(self) -> &'static str {
        match self {
            Reason::MissingToken => "missing_token",
            Reason::NotBearer => "not_bearer",
            Reason::Malformed => "malformed",
            Reason::AlgorithmNotAllowed => "algorithm_not_allowed",
            Reason::UnknownKey => "unknown_key",
            Reason::BadSignature => "bad_signature",
            Reason::Expired => "expired",
            Reason::NotYetValid => "not_yet_valid",
            Reason::WrongAudience => "wrong_audience",
            Reason::WrongIssuer => "wrong_issuer",
            Reason::MissingClaim => "missing_claim",
            Reason::UnknownToken => "unknown_token",
            Reason::NoTenant => "no_tenant",
        }
    }

    /// What the client is told: plain ASCII without quotes or
    /// backslashes, so it is a valid quoted-string as it stands.
    pub fn description(self) -> &'static str {
        match self {
            Reason::MissingToken => "a bearer token is required",
            Reason::NotBearer => "the Authorization header must be Bearer and a token",
            Reason::Malformed => "the token is not a well-formed JWT",
            Reason::AlgorithmNotAllowed => {
                "the token is signed with an algorithm not accepted here"
            }
            Reason::UnknownKey => "the token names a signing key this server does not know",
            Reason::BadSignature => "the token signature does not verify",
            Reason::Expired => "the token has expired",
            Reason::NotYetValid => "the token is not valid yet (nbf)",
            Reason::WrongAudience => "the token is for another audience",
            Reason::WrongIssuer => "the token is from another issuer",
            Reason::MissingClaim => "the token lacks a required claim (exp, iss, aud, sub)",
            Reason::UnknownToken => "the token is not one this server accepts",
            Reason::NoTenant => {
                "the token has no tenant: its tenancy claim is missing, empty or not a string"
            }
        }
    }

    /// The RFC 6750 error code: none for a request without credentials,
    /// `invalid_request` for a header that is not a bearer token,
    /// `invalid_token` for a token refused.
    pub fn error(self) -> Option<&'static str> {
        match self {
            Reason::MissingToken => None,
            Reason::NotBearer => Some("invalid_request"),
            _ => Some("invalid_token"),
        }
    }

    /// Whether the token's signature verified before it was refused (for
    /// its claims): then its claims say who it was.
    pub fn signature_verified(self) -> bool {
        matches!(
            self,
            Reason::Expired
                | Reason::NotYetValid
                | Reason::WrongAudience
                | Reason::WrongIssuer
                | Reason::MissingClaim
                | Reason::NoTenant
        )
    }

    /// The reason of a JWT library error.
    pub fn of_jwt(kind: &ErrorKind) -> Self {
        match kind {
            ErrorKind::ExpiredSignature => Reason::Expired,
            ErrorKind::ImmatureSignature => Reason::NotYetValid,
            ErrorKind::InvalidAudience => Reason::WrongAudience,
            ErrorKind::InvalidIssuer => Reason::WrongIssuer,
            ErrorKind::MissingRequiredClaim(_) => Reason::MissingClaim,
            ErrorKind::InvalidSignature
            | ErrorKind::Crypto(_)
            | ErrorKind::InvalidEcdsaKey
            | ErrorKind::InvalidRsaKey(_)
            | ErrorKind::InvalidKeyFormat => Reason::BadSignature,
            ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidAlgorithmName
            | ErrorKind::MissingAlgorithm => Reason::AlgorithmNotAllowed,
            _ => Reason::Malformed,
        }
    }
}

/// The JSON object of one of a JWT's segments (0: header, 1: claims), not
/// verified.
fn segment(token: &str, index: usize) -> Option<Map<String, Value>> {
    let part = token.split('.').nth(index)?;
    let bytes = B64.decode(part.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Why a token whose header the JWT library cannot read is refused: an
/// `alg` it does not know (`none`, say) is not allowed; anything else is
/// malformed. With the `alg` for the log (which escapes it), if there is
/// one.
pub(super) fn of_unreadable_header(token: &str) -> (Reason, Option<String>) {
    let alg = segment(token, 0)
        .and_then(|header| header.get("alg").and_then(Value::as_str).map(str::to_owned));
    match alg {
        Some(alg) if alg.parse::<Algorithm>().is_err() => {
            (Reason::AlgorithmNotAllowed, Some(format!("alg {alg}")))
        }
        _ => (Reason::Malformed, None),
    }
}

/// The principal (`jwt:ISS#SUB`) of a token refused after its signature
/// verified (see [`Reason::signature_verified`]).
pub(super) fn signed_principal(token: &str) -> Option<String> {
    let claims = segment(token, 1)?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str).unwrap_or_default();
    Some(format!("jwt:{}#{}", text("iss"), text("sub")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_are_valid_quoted_strings() {
        let all = [
            Reason::MissingToken,
            Reason::NotBearer,
            Reason::Malformed,
            Reason::AlgorithmNotAllowed,
            Reason::UnknownKey,
            Reason::BadSignature,
            Reason::Expired,
            Reason::NotYetValid,
            Reason::WrongAudience,
            Reason::WrongIssuer,
            Reason::MissingClaim,
            Reason::UnknownToken,
        ];
        for reason in all {
            let text = reason.description();
            assert!(
                text.bytes()
                    .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'),
                "{text}"
            );
            assert!(http::HeaderValue::from_str(text).is_ok());
        }
    }

    #[test]
    fn an_unknown_alg_is_not_allowed_and_garbage_is_malformed() {
        let none = format!("{}.e30.", B64.encode(br#"{"alg":"none"}"#));
        assert_eq!(of_unreadable_header(&none).0, Reason::AlgorithmNotAllowed);
        assert_eq!(of_unreadable_header("garbage").0, Reason::Malformed);
        let evil = format!("{}.e30.", B64.encode(b"{\"alg\":\"x\\n\\\"y\"}"));
        let (reason, detail) = of_unreadable_header(&evil);
        assert_eq!(reason, Reason::AlgorithmNotAllowed);
        assert_eq!(detail.as_deref(), Some("alg x\n\"y"));
    }
}
