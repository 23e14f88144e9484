//! What operators scrape: counters and histograms the host keeps as it
//! works, and gauges read when scraped, rendered as Prometheus text.
//!
//! One set per process ([`metrics`]). Label values come only from the
//! host's own words and from plugins that loaded (plugin and tool names),
//! never from what a client sent; the (plugin, tool) pairs counted are
//! capped at [`MAX_TOOL_SERIES`] (further ones count as `_other`), and
//! each label value at [`MAX_LABEL_BYTES`], so a scrape stays under a few
//! MB whatever the plugins are called.

use parking_lot::RwLock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

/// Distinct (plugin, tool) pairs with series of their own, at most; calls
/// of further ones are counted under plugin and tool `_other`.
pub const MAX_TOOL_SERIES: usize = 1000;

/// Distinct plugins with load counts of their own, at most.
pub const MAX_PLUGIN_SERIES: usize = 1000;

/// The longest label value, in bytes (a plugin or tool name is cut there,
/// and marked with `…`; MCP asks tool names of at most 128 characters).
pub const MAX_LABEL_BYTES: usize = 128;

/// The label value of what is past a cap.
const OTHER: &str = "_other";

/// The call durations' bucket bounds, in seconds.
const DURATION_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
    30.0, 120.0,
];

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A result (`isError` false).
    Ok,
    /// A result with `isError`, or an error the plugin returned.
    ToolError,
    /// The plugin trapped (a panic, `unreachable`, out of memory, ...).
    Trap,
    /// The call ran past its deadline.
    Timeout,
    /// The client cancelled it.
    Cancelled,
    /// No instance was free (`[server] max_instances`).
    Busy,
    /// What the plugin returned was over its limits.
    TooLarge,
    /// Anything else (the call could not be set up, ...).
    Failed,
}

impl Outcome {
    const ALL: [Outcome; 8] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::Trap,
        Outcome::Timeout,
        Outcome::Cancelled,
        Outcome::Busy,
        Outcome::TooLarge,
        Outcome::Failed,
    ];

    fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Trap => "trap",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
            Outcome::Busy => "busy",
            Outcome::TooLarge => "too_large",
            Outcome::Failed => "failed",
        }
    }
}

/// Why a request was refused before it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Over a cap on requests or bytes in progress (429).
    InProgress,
    /// Every session slot is taken (503 on `initialize`).
    Sessions,
    /// Every connection has a request in progress (the new one is closed).
    Connections,
    /// Over a principal's (or a tool's) calls per second (429).
    Rate,
    /// A token without the scopes or claims a plugin or tool requires (403).
    Scope,
    /// No valid token (401).
    Unauthenticated,
}

impl Refusal {
    fn label(self) -> &'static str {
        match self {
            Refusal::InProgress => "in_progress",
            Refusal::Sessions => "sessions",
            Refusal::Connections => "connections",
            Refusal::Rate => "rate",
            Refusal::Scope => "scope",
            Refusal::Unauthenticated => "unauthenticated",
        }
    }
}

/// Why a request that bends a rule was served all the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lenience {
    /// A stateless `tasks/*` request without the `Mcp-Name` header
    /// (clients in the field only lately began to send it).
    TaskWithoutMcpName,
}

impl Lenience {
    fn label(self) -> &'static str {
        match self {
            Lenience::TaskWithoutMcpName => "task_without_mcp_name",
        }
    }
}

/// Where notifications were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// The client read too slowly.
    SlowClient,
    /// The plugin sent more than its `notifications_per_sec`.
    PluginRate,
}

