//! Whatever `config check --no-files` accepts, `serve` starts on (files,
//! the environment and the network aside), and no config makes either
//! panic: configs made at random and by mutating every config sample of
//! the book and `examples/`, each checked, and each accepted one built
//! into everything `serve` builds from a config before it touches a file
//! or the network (the runtime, the grants, the server, the OCI
//! following, the HTTP endpoint and its router).

use crate::config::{Config, Files, Manifest, Mode};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::{Table, Value};

/// A small seeded generator (xorshift64*): the same cases every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every ```toml block of the book, and every example config.
fn samples() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&repo().join("docs/src"), &mut pages);
    pages.sort();
    let mut samples = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut block: Option<String> = None;
        for line in text.lines() {
            match &mut block {
                None if line.trim_start().starts_with("```toml") => block = Some(String::new()),
                Some(b) if line.trim_start().starts_with("```") => {
                    samples.push(std::mem::take(b));
                    block = None;
                }
                Some(b) => {
                    b.push_str(line);
                    b.push('\n');
                }
                None => {}
            }
        }
    }
    let mut examples: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    for example in examples {
        samples.push(std::fs::read_to_string(example).unwrap());
    }
    samples
}

/// Values that have broken hosts, or could.
fn strings() -> Vec<&'static str> {
    vec![
        "",
        "/",
        "/mcp",
        "/mcp/",
        "/metrics",
        "/healthz",
        "/readyz",
        "/sse",
        "/messages",
        "/.well-known",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
        "/a/:b",
        "/{x}",
        "/*x",
        "/a b",
        "/a?b",
        "/a#b",
        "/ä",
        "x",
        "metrics",
        "healthz",
        "sse",
        "oauth-protected-resource",
        "example.com/mcp",
        "https://mcp.example.com/mcp",
        "http://mcp.example.com/mcp",
        "http://idp.example.com/jwks.json",
        "https://idp.example.com/jwks.json",
        "http://127.0.0.1:9/jwks.json",
        "http://[::1]:9/x",
        "https://idp.example.com",
        "http://idp.example.com",
        "ftp://x.example/y",
        "mailto:a@b",
        "oci://registry.example/a/b:1",
        "oci://registry.example/a@sha256:0000",
        "oci://",
        "0.0.0.0:0",
        "127.0.0.1:0",
        "[::1]:0",
        "[::]:0",
        "localhost:0",
        "127.0.0.1",
        ":80",
        "nope",
        "*",
        "*.*",
        "a.*",
        "*.x",
        ".x",
        "files.read",
        "-",
        "postgres://u@db.example/x",
        "postgres://u:p@db.example/x",
        "read-only",
        "read-write",
        "only",
        "required",
        "if-present",
        "deny",
        "open",
        "SOME_VAR",
        "A=B",
        "\u{0}",
        "a\nb",
    ]
}

fn random_value(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0..=2 => Value::String(rng.pick(&strings()).to_string()),
        3 => Value::Integer(*rng.pick(&[
            0,
            1,
            2,
            3,
            -1,
            100,
            1000,
            4096,
            4097,
            65535,
            1 << 20,
            1 << 31,
            1 << 32,
            1 << 53,
            i64::MAX,
            i64::MIN,
        ])),
        4 => Value::Float(*rng.pick(&[0.0, -1.0, 0.5, 1e6, 1e7, f64::NAN, f64::INFINITY])),
        5 => Value::Boolean(rng.chance(50)),
        6 => Value::Array(match rng.below(3) {
            0 => vec![],
            1 => vec![Value::String(rng.pick(&strings()).to_string())],
            _ => vec![
                Value::String(rng.pick(&strings()).to_string()),
                Value::String(rng.pick(&strings()).to_string()),
            ],
        }),
        _ => Value::Table(Table::new()),
    }
}

/// A value like `old` most of the time (same type), any other otherwise.
fn mutated(rng: &mut Rng, old: &Value) -> Value {
    for _ in 0..8 {
        let new = random_value(rng);
        if std::mem::discriminant(&new) == std::mem::discriminant(old) || rng.chance(30) {
            return new;
        }
    }
    random_value(rng)
}

