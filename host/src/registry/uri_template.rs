//! Matching URIs against RFC 6570 templates (simple `{var}` and reserved
//! `{+var}` expressions), to route a read to the template that serves it.

/// A parsed URI template.
#[derive(Debug, Clone)]
pub struct UriTemplate(Vec<Part>);

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    /// A variable; reserved ones (`{+x}`, `{#x}`) may match `/`.
    Var {
        reserved: bool,
    },
}

impl UriTemplate {
    /// Parses `template`; text outside `{...}` must match literally.
    pub fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            let Some(len) = rest[open..].find('}') else {
                break;
            };
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let expr = &rest[open + 1..open + len];
            parts.push(Part::Var {
                reserved: expr.starts_with(['+', '#']),
            });
            rest = &rest[open + len + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        UriTemplate(parts)
    }

    /// Whether `uri` is one of the URIs the template names.
    pub fn matches(&self, uri: &str) -> bool {
        matches(&self.0, uri)
    }
}

fn matches(parts: &[Part], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|t| matches(rest, t)),
        Some((Part::Var { reserved }, rest)) => {
            let limit = if *reserved {
                uri.len()
            } else {
                uri.find('/').unwrap_or(uri.len())
            };
            (1..=limit)
                .filter(|&end| uri.is_char_boundary(end))
                .any(|end| matches(rest, &uri[end..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::UriTemplate;

    #[test]
    fn matches_simple_and_reserved_variables() {
        let t = UriTemplate::parse("test://template/{id}/data");
        assert!(t.matches("test://template/42/data"));
        assert!(!t.matches("test://template//data"));
        assert!(!t.matches("test://template/4/2/data"));
        assert!(!t.matches("test://template/42/data/x"));
        let r = UriTemplate::parse("file:///{+path}");
        assert!(r.matches("file:///a/b/c.txt"));
        assert!(!r.matches("file:///"));
        let q = UriTemplate::parse("notes://note/{id}");
        assert!(q.matches("notes://note/todo") && !q.matches("notes://other/todo"));
    }
}
