//! The config file as operators write it: what parses, what is refused
//! and why.

use super::{Config, Mode, SignerIdentity, SpareMode};
use std::path::Path;

#[test]
fn defaults_and_errors_with_line_numbers() {
    let here = Path::new(".");
    let c = Config::parse("", here).unwrap();
    assert_eq!(c.server.page_size, 100);
    let c = Config::parse("[limits]\nmemory_mb = 64\n", here).unwrap();
    assert_eq!(c.limits.memory_mb, 64);
    let e = error("[limits]\nmemory_mb = \"lots\"\n");
    assert!(e.contains("line 2"), "{e}");
    let e = error("[server]\nplugin = \"x\"\n");
    assert!(e.contains("unknown field"), "{e}");
    assert_eq!(c.server.max_instances, 1000);
    let c = Config::parse("[server]\nmax_instances = 4\n", here).unwrap();
    assert_eq!(c.server.max_instances, 4);
    for wrong in [0, 4097] {
        let e = error(&format!("[server]\nmax_instances = {wrong}\n"));
        assert!(
            e.contains("server.max_instances must be from 1 to 4096"),
            "{e}"
        );
    }
}

#[test]
fn registry_logins_take_a_password_from_a_secret_source_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pw"), "hunter2\n").unwrap();
    let c = Config::parse(
        "[registries.\"r.example:5000\"]\nusername = \"ops\"\npassword = { file = \"pw\" }\n",
        dir.path(),
    )
    .unwrap();
    let login = &c.registries["r.example:5000"];
    assert_eq!(login.username, "ops");
    assert_eq!(login.password.read().unwrap(), "hunter2");
    for (wrong, expected) in [
        (
            "[registries.r]\nusername = \"u\"\npassword = \"plain\"\n",
            "invalid type",
        ),
        (
            "[registries.r]\nusername = \"u\"\npassword = {}\n",
            "exactly one of file and env",
        ),
        (
            "[registries.\"r/x\"]\nusername = \"u\"\npassword = { env = \"P\" }\n",
            "not a registry",
        ),
    ] {
        let e = error(wrong);
        assert!(e.contains(expected), "{wrong}: {e}");
    }
}

#[test]
fn the_mcp_path_cannot_take_the_hosts_own_paths() {
    for taken in ["/healthz", "/metrics", "/sse", "/.well-known/x", "/a/{id}"] {
        let e = error(&format!("[http]\npath = \"{taken}\"\n"));
        assert!(e.contains(&format!("http.path {taken}")), "{e}");
    }
    let c = Config::parse("[http]\npath = \"/api/mcp\"\n", Path::new(".")).unwrap();
    assert_eq!(c.http.path, "/api/mcp");
}

#[test]
fn an_oci_source_must_be_a_reference() {
    let c = Config::parse(
        "[plugins.notes]\nsource = \"oci://r.example/tools/notes:1\"\n",
        Path::new("."),
    )
    .unwrap();
    assert!(c.plugins["notes"].source.is_some());
    assert_eq!(c.server.oci_poll_secs, 300);
    let e = error("[plugins.notes]\nsource = \"r.example/tools/notes:1\"\n");
    assert!(e.contains("plugins.notes.source"), "{e}");
}

fn error(text: &str) -> String {
    format!("{:#}", Config::parse(text, Path::new(".")).unwrap_err())
}

