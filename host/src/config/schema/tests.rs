use super::*;
use crate::config::Config;
use std::path::Path;

/// Every table of the schema that refuses unknown keys, with the path to
/// it (a map's entries named `x`) and its key names.
fn closed_tables(schema: &Value) -> Vec<(Vec<String>, BTreeSet<String>, Value)> {
    let walk = Walk {
        root: schema,
        text: "",
        problems: Vec::new(),
    };
    let mut found = Vec::new();
    let mut todo = vec![(Vec::<String>::new(), schema.clone())];
    while let Some((path, at)) = todo.pop() {
        let at = walk.resolve(&at).clone();
        assert!(path.len() < 8, "schema too deep at {path:?}");
        for key in ["anyOf", "oneOf"] {
            for choice in at.get(key).and_then(Value::as_array).into_iter().flatten() {
                todo.push((path.clone(), choice.clone()));
            }
        }
        if let Some(properties) = at.get("properties").and_then(Value::as_object) {
            if at.get("additionalProperties") == Some(&Value::Bool(false)) {
                let keys = properties.keys().cloned().collect();
                found.push((path.clone(), keys, at.clone()));
            }
            for (name, field) in properties {
                let mut deeper = path.clone();
                deeper.push(name.clone());
                todo.push((deeper, field.clone()));
            }
        }
        if let Some(entry @ Value::Object(_)) = at.get("additionalProperties") {
            let mut deeper = path.clone();
            deeper.push("x".into());
            todo.push((deeper, entry.clone()));
        }
    }
    found
}

/// A config holding `key = value` in the table at `path`.
fn config_at(path: &[String], key: &str, value: toml::Value) -> String {
    let mut table = toml::Table::new();
    table.insert(key.to_owned(), value);
    for segment in path.iter().rev() {
        let mut outer = toml::Table::new();
        outer.insert(segment.clone(), toml::Value::Table(table));
        table = outer;
    }
    toml::to_string(&table).unwrap()
}

