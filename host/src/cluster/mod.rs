//! Replicas sharing one PostgreSQL database (`[state] url`): the tasks,
//! the handshake sessions and the server-wide events every replica serves
//! and hears. [`connect`] opens it and gives the server its
//! [`Backends`]; without `[state]`, a host keeps all of it itself.

mod bus;
mod database;
mod keyvalue;
mod sessions;
mod tasks;
#[cfg(test)]
mod tests;
pub mod wire;

pub use bus::PgBus;
pub use database::Target;
pub use keyvalue::PgKeyValue;
pub use sessions::{PgSessions, PgStreamEvents};
pub use tasks::PgTasks;

use crate::config::{valid_replica_name, Config};
use crate::server::Backends;
use anyhow::{Context as _, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The largest `[state] ca_file` read.
const MAX_CA_BYTES: u64 = 1 << 20;

/// This replica's name: `[cluster] replica`, else the host name and the
/// process id (made a valid name: no dots).
pub fn replica_name(config: &Config) -> String {
    if let Some(name) = &config.cluster.replica {
        return name.clone();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect::<String>();
    let host = if host.is_empty() { "host".into() } else { host };
    let name = format!("{host}-{}", std::process::id());
    debug_assert!(valid_replica_name(&name));
    name
}

/// The stores and the bus of replica `replica` in the shared database
/// `config` names (`None` without `[state] url`), sessions at most
/// `max_sessions`. The database is reached in the background: the schema
/// brought up to date, then the tasks this replica's previous run left
/// failed, retrying while it cannot be reached (saying so in the log);
/// until then the replica is not ready (`Backends::reached`).
pub async fn connect(
    config: &Config,
    replica: &str,
    max_sessions: usize,
) -> Result<Option<Backends>> {
    let Some(url) = &config.state.url else {
        return Ok(None);
    };
    let timeout = Duration::from_millis(config.state.timeout_ms);
    let target = target(config, url, replica).await?;
    let pool = target.pool()?;
    let lease = Duration::from_secs(config.cluster.lease_secs);
    let rerun = config.cluster.rerun_idempotent;
    let tasks = PgTasks::new(pool.clone(), replica, lease, timeout, rerun);
    let reached = Arc::new(AtomicBool::new(false));
    tokio::spawn(reach(
        pool.clone(),
        tasks.clone(),
        timeout,
        redacted(url),
        reached.clone(),
    ));
    Ok(Some(Backends {
        bus: PgBus::start(pool.clone(), target, replica),
        tasks: Box::new(tasks),
        tasks_failed: Arc::default(),
        sessions: Arc::new(PgSessions::new(pool.clone(), max_sessions, timeout)),
        keyvalue: Some(Arc::new(PgKeyValue::once_reached(
            pool.clone(),
            timeout,
            reached.clone(),
        ))),
        stream_events: Some(Arc::new(PgStreamEvents::new(
            pool,
            config.state.max_stream_events,
            timeout,
        ))),
        replica: Some(replica.to_owned()),
        reached: Some(reached),
    }))
}

/// The shared database at `url` as `config` reaches it (its password
/// and certificate authorities read off the async workers), for replica
/// `replica`.
async fn target(config: &Config, url: &str, replica: &str) -> Result<Target> {
    let source = config.state.password.clone();
    let password = match source {
        Some(source) => Some(
            tokio::task::spawn_blocking(move || source.read())
                .await?
                .map_err(|why| anyhow::anyhow!("state.password: {why}"))?,
        ),
        None => None,
    };
    let ca = match config.state.ca_file.clone() {
        Some(path) => Some(
            tokio::task::spawn_blocking(move || {
                crate::files::read_regular(&path, MAX_CA_BYTES)
                    .with_context(|| format!("reading state.ca_file {}", path.display()))
            })
            .await??,
        ),
        None => None,
    };
    Target::new(
        url,
        password,
        replica,
        config.state.max_connections,
        Duration::from_millis(config.state.timeout_ms),
        ca.as_deref(),
    )
}

/// The key-value store of plugin data in the shared database `config`
/// names (`None` without `[state] url`), its schema brought up to date:
/// what `wasm-mcp tenant` reads and deletes.
pub async fn keyvalue_store(config: &Config) -> Result<Option<PgKeyValue>> {
    let Some(url) = &config.state.url else {
        return Ok(None);
    };
    let target = target(config, url, "tenant-command").await?;
    let pool = target.pool()?;
    database::within(target.timeout, database::migrate(&pool))
        .await
        .with_context(|| format!("reaching the shared database ({})", redacted(url)))?;
    Ok(Some(PgKeyValue::new(pool, target.timeout)))
}

/// Reaches the shared database: the schema brought up to date, then the
/// tasks this replica's previous run left failed; retries until both are
/// done, then sets `reached`.
async fn reach(
    pool: deadpool_postgres::Pool,
    tasks: PgTasks,
    timeout: Duration,
    database: String,
    reached: Arc<AtomicBool>,
) {
    let mut pause = Duration::from_millis(250);
    loop {
        let ready = async {
            database::within(timeout, database::migrate(&pool)).await?;
            tasks.fail_left_behind().await
        };
        match ready.await {
            Ok(()) => break,
            Err(error) => tracing::warn!("waiting for the shared database ({database}): {error:#}"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
    tracing::info!(%database, "sharing state with other replicas");
    reached.store(true, Ordering::Relaxed);
}

/// `url` fit for the log (it holds no password: the config refuses one).
fn redacted(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| "?".into(), |u| u.to_string())
}
