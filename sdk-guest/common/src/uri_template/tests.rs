use super::{Part, UriTemplate};

fn vars<'u>(template: &str, uri: &'u str) -> Option<Vec<(String, &'u str)>> {
    UriTemplate::parse(template)
        .captures(uri)
        .map(|v| v.into_iter().map(|(n, v)| (n.to_owned(), v)).collect())
}

#[test]
fn parses_literals_and_both_kinds_of_variable() {
    let t = UriTemplate::parse("file:///{+path}/x{id}{#f}{");
    assert_eq!(
        t.parts(),
        [
            Part::Literal("file:///".into()),
            Part::Variable {
                name: "path".into(),
                reserved: true
            },
            Part::Literal("/x".into()),
            Part::Variable {
                name: "id".into(),
                reserved: false
            },
            Part::Variable {
                name: "f".into(),
                reserved: true
            },
            Part::Literal("{".into()),
        ]
    );
    assert!(UriTemplate::parse("").parts().is_empty());
}

#[test]
fn simple_variables_stop_at_slashes_reserved_ones_do_not() {
    assert_eq!(
        vars("t://a/{id}/data", "t://a/42/data"),
        Some(vec![("id".into(), "42")])
    );
    assert_eq!(vars("t://a/{id}/data", "t://a//data"), None);
    assert_eq!(vars("t://a/{id}/data", "t://a/4/2/data"), None);
    assert_eq!(vars("t://a/{id}/data", "t://a/42/data/x"), None);
    assert_eq!(
        vars("file:///{+path}", "file:///a/b/c.txt"),
        Some(vec![("path".into(), "a/b/c.txt")])
    );
    assert_eq!(vars("file:///{+path}", "file:///"), None);
    assert_eq!(vars("plain", "plain"), Some(vec![]));
    assert_eq!(vars("plain", "plainer"), None);
    assert_eq!(vars("", ""), Some(vec![]));
}

#[test]
fn each_variable_takes_the_shortest_value_that_lets_the_rest_match() {
    assert_eq!(
        vars("x://{a}{b}", "x://abc"),
        Some(vec![("a".into(), "a"), ("b".into(), "bc")])
    );
    assert_eq!(
        vars("x://{a}-{b}", "x://1-2-3"),
        Some(vec![("a".into(), "1"), ("b".into(), "2-3")])
    );
    assert_eq!(
        vars("x://{+a}/{b}", "x://p/q/r"),
        Some(vec![("a".into(), "p/q"), ("b".into(), "r")])
    );
}

#[test]
fn values_split_only_between_characters() {
    assert_eq!(
        vars("x://{a}{b}", "x://éé"),
        Some(vec![("a".into(), "é"), ("b".into(), "é")])
    );
    assert_eq!(vars("x://{a}{b}", "x://é"), None);
    assert_eq!(vars("x://{a}ß", "x://ßß"), Some(vec![("a".into(), "ß")]));
}

#[test]
fn adjacent_variables_match_in_linear_time() {
    let template = UriTemplate::parse(&format!("x://{}", "{a}{+b}".repeat(40)));
    let uri = format!("x://{}!", "ab".repeat(20_000));
    let started = std::time::Instant::now();
    assert!(template.matches(&uri));
    assert!(!template.matches("x://a"));
    // A generous liveness bound: an exponential matcher never finishes.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// The matcher the SDK used before: backtracking, shortest value first.
fn backtrack<'u>(parts: &[Part], uri: &'u str, out: &mut Vec<&'u str>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri
            .strip_prefix(lit.as_str())
            .is_some_and(|tail| backtrack(rest, tail, out)),
        Some((Part::Variable { reserved, .. }, rest)) => {
            for end in (1..=uri.len()).filter(|&e| uri.is_char_boundary(e)) {
                let value = &uri[..end];
                if !reserved && value.ends_with('/') {
                    return false;
                }
                out.push(value);
                if backtrack(rest, &uri[end..], out) {
                    return true;
                }
                out.pop();
            }
            false
        }
    }
}

/// Every string of at most `most` atoms, each once.
fn words(atoms: &[&str], most: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut last = all.clone();
    for _ in 0..most {
        last = last
            .iter()
            .flat_map(|w| atoms.iter().map(move |a| format!("{w}{a}")))
            .collect();
        all.extend(last.iter().cloned());
    }
    all.sort();
    all.dedup();
    all
}

#[test]
fn agrees_with_a_backtracking_matcher_on_small_cases() {
    // Every template and URI over a small alphabet, up to a small size.
    let templates = words(&["a", "/", "é", "{x}", "{+y}"], 4);
    let uris = words(&["a", "/", "é", "b"], 5);
    for template in &templates {
        let t = UriTemplate::parse(template);
        for uri in &uris {
            let mut expected = Vec::new();
            let expected = backtrack(t.parts(), uri, &mut expected).then_some(expected);
            let got = t
                .captures(uri)
                .map(|v| v.into_iter().map(|(_, v)| v).collect::<Vec<_>>());
            assert_eq!(got, expected, "{template:?} against {uri:?}");
        }
    }
}
