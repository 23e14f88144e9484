//! The shared PostgreSQL database: a pool of connections with deadlines,
//! and the schema, brought up to date at start under an advisory lock (so
//! replicas starting together do not race).

use crate::server::StoreError;
use anyhow::{Context as _, Result};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::time::Duration;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;
use tokio_postgres_rustls::MakeRustlsConnect;

/// Where the database is and how long to wait for it.
#[derive(Clone)]
pub struct Target {
    /// The connection settings (password included).
    pub config: tokio_postgres::Config,
    /// Connections in the pool at most.
    pub max_connections: usize,
    /// How long connecting, waiting for a connection, or one query may take.
    pub timeout: Duration,
    /// TLS, where the URL's `sslmode` asks for it.
    pub tls: MakeRustlsConnect,
}

impl Target {
    /// The database at `url` (`postgres://USER@HOST[:PORT]/DB`), with
    /// `password` when given, for replica `replica`; its TLS certificate
    /// checked against the authorities in `ca` (PEM), else the system's.
    pub fn new(
        url: &str,
        password: Option<String>,
        replica: &str,
        max_connections: usize,
        timeout: Duration,
        ca: Option<&[u8]>,
    ) -> Result<Self> {
        let mut config: tokio_postgres::Config = crate::config::state_client_url(url)
            .parse()
            .context("state.url is not a PostgreSQL URL")?;
        if let Some(password) = password {
            config.password(password);
        }
        config
            .application_name(format!("wasm-mcp {replica}"))
            .connect_timeout(timeout)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            // The server ends a query running past the deadline too.
            .options(format!("-c statement_timeout={}", timeout.as_millis()));
        Ok(Target {
            config,
            max_connections,
            timeout,
            tls: tls(ca)?,
        })
    }

    /// A pool of connections (opened when first needed).
    pub fn pool(&self) -> Result<Pool> {
        let manager = Manager::from_config(
            self.config.clone(),
            self.tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        Pool::builder(manager)
            .max_size(self.max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.timeout))
            .create_timeout(Some(self.timeout))
            .recycle_timeout(Some(self.timeout))
            .build()
            .context("making the database pool")
    }
}

/// TLS with ring, checking the server's certificate against the
/// authorities in `ca` (PEM) or, without, the system's.
fn tls(ca: Option<&[u8]>) -> Result<MakeRustlsConnect> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS for the shared database")?;
    let config = match ca {
        None => builder
            .with_platform_verifier()
            .context("the system's certificate authorities")?
            .with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in pem::parse_many(pem).context("state.ca_file is not PEM")? {
                if cert.tag() == "CERTIFICATE" {
                    roots
                        .add(cert.contents().to_vec().into())
                        .context("a certificate in state.ca_file")?;
                }
            }
            anyhow::ensure!(!roots.is_empty(), "state.ca_file holds no certificate");
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// A connection from `pool`, or why there is none.
pub(super) async fn connection(pool: &Pool) -> Result<deadpool_postgres::Object> {
    pool.get().await.map_err(|e| {
        let cause = match &e {
            deadpool_postgres::PoolError::Backend(error) => format!("{error:#}"),
            other => other.to_string(),
        };
        anyhow::anyhow!("the shared database is unreachable: {cause}")
    })
}

/// Runs `query` within `timeout`: a database that stops answering is an
/// error, not a hang.
pub(super) async fn within<T>(
    timeout: Duration,
    query: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(timeout, query)
        .await
        .map_err(|_| anyhow::anyhow!("the shared database did not answer within {timeout:?}"))?
}

/// Runs a store's `query` within `timeout` (`within`), its failure
/// classified (`classify`): what the task and session stores run.
pub(super) async fn within_store<T>(
    timeout: Duration,
    query: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    within(timeout, query).await.map_err(classify)
}

/// What kind of failure `error` (from a store's query) is, as the
/// [`StoreError`] it then carries: a write the database refused by a
/// constraint or a conflict with a concurrent transaction is a conflict,
/// a value or page the database cannot read is corrupt (by the error's
/// SQLSTATE, `kind`); anything else (a lost connection, no connection
/// from the pool, no answer in time) is left as it is, which reads as
/// unreachable. An error that already says its kind keeps it.
pub(super) fn classify(error: anyhow::Error) -> anyhow::Error {
    if error.is::<StoreError>() {
        return error;
    }
    let code = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<tokio_postgres::Error>())
        .and_then(tokio_postgres::Error::code);
    match code.and_then(kind) {
        Some(Kind::Conflict) => StoreError::Conflict(format!("{error:#}")).into(),
        Some(Kind::Corrupt) => StoreError::Corrupt(format!("{error:#}")).into(),
        None => error,
    }
}

