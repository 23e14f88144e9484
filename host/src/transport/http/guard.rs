//! Protection against DNS rebinding: the `Host` and `Origin` of every
//! request must name this server (a loopback name when it listens on
//! loopback) or be explicitly allowed.

use http::HeaderMap;

/// Which hosts and origins may reach the server.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// Whether the server listens on a loopback address only.
    pub loopback: bool,
    /// Extra `Host` names allowed (without port), lowercase.
    pub allowed_hosts: Vec<String>,
    /// `Origin`s allowed (scheme://host[:port]), lowercase; `*` allows any.
    pub allowed_origins: Vec<String>,
}

const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// The host part of `host[:port]` (brackets kept for IPv6).
fn host_name(authority: &str) -> String {
    let authority = authority.trim().to_ascii_lowercase();
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => authority[..=end].to_owned(),
            None => authority,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host.to_owned(),
        _ => authority,
    }
}

impl Guard {
    /// Why the request may not proceed, if it may not.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), String> {
        if let Some(host) = headers.get(http::header::HOST) {
            let host = host.to_str().map_err(|_| "unreadable Host header")?;
            if !self.host_allowed(&host_name(host)) {
                return Err(format!("Host {host:?} is not allowed"));
            }
        }
        if let Some(origin) = headers.get(http::header::ORIGIN) {
            let origin = origin.to_str().map_err(|_| "unreadable Origin header")?;
            if !self.origin_allowed(origin) {
                return Err(format!("Origin {origin:?} is not allowed"));
            }
        }
        Ok(())
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
            && LOOPBACK_NAMES.contains(&host_name(authority).as_str())
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