/// Every key path of `table` to a value that is not a table, with it.
fn leaves(table: &Table, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    for (key, value) in table {
        prefix.push(key.clone());
        match value {
            Value::Table(inner) if !inner.is_empty() => leaves(inner, prefix, out),
            _ => out.push((prefix.clone(), value.clone())),
        }
        prefix.pop();
    }
}

fn set(table: &mut Table, path: &[String], value: Value) {
    let (last, tables) = path.split_last().unwrap();
    let mut at = table;
    for key in tables {
        let entry = at
            .entry(key.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        at = entry.as_table_mut().unwrap();
    }
    at.insert(last.clone(), value);
}

/// One change to `table`: a value changed, a key added from `pool` (as it
/// was or changed), a key removed, or a table renamed.
fn mutate(rng: &mut Rng, table: &mut Table, pool: &[(Vec<String>, Value)]) {
    let mut here = Vec::new();
    leaves(table, &mut Vec::new(), &mut here);
    match rng.below(5) {
        0 | 1 if !here.is_empty() => {
            let (path, old) = rng.pick(&here).clone();
            let new = mutated(rng, &old);
            set(table, &path, new);
        }
        2 if !here.is_empty() => {
            let (path, _) = rng.pick(&here).clone();
            let (last, tables) = path.split_last().unwrap();
            let mut at = &mut *table;
            for key in tables {
                at = at.get_mut(key).unwrap().as_table_mut().unwrap();
            }
            if rng.chance(50) || tables.is_empty() {
                at.remove(last);
            } else {
                // Rename the table holding it (a plugin's, a profile's).
                let renamed = rng.pick(&strings()).to_string();
                let mut at = &mut *table;
                for key in &tables[..tables.len() - 1] {
                    at = at.get_mut(key).unwrap().as_table_mut().unwrap();
                }
                if let Some(inner) = at.remove(&tables[tables.len() - 1]) {
                    at.insert(renamed, inner);
                }
            }
        }
        _ => {
            let (path, value) = rng.pick(pool).clone();
            let value = if rng.chance(40) {
                mutated(rng, &value)
            } else {
                value
            };
            let mut path = path.clone();
            // A section of a name of one's own, now and then.
            if path.len() > 2
                && matches!(path[0].as_str(), "plugins" | "profiles" | "roots")
                && rng.chance(30)
            {
                path[1] = rng.pick(&strings()).to_string();
            }
            set(table, &path, value);
        }
    }
}

/// What `serve` builds from `config` before it touches a file or the
/// network; `Err` if it refuses, or the text of a panic.
fn start(
    config: &Config,
    runtimes: &mut HashMap<(usize, u32), Arc<crate::runtime::Runtime>>,
    legacy_sse: bool,
    roots: &Path,
) -> Result<(), String> {
    let mut config = config.clone();
    // Files and the environment aside: what they hold is `serve`'s to meet.
    config.tasks.store = Some(PathBuf::new());
    config.audit.file = None;
    config.http.tls_cert_file = None;
    config.http.tls_key_file = None;
    if let Some(auth) = &mut config.http.auth {
        if auth.tokens_env.is_some() {
            auth.tokens_env = Some(VAR.into());
        }
        if let Some(jwt) = &mut auth.jwt {
            if jwt.secret_env.is_some() || jwt.public_key_file.is_some() {
                jwt.secret_env = Some(VAR.into());
                jwt.public_key_file = None;
            }
        }
    }
    for (name, root) in &mut config.roots {
        let dir = roots.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        *root.path.get_mut() = dir;
    }
    let key = (config.max_memory_bytes(), config.server.max_instances);
    let runtime = match runtimes.get(&key) {
        Some(runtime) => runtime.clone(),
        None => {
            let runtime = crate::runtime::Runtime::new(crate::runtime::RuntimeConfig {
                cache_dir: None,
                cache_key_file: None,
                ..super::runtime_config(&config)
            })
            .map_err(|e| format!("runtime: {e:#}"))?;
            runtimes.insert(key, runtime.clone());
            runtime
        }
    };
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Nothing below awaits: what is spawned (the key set's fetches, the
    // server's loops) never runs, and goes with the runtime.
    tokio.block_on(async {
        let policy =
            crate::reload::Policy::new(config.clone()).map_err(|e| format!("policy: {e:#}"))?;
        let asks = Manifest {
            roots: [(Manifest::ANY.to_owned(), Mode::ReadWrite)].into(),
            hosts: vec![Manifest::ANY.to_owned()],
            env: vec!["HOME".into()],
            keyvalue: true,
        };
        for plugin in config.plugins.keys() {
            policy.decide(plugin, &asks);
        }
        let registry = Arc::new(crate::registry::Registry::new(runtime));
        let options = super::server_options(&config, Arc::default());
        let server = crate::server::Server::new(registry, options);
        let _ = crate::cluster::replica_name(&config);
        super::sources(&config, Path::new("/nonexistent"))
            .map_err(|e| format!("sources: {e:#}"))?;
        let local = config
            .http
            .listen
            .as_deref()
            .and_then(|l| l.parse::<SocketAddr>().ok())
            .unwrap_or_else(|| "127.0.0.1:8080".parse().unwrap());
        let options = super::http_options(&config, local, false, legacy_sse)
            .map_err(|e| format!("http: {e:#}"))?;
        let _router = crate::transport::http::router(server, options);
        Ok(())
    })
}

/// The variable the environment's tokens and secrets are read from here.
const VAR: &str = "WASM_MCP_SETTINGS_TEST_SECRET";

fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into())
    })
}

