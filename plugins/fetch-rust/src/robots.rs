//! robots.txt, read as the reference server's parser (Protego) reads it:
//! the group whose user-agent token appears in ours at a token boundary
//! (the longest such token; `*` otherwise), then the longest matching
//! `Allow`/`Disallow` pattern (`Allow` on a tie), with `*` and a final `$`.

/// One `Allow` or `Disallow` line.
struct Rule {
    allow: bool,
    pattern: String,
}

/// One group: its user agents and rules.
#[derive(Default)]
struct Group {
    agents: Vec<String>,
    rules: Vec<Rule>,
}

/// A parsed robots.txt.
pub struct Robots {
    groups: Vec<Group>,
}

impl Robots {
    /// Parses `text` (comments, unknown fields and junk are skipped).
    pub fn parse(text: &str) -> Robots {
        let mut groups: Vec<Group> = Vec::new();
        let mut in_agents = false;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let Some((field, value)) = line.split_once(':') else {
                continue;
            };
            let field = field.trim().to_ascii_lowercase();
            let value = value.trim();
            match field.as_str() {
                "user-agent" => {
                    if !in_agents {
                        groups.push(Group::default());
                        in_agents = true;
                    }
                    if let Some(group) = groups.last_mut() {
                        group.agents.push(value.to_lowercase());
                    }
                }
                "allow" | "disallow" => {
                    in_agents = false;
                    if value.is_empty() {
                        continue;
                    }
                    if let Some(group) = groups.last_mut() {
                        group.rules.push(Rule {
                            allow: field == "allow",
                            pattern: value.to_owned(),
                        });
                    }
                }
                _ => in_agents = false,
            }
        }
        Robots { groups }
    }

    /// Whether `user_agent` may fetch `path` (the URL's path and query).
    pub fn allows(&self, path: &str, user_agent: &str) -> bool {
        if path == "/robots.txt" {
            return true;
        }
        let robot = user_agent.trim().to_lowercase();
        let mut best: Option<(usize, Vec<&Rule>)> = None;
        for group in &self.groups {
            for agent in &group.agents {
                let score = agent_score(agent, &robot);
                if score == 0 {
                    continue;
                }
                match &mut best {
                    Some((top, rules)) if *top == score => rules.extend(&group.rules),
                    Some((top, _)) if *top > score => {}
                    _ => best = Some((score, group.rules.iter().collect())),
                }
            }
        }
        let Some((_, rules)) = best else {
            return true;
        };
        rules
            .iter()
            .filter(|rule| matches(&rule.pattern, path))
            .max_by_key(|rule| (rule.pattern.len(), rule.allow))
            .is_none_or(|rule| rule.allow)
    }
}

/// How well group agent `agent` names `robot`: `*` scores 1, a token found
/// at a boundary scores its length, anything else 0.
fn agent_score(agent: &str, robot: &str) -> usize {
    if agent == "*" {
        return 1;
    }
    if agent.is_empty() {
        return 0;
    }
    let mut from = 0;
    while let Some(found) = robot[from..].find(agent) {
        let at = from + found;
        let before = robot[..at].chars().next_back();
        if before.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_')) {
            return agent.len();
        }
        from = at + robot[at..].chars().next().map_or(1, char::len_utf8);
    }
    0
}

/// Whether robots.txt pattern `pattern` matches `path`: a prefix, with `*`
/// for any run of characters and a final `$` for the end.
fn matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(p) => (p, true),
        None => (pattern, false),
    };
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return if anchored {
            path == pattern
        } else {
            path.starts_with(pattern)
        };
    }
    if !path.starts_with(parts[0]) {
        return false;
    }
    let mut pos = parts[0].len();
    let last = parts[parts.len() - 1];
    for part in &parts[1..parts.len() - 1] {
        match path[pos..].find(part) {
            Some(i) => pos += i + part.len(),
            None => return false,
        }
    }
    if anchored {
        path.len() >= pos + last.len() && path.ends_with(last)
    } else {
        last.is_empty() || path[pos..].contains(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UA: &str =
        "ModelContextProtocol/1.0 (Autonomous; +https://github.com/modelcontextprotocol/servers)";

    #[test]
    fn the_most_specific_group_and_rule_decide() {
        let r = Robots::parse(
            "User-agent: *\nDisallow: /private\nAllow: /private/open\n\nUser-agent: OtherBot\nDisallow: /\n",
        );
        assert!(r.allows("/", UA));
        assert!(!r.allows("/private/x", UA));
        assert!(r.allows("/private/open/x", UA));
        assert!(r.allows("/robots.txt", UA));
        let r = Robots::parse(
            "User-agent: modelcontextprotocol\nDisallow: /\nUser-agent: *\nAllow: /\n",
        );
        assert!(!r.allows("/page", UA));
        let r = Robots::parse("User-agent: protocol\nDisallow: /\n");
        assert!(
            r.allows("/page", UA),
            "a token inside a word does not count"
        );
    }

    #[test]
    fn wildcards_and_end_anchors() {
        assert!(matches("/*.pdf$", "/docs/a.pdf"));
        assert!(!matches("/*.pdf$", "/docs/a.pdf?x"));
        assert!(matches("/a*b", "/a/x/b/c"));
        assert!(!matches("/a*b", "/b/a"));
        assert!(matches("/exact$", "/exact"));
        assert!(!matches("/exact$", "/exactly"));
    }
}