/// A kind of store failure a SQLSTATE tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Conflict,
    Corrupt,
}

/// The kind of failure SQLSTATE `code` is, if it says: class 23
/// (integrity constraint violation: unique, foreign key, check, not null,
/// exclusion), 40001 (serialization failure) and 40P01 (deadlock) are
/// conflicts; class 22 (data exception: a value that does not convert)
/// and XX001/XX002 (a data or index page corrupted) are corrupt.
fn kind(code: &SqlState) -> Option<Kind> {
    match code.code() {
        "40001" | "40P01" => Some(Kind::Conflict),
        "XX001" | "XX002" => Some(Kind::Corrupt),
        class if class.starts_with("23") => Some(Kind::Conflict),
        class if class.starts_with("22") => Some(Kind::Corrupt),
        _ => None,
    }
}

/// Column `i` of `row`, a row of `whose` (what the row is, for the
/// message); a value that does not read as a `T` (a wrong type, a null
/// where none may be) is [`StoreError::Corrupt`], not a panic.
pub(super) fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    i: usize,
    whose: &dyn std::fmt::Display,
) -> Result<T> {
    row.try_get(i).map_err(|error| {
        let name = row.columns().get(i).map_or("?", |c| c.name());
        StoreError::Corrupt(format!("{whose}: column {name} does not read: {error}")).into()
    })
}

/// Column `i` of `row` (see `column`), a `bigint` that may not be
/// negative (a time, a size, a count).
pub(super) fn unsigned(row: &Row, i: usize, whose: &dyn std::fmt::Display) -> Result<u64> {
    let value: i64 = column(row, i, whose)?;
    u64::try_from(value).map_err(|_| {
        let name = row.columns().get(i).map_or("?", |c| c.name());
        StoreError::Corrupt(format!("{whose}: column {name} is negative ({value})")).into()
    })
}

/// The advisory lock replicas take to change the schema, one at a time.
const SCHEMA_LOCK: i64 = 0x0077_6173_6d6d_6370; // "wasmmcp"