#[test]
fn whatever_the_check_accepts_serve_starts_on() {
    // SAFETY: set before anything reads it, by the only test that does.
    std::env::set_var(VAR, "a-token,another");
    // As the binary does first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let samples = samples();
    assert!(samples.len() >= 10, "{} samples found", samples.len());
    let mut pool = Vec::new();
    let mut tables = Vec::new();
    for sample in &samples {
        if let Ok(table) = sample.parse::<Table>() {
            leaves(&table, &mut Vec::new(), &mut pool);
            tables.push(table);
        }
    }
    let defaults = Table::try_from(Config::default()).unwrap();
    leaves(&defaults, &mut Vec::new(), &mut pool);
    let roots = tempfile::tempdir().unwrap();
    let base = Path::new("/nonexistent-config-folder");
    let mut rng = Rng(0x5eed_c0ff_eeee);
    let mut runtimes = HashMap::new();
    let (mut accepted, mut refused, mut failures) = (0, 0, Vec::new());
    let cases = std::env::var("CONFIG_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40000);
    let began = std::time::Instant::now();
    for case in 0..cases {
        let mut table = match case % 3 {
            // Every sample as it is, then mutated.
            0 | 1 if !tables.is_empty() => tables[(case / 3) % tables.len()].clone(),
            _ => Table::new(),
        };
        let changes = if case < tables.len() * 3 && case % 3 == 0 {
            0
        } else {
            1 + rng.below(4)
        };
        for _ in 0..changes {
            mutate(&mut rng, &mut table, &pool);
        }
        let Ok(text) = toml::to_string(&table) else {
            continue;
        };
        let checked = quietly(|| Config::parse_with(&text, base, Files::Skip));
        let config = match checked {
            Err(panic) => {
                failures.push(format!("the check panicked ({panic}) on:\n{text}"));
                continue;
            }
            Ok(Err(_)) => {
                refused += 1;
                continue;
            }
            Ok(Ok(config)) => config,
        };
        accepted += 1;
        let legacy = rng.chance(50);
        match quietly(|| start(&config, &mut runtimes, legacy, roots.path())) {
            Ok(Ok(())) => {}
            Ok(Err(refusal)) => failures.push(format!(
                "serve refused ({refusal}) what the check accepted:\n{text}"
            )),
            Err(panic) => failures.push(format!(
                "serve panicked ({panic}) on what the check accepted:\n{text}"
            )),
        }
        if failures.len() >= 5 {
            break;
        }
    }
    eprintln!(
        "{} samples; {accepted} configs accepted, {refused} refused, in {:?}",
        samples.len(),
        began.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        accepted >= cases / 10,
        "only {accepted} of {cases} configs accepted"
    );
}
