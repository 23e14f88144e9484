//! The defaults of every setting that is not a plugin's own limit (those
//! are `LimitsSection`'s). The config sections and the options of the
//! server take them from here, so one number is written once.

/// Handshake sessions open at once over HTTP (`[http] max_sessions`), and
/// kept in the session store.
pub const MAX_SESSIONS: usize = 10_000;

/// The most the cache folder keeps (compiled components and OCI pulls),
/// in MiB.
pub const CACHE_MAX_MB: u64 = 1024;

/// Items per list page.
pub const PAGE_SIZE: usize = 100;
/// How long clients may cache list results, in ms (2026-07-28 `ttlMs`).
pub const LIST_TTL_MS: u64 = 10_000;
/// How long a plugin waits for the client's answer, in ms.
pub const INPUT_TIMEOUT_MS: u64 = 300_000;
/// Calls of one principal waiting for its answers at once.
pub const MAX_WAITING_PER_PRINCIPAL: usize = 256;
/// How long a request that reads the plugins (a list, a call) and arrives
/// while they first load waits for them, in ms: long enough for a cold
/// compile of every example plugin at once on 2 cores (about 2.8 s), and
/// under the 10 s a client such as the MCP Inspector waits for an answer.
pub const STARTUP_WAIT_MS: u64 = 8_000;

/// How long the requests a stdio client sent before closing stdin may
/// still run to their answers, in ms.
pub const STDIN_EOF_GRACE_MS: u64 = 2_000;

/// How often a plugin's OCI tag is asked again, in seconds.
pub const OCI_POLL_SECS: u64 = 300;
/// The most one pull of a plugin from an OCI registry may take, all its
/// requests together, in seconds.
pub const OCI_PULL_TIMEOUT_SECS: u64 = 120;
/// The largest OCI manifest or index a pull reads, in KiB (containerd's
/// limit too).
pub const OCI_MAX_MANIFEST_KB: usize = 4096;
/// The largest token answer a pull reads, in KiB.
pub const OCI_MAX_TOKEN_KB: usize = 64;

/// Plugin instances alive at once (`[server] max_instances`).
pub const MAX_INSTANCES: u32 = 1_000;
/// The most `[server] max_instances` may be: each instance reserves about
/// 8 GiB of address space (two 4 GiB memory slots), and a 64-bit process
/// has 128 TiB.
pub const MAX_INSTANCES_CEILING: u32 = 4_096;

/// How long a task is kept after it is created, in ms.
pub const TASK_TTL_MS: u64 = 3_600_000;
/// The longest time to live a client may ask for, in ms.
pub const TASK_MAX_TTL_MS: u64 = 24 * 3_600_000;
/// The polling interval suggested to clients, in ms.
pub const TASK_POLL_INTERVAL_MS: u64 = 500;
/// On 2026-07-28, a task-supporting call still running after this many
/// ms becomes a task.
pub const TASK_AFTER_MS: u64 = 1_000;
/// Tasks that may run at once.
pub const TASKS_RUNNING: usize = 256;
/// Tasks of one owner that may run at once.
pub const TASKS_RUNNING_PER_OWNER: usize = 32;
/// Tasks one owner may keep until they expire.
pub const TASKS_STORED_PER_OWNER: usize = 1000;
/// Bytes of task results one owner may keep.
pub const TASK_BYTES_PER_OWNER: usize = 64 << 20;
/// Tasks kept in all.
pub const TASKS_STORED: usize = 100_000;
/// Bytes of task results kept in all.
pub const TASK_BYTES: usize = 1 << 30;
/// The largest task result kept, in bytes of JSON.
pub const TASK_RESULT_BYTES: usize = 4 << 20;
/// Connections to the shared PostgreSQL database per replica.
pub const STATE_CONNECTIONS: usize = 8;
/// How long connecting to the shared database, or one query, may take.
pub const STATE_TIMEOUT_MS: u64 = 5_000;
/// SSE events kept per session stream in the shared database.
pub const STATE_STREAM_EVENTS: usize = 1_000;
/// How long a replica's hold on its running tasks lasts unless renewed.
pub const LEASE_SECS: u64 = 10;
/// On SIGTERM, how long a replica's work in progress may go on.
pub const DRAIN_SECS: u64 = 30;
