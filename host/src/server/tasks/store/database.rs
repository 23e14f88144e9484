//! The tasks database of one machine: embedded SQLite, so a task outlives
//! the process that ran it. Several hosts may share one file; each marks
//! its tasks with an instance id it holds a file lock for, so a host that
//! starts can tell tasks left running by a host that died (their lock is
//! free) from tasks of a host still running. Blocking: [`super::Sqlite`]
//! runs it on blocking threads.

use super::{outcome_text, Record, Status, Usage, Wire};
use anyhow::{Context as _, Result};
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde_json::Value;
use std::fs::File;
use std::path::{Path, PathBuf};

fn usage(row: &Row<'_>) -> rusqlite::Result<Usage> {
    Ok(Usage {
        tasks: row.get::<_, i64>(0)? as usize,
        bytes: row.get::<_, i64>(1)? as usize,
    })
}

/// The database, and this host's claim on its own tasks.
pub(super) struct Store {
    db: Connection,
    instance: String,
    /// Held for the life of the host: the lock that says it is alive, and
    /// where it is.
    alive: Option<(File, PathBuf)>,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some((_, lock)) = &self.alive {
            let _ = std::fs::remove_file(lock);
        }
    }
}

/// Each step of the schema, in order; a database at version `n` has had
/// the first `n` applied (the version is the one row of
/// `tasks_schema_version`). Steps are only ever added. A database made
/// before versions (by 317a478 or earlier: a `tasks` table and no version
/// row) is at version 1 once the columns it may lack are added
/// ([`adopt_unversioned`]). A database of a newer version than the last
/// step is refused: this host does not know what it holds.
const STEPS: &[&str] = &[
    // 1: the tasks, as hosts kept them before schema versions.
    "
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        owner TEXT,
        instance TEXT NOT NULL,
        wire TEXT NOT NULL,
        method TEXT NOT NULL,
        target TEXT NOT NULL,
        status TEXT NOT NULL,
        status_message TEXT,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        ttl_ms INTEGER NOT NULL,
        outcome TEXT,
        size INTEGER NOT NULL DEFAULT 0,
        input_requests TEXT
    );
    CREATE INDEX tasks_by_owner ON tasks (owner, created_ms, id);
    CREATE INDEX tasks_by_expiry ON tasks (created_ms);
    CREATE INDEX tasks_usage ON tasks (owner, size);
    ",
];

/// The schema version this host brings a database to.
pub(super) const SCHEMA_VERSION: i64 = STEPS.len() as i64;

/// Brings the tasks database up to [`SCHEMA_VERSION`], in one immediate
/// transaction (hosts sharing the file take turns); refuses one of a newer
/// version.
fn migrate(db: &mut Connection) -> Result<()> {
    let tx = db.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS tasks_schema_version (version INTEGER NOT NULL)")?;
    let stored: Option<i64> =
        tx.query_row("SELECT MAX(version) FROM tasks_schema_version", [], |row| {
            row.get(0)
        })?;
    let mut version = match stored {
        Some(version) => version,
        None => adopt_unversioned(&tx)?,
    };
    anyhow::ensure!(
        version <= SCHEMA_VERSION,
        "the tasks store is at schema version {version}, newer than this host knows \
         ({SCHEMA_VERSION}): a newer version of wasm-mcp made it; run that version, or \
         point [tasks] store at another file"
    );
    while version < SCHEMA_VERSION {
        tx.execute_batch(STEPS[version as usize])
            .with_context(|| format!("step {} of the tasks schema", version + 1))?;
        version += 1;
    }
    tx.execute("DELETE FROM tasks_schema_version", [])?;
    tx.execute(
        "INSERT INTO tasks_schema_version (version) VALUES (?1)",
        [version],
    )?;
    tx.commit()?;
    Ok(())
}

/// The version of a database without a version row: 0 when it has no
/// `tasks` table; else 1, once the columns and index a table made by an
/// earlier host may lack are added (old rows count 0 bytes, and ask
/// nothing).
fn adopt_unversioned(db: &Connection) -> Result<i64> {
    let tables: i64 = db.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tasks'",
        [],
        |row| row.get(0),
    )?;
    if tables == 0 {
        return Ok(0);
    }
    add_column(db, "size", "INTEGER NOT NULL DEFAULT 0")
        .context("adding the size column to the tasks table")?;
    add_column(db, "input_requests", "TEXT")
        .context("adding the input_requests column to the tasks table")?;
    db.execute_batch(
        "CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, created_ms, id);
         CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (created_ms);
         CREATE INDEX IF NOT EXISTS tasks_usage ON tasks (owner, size);",
    )?;
    Ok(1)
}

const COLUMNS: &str =
    "id, owner, wire, method, target, status, status_message, created_ms, updated_ms, ttl_ms, outcome, input_requests";

