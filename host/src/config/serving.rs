//! The checks `serve` would otherwise make only as it starts (or trip
//! over: axum panics on two routes at one path): the HTTP routes the
//! config adds beside the host's own, the URLs it names (`public_url`,
//! the JWKS, the traces endpoint), what `[http.auth]` needs to check a
//! token, the listen addresses' form, and the compile cache an OCI
//! `source` is kept in. Each problem names its key and, when the text
//! holds it, its line. What they cannot know (the environment, files,
//! the network, the command line's `--http`) stays with `serve`.

use super::Config;
use anyhow::Result;
use toml::de::{DeTable, DeValue};

/// The paths the host serves itself, whatever the config (the legacy
/// SSE ones too: `serve --legacy-sse` turns them on).
pub const HOST_PATHS: [&str; 5] = ["/healthz", "/readyz", "/metrics", "/sse", "/messages"];

/// The prefix of the paths the host serves its metadata under.
pub const WELL_KNOWN: &str = "/.well-known/";

/// The path profile `name` is served at: its `path`, else `[http] path`
/// then `/NAME`.
pub fn profile_path(config: &Config, name: &str) -> String {
    match &config.profiles[name].path {
        Some(path) => path.clone(),
        None => format!("{}/{name}", config.http.path.trim_end_matches('/')),
    }
}

/// Whether `path` is an absolute path a route can be made of: from `/`,
/// no query, fragment, route syntax (`{`, `}`, `*`, a segment from `:`)
/// or control or blank characters.
pub fn plain_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains(['?', '#', '{', '}', '*', ':'])
        && !path.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// Every problem of the config that `serve` would meet as it starts.
pub(super) fn check(config: &Config, text: &str) -> Result<()> {
    let lines = Lines::of(text);
    let mut problems = Vec::new();
    let mut note = |keys: &[&str], problem: String| {
        problems.push(match lines.line(keys) {
            Some(line) => format!("line {line}: {}: {problem}", keys.join(".")),
            None => format!("{}: {problem}", keys.join(".")),
        });
    };
    routes(config, &mut note);
    urls(config, &mut note);
    auth(config, &mut note);
    listens(config, &mut note);
    sources(config, &mut note);
    sizes(config, &mut note);
    times(config, &mut note);
    match problems.is_empty() {
        true => Ok(()),
        false => Err(anyhow::anyhow!(problems.join("\n"))),
    }
}

/// The profiles' paths: plain, and none served already (by the host, the
/// endpoint, another profile, or a server card), each with a server card
/// path of its own.
fn routes(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    let main = config.http.path.as_str();
    // `{`, `}`, `*` and a missing `/` are [http]'s own check's.
    if !plain_path(main) && main.starts_with('/') && !main.contains(['{', '}', '*']) {
        note(
            &["http", "path"],
            format!("{main:?} must be a plain absolute path (no ?, #, {{, }}, *, : or blanks)"),
        );
    }
    let mut taken: Vec<(String, String)> = Vec::new();
    // Each endpoint's server card is served at its path then /server-card.
    let cards: Vec<(String, String)> = std::iter::once((main.to_owned(), "[http] path".into()))
        .chain(
            config
                .profiles
                .keys()
                .map(|name| (profile_path(config, name), format!("profile {name}"))),
        )
        .map(|(path, whose)| (super::card::card_path(&path), whose))
        .collect();
    for (index, name) in config.profiles.keys().enumerate() {
        let path = profile_path(config, name);
        let card = &cards[index + 1].0;
        let written = config.profiles[name].path.is_some();
        let (keys, how): (Vec<&str>, &str) = match &config.profiles[name].path {
            Some(_) => (vec!["profiles", name, "path"], ""),
            None => (
                vec!["profiles", name],
                " (by default [http] path then /NAME; give it a path)",
            ),
        };
        let clash = if !plain_path(&path) {
            // A written path that is not plain at all is the profile's own check's.
            let reported = match written {
                true => !path.starts_with('/') || path.contains(['?', '#', '{', '}', '*', ':']),
                false => !plain_path(main),
            };
            (!reported)
                .then(|| "is not a plain absolute path (no ?, #, {, }, *, : or blanks)".to_owned())
        } else if path == main {
            Some("is [http] path, already served".to_owned())
        } else if HOST_PATHS.contains(&path.as_str()) || path.starts_with(WELL_KNOWN) {
            Some(format!(
                "is the host's own ({}, {} and {WELL_KNOWN}... are)",
                HOST_PATHS[..HOST_PATHS.len() - 1].join(", "),
                HOST_PATHS[HOST_PATHS.len() - 1]
            ))
        } else if let Some((_, whose)) = cards.iter().find(|(card, _)| *card == path) {
            Some(format!("is {whose}'s server card path"))
        } else if let Some((_, other)) = taken.iter().find(|(p, _)| *p == path) {
            Some(format!("is profile {other}'s path too"))
        } else {
            cards[..=index]
                .iter()
                .find(|(other, _)| other == card)
                .map(|(_, whose)| {
                    format!("has the server card path {card} of {whose} (a / at its end aside)")
                })
        };
        if let Some(clash) = clash {
            note(&keys, format!("its path {path}{how} {clash}"));
        }
        taken.push((path, name.clone()));
    }
}

