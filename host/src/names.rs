//! The one rule for names an operator or author chooses (plugins, roots,
//! host-name labels): letters, digits, `-` and `_`, at least one; and the
//! host patterns a plugin may be granted, made of such labels.

/// Whether `name` keeps the rule: ASCII letters, digits, `-` or `_`, and
/// not empty.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// A host name a plugin may reach: exact (`api.example.com`) or a wildcard
/// for the subdomains of a name (`*.example.com`, which does not match
/// `example.com` itself). Compared without case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern(String);

impl HostPattern {
    /// Parses a pattern; `None` when it is not a host name or `*.` + one.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        let name = text.strip_prefix("*.").unwrap_or(&text);
        let valid = !name.is_empty() && name.split('.').all(is_valid);
        valid.then_some(HostPattern(text))
    }

    /// Whether `host` (a name or an IP address, without port) matches.
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self.0.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => host == self.0,
        }
    }

    /// Whether every host this pattern matches is also matched by `other`.
    pub fn within(&self, other: &HostPattern) -> bool {
        match (self.0.strip_prefix("*."), other.0.strip_prefix("*.")) {
            (None, _) => other.matches(&self.0),
            (Some(mine), Some(theirs)) => mine == theirs || other.matches(mine),
            (Some(_), None) => false,
        }
    }

    /// The pattern as written (lower-cased).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::{is_valid, HostPattern};

    #[test]
    fn letters_digits_dashes_and_underscores_only() {
        for good in ["a", "hello-rust", "x_1", "0"] {
            assert!(is_valid(good), "{good}");
        }
        for bad in ["", "a b", "a.b", "a/b", "é", "a\n"] {
            assert!(!is_valid(bad), "{bad:?}");
        }
    }

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn exact_and_wildcard_patterns() {
        assert!(p("api.example.com").matches("API.example.com"));
        assert!(!p("api.example.com").matches("api.example.com.evil.net"));
        assert!(p("*.example.com").matches("a.b.example.com"));
        assert!(!p("*.example.com").matches("example.com"));
        assert!(!p("*.example.com").matches("evilexample.com"));
        assert!(p("127.0.0.1").matches("127.0.0.1"));
        assert!(HostPattern::parse("*").is_none());
        assert!(HostPattern::parse("a..b").is_none());
        assert!(HostPattern::parse("http://x").is_none());
    }

    #[test]
    fn a_pattern_is_within_a_wider_one() {
        assert!(p("api.example.com").within(&p("*.example.com")));
        assert!(p("*.api.example.com").within(&p("*.example.com")));
        assert!(p("*.example.com").within(&p("*.example.com")));
        assert!(!p("*.example.com").within(&p("api.example.com")));
        assert!(!p("example.com").within(&p("*.example.com")));
    }
}