fn record(row: &Row<'_>) -> rusqlite::Result<Record> {
    let outcome: Option<String> = row.get(10)?;
    let requests: Option<String> = row.get(11)?;
    Ok(Record {
        id: row.get(0)?,
        owner: row.get(1)?,
        wire: Wire::parse(&row.get::<_, String>(2)?),
        method: row.get(3)?,
        target: row.get(4)?,
        status: Status::parse(&row.get::<_, String>(5)?),
        status_message: row.get(6)?,
        created_ms: row.get::<_, i64>(7)? as u64,
        updated_ms: row.get::<_, i64>(8)? as u64,
        ttl_ms: row.get::<_, i64>(9)? as u64,
        outcome: outcome.and_then(|text| super::parse_outcome(&text)),
        input_requests: requests.and_then(|text| match serde_json::from_str(&text) {
            Ok(Value::Object(requests)) => Some(requests),
            _ => None,
        }),
        rerun: None,
        holder: None,
    })
}

/// Adds column `name` (of type `declared`) to a table made before it
/// existed (within the migration's transaction).
fn add_column(db: &Connection, name: &str, declared: &str) -> Result<()> {
    let mut columns = db.prepare("SELECT name FROM pragma_table_info('tasks')")?;
    let names: Vec<String> = columns
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if names.iter().any(|n| n == name) {
        return Ok(());
    }
    db.execute_batch(&format!("ALTER TABLE tasks ADD COLUMN {name} {declared}"))?;
    Ok(())
}

/// The folder of instance locks next to the database at `path`.
fn locks_dir(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".instances");
    path.with_file_name(name)
}

