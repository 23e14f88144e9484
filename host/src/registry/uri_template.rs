//! Routing a read to the resource template that serves its URI.
//!
//! The template grammar is `wasm_mcp_common`'s, shared with the Rust SDK
//! (which also extracts the variables). Routing needs only yes or no, for
//! every template of every plugin on every read, so the host compiles each
//! template once, at load, into a regular expression that the `regex` crate
//! matches with a DFA: time linear in the URI whatever the template.

use regex::Regex;
use wasm_mcp_common::uri_template::Part;

/// The largest compiled form of one template; a larger one is refused.
const MAX_COMPILED_BYTES: usize = 256 << 10;

/// A template that cannot be routed to.
#[derive(Debug, thiserror::Error)]
#[error("the template cannot be matched: {0}")]
pub struct TemplateError(#[from] regex::Error);

/// A parsed URI template.
#[derive(Debug, Clone)]
pub struct UriTemplate(Regex);

impl UriTemplate {
    /// Parses `template`; text outside `{...}` must match literally, a
    /// simple variable matches one or more characters other than `/`, a
    /// reserved one (`{+x}`, `{#x}`) one or more of any.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut pattern = String::from("^");
        for part in wasm_mcp_common::UriTemplate::parse(template).parts() {
            match part {
                Part::Literal(text) => pattern.push_str(&regex::escape(text)),
                Part::Variable { reserved: true, .. } => pattern.push_str("(?:.+)"),
                Part::Variable {
                    reserved: false, ..
                } => pattern.push_str("(?:[^/]+)"),
            }
        }
        pattern.push('$');
        regex::RegexBuilder::new(&pattern)
            .dot_matches_new_line(true)
            .size_limit(MAX_COMPILED_BYTES)
            .dfa_size_limit(MAX_COMPILED_BYTES)
            .build()
            .map(UriTemplate)
            .map_err(TemplateError)
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
    fn routes_exactly_the_uris_the_sdk_matches() {
        // Every template and URI over a small alphabet, up to a small size:
        // the host's regex and the SDK's matcher agree on every pair.
        let grow = |seeds: &[&str], atoms: &[&str], rounds| {
            let mut all = vec![String::new()];
            for _ in 0..rounds {
                let longer: Vec<String> = all
                    .iter()
                    .flat_map(|s| atoms.iter().map(move |a| format!("{s}{a}")))
                    .collect();
                all.extend(longer);
            }
            all.extend(seeds.iter().map(|s| s.to_string()));
            all.sort();
            all.dedup();
            all
        };
        let templates = grow(&["{", "}{x}", "a{#y}"], &["a", "/", "é", "{x}", "{+y}"], 4);
        let uris = grow(&["\n", "{x}"], &["a", "/", "é", "\n"], 5);
        for template in &templates {
            let host = t(template);
            let sdk = wasm_mcp_common::UriTemplate::parse(template);
            for uri in &uris {
                assert_eq!(
                    host.matches(uri),
                    sdk.matches(uri),
                    "{template:?} against {uri:?}"
                );
            }
        }
    }

    #[test]
    fn a_template_too_large_to_compile_is_refused() {
        let template = format!("x://{}", "{a}".repeat(100_000));
        assert!(UriTemplate::parse(&template).is_err());
    }
}