/// `public_url`, the JWKS (or the issuer's discovery document) and the
/// traces endpoint: URLs the host can use.
fn urls(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    if let Some(url) = &config.http.public_url {
        if let Err(e) = web_url(url, false) {
            note(&["http", "public_url"], e.to_string());
        }
    }
    let jwt = config.http.auth.as_ref().and_then(|a| a.jwt.as_ref());
    if let Some(jwt) = jwt {
        if let Some(url) = &jwt.jwks_url {
            if let Err(e) = web_url(url, true) {
                note(&["http", "auth", "jwt", "jwks_url"], e.to_string());
            }
        } else if jwt.discovery {
            let url = format!(
                "{}/.well-known/openid-configuration",
                jwt.issuer.trim_end_matches('/')
            );
            if let Err(e) = web_url(&url, true) {
                note(
                    &["http", "auth", "jwt", "issuer"],
                    format!("with discovery = true, its discovery document {e}"),
                );
            }
        }
    }
    if let Some(url) = &config.traces.endpoint {
        if let Err(e) = web_url(url, false) {
            note(&["traces", "endpoint"], e.to_string());
        }
    }
}

/// Why a configured URL cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// It does not parse.
    #[error("{url:?} is not a URL ({source}): write it as https://HOST/PATH")]
    Malformed {
        /// The URL as written.
        url: String,
        /// Why it does not parse.
        source: url::ParseError,
    },
    /// It has no host.
    #[error("{0:?} names no host")]
    NoHost(String),
    /// Plain `http` to a host other than loopback, where `https` is required.
    #[error("{0:?} must be https:// (plain http only on loopback)")]
    Insecure(String),
    /// A scheme other than `http` and `https`.
    #[error("{url:?} is {scheme}://, not http:// or https://")]
    Scheme {
        /// The URL as written.
        url: String,
        /// Its scheme.
        scheme: String,
    },
}

/// `url` as an `http(s)://HOST/...` URL; with `secure`, plain `http`
/// only on loopback (what a key set is fetched over).
pub fn web_url(url: &str, secure: bool) -> Result<(), UrlError> {
    let parsed = url::Url::parse(url).map_err(|source| UrlError::Malformed {
        url: url.to_owned(),
        source,
    })?;
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(UrlError::NoHost(url.to_owned())),
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if !secure || loopback => Ok(()),
        "http" => Err(UrlError::Insecure(url.to_owned())),
        other => Err(UrlError::Scheme {
            url: url.to_owned(),
            scheme: other.to_owned(),
        }),
    }
}

/// `[http.auth]`: some way to accept a token; a `public_url` when the
/// configured address is every interface.
fn auth(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    let Some(auth) = &config.http.auth else {
        return;
    };
    if auth.tokens.is_empty() && auth.tokens_env.is_none() && auth.jwt.is_none() {
        note(
            &["http", "auth"],
            "names no token (tokens, tokens_env) and no JWT check ([http.auth.jwt])".into(),
        );
    }
    if let Some(var) = &auth.tokens_env {
        if var.is_empty() || var.contains(['=', '\0']) {
            note(
                &["http", "auth", "tokens_env"],
                format!("{var:?} is not a variable name"),
            );
        }
    }
    let jwt = auth.jwt.as_ref();
    if let Some(var) = jwt.and_then(|j| j.secret_env.as_ref()) {
        if var.is_empty() || var.contains(['=', '\0']) {
            note(
                &["http", "auth", "jwt", "secret_env"],
                format!("{var:?} is not a variable name"),
            );
        }
    }
    let everywhere = config
        .http
        .listen
        .as_deref()
        .and_then(|l| l.parse::<std::net::SocketAddr>().ok())
        .is_some_and(|a| a.ip().is_unspecified());
    if everywhere && config.http.public_url.is_none() {
        note(
            &["http", "public_url"],
            "is needed with [http.auth] when listening on every interface: the \
             authorization metadata must name the URL clients use"
                .into(),
        );
    }
}

