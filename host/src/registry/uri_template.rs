//! Matching URIs against RFC 6570 templates (simple `{var}` and reserved
//! `{+var}` expressions), to route a read to the template that serves it.
//!
//! A template is compiled once, at load, into a regular expression that the
//! `regex` crate matches in time linear in the URI, whatever the template
//! (a backtracking matcher is exponential in adjacent variables).

use regex::Regex;

/// The largest compiled form of one template; a larger one is refused.
const MAX_COMPILED_BYTES: usize = 256 << 10;

/// A parsed URI template.
#[derive(Debug, Clone)]
pub struct UriTemplate(Regex);

impl UriTemplate {
    /// Parses `template`; text outside `{...}` must match literally, a
    /// simple variable matches one or more characters other than `/`, a
    /// reserved one (`{+x}`, `{#x}`) one or more of any.
    pub fn parse(template: &str) -> Result<Self, String> {
        let mut pattern = String::from("^");
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else {
                break;
            };
            pattern.push_str(&regex::escape(&rest[..open]));
            let expr = &rest[open + 1..open + len];
            pattern.push_str(if expr.starts_with(['+', '#']) {
                "(?:.+)"
            } else {
                "(?:[^/]+)"
            });
            rest = &rest[open + len + 1..];
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        regex::RegexBuilder::new(&pattern)
            .dot_matches_new_line(true)
            .size_limit(MAX_COMPILED_BYTES)
            .dfa_size_limit(MAX_COMPILED_BYTES)
            .build()
            .map(UriTemplate)
            .map_err(|e| format!("the template cannot be matched: {e}"))
    }

    /// Whether `uri` is one of the URIs the template names.
    pub fn matches(&self, uri: &str) -> bool {
        self.0.is_match(uri)
    }
}

#[cfg(test)]
mod tests {
    use super::UriTemplate;

    fn t(template: &str) -> UriTemplate {
        UriTemplate::parse(template).unwrap()
    }

    #[test]
    fn matches_simple_and_reserved_variables() {
        let t1 = t("test://template/{id}/data");
        assert!(t1.matches("test://template/42/data"));
        assert!(!t1.matches("test://template//data"));
        assert!(!t1.matches("test://template/4/2/data"));
        assert!(!t1.matches("test://template/42/data/x"));
        let r = t("file:///{+path}");
        assert!(r.matches("file:///a/b/c.txt"));
        assert!(!r.matches("file:///"));
        let q = t("notes://note/{id}");
        assert!(q.matches("notes://note/todo") && !q.matches("notes://other/todo"));
        // Regex syntax in the literal text is literal.
        let dots = t("a.b://{x}(y)");
        assert!(dots.matches("a.b://1(y)") && !dots.matches("aXb://1(y)"));
    }

    #[test]
    fn adjacent_variables_match_in_linear_time() {
        let template = format!("x://{}", "{a}{+b}".repeat(40));
        let matcher = t(&template);
        let uri = format!("x://{}!", "ab".repeat(20_000));
        let started = std::time::Instant::now();
        assert!(matcher.matches(&uri));
        assert!(!matcher.matches("x://a"));
        // A generous liveness bound: an exponential matcher never finishes.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn a_template_too_large_to_compile_is_refused() {
        let template = format!("x://{}", "{a}".repeat(100_000));
        assert!(UriTemplate::parse(&template).is_err());
    }
}