/// Each step of the schema, in order; a database at version `n` has had
/// the first `n` applied. Steps are only ever added.
const STEPS: &[&str] = &[
    // 1: tasks, sessions, and events too big to send as a notification.
    "
    CREATE TABLE wasm_mcp_tasks (
        id text PRIMARY KEY,
        owner text,
        replica text NOT NULL,
        lease_until_ms bigint NOT NULL,
        wire text NOT NULL,
        method text NOT NULL,
        target text NOT NULL,
        status text NOT NULL,
        status_message text,
        created_ms bigint NOT NULL,
        updated_ms bigint NOT NULL,
        ttl_ms bigint NOT NULL,
        expires_ms bigint NOT NULL,
        outcome text,
        size bigint NOT NULL DEFAULT 0,
        input_requests text
    );
    CREATE INDEX wasm_mcp_tasks_by_owner ON wasm_mcp_tasks (owner, created_ms, id);
    CREATE INDEX wasm_mcp_tasks_by_expiry ON wasm_mcp_tasks (expires_ms);
    CREATE INDEX wasm_mcp_tasks_running ON wasm_mcp_tasks (lease_until_ms)
        WHERE status IN ('working', 'input_required');
    CREATE TABLE wasm_mcp_sessions (
        id text PRIMARY KEY,
        record text NOT NULL,
        touched_ms bigint NOT NULL
    );
    CREATE INDEX wasm_mcp_sessions_by_touch ON wasm_mcp_sessions (touched_ms);
    CREATE TABLE wasm_mcp_events (
        id bigserial PRIMARY KEY,
        payload text NOT NULL,
        at_ms bigint NOT NULL
    );
    ",
    // 2: the SSE events of session streams, for resuming on another
    // replica; `n` orders a session's events for trimming.
    "
    CREATE TABLE wasm_mcp_stream_events (
        n bigserial PRIMARY KEY,
        session text NOT NULL,
        stream bigint NOT NULL,
        seq bigint NOT NULL,
        text text NOT NULL
    );
    CREATE UNIQUE INDEX wasm_mcp_stream_events_by_stream
        ON wasm_mcp_stream_events (session, stream, seq);
    ",
    // 3: the call to run again when a task's replica stops.
    "ALTER TABLE wasm_mcp_tasks ADD COLUMN rerun text;",
    // 4: what a replica costs. A session's subscriptions in rows of their
    // own (a change writes the change, not the session), keyed by the
    // URI's SHA-256 (a URI may be longer than an index entry); a session's
    // stream events numbered by a counter of its own (`k`), so the cap
    // holds whatever the interleaving; both, and the events, go with
    // their session; answers to a task's questions addressed to the
    // replica running it. (Written to run again harmlessly.)
    "
    CREATE TABLE IF NOT EXISTS wasm_mcp_session_subscriptions (
        session text NOT NULL REFERENCES wasm_mcp_sessions (id) ON DELETE CASCADE,
        key bytea NOT NULL,
        uri text NOT NULL,
        PRIMARY KEY (session, key)
    );
    INSERT INTO wasm_mcp_session_subscriptions (session, key, uri)
        SELECT id, sha256(convert_to(uri, 'UTF8')), uri
        FROM wasm_mcp_sessions,
             jsonb_array_elements_text(record::jsonb -> 'subscriptions') AS uri
        WHERE jsonb_typeof(record::jsonb -> 'subscriptions') = 'array'
        ON CONFLICT DO NOTHING;
    UPDATE wasm_mcp_sessions
        SET record = jsonb_set(record::jsonb, '{subscriptions}', '[]'::jsonb)::text
        WHERE jsonb_typeof(record::jsonb -> 'subscriptions') = 'array'
          AND record::jsonb -> 'subscriptions' <> '[]'::jsonb;
    CREATE TABLE IF NOT EXISTS wasm_mcp_stream_counters (
        session text PRIMARY KEY REFERENCES wasm_mcp_sessions (id) ON DELETE CASCADE,
        last bigint NOT NULL
    );
    ALTER TABLE wasm_mcp_stream_events ADD COLUMN IF NOT EXISTS k bigint;
    CREATE INDEX IF NOT EXISTS wasm_mcp_stream_events_by_k ON wasm_mcp_stream_events (session, k);
    DELETE FROM wasm_mcp_stream_events e
        WHERE NOT EXISTS (SELECT 1 FROM wasm_mcp_sessions s WHERE s.id = e.session);
    DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'wasm_mcp_stream_events_session') THEN
            ALTER TABLE wasm_mcp_stream_events ADD CONSTRAINT wasm_mcp_stream_events_session
                FOREIGN KEY (session) REFERENCES wasm_mcp_sessions (id) ON DELETE CASCADE NOT VALID;
        END IF;
    END $$;
    CREATE TABLE IF NOT EXISTS wasm_mcp_answers (
        n bigserial PRIMARY KEY,
        task text NOT NULL,
        replica text NOT NULL,
        responses text NOT NULL,
        at_ms bigint NOT NULL
    );
    CREATE INDEX IF NOT EXISTS wasm_mcp_answers_by_task ON wasm_mcp_answers (task);
    CREATE INDEX IF NOT EXISTS wasm_mcp_answers_by_replica ON wasm_mcp_answers (replica, n);
    CREATE INDEX IF NOT EXISTS wasm_mcp_answers_by_age ON wasm_mcp_answers (at_ms);
    ",
    // 5: plugins' key-value data (`keyvalue.rs`): a row per key, its
    // bucket and key as bytes (byte order, NUL allowed), versions from one
    // sequence; a usage row per namespace, the lock its writes take turns
    // on. (Written to run again harmlessly.)
    "
    CREATE SEQUENCE IF NOT EXISTS wasm_mcp_kv_versions;
    CREATE TABLE IF NOT EXISTS wasm_mcp_kv (
        tenant text NOT NULL,
        plugin text NOT NULL,
        bucket bytea NOT NULL,
        key bytea NOT NULL,
        value bytea NOT NULL,
        version bigint NOT NULL,
        PRIMARY KEY (tenant, plugin, bucket, key)
    );
    CREATE TABLE IF NOT EXISTS wasm_mcp_kv_usage (
        tenant text NOT NULL,
        plugin text NOT NULL,
        keys bigint NOT NULL,
        bytes bigint NOT NULL,
        PRIMARY KEY (tenant, plugin)
    );
    ",
];