/// `[http] listen` and `[metrics] listen`: `HOST:PORT`.
fn listens(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    for (keys, listen) in [
        (["http", "listen"], &config.http.listen),
        (["metrics", "listen"], &config.metrics.listen),
    ] {
        if let Some(listen) = listen {
            if !listen_address(listen) {
                note(
                    &keys,
                    format!("{listen:?} is not HOST:PORT (like 127.0.0.1:8080 or [::1]:8080)"),
                );
            }
        }
    }
}

/// Whether `listen` has the form of an address to listen on: an IP
/// address and port, or a host name and port.
pub fn listen_address(listen: &str) -> bool {
    if listen.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let Some((host, port)) = listen.rsplit_once(':') else {
        return false;
    };
    port.parse::<u16>().is_ok()
        && !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// A plugin with an OCI `source` is kept in the compile cache's folder.
fn sources(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    let no_cache = config
        .server
        .cache_dir
        .as_ref()
        .is_some_and(|d| d.as_os_str().is_empty());
    for (name, plugin) in &config.plugins {
        if plugin.source.is_some() && no_cache {
            note(
                &["plugins", name, "source"],
                "needs the compile cache, where pulled plugins are kept \
                 ([server] cache_dir is \"\", which turns it off)"
                    .into(),
            );
        }
    }
}

/// The most any size in MiB may be (1 TiB): its bytes fit in any count
/// the host keeps them in.
pub const MAX_MB: u64 = 1 << 20;

/// Sizes in MiB and KiB of at most 1 TiB (the host counts in bytes).
fn sizes(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    let (s, h, t) = (&config.server, &config.http, &config.tasks);
    let mut sizes: Vec<(Vec<String>, u64, u64)> = Vec::new();
    let mut add = |keys: &[&str], value: u64, per_mb: u64| {
        sizes.push((keys.iter().map(|k| k.to_string()).collect(), value, per_mb));
    };
    add(&["server", "max_plugin_mb"], s.max_plugin_mb, 1);
    add(&["server", "cache_max_mb"], s.cache_max_mb, 1);
    add(&["server", "skills_mb"], s.skills_mb, 1);
    add(&["server", "skill_file_kb"], s.skill_file_kb, 1024);
    add(&["server", "max_requests_mb"], s.max_requests_mb as u64, 1);
    add(
        &["server", "max_requests_mb_per_principal"],
        s.max_requests_mb_per_principal as u64,
        1,
    );
    add(
        &["server", "oci_max_manifest_kb"],
        s.oci_max_manifest_kb as u64,
        1024,
    );
    add(
        &["server", "oci_max_token_kb"],
        s.oci_max_token_kb as u64,
        1024,
    );
    add(&["http", "max_body_mb"], h.max_body_mb as u64, 1);
    if let Some(jwt) = h.auth.as_ref().and_then(|a| a.jwt.as_ref()) {
        add(
            &["http", "auth", "jwt", "jwks_max_kb"],
            jwt.jwks_max_kb as u64,
            1024,
        );
    }
    add(&["tasks", "max_stored_mb"], t.max_stored_mb as u64, 1);
    add(
        &["tasks", "max_stored_mb_per_owner"],
        t.max_stored_mb_per_owner as u64,
        1,
    );
    add(&["tasks", "max_result_mb"], t.max_result_mb as u64, 1);
    add(&["audit", "max_file_mb"], config.audit.max_file_mb, 1);
    let l = &config.limits;
    add(&["limits", "max_result_mb"], l.max_result_mb as u64, 1);
    add(&["limits", "max_message_kb"], l.max_message_kb as u64, 1024);
    add(&["limits", "max_view_kb"], l.max_view_kb as u64, 1024);
    for (name, plugin) in &config.plugins {
        let l = &plugin.limits;
        if let Some(mb) = l.max_result_mb {
            add(&["plugins", name, "limits", "max_result_mb"], mb as u64, 1);
        }
        if let Some(kb) = l.max_view_kb {
            add(&["plugins", name, "limits", "max_view_kb"], kb as u64, 1024);
        }
        if let Some(kb) = l.max_message_kb {
            add(
                &["plugins", name, "limits", "max_message_kb"],
                kb as u64,
                1024,
            );
        }
    }
    for (keys, value, per_mb) in sizes {
        if value > MAX_MB * per_mb {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            note(
                &keys,
                format!("must be at most {} (1 TiB)", MAX_MB * per_mb),
            );
        }
    }
}

/// The longest any time may be, in seconds (10 years): a deadline that
/// far is still a point in time the clock can name.
pub const MAX_SECS: u64 = 10 * 365 * 24 * 3600;

/// Times in seconds and milliseconds of at most 10 years.
fn times(config: &Config, note: &mut impl FnMut(&[&str], String)) {
    let (s, h, t, l) = (&config.server, &config.http, &config.tasks, &config.limits);
    let (ms, secs) = (1000, 1);
    let mut times: Vec<(Vec<&str>, u64, u64)> = vec![
        (vec!["server", "list_ttl_ms"], s.list_ttl_ms, ms),
        (vec!["server", "input_timeout_ms"], s.input_timeout_ms, ms),
        (vec!["server", "startup_wait_ms"], s.startup_wait_ms, ms),
        (
            vec!["server", "stdin_eof_grace_ms"],
            s.stdin_eof_grace_ms,
            ms,
        ),
        (vec!["server", "oci_poll_secs"], s.oci_poll_secs, secs),
        (
            vec!["server", "oci_pull_timeout_secs"],
            s.oci_pull_timeout_secs,
            secs,
        ),
        (vec!["http", "session_idle_secs"], h.session_idle_secs, secs),
        (vec!["http", "resume_grace_secs"], h.resume_grace_secs, secs),
        (
            vec!["http", "header_timeout_secs"],
            h.header_timeout_secs,
            secs,
        ),
        (vec!["http", "body_timeout_secs"], h.body_timeout_secs, secs),
        (vec!["http", "idle_timeout_secs"], h.idle_timeout_secs, secs),
        (vec!["tasks", "ttl_ms"], t.ttl_ms, ms),
        (vec!["tasks", "max_ttl_ms"], t.max_ttl_ms, ms),
        (vec!["tasks", "poll_interval_ms"], t.poll_interval_ms, ms),
        (vec!["tasks", "after_ms"], t.after_ms, ms),
        (vec!["limits", "call_timeout_ms"], l.call_timeout_ms, ms),
        (vec!["limits", "load_timeout_ms"], l.load_timeout_ms, ms),
    ];
    if let Some(jwt) = h.auth.as_ref().and_then(|a| a.jwt.as_ref()) {
        times.push((
            vec!["http", "auth", "jwt", "jwks_refresh_secs"],
            jwt.jwks_refresh_secs,
            secs,
        ));
        times.push((
            vec!["http", "auth", "jwt", "jwks_min_refresh_secs"],
            jwt.jwks_min_refresh_secs,
            secs,
        ));
        times.push((
            vec!["http", "auth", "jwt", "jwks_timeout_ms"],
            jwt.jwks_timeout_ms,
            ms,
        ));
    }
    for (name, plugin) in &config.plugins {
        for (key, value) in [
            ("call_timeout_ms", plugin.limits.call_timeout_ms),
            ("load_timeout_ms", plugin.limits.load_timeout_ms),
        ] {
            if let Some(value) = value {
                times.push((vec!["plugins", name, "limits", key], value, ms));
            }
        }
    }
    for (keys, value, per_sec) in times {
        if value > MAX_SECS * per_sec {
            note(
                &keys,
                format!("must be at most {} (10 years)", MAX_SECS * per_sec),
            );
        }
    }
}

/// The lines of a config's keys.
pub(super) struct Lines<'a> {
    table: Option<toml::Spanned<DeTable<'a>>>,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// The keys of `text` (none when it is not TOML).
    pub(super) fn of(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines {
            table: DeTable::parse(text).ok(),
            starts,
        }
    }

    /// The 1-based line of the key at `keys`, or of the deepest table on
    /// the way that is written.
    pub(super) fn line(&self, keys: &[&str]) -> Option<usize> {
        let mut table = self.table.as_ref()?.get_ref();
        let mut found = None;
        for key in keys {
            let Some((k, value)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key) else {
                break;
            };
            found = Some(k.span().start);
            match value.get_ref() {
                DeValue::Table(inner) => table = inner,
                _ => break,
            }
        }
        let offset = found?;
        Some(self.starts.partition_point(|&start| start <= offset))
    }
}
