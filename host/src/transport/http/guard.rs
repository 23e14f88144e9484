//! Protection against DNS rebinding: the `Host` and `Origin` of every
//! request must name this server (a loopback name when it listens on
//! loopback) or be explicitly allowed.

use http::uri::Authority;
use http::{HeaderMap, StatusCode};

/// Which hosts and origins may reach the server.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Whether the server listens on a loopback address only.
    pub loopback: bool,
    /// Extra `Host` names allowed (without port), lowercase.
    pub allowed_hosts: Vec<String>,
    /// `Origin`s allowed (`scheme://host[:port]`), lowercase; `*` allows any.
    pub allowed_origins: Vec<String>,
}

const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The host part (lowercase, brackets kept for IPv6) of an authority
/// `host[:port]`, parsed strictly: no user info, a port of digits that fits
/// in 16 bits, nothing after it.
fn host_name(authority: &str) -> Option<String> {
    let parsed: Authority = authority.parse().ok()?;
    if parsed.as_str() != authority || authority.contains('@') {
        return None;
    }
    let host = parsed.host();
    // What follows the host must be nothing, or `:` and a 16-bit port.
    let rest = authority.strip_prefix(host)?;
    if !rest.is_empty() {
        rest.strip_prefix(':')?.parse::<u16>().ok()?;
    }
    Some(host.to_ascii_lowercase())
}

/// A refused request: its status and why.
pub(super) type Refusal = (StatusCode, String);

/// At most this much of a header is quoted back.
const QUOTED: usize = 64;

fn quoted(value: &str) -> String {
    format!("{:?}", crate::protocol::excerpt(value, QUOTED))
}

impl Guard {
    /// Why the request may not proceed, if it may not: 400 without a
    /// readable `Host`, 403 for a host or origin that is not allowed.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let bad = |why: String| (StatusCode::BAD_REQUEST, why);
        let forbidden = |why: String| (StatusCode::FORBIDDEN, why);
        self.host(headers)?;
        if let Some(origin) = headers.get(http::header::ORIGIN) {
            let origin = origin
                .to_str()
                .map_err(|_| bad("unreadable Origin header".into()))?;
            if !self.origin_allowed(origin) {
                return Err(forbidden(format!(
                    "Origin {} is not allowed",
                    quoted(origin)
                )));
            }
        }
        Ok(())
    }

    /// The request's `Host` (`host[:port]`, as sent), if it is readable
    /// and allowed; its `Origin` is not looked at (public metadata, such as
    /// the server cards, is for any page to read).
    pub(super) fn host<'h>(&self, headers: &'h HeaderMap) -> Result<&'h str, Refusal> {
        let bad = |why: String| (StatusCode::BAD_REQUEST, why);
        let host = headers
            .get(http::header::HOST)
            .ok_or_else(|| bad("no Host header".into()))?
            .to_str()
            .map_err(|_| bad("unreadable Host header".into()))?;
        let name =
            host_name(host).ok_or_else(|| bad(format!("malformed Host {}", quoted(host))))?;
        if !self.host_allowed(&name) {
            let why = format!("Host {} is not allowed", quoted(host));
            return Err((StatusCode::FORBIDDEN, why));
        }
        Ok(host)
    }

    fn host_allowed(&self, name: &str) -> bool {
        if self.allowed_hosts.iter().any(|h| h == name) {
            return true;
        }
        if self.loopback {
            LOOPBACK_NAMES.contains(&name)
        } else {
            self.allowed_hosts.is_empty()
        }
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if self
            .allowed_origins
            .iter()
            .any(|o| o == "*" || *o == origin)
        {
            return true;
        }
        if !self.loopback {
            return false;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        matches!(scheme, "http" | "https")
            && host_name(authority).is_some_and(|host| LOOPBACK_NAMES.contains(&host.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::HOST, host.parse().unwrap());
        if let Some(o) = origin {
            h.insert(http::header::ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_accepts_loopback_names_only() {
        let guard = Guard {
            loopback: true,
            ..Guard::default()
        };
        for ok in ["localhost:3000", "127.0.0.1", "[::1]:8080", "LOCALHOST"] {
            assert!(guard.check(&headers(ok, None)).is_ok(), "{ok}");
        }
        assert!(guard.check(&headers("evil.example.com", None)).is_err());
        assert!(guard
            .check(&headers("localhost.evil.com:80", None))
            .is_err());
        assert!(guard
            .check(&headers("localhost", Some("http://evil.example.com")))
            .is_err());
        assert!(guard
            .check(&headers("localhost", Some("http://localhost:5173")))
            .is_ok());
        for bad in [
            "[::1]evil.com",
            "[::1]@evil.com",
            "user@localhost",
            "localhost:99999",
            "localhost:80/x",
            "localhost:",
            "",
        ] {
            let refused = guard
                .check(&headers(bad, None))
                .expect_err(&format!("{bad:?} refused"));
            assert_eq!(refused.0, StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(guard
            .check(&headers("localhost", Some("http://[::1]evil.com")))
            .is_err());
        let refused = guard.check(&HeaderMap::new()).unwrap_err();
        assert_eq!(refused.0, StatusCode::BAD_REQUEST);
        // The host alone: any origin passes, a foreign host does not.
        let foreign = headers("localhost:3000", Some("http://evil.example.com"));
        assert_eq!(guard.host(&foreign), Ok("localhost:3000"));
        assert!(guard.host(&headers("evil.example.com", None)).is_err());
    }

    #[test]
    fn configured_hosts_and_origins_are_allowed() {
        let guard = Guard {
            loopback: false,
            allowed_hosts: vec!["mcp.example.com".into()],
            allowed_origins: vec!["https://app.example.com".into()],
        };
        assert!(guard.check(&headers("mcp.example.com:443", None)).is_ok());
        assert!(guard.check(&headers("other.example.com", None)).is_err());
        assert!(guard
            .check(&headers("mcp.example.com", Some("https://app.example.com")))
            .is_ok());
        assert!(guard
            .check(&headers("mcp.example.com", Some("http://localhost")))
            .is_err());
    }
}