/// Brings the schema up to date (idempotent; replicas starting at once
/// take turns).
pub(super) async fn migrate(pool: &Pool) -> Result<()> {
    migrate_to(pool, STEPS.len()).await
}

/// Brings the schema up to version `known` (a test makes the database of
/// a previous version with it).
pub(super) async fn migrate_to(pool: &Pool, known: usize) -> Result<()> {
    let steps = &STEPS[..known];
    let mut db = connection(pool).await?;
    let tx = db.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS wasm_mcp_schema (version integer NOT NULL)")
        .await?;
    let version: i32 = match tx
        .query_opt("SELECT version FROM wasm_mcp_schema", &[])
        .await?
    {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO wasm_mcp_schema (version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    let known = steps.len() as i32;
    anyhow::ensure!(
        version <= known,
        "the shared database's schema is version {version}, newer than this host knows ({known}): upgrade this replica"
    );
    for (n, step) in steps.iter().enumerate().skip(version as usize) {
        tx.batch_execute(step)
            .await
            .with_context(|| format!("applying schema step {}", n + 1))?;
    }
    tx.execute("UPDATE wasm_mcp_schema SET version = $1", &[&known])
        .await?;
    tx.commit().await?;
    if version < known {
        tracing::info!(from = version, to = known, "shared database schema updated");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlstate_says_conflict_or_corrupt_and_the_rest_is_unreachable() {
        for code in [
            SqlState::UNIQUE_VIOLATION,
            SqlState::FOREIGN_KEY_VIOLATION,
            SqlState::CHECK_VIOLATION,
            SqlState::NOT_NULL_VIOLATION,
            SqlState::EXCLUSION_VIOLATION,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ] {
            assert_eq!(kind(&code), Some(Kind::Conflict), "{}", code.code());
        }
        for code in [
            SqlState::INVALID_TEXT_REPRESENTATION,
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            SqlState::CHARACTER_NOT_IN_REPERTOIRE,
            SqlState::DATA_CORRUPTED,
            SqlState::INDEX_CORRUPTED,
        ] {
            assert_eq!(kind(&code), Some(Kind::Corrupt), "{}", code.code());
        }
        for code in [
            SqlState::CONNECTION_FAILURE,
            SqlState::ADMIN_SHUTDOWN,
            SqlState::QUERY_CANCELED,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::DISK_FULL,
            SqlState::UNDEFINED_TABLE,
            SqlState::INTERNAL_ERROR,
        ] {
            assert_eq!(kind(&code), None, "{}", code.code());
        }
        // Errors that are not the database's stay what they are; a kind
        // said already is kept.
        let timeout = classify(anyhow::anyhow!("did not answer within 1s"));
        assert!(matches!(
            StoreError::of(timeout),
            StoreError::Unreachable(_)
        ));
        let said = classify(StoreError::Corrupt("task t1: bad".into()).into());
        assert!(matches!(StoreError::of(said), StoreError::Corrupt(_)));
    }
}