impl Dropped {
    fn label(self) -> &'static str {
        match self {
            Dropped::SlowClient => "slow_client",
            Dropped::PluginRate => "plugin_rate",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    plugin: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    plugin: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoadLabels {
    plugin: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RecordLabels {
    record: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

/// One tool's series, made on its first call.
struct ToolSeries {
    calls: [Counter; Outcome::ALL.len()],
    duration: Histogram,
}

/// The tool series made so far, by plugin and tool.
#[derive(Default)]
struct Tools {
    by_plugin: HashMap<String, HashMap<String, ToolSeries>>,
    made: usize,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// What the host is doing now, read when scraped.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Plugin instances alive.
    pub instances: usize,
    /// Of those, fresh instances made ahead of a call.
    pub spare_instances: usize,
    /// The most that may be alive (`[server] max_instances`).
    pub max_instances: usize,
    /// Bytes of linear memory and tables the live instances hold.
    pub plugin_memory_bytes: usize,
    /// Plugins serving.
    pub plugins: usize,
    /// Calls parked until their client's input arrives (2026-07-28).
    pub parked_calls: usize,
    /// Tasks kept, by status.
    pub tasks: Vec<(String, u64)>,
    /// This host's name among replicas (`None`: a host on its own).
    pub replica: Option<String>,
    /// The digest of the plugin set served (see `Server::plugin_set`).
    pub plugin_set: String,
    /// Whether the store of shared state answered last time it was asked.
    pub store_up: bool,
}

/// Something open (a session, a stream), counted until dropped.
#[derive(Debug)]
pub struct Open(&'static Gauge);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The host's metrics.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    durations: Family<ToolLabels, Histogram>,
    tools: RwLock<Tools>,
    loads: Family<LoadLabels, Counter>,
    load_names: parking_lot::Mutex<std::collections::HashSet<String>>,
    lock_refusals: Family<PluginLabels, Counter>,
    refused: Family<ReasonLabels, Counter>,
    dropped: Family<ReasonLabels, Counter>,
    audit_dropped: Counter,
    lenient: Family<ReasonLabels, Counter>,
    unknown_records: Family<RecordLabels, Counter>,
    instances: Gauge,
    spare_instances: Gauge,
    max_instances: Gauge,
    plugin_memory: Gauge,
    plugins: Gauge,
    sessions: Gauge,
    streams: Gauge,
    parked: Gauge,
    tasks: Family<StatusLabels, Gauge>,
    replica: Family<ReplicaLabels, Gauge>,
    store_up: Gauge,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReplicaLabels {
    replica: String,
    plugin_set: String,
}

/// The process's metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Self {
        Metrics {
            registry: Registry::with_prefix("wasm_mcp"),
            calls: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            tools: RwLock::default(),
            loads: Family::default(),
            load_names: Default::default(),
            lock_refusals: Family::default(),
            refused: Family::default(),
            dropped: Family::default(),
            audit_dropped: Counter::default(),
            lenient: Family::default(),
            unknown_records: Family::default(),
            instances: Gauge::default(),
            spare_instances: Gauge::default(),
            max_instances: Gauge::default(),
            plugin_memory: Gauge::default(),
            plugins: Gauge::default(),
            sessions: Gauge::default(),
            streams: Gauge::default(),
            parked: Gauge::default(),
            tasks: Family::default(),
            replica: Family::default(),
            store_up: Gauge::default(),
        }
        .registered()
    }

    fn registered(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "tool_calls",
            "Tool calls by plugin, tool and outcome",
            self.calls.clone(),
        );
        r.register(
            "tool_call_duration_seconds",
            "Tool call durations, from the plugin's turn to its outcome",
            self.durations.clone(),
        );
        r.register(
            "plugin_loads",
            "Plugin loads and reloads by result (a failed one keeps the old version serving)",
            self.loads.clone(),
        );
        r.register(
            "lock_refusals",
            "Plugin versions not served because they differ from the plugin lock",
            self.lock_refusals.clone(),
        );
        r.register(
            "requests_refused",
            "Requests refused before they were served, by reason",
            self.refused.clone(),
        );
        r.register(
            "notifications_dropped",
            "Notifications dropped, by reason",
            self.dropped.clone(),
        );
        r.register(
            "lenient_requests",
            "Requests served although they bent a rule clients in the field bend, by reason",
            self.lenient.clone(),
        );
        r.register(
            "cluster_unknown_records",
            "Shared records of a newer version than this host reads, not served here, by record",
            self.unknown_records.clone(),
        );
        r.register(
            "audit_lines_dropped",
            "Audit log lines dropped because the writer fell behind ([audit] queue)",
            self.audit_dropped.clone(),
        );
        r.register(
            "instances",
            "Plugin instances alive",
            self.instances.clone(),
        );
        r.register(
            "spare_instances",
            "Of the plugin instances alive, those made ahead of a call (one per plugin at most)",
            self.spare_instances.clone(),
        );
        r.register(
            "max_instances",
            "Plugin instances that may be alive at once",
            self.max_instances.clone(),
        );
        r.register(
            "plugin_memory_bytes",
            "Linear memory and tables held by live plugin instances",
            self.plugin_memory.clone(),
        );
        r.register("plugins", "Plugins serving", self.plugins.clone());
        r.register(
            "sessions",
            "Open sessions (a stdio client, an HTTP session, a legacy SSE connection)",
            self.sessions.clone(),
        );
        r.register(
            "streams",
            "Open SSE streams (responses streamed, GET streams, legacy SSE)",
            self.streams.clone(),
        );
        r.register(
            "parked_calls",
            "Calls waiting for their client's input",
            self.parked.clone(),
        );
        r.register("tasks", "Tasks kept, by status", self.tasks.clone());
        r.register(
            "replica",
            "This host (1): its replica name (empty on its own) and the digest of the plugin set it serves",
            self.replica.clone(),
        );
        r.register(
            "state_store_up",
            "Whether the store of tasks and sessions answered when last asked (1) or not (0)",
            self.store_up.clone(),
        );
        self
    }

    /// Counts a tool call of `plugin` that ended as `outcome` after
    /// `duration`.
    pub fn tool_call(&self, plugin: &str, tool: &str, outcome: Outcome, duration: Duration) {
        let record = |series: &ToolSeries| {
            let index = Outcome::ALL
                .iter()
                .position(|o| *o == outcome)
                .expect("every outcome is listed");
            series.calls[index].inc();
            series.duration.observe(duration.as_secs_f64());
        };
        let find = |tools: &Tools| {
            let found = tools.by_plugin.get(plugin).and_then(|t| t.get(tool));
            found.map(record).is_some()
        };
        if find(&self.tools.read()) {
            return;
        }
        let mut tools = self.tools.write();
        if find(&tools) {
            return;
        }
        let (plugin, tool) = if tools.made < MAX_TOOL_SERIES {
            tools.made += 1;
            (plugin, tool)
        } else {
            (OTHER, OTHER)
        };
        let make = || ToolSeries {
            calls: Outcome::ALL.map(|outcome| {
                self.calls.get_or_create_owned(&CallLabels {
                    plugin: label(plugin),
                    tool: label(tool),
                    outcome: outcome.label(),
                })
            }),
            duration: self.durations.get_or_create_owned(&ToolLabels {
                plugin: label(plugin),
                tool: label(tool),
            }),
        };
        record(
            tools
                .by_plugin
                .entry(plugin.to_owned())
                .or_default()
                .entry(tool.to_owned())
                .or_insert_with(make),
        );
    }

    /// Counts a load or reload of `plugin`.
    pub fn plugin_load(&self, plugin: &str, ok: bool) {
        let labels = LoadLabels {
            plugin: self.plugin_label(plugin),
            result: if ok { "ok" } else { "failed" },
        };
        self.loads.get_or_create(&labels).inc();
    }

    /// Counts a version of `plugin` not served because it differs from
    /// the plugin lock.
    pub fn lock_refusal(&self, plugin: &str) {
        let labels = PluginLabels {
            plugin: self.plugin_label(plugin),
        };
        self.lock_refusals.get_or_create(&labels).inc();
    }

    /// `plugin` as a label, or `_other` once as many plugins as series
    /// allowed have been named.
    fn plugin_label(&self, plugin: &str) -> String {
        let mut named = self.load_names.lock();
        let plugin = if named.contains(plugin) {
            plugin
        } else if named.len() < MAX_PLUGIN_SERIES {
            named.insert(plugin.to_owned());
            plugin
        } else {
            OTHER
        };
        label(plugin)
    }

    /// Counts one more session open, until the guard drops.
    pub fn session_opened(&'static self) -> Open {
        self.sessions.inc();
        Open(&self.sessions)
    }

    /// Counts one more SSE stream open, until the guard drops.
    pub fn stream_opened(&'static self) -> Open {
        self.streams.inc();
        Open(&self.streams)
    }

    /// Counts a request refused for `reason`.
    pub fn refused(&self, reason: Refusal) {
        self.refused
            .get_or_create(&ReasonLabels {
                reason: reason.label(),
            })
            .inc();
    }

    /// Counts a request served leniently, for `reason`.
    pub fn lenient(&self, reason: Lenience) {
        self.lenient
            .get_or_create(&ReasonLabels {
                reason: reason.label(),
            })
            .inc();
    }

    /// Counts a shared `record` (`"session"`, ...) of a newer version
    /// than this host reads, left alone.
    pub fn unknown_record(&self, record: &'static str) {
        self.unknown_records
            .get_or_create(&RecordLabels { record })
            .inc();
    }

    /// Counts an audit line dropped.
    pub fn audit_dropped(&self) {
        self.audit_dropped.inc();
    }

    /// Counts `count` notifications dropped for `reason`.
    pub fn dropped(&self, reason: Dropped, count: u64) {
        self.dropped
            .get_or_create(&ReasonLabels {
                reason: reason.label(),
            })
            .inc_by(count);
    }

    /// The metrics as Prometheus text, with the gauges set from `now`.
    pub fn render(&self, now: &Snapshot) -> String {
        let gauge = |g: &Gauge, v: usize| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        gauge(&self.instances, now.instances);
        gauge(&self.spare_instances, now.spare_instances);
        gauge(&self.max_instances, now.max_instances);
        gauge(&self.plugin_memory, now.plugin_memory_bytes);
        gauge(&self.plugins, now.plugins);
        gauge(&self.parked, now.parked_calls);
        self.tasks.clear();
        for (status, count) in &now.tasks {
            self.tasks
                .get_or_create(&StatusLabels {
                    status: status.clone(),
                })
                .set(i64::try_from(*count).unwrap_or(i64::MAX));
        }
        self.replica.clear();
        self.replica
            .get_or_create(&ReplicaLabels {
                replica: label(now.replica.as_deref().unwrap_or_default()),
                plugin_set: now.plugin_set.clone(),
            })
            .set(1);
        self.store_up.set(i64::from(now.store_up));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }
}

/// `value` as a label value: cut to [`MAX_LABEL_BYTES`] (whole
/// characters), then `…`.
fn label(value: &str) -> String {
    if value.len() <= MAX_LABEL_BYTES {
        return value.to_owned();
    }
    format!("{}…", crate::text::head(value, MAX_LABEL_BYTES - "…".len()))
}

#[cfg(test)]
mod tests;