#[test]
fn roots_and_grants_are_checked_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    std::fs::create_dir(base.join("data")).unwrap();
    let good = "[roots.data]\npath = \"data\"\nmode = \"read-write\"\n\n[plugins.notes]\nroots = [\"data\"]\nhosts = [\"*.example.com\"]\n[plugins.notes.limits]\nmemory_mb = 512\n";
    let c = Config::parse(good, base).unwrap();
    assert_eq!(c.roots["data"].mode, Mode::ReadWrite);
    assert!(c.roots["data"].path.get_ref().is_absolute());
    assert_eq!(c.max_memory_bytes(), 512 << 20);

    let e = format!(
        "{:#}",
        Config::parse("[roots.data]\npath = \"missing\"\n", base).unwrap_err()
    );
    assert!(e.contains("line 2") && e.contains("missing"), "{e}");
    let e = format!(
        "{:#}",
        Config::parse("[plugins.x]\n\nroots = [\"nope\"]\n", base).unwrap_err()
    );
    assert!(e.contains("line 3") && e.contains("nope"), "{e}");
    let e = format!(
        "{:#}",
        Config::parse("[plugins.x]\nhosts = [\"http://a\"]\n", base).unwrap_err()
    );
    assert!(e.contains("line 2"), "{e}");
    let e = format!(
        "{:#}",
        Config::parse("[roots.data]\npath = \"data\"\nmode = \"rw\"\n", base).unwrap_err()
    );
    assert!(e.contains("line 3"), "{e}");
    let e = format!(
        "{:#}",
        Config::parse("[plugins.x.limits]\ncall_timeout_ms = 0\n", base).unwrap_err()
    );
    assert!(e.contains("plugins.x.limits.call_timeout_ms"), "{e}");
    let e = format!(
        "{:#}",
        Config::parse("[limits]\ncalls_per_instance = 0\n", base).unwrap_err()
    );
    assert!(
        e.contains("limits.calls_per_instance must be at least 1"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        Config::parse("[plugins.x.limits]\ncalls_per_instance = 1000001\n", base).unwrap_err()
    );
    assert!(e.contains("at most 1000000"), "{e}");
    let c = Config::parse("[plugins.x.limits]\ncalls_per_instance = 50\n", base).unwrap();
    assert_eq!(c.limits.with(&c.plugins["x"].limits).calls_per_instance, 50);
    assert_eq!(c.limits.calls_per_instance, 1);
    let c = Config::parse(
        "[limits]\nspare_instance = \"never\"\n[plugins.x.limits]\nspare_instance = \"always\"\n",
        base,
    )
    .unwrap();
    assert_eq!(c.limits.spare_instance, SpareMode::Never);
    let x = c.limits.with(&c.plugins["x"].limits);
    assert_eq!(x.spare_instance, SpareMode::Always);
    let c = Config::parse("", base).unwrap();
    assert_eq!(c.limits.spare_instance, SpareMode::Auto);
    for wrong in ["true", "\"yes\""] {
        let text = format!("[limits]\nspare_instance = {wrong}\n");
        let e = format!("{:#}", Config::parse(&text, base).unwrap_err());
        assert!(e.contains("spare_instance") && e.contains("line 2"), "{e}");
    }
    let text = "[plugins.x.limits]\nspare_instance = \"sometimes\"\n";
    let e = format!("{:#}", Config::parse(text, base).unwrap_err());
    assert!(
        e.contains("plugins.x.limits.spare_instance")
            && [r#""auto""#, r#""always""#, r#""never""#]
                .iter()
                .all(|w| e.contains(w)),
        "{e}"
    );
}

#[test]
fn the_shared_state_takes_no_password_in_its_url_and_replicas_no_dotted_names() {
    let base = std::path::Path::new("/etc/wasm-mcp");
    let parse = |text: &str| Config::parse(text, base);
    let ok = parse(
        "[state]\nurl = \"postgres://app@db:5432/mcp?sslmode=require\"\npassword = { file = \"pw\" }\n\
         ca_file = \"ca.pem\"\n[cluster]\nreplica = \"r-1_a\"\n",
    )
    .unwrap();
    assert_eq!(ok.state.ca_file.unwrap(), base.join("ca.pem"));
    assert_eq!(ok.state.password.unwrap().file.unwrap(), base.join("pw"));
    // libpq's verifying modes are taken, as `require` (which checks the
    // certificate and the host name here); a mode nobody knows is not.
    for mode in ["verify-full", "verify-ca"] {
        let url = format!("postgres://app@db:5432/mcp?application_name=x&sslmode={mode}");
        parse(&format!("[state]\nurl = \"{url}\"\n")).unwrap();
        let client: tokio_postgres::Config = super::state_client_url(&url).parse().unwrap();
        assert_eq!(
            client.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        assert_eq!(client.get_application_name(), Some("x"));
    }
    let plain = "postgres://app@db/mcp?sslmode=disable";
    assert_eq!(super::state_client_url(plain), plain);
    let error = format!(
        "{:#}",
        parse("[state]\nurl = \"postgres://app@db/mcp?sslmode=verify-some\"").unwrap_err()
    );
    assert!(error.contains("not a PostgreSQL URL"), "{error}");
    for (text, said) in [
        (
            "[state]\nurl = \"postgres://app:secret@db/mcp\"",
            "must not hold a password",
        ),
        (
            "[state]\nurl = \"postgres://app@db/mcp?password=secret\"",
            "must not hold a password",
        ),
        (
            "[state]\nurl = \"mysql://app@db/mcp\"",
            "must be postgres://",
        ),
        (
            "[state]\npassword = { file = \"a\", env = \"B\" }",
            "exactly one of file and env",
        ),
        ("[state]\nmax_connections = 0", "max_connections"),
        ("[cluster]\nreplica = \"r.1\"", "no dot"),
        ("[cluster]\nreplica = \"\"", "no dot"),
        ("[cluster]\nlease_secs = 1", "lease_secs"),
    ] {
        let error = format!("{:#}", parse(text).unwrap_err());
        assert!(error.contains(said), "{text}: {error}");
    }
}

#[test]
fn access_profiles_tool_search_audit_and_tls_are_checked() {
    let here = Path::new(".");
    let c = Config::parse(
        "[server]\ntool_search = \"only\"\ncalls_per_sec_per_principal = 2.5\n\
         [plugins.p]\nscopes = [\"a:b\"]\nclaims = { groups = [\"x\", \"y\"] }\n\
         [plugins.p.tools.t]\nscopes = [\"c\"]\ncalls_per_sec = 1\n\
         [profiles.files]\ninclude = [\"p.*\"]\n\
         [audit]\nfile = \"audit.jsonl\"\n\
         [http]\ntls_cert_file = \"c.pem\"\ntls_key_file = \"k.pem\"\n",
        here,
    )
    .unwrap();
    assert_eq!(
        c.server.tool_search,
        super::ToolSearchSetting::Only(super::access::OnlyWord::Only)
    );
    assert_eq!(c.plugins["p"].tools["t"].calls_per_sec, Some(1.0));
    assert_eq!(c.audit.file.as_deref(), Some(Path::new("./audit.jsonl")));
    assert_eq!(c.http.tls_key_file.as_deref(), Some(Path::new("./k.pem")));
    for (bad, says) in [
        ("[server]\ntool_search = \"some\"\n", "tool_search"),
        ("[server]\ncalls_per_sec_per_principal = -1\n", "calls_per_sec_per_principal"),
        ("[plugins.p]\nscopes = [\"two words\"]\n", "not a valid OAuth scope"),
        ("[plugins.p]\nscopes = [\"quo\\\"te\"]\n", "not a valid OAuth scope"),
        ("[plugins.p]\nclaims = { groups = [] }\n", "lists no value"),
        ("[plugins.p.tools.t]\ncalls_per_sec = 0\n", "calls_per_sec must be above 0"),
        ("[plugins.p.prompts.q]\ncalls_per_sec = 1\n", "for tools only"),
        ("[profiles.\"a b\"]\n", "a profile's name"),
        ("[profiles.x]\ninclude = [\"nodot\"]\n", "PLUGIN.NAME pattern"),
        ("[profiles.x]\npath = \"mcp\"\n", "plain absolute path"),
        ("[http]\ntls_cert_file = \"c.pem\"\n", "go together"),
        ("[audit]\nmax_file_mb = 0\n", "max_file_mb"),
        (
            "[http.auth.jwt]\nissuer = \"i\"\naudience = \"a\"\nsecret_env = \"S\"\ndiscovery = true\n",
            "exactly one of",
        ),
    ] {
        let e = error(bad);
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn a_signers_subject_star_never_spans_an_at_sign() {
    let identity = |subject: &str| SignerIdentity {
        issuer: "https://token.actions.githubusercontent.com".to_owned(),
        subject: subject.to_owned(),
        repository: None,
        source_repository: None,
    };
    let issuer = "https://token.actions.githubusercontent.com";
    let accepts =
        |pattern: &str, subject: &str| identity(pattern).accepts(issuer, subject, None, "r/x");
    let main = "https://github.com/acme/*@refs/heads/main";
    assert!(accepts(
        main,
        "https://github.com/acme/x/.github/workflows/ci.yml@refs/heads/main"
    ));
    assert!(!accepts(
        main,
        "https://github.com/acme/x/.github/workflows/ci.yml@refs/heads/evil@refs/heads/main"
    ));
    assert!(accepts("*@acme.example", "ops@acme.example"));
    assert!(!accepts(
        "*@acme.example",
        "mallory@evil.example@acme.example"
    ));
    assert!(accepts("exact", "exact") && !accepts("exact", "exactly"));
    assert!(accepts("a*b*c", "axxbyyc") && !accepts("a*b*c", "axxbyy"));
    assert!(accepts("*", "") && !accepts("", "x"));
    // A source repository, when asked for, must be named and match.
    let mut bound = identity("*");
    bound.source_repository = Some("https://github.com/acme/*".to_owned());
    assert!(bound.accepts(issuer, "s", Some("https://github.com/acme/tools"), "r/x"));
    assert!(!bound.accepts(issuer, "s", Some("https://github.com/mallory/tools"), "r/x"));
    assert!(!bound.accepts(issuer, "s", None, "r/x"));
}

#[test]
fn call_tools_takes_plugin_tool_patterns_and_its_bounds_have_defaults() {
    let here = Path::new(".");
    let c = Config::parse(
        "[plugins.code]\ncall_tools = [\"filesystem.*\", \"*.read\"]\n[plugins.code.limits]\ntool_calls = 5\n",
        here,
    )
    .unwrap();
    assert_eq!(c.plugins["code"].call_tools, ["filesystem.*", "*.read"]);
    let limits = c.limits.with(&c.plugins["code"].limits);
    assert_eq!(
        (
            limits.tool_calls,
            limits.tool_call_depth,
            limits.tool_call_mb
        ),
        (5, 2, 16)
    );
    let e = error(
        "[plugins.code]\ncall_tools = [\"*\"]\n[plugins.code.limits]\ncalls_per_instance = 4\n",
    );
    assert!(
        e.contains("plugins.code: call_tools and calls_per_instance above 1 do not go together"),
        "{e}"
    );
    for wrong in ["filesystem", ".read", "filesystem.", ""] {
        let e = error(&format!("[plugins.code]\ncall_tools = [{wrong:?}]\n"));
        assert!(
            e.contains(&format!(
                "plugins.code.call_tools: {wrong:?} is not a PLUGIN.TOOL pattern"
            )),
            "{e}"
        );
    }
}