impl Store {
    /// Opens (creating) the database at `path`, or an in-memory one for
    /// `None`, for the host instance `instance`.
    pub(super) fn open(path: Option<&Path>, instance: &str) -> Result<Store> {
        let (mut db, alive) = match path {
            None => (Connection::open_in_memory()?, None),
            Some(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("creating {}", parent.display()))?;
                }
                let db = Connection::open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                let locks = locks_dir(path);
                std::fs::create_dir_all(&locks)
                    .with_context(|| format!("creating {}", locks.display()))?;
                let lock_path = locks.join(instance);
                let lock = File::create(&lock_path)?;
                lock.try_lock()
                    .with_context(|| format!("locking {}", lock_path.display()))?;
                (db, Some((lock, lock_path)))
            }
        };
        db.busy_timeout(std::time::Duration::from_secs(5))?;
        // WAL with NORMAL sync: a commit survives the process dying at any
        // point (it is in the log before the call returns); only a power
        // loss may lose the newest commits.
        db.pragma_update(None, "journal_mode", "WAL")?;
        db.pragma_update(None, "synchronous", "NORMAL")?;
        migrate(&mut db).context("bringing the tasks store's schema up to date")?;
        let store = Store {
            db,
            instance: instance.to_owned(),
            alive,
        };
        store.fail_orphans()?;
        Ok(store)
    }

    /// Marks the unfinished tasks of hosts that are gone as failed, and
    /// clears the locks they left; their ids. (An in-memory store has no
    /// other host.)
    pub(super) fn fail_orphans(&self) -> Result<Vec<String>> {
        let Some((_, lock)) = &self.alive else {
            return Ok(Vec::new());
        };
        let locks = lock.parent().unwrap_or(Path::new("."));
        let mut alive = vec![self.instance.clone()];
        for entry in std::fs::read_dir(locks)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == self.instance {
                continue;
            }
            let held = File::open(entry.path()).is_ok_and(|file| file.try_lock().is_err());
            if held {
                alive.push(name);
            } else {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let mut find = self.db.prepare(
            "SELECT DISTINCT instance FROM tasks WHERE status IN ('working', 'input_required')",
        )?;
        let running: Vec<String> = find
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let error = crate::protocol::RpcError::internal(
            "the host stopped while this task was running (it was restarted or crashed), so the task did not finish",
        )
        .to_json();
        let mut failed = Vec::new();
        for instance in running.iter().filter(|i| !alive.contains(i)) {
            let outcome = outcome_text(&Err(error.clone()));
            let mut update = self.db.prepare(
                "UPDATE tasks SET status = 'failed', status_message = ?1, outcome = ?2, updated_ms = ?3,
                 size = ?5, input_requests = NULL
                 WHERE instance = ?4 AND status IN ('working', 'input_required') RETURNING id",
            )?;
            let ids: Vec<String> = update
                .query_map(
                    params![
                        error["message"].as_str(),
                        outcome,
                        crate::server::tasks::now_ms() as i64,
                        instance,
                        outcome.len() as i64
                    ],
                    |row| row.get(0),
                )?
                .collect::<rusqlite::Result<_>>()?;
            tracing::warn!(
                store = %locks.display(),
                failed = ids.len(),
                "tasks left running by a host that stopped are marked failed"
            );
            failed.extend(ids);
        }
        Ok(failed)
    }

    /// The tasks among `ids` still unfinished.
    pub(super) fn unfinished(&self, ids: &[String]) -> Result<Vec<String>> {
        let list = serde_json::to_string(ids)?;
        let mut query = self.db.prepare_cached(
            "SELECT id FROM tasks WHERE status IN ('working', 'input_required')
             AND id IN (SELECT value FROM json_each(?1))",
        )?;
        let found = query
            .query_map([list], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(found)
    }

    /// Stores a new task.
    pub(super) fn insert(&self, task: &Record) -> Result<()> {
        let outcome = task.outcome.as_ref().map(outcome_text);
        let size = outcome.as_ref().map_or(0, String::len);
        self.db.prepare_cached(
            &format!("INSERT INTO tasks ({COLUMNS}, instance, size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
        )?.execute(
            params![
                task.id,
                task.owner,
                task.wire.as_str(),
                task.method,
                task.target,
                task.status.as_str(),
                task.status_message,
                task.created_ms as i64,
                task.updated_ms as i64,
                task.ttl_ms as i64,
                outcome,
                task.input_requests.as_ref().map(|r| Value::Object(r.clone()).to_string()),
                self.instance,
                size as i64,
            ],
        )?;
        Ok(())
    }

    /// The task `id`, if it exists.
    pub(super) fn get(&self, id: &str) -> Result<Option<Record>> {
        let found = self
            .db
            .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
            .query_row([id], record)
            .optional()?;
        Ok(found)
    }

    /// Moves an unfinished task to `status` (non-terminal) with the
    /// questions it waits on (JSON); `false` if it is already over or gone.
    pub(super) fn set_status(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        requests: Option<&str>,
    ) -> Result<bool> {
        let changed = self
            .db
            .prepare_cached(
                "UPDATE tasks SET status = ?1, status_message = ?2, updated_ms = ?3, input_requests = ?5
                 WHERE id = ?4 AND status IN ('working', 'input_required')",
            )?
            .execute(params![
                status.as_str(),
                message,
                crate::server::tasks::now_ms() as i64,
                id,
                requests
            ])?;
        Ok(changed == 1)
    }

    /// Ends an unfinished task with its outcome as stored text
    /// ([`outcome_text`]); `false` if it was already over (a cancelled task
    /// stays cancelled) or is gone.
    pub(super) fn finish(
        &self,
        id: &str,
        status: Status,
        message: Option<&str>,
        outcome: Option<&str>,
    ) -> Result<bool> {
        let changed = self
            .db
            .prepare_cached(
                "UPDATE tasks SET status = ?1, status_message = ?2, outcome = ?3, updated_ms = ?4,
                 size = ?5, input_requests = NULL
             WHERE id = ?6 AND status IN ('working', 'input_required')",
            )?
            .execute(params![
                status.as_str(),
                message,
                outcome,
                crate::server::tasks::now_ms() as i64,
                outcome.map_or(0, str::len) as i64,
                id
            ])?;
        Ok(changed == 1)
    }

    /// The tasks `owner` keeps and the bytes of their results.
    pub(super) fn usage(&self, owner: Option<&str>) -> Result<Usage> {
        let usage = self
            .db
            .prepare_cached("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM tasks WHERE owner IS ?1")?
            .query_row([owner], usage)?;
        Ok(usage)
    }

    /// The tasks everyone keeps and the bytes of their results.
    pub(super) fn usage_all(&self) -> Result<Usage> {
        let usage = self
            .db
            .prepare_cached("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM tasks")?
            .query_row([], usage)?;
        Ok(usage)
    }

    /// How many tasks are kept, by status.
    pub(super) fn count_by_status(&self) -> Result<Vec<(String, u64)>> {
        let mut query = self
            .db
            .prepare_cached("SELECT status, COUNT(*) FROM tasks GROUP BY status ORDER BY status")?;
        let rows = query
            .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Up to `limit` tasks of `owner`, oldest first, after the task
    /// `(created_ms, id)` when given.
    pub(super) fn list(
        &self,
        owner: Option<&str>,
        after: Option<(u64, &str)>,
        limit: usize,
    ) -> Result<Vec<Record>> {
        let (created, id) = after.unwrap_or((0, ""));
        let mut query = self.db.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE owner IS ?1 AND (created_ms, id) > (?2, ?3)
             ORDER BY created_ms, id LIMIT ?4"
        ))?;
        let rows = query
            .query_map(params![owner, created as i64, id, limit as i64], record)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(rows)
    }

    /// Deletes the tasks whose time to live has passed; their ids.
    pub(super) fn purge_expired(&self, now_ms: u64) -> Result<Vec<String>> {
        let mut query = self
            .db
            .prepare("DELETE FROM tasks WHERE created_ms + ttl_ms <= ?1 RETURNING id")?;
        let ids = query
            .query_map([now_ms as i64], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::super::contract::task;
    use super::*;
    use serde_json::json;

    #[test]
    fn tasks_of_a_host_that_died_fail_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let done = Ok(json!({ "content": [] }));
        {
            let dead = Store::open(Some(&path), "dead").unwrap();
            dead.insert(&task("running", None, 1)).unwrap();
            dead.insert(&task("finished", None, 1)).unwrap();
            dead.finish(
                "finished",
                Status::Completed,
                None,
                Some(&outcome_text(&done)),
            )
            .unwrap();
        }
        let alive = Store::open(Some(&path), "alive").unwrap();
        alive.insert(&task("alive's", None, 1)).unwrap();
        let restarted = Store::open(Some(&path), "new").unwrap();
        let running = restarted.get("running").unwrap().unwrap();
        assert_eq!(running.status, Status::Failed);
        assert!(matches!(running.outcome, Some(Err(ref e)) if e["code"] == -32603));
        let finished = restarted.get("finished").unwrap().unwrap();
        assert_eq!(finished.status, Status::Completed);
        assert_eq!(finished.outcome, Some(done));
        assert_eq!(
            restarted.get("alive's").unwrap().unwrap().status,
            Status::Working
        );
        drop(alive);
    }

    /// The schema 317a478 made (its `SCHEMA` and `USAGE_INDEX`, copied).
    const SCHEMA_317A478: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT,
    instance TEXT NOT NULL,
    wire TEXT NOT NULL,
    method TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL,
    outcome TEXT,
    size INTEGER NOT NULL DEFAULT 0,
    input_requests TEXT
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, created_ms, id);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (created_ms);
CREATE INDEX IF NOT EXISTS tasks_usage ON tasks (owner, size);
";

    fn version(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("SELECT version FROM tasks_schema_version", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_database_of_317a478_is_recognised_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA_317A478).unwrap();
        // A finished task, as 317a478 wrote it.
        old.execute(
            "INSERT INTO tasks (id, owner, wire, method, target, status, status_message, created_ms,
             updated_ms, ttl_ms, outcome, input_requests, instance, size)
             VALUES ('t1', 'ada', '2025-11-25', 'tools/call', 'slow', 'completed', NULL, 5, 6,
             4000000000000, '{\"result\":{\"content\":[]}}', NULL, 'gone', 30)",
            [],
        )
        .unwrap();
        drop(old);
        let store = Store::open(Some(&path), "me").unwrap();
        assert_eq!(version(&path), SCHEMA_VERSION);
        let task = store.get("t1").unwrap().unwrap();
        assert_eq!(task.owner.as_deref(), Some("ada"));
        assert_eq!(task.wire, Wire::Handshake);
        assert_eq!(task.status, Status::Completed);
        assert_eq!(task.outcome, Some(Ok(json!({ "content": [] }))));
        assert_eq!(store.usage(Some("ada")).unwrap().bytes, 30);
        drop(store);
        // Opened again: already at the version, nothing to do.
        let again = Store::open(Some(&path), "me").unwrap();
        assert!(again.get("t1").unwrap().is_some());
        assert_eq!(version(&path), SCHEMA_VERSION);
    }

    #[test]
    fn a_table_made_before_sizes_gains_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            &SCHEMA_317A478
                .replace(
                    ",\n    size INTEGER NOT NULL DEFAULT 0,\n    input_requests TEXT",
                    "",
                )
                .replace(
                    "CREATE INDEX IF NOT EXISTS tasks_usage ON tasks (owner, size);",
                    "",
                ),
        )
        .unwrap();
        assert!(old.execute_batch("SELECT size FROM tasks").is_err());
        drop(old);
        let store = Store::open(Some(&path), "me").unwrap();
        store.insert(&task("a", None, 1)).unwrap();
        assert_eq!(store.usage(None).unwrap().tasks, 1);
        assert_eq!(version(&path), SCHEMA_VERSION);
    }

    #[test]
    fn a_new_database_gets_every_step_and_a_newer_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        drop(Store::open(Some(&path), "me").unwrap());
        assert_eq!(version(&path), SCHEMA_VERSION);
        Connection::open(&path)
            .unwrap()
            .execute("UPDATE tasks_schema_version SET version = 99", [])
            .unwrap();
        let refused = Store::open(Some(&path), "me").err().expect("refused");
        let message = format!("{refused:#}");
        assert!(
            message.contains("schema version 99, newer than this host knows"),
            "{message}"
        );
    }
}
