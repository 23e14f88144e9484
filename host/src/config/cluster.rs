//! `[state]` and `[cluster]`: where replicas share what they know
//! (PostgreSQL), and this replica's name and lease.

use super::defaults as d;
use super::SecretSource;
use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `[state]`: the PostgreSQL database replicas share. Without `url`, one
/// host keeps its state itself (tasks in SQLite, sessions in memory).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StateSection {
    /// `postgres://USER@HOST[:PORT]/DB` (no password: see `password`).
    pub url: Option<String>,
    /// Where the database password comes from (`{ file = "..." }` or
    /// `{ env = "VAR" }`), never the config itself.
    pub password: Option<SecretSource>,
    /// Connections to the database this replica opens at most (besides the
    /// one that listens for other replicas' events).
    pub max_connections: usize,
    /// How long connecting, or one query, may take, in milliseconds.
    pub timeout_ms: u64,
    /// SSE events kept per session stream for resuming on another replica.
    pub max_stream_events: usize,
    /// PEM certificates of the authorities trusted for the database's TLS
    /// (default: the system's). Whether TLS is used is the URL's
    /// `sslmode` (`disable`, `prefer`, the default, or `require`;
    /// `verify-ca` and `verify-full` mean `require`, for the certificate
    /// and the host name are checked whenever TLS is used).
    pub ca_file: Option<PathBuf>,
    /// Without `url`: the SQLite file that keeps plugins' key-value data
    /// (default: `keyvalue.db` in the host's state folder, beside the task
    /// store; `""` keeps it in memory, lost at exit).
    pub keyvalue_store: Option<PathBuf>,
}

impl Default for StateSection {
    fn default() -> Self {
        StateSection {
            url: None,
            password: None,
            max_connections: d::STATE_CONNECTIONS,
            timeout_ms: d::STATE_TIMEOUT_MS,
            max_stream_events: d::STATE_STREAM_EVENTS,
            ca_file: None,
            keyvalue_store: None,
        }
    }
}

/// `[cluster]`: this replica among others sharing `[state]`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSection {
    /// This replica's name: letters, digits, `-` and `_` (no dot: a task id
    /// is `<replica>.<random>`). Default: the host name and process id.
    pub replica: Option<String>,
    /// How long a replica's hold on its running tasks lasts unless renewed
    /// (it renews every third of it), in seconds. A task whose replica
    /// stopped is failed by another once its lease lapses.
    pub lease_secs: u64,
    /// On SIGTERM, how long the calls and tasks in progress may go on
    /// before the replica hands its tasks back and exits, in seconds
    /// (meanwhile it answers `/readyz` with 503, and stops sooner once
    /// nothing has been in progress for 2 s).
    pub drain_secs: u64,
    /// When a replica stops, run its unfinished tasks of tools annotated
    /// `idempotentHint: true` again on another replica instead of failing
    /// them.
    pub rerun_idempotent: bool,
}

impl Default for ClusterSection {
    fn default() -> Self {
        ClusterSection {
            replica: None,
            lease_secs: d::LEASE_SECS,
            drain_secs: d::DRAIN_SECS,
            rerun_idempotent: false,
        }
    }
}

/// The longest replica name.
pub(super) const MAX_REPLICA_NAME: usize = 64;

/// Whether `name` may name a replica.
pub fn valid_replica_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_REPLICA_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `[state]`: a PostgreSQL URL without a password in it, a password with
/// exactly one source (files relative to `base`), sane bounds.
pub(super) fn check_state(state: &mut StateSection, base: &Path) -> Result<()> {
    if let Some(url) = &state.url {
        check_url(url)?;
    }
    if let Some(file) = &mut state.ca_file {
        *file = base.join(&*file);
    }
    if let Some(source) = &mut state.password {
        anyhow::ensure!(
            source.file.is_some() != source.env.is_some(),
            "state.password needs exactly one of file and env"
        );
        if let Some(file) = &mut source.file {
            *file = base.join(&*file);
        }
    }
    anyhow::ensure!(
        (1..=1000).contains(&state.max_connections),
        "state.max_connections must be between 1 and 1000"
    );
    anyhow::ensure!(
        state.timeout_ms >= 100,
        "state.timeout_ms must be at least 100"
    );
    anyhow::ensure!(
        (1..=1_000_000).contains(&state.max_stream_events),
        "state.max_stream_events must be between 1 and 1000000"
    );
    Ok(())
}

/// A `postgres://` URL naming no password.
pub fn check_url(url: &str) -> Result<()> {
    let parsed =
        url::Url::parse(url).map_err(|e| anyhow::anyhow!("state.url is not a URL ({e})"))?;
    anyhow::ensure!(
        matches!(parsed.scheme(), "postgres" | "postgresql"),
        "state.url must be postgres://USER@HOST[:PORT]/DB"
    );
    anyhow::ensure!(
        parsed.password().is_none() && !parsed.query_pairs().any(|(key, _)| key == "password"),
        "state.url must not hold a password: give it as state.password = {{ file = \"...\" }} or {{ env = \"VAR\" }}"
    );
    anyhow::ensure!(
        parsed.host_str().is_some_and(|h| !h.is_empty()),
        "state.url names no host"
    );
    // What the database client makes of it (its options, `sslmode`'s word).
    client_url(url)
        .parse::<tokio_postgres::Config>()
        .map_err(|e| anyhow::anyhow!("state.url is not a PostgreSQL URL ({e})"))?;
    Ok(())
}

/// `url` as the database client reads it: libpq's `sslmode=verify-ca` and
/// `verify-full`, which operators write, become `require`, which means the
/// same here (TLS, the server's certificate and its host name checked:
/// the client never skips either), and which the client knows.
pub fn client_url(url: &str) -> std::borrow::Cow<'_, str> {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return url.into();
    };
    let verify = |value: &str| matches!(value, "verify-ca" | "verify-full");
    if !parsed
        .query_pairs()
        .any(|(key, value)| key == "sslmode" && verify(&value))
    {
        return url.into();
    }
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(key, value)| {
            let value = if key == "sslmode" && verify(&value) {
                "require".to_owned()
            } else {
                value.into_owned()
            };
            (key.into_owned(), value)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string().into()
}

/// `[cluster]`: a replica name that can prefix task ids, a lease of at
/// least 3 s (renewed every third).
pub(super) fn check_cluster(cluster: &ClusterSection) -> Result<()> {
    if let Some(name) = &cluster.replica {
        anyhow::ensure!(
            valid_replica_name(name),
            "cluster.replica {name:?} must be 1 to {MAX_REPLICA_NAME} letters, digits, '-' or '_' (no dot)"
        );
    }
    anyhow::ensure!(
        (3..=3600).contains(&cluster.lease_secs),
        "cluster.lease_secs must be between 3 and 3600"
    );
    anyhow::ensure!(
        cluster.drain_secs <= 3600,
        "cluster.drain_secs must be at most 3600"
    );
    Ok(())
}