/// The key names a serde "unknown field" error says are expected.
fn expected_keys(error: &str) -> BTreeSet<String> {
    let Some((_, list)) = error.split_once("expected") else {
        return BTreeSet::new();
    };
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_schema_names_exactly_the_keys_the_host_accepts() {
    let schema = schema();
    let tables = closed_tables(&schema);
    assert!(tables.len() > 20, "only {} tables", tables.len());
    let mut keys = 0;
    for (path, documented, _) in &tables {
        let text = config_at(path, "zz_not_a_key", toml::Value::Integer(1));
        let error = toml::from_str::<Config>(&text)
            .err()
            .unwrap_or_else(|| panic!("{path:?} accepted an unknown key"))
            .to_string();
        assert!(error.contains("unknown field"), "{path:?}: {error}");
        let accepted = expected_keys(&error);
        assert_eq!(&accepted, documented, "{path:?}: {error}");
        // The shape check finds it too, naming where.
        let problems = shape_problems(&text);
        let at = [path.join("."), "zz_not_a_key".into()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(".");
        assert!(
            problems
                .iter()
                .any(|p| p.contains(&format!("{at}: unknown field"))),
            "{at}: {problems:?}"
        );
        keys += documented.len();
    }
    assert!(keys > 150, "only {keys} keys");
}

#[test]
fn every_documented_default_is_accepted_as_written() {
    let schema = schema();
    let mut tried = 0;
    for (path, _, table) in closed_tables(&schema) {
        let properties = table["properties"].as_object().unwrap();
        for (key, field) in properties {
            let Some(default) = field.get("default").filter(|d| !d.is_null()) else {
                continue;
            };
            let Ok(value) = toml::Value::try_from(default) else {
                continue;
            };
            // Empty tables and lists say nothing; the rest must parse
            // (counts and times alone: paths and names are checked
            // against the disk and each other, not here).
            let mut text = config_at(&path, key, value);
            // Keys a table cannot go without get a string (all are).
            for required in table
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let required = required.as_str().unwrap();
                if required != key {
                    text.push_str(&format!("{required} = \"x\"\n"));
                }
            }
            assert_eq!(shape_problems(&text), Vec::<String>::new(), "{text}");
            if let Err(e) = toml::from_str::<Config>(&text) {
                panic!("{text}: {e}");
            }
            tried += 1;
        }
    }
    assert!(tried > 100, "only {tried} defaults");
}

#[test]
fn every_problem_of_a_file_is_found_with_its_line_and_key_path() {
    let text = "\
[server]
page_size = \"ten\"
colour = 3

[limits]
memory_mb = -1
spare_instance = \"sometimes\"

[plugins.files]
roots = \"docs\"
limits = { call_timeout_ms = 5, nope = true }

[http.auth.jwt]
issuer = 3
";
    let problems = shape_problems(text);
    let expect = [
        "line 2: server.page_size: invalid type: expected an integer, found a string",
        "line 3: server.colour: unknown field",
        "line 6: limits.memory_mb: -1 is out of range",
        "line 7: limits.spare_instance: \"sometimes\" is not one of",
        "line 10: plugins.files.roots: invalid type: expected an array, found a string",
        "line 11: plugins.files.limits.nope: unknown field",
        "line 14: http.auth.jwt.issuer: invalid type: expected a string, found an integer",
        "line 13: http.auth.jwt.audience: missing field",
    ];
    for e in expect {
        assert!(
            problems.iter().any(|p| p.starts_with(e)),
            "{e:?} not in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expect.len(), "{problems:#?}");
    // And loading the file reports all of them, not the first alone.
    let error = format!("{:#}", Config::parse(text, Path::new(".")).unwrap_err());
    for e in expect {
        assert!(error.contains(e), "{e:?} not in {error}");
    }
}

#[test]
fn a_file_of_the_right_shape_has_no_shape_problems() {
    let text = "\
[server]
tool_search = \"only\"
[limits]
spare_instance = \"never\"
[plugins.a]
claims = { groups = [\"x\", \"y\"], team = \"z\" }
signatures = \"if-present\"
";
    assert_eq!(shape_problems(text), Vec::<String>::new());
    toml::from_str::<Config>(text).unwrap();
    let typo = shape_problems("[server]\npage_sise = 10\n[limits]\nzzz = 1\n");
    assert_eq!(
        typo[0],
        "line 2: server.page_sise: unknown field (did you mean page_size?)"
    );
    assert!(typo[1].starts_with("line 4: limits.zzz: unknown field (known here: call_timeout_ms, "));
    let wrong = "[server]\ntool_search = \"sometimes\"\n";
    let problems = shape_problems(wrong);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("line 2: server.tool_search:"),
        "{problems:?}"
    );
}

#[test]
fn a_hostile_file_is_walked_in_bounded_depth() {
    let deep = format!(
        "[plugins.x]\nroots = {}{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    // The parser may refuse it; neither it nor the walk overflows.
    let _ = shape_problems(&deep);
    let wide = format!(
        "[server]\n{}",
        (0..20_000)
            .map(|i| format!("k{i} = {i}\n"))
            .collect::<String>()
    );
    let problems = shape_problems(&wide);
    assert_eq!(problems.len(), MAX_PROBLEMS + 1);
    assert_eq!(problems[MAX_PROBLEMS], "... and 19900 more problems");
}

#[test]
fn the_manifest_schema_names_exactly_the_keys_a_manifest_takes() {
    let schema = manifest_schema();
    let documented: BTreeSet<String> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let error = crate::config::Manifest::parse("zz_not_a_key = 1\n")
        .unwrap_err()
        .to_string();
    assert_eq!(expected_keys(&error), documented, "{error}");
    assert_eq!(schema["additionalProperties"], Value::Bool(false));
}

#[test]
fn every_value_problem_of_every_section_is_reported() {
    let text = "\
[server]
page_size = 0
max_requests = 0
[limits]
memory_mb = 0
call_timeout_ms = 0
[http]
path = \"mcp\"
max_sessions = 0
[tasks]
max_running = 0
max_stored = 0
";
    let error = format!("{:#}", Config::parse(text, Path::new(".")).unwrap_err());
    for key in [
        "server.page_size",
        "server.max_requests",
        "limits.memory_mb",
        "limits.call_timeout_ms",
        "http.path",
        "http.max_sessions",
        "tasks.max_running",
        "tasks.max_stored",
    ] {
        assert!(error.contains(key), "{key} not in {error}");
    }
    assert_eq!(error.lines().count(), 8, "{error}");
}
