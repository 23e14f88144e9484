//! The [`Server`] every connection shares: the registry, the settings,
//! the parked calls and tasks, the admission counts, and the channel of
//! server-wide events.

use super::session::{self, Arriving, Session, Settled};
use super::{admission, call, rerun, tasks, Notices, ServerEvent, ServerOptions};
use super::{Bus, LocalBus, MemorySessions, SessionStore, Subscription};
use crate::protocol::{Method, RpcError};
use crate::registry::{Change, Registry, Reload};
use crate::runtime::types::LogLevel;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Where a server keeps what it shares with other hosts: its events, its
/// tasks and its sessions. [`Backends::local`] keeps them in this process
/// (tasks in the configured SQLite file).
pub struct Backends {
    /// Server-wide events.
    pub bus: Arc<dyn Bus>,
    /// The tasks store.
    pub tasks: Box<dyn tasks::TaskStore>,
    /// Set if `tasks` is a stand-in for a store that did not open (it may
    /// still be opening).
    pub tasks_failed: Arc<std::sync::atomic::AtomicBool>,
    /// The handshake sessions store.
    pub sessions: Arc<dyn SessionStore>,
    /// Where the sessions' SSE events are kept for other hosts to replay
    /// (`None`: a host on its own).
    pub stream_events: Option<Arc<dyn super::StreamEvents>>,
    /// This host's name among the replicas sharing the stores (it prefixes
    /// task ids); `None` for a host on its own.
    pub replica: Option<String>,
    /// Set once the shared stores were reached at start (`None`: a host on
    /// its own, whose stores are there at once).
    pub reached: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The shared store of plugins' key-value data (`None`: a host on its
    /// own, which opens its own).
    pub keyvalue: Option<Arc<dyn crate::runtime::keyvalue::Backend>>,
}

impl Backends {
    /// Everything in this process, as `options` say.
    pub fn local(options: &ServerOptions) -> Self {
        let (tasks, tasks_failed) = tasks::open_sqlite(&options.tasks);
        Backends {
            bus: Arc::new(LocalBus::new()),
            tasks,
            tasks_failed,
            sessions: Arc::new(MemorySessions::new(options.max_sessions)),
            stream_events: None,
            replica: None,
            reached: None,
            keyvalue: None,
        }
    }
}

/// What every connection shares: the registry, the settings, and the
/// channel of server-wide events.
pub struct Server {
    pub(super) registry: Arc<Registry>,
    pub(super) options: ServerOptions,
    pub(super) events: Arc<dyn Bus>,
    /// Where handshake sessions named by a transport are kept.
    pub(super) sessions: Arc<dyn SessionStore>,
    /// Where their SSE events are kept for other hosts, if anywhere.
    stream_events: Option<Arc<dyn super::StreamEvents>>,
    /// Calls parked until the client's input arrives (2026-07-28).
    pub(super) parking: Arc<call::Parking>,
    /// Tasks, stored and running.
    pub(super) tasks: Arc<tasks::Tasks>,
    /// Re-listings of plugins that said a list changed: one at a time per
    /// plugin, a burst coalesced.
    pub(super) relists: Arc<crate::coalesce::Coalescer>,
    /// Requests in progress, counted against their caps.
    pub(super) admission: Arc<admission::Admission>,
    /// Calls waiting for their client's answers, counted against a cap.
    pub(super) waiting: Arc<call::Waiting>,
    /// While the plugins first load: until when requests wait for them
    /// (see [`Server::loading`]); `None` once loaded.
    loading: watch::Sender<Option<Instant>>,
    /// The plugins of the first load that have not loaded yet.
    first_load: parking_lot::Mutex<std::collections::BTreeSet<String>>,
    /// The list methods' items as JSON, for the current catalogue.
    pub(super) prepared: super::prepared::Prepared,
    /// Set once the host has begun to shut down.
    stopping: std::sync::atomic::AtomicBool,
    /// Set once the shared stores were reached at start, among replicas.
    reached: Option<Arc<std::sync::atomic::AtomicBool>>,
}

/// How long a draining host must have had nothing in progress to stop.
pub(super) const QUIET: Duration = Duration::from_secs(2);

/// The plugins' first load, running until dropped (see [`Server::loading`]).
pub struct Loading(watch::Sender<Option<Instant>>);

impl Drop for Loading {
    fn drop(&mut self) {
        self.0.send_replace(None);
    }
}

impl Server {
    /// Who may see and use what.
    pub fn policy(&self) -> &super::Policy {
        &self.options.access
    }

    /// The audit log, if there is one.
    pub fn audit(&self) -> Option<&super::audit::Audit> {
        self.options.audit.as_deref()
    }

    /// A server over `registry`, with its background loops running (the
    /// expiry of parked calls and of tasks).
    pub fn new(registry: Arc<Registry>, options: ServerOptions) -> Arc<Self> {
        let backends = Backends::local(&options);
        Self::with_backends(registry, options, backends)
    }

    /// A server over `registry` keeping its shared state in `backends`.
    pub fn with_backends(
        registry: Arc<Registry>,
        options: ServerOptions,
        backends: Backends,
    ) -> Arc<Self> {
        let Backends {
            bus: events,
            tasks,
            tasks_failed,
            sessions,
            stream_events,
            replica,
            reached,
            keyvalue: _,
        } = backends;
        let waiting = call::Waiting::new(options.max_waiting_per_principal);
        let parking = call::Parking::new(options.input_timeout, waiting.clone());
        let tasks = tasks::Tasks::new(
            tasks,
            tasks_failed,
            options.tasks.clone(),
            events.clone(),
            replica,
        );
        // The background loops: each holds a weak reference and ends with
        // what it tends.
        tokio::spawn(call::Parking::expire_now_and_then(Arc::downgrade(&parking)));
        tokio::spawn(tasks::sweep(Arc::downgrade(&tasks)));
        tokio::spawn(tasks::tend(Arc::downgrade(&tasks)));
        let server = Arc::new(Server {
            registry,
            events,
            sessions,
            stream_events,
            parking,
            tasks,
            relists: Arc::default(),
            waiting,
            admission: Arc::new(admission::Admission::new(options.admission.clone())),
            options,
            loading: watch::Sender::new(None),
            first_load: Default::default(),
            prepared: Default::default(),
            stopping: Default::default(),
            reached,
        });
        let host: Arc<dyn rerun::Host> = server.clone();
        tokio::spawn(rerun::rerun_orphans(Arc::downgrade(&host)));
        server
    }

    /// What the host is doing now, for the metrics.
    pub async fn snapshot(&self) -> crate::metrics::Snapshot {
        let tasks = self.tasks.store().count_by_status().await;
        let runtime = self.registry.runtime();
        let tasks = tasks.unwrap_or_else(|e| {
            tracing::warn!("counting tasks for the metrics: {e:#}");
            Vec::new()
        });
        crate::metrics::Snapshot {
            instances: runtime.instances_in_use(),
            spare_instances: runtime.spare_instances(),
            max_instances: runtime.config().max_instances as usize,
            plugin_memory_bytes: runtime.memory_in_use(),
            plugins: self.registry.catalogue().plugins.len(),
            parked_calls: self.parking.len(),
            tasks,
            replica: self.tasks.replica().map(str::to_owned),
            plugin_set: self.plugin_set(),
            store_up: self.tasks.store_up(),
        }
    }

    /// The plugin set served, as one digest (made with the catalogue):
    /// replicas serving the same plugins say the same.
    pub fn plugin_set(&self) -> String {
        self.registry.catalogue().plugin_set.clone()
    }

    /// What `/readyz` says beyond readiness: the replica's name, the plugin
    /// set it serves, and whether the store of shared state answers (a
    /// store outage does not make the host unready: what needs no shared
    /// state is still served).
    pub fn readiness_details(&self) -> Map<String, Value> {
        let mut details = Map::new();
        if let Some(replica) = self.tasks.replica() {
            details.insert("replica".into(), json!(replica));
        }
        details.insert("plugins".into(), json!(self.plugin_set()));
        let store = if self.tasks.store_up() {
            "reachable"
        } else {
            "unreachable"
        };
        details.insert("store".into(), json!(store));
        details
    }

    /// Waits, for at most `within`, until no request is in progress and
    /// no task runs here; then hands back the hold on the tasks still
    /// running, so that another host sharing the store takes them over at
    /// once. For a host that is shutting down ([`Server::stop`]).
    /// Requests still come in on open connections until the load balancer
    /// sees the host unready; draining ends once none has been in progress
    /// for `QUIET` (2 s).
    pub async fn drain(&self, within: Duration) {
        let now = tokio::time::Instant::now;
        let deadline = now() + within;
        let busy = || self.admission.in_progress() + self.tasks.running();
        tracing::info!(
            in_progress = busy(),
            ?within,
            "draining: finishing the work in progress"
        );
        let mut quiet_since = now();
        while now() < deadline {
            if busy() > 0 {
                quiet_since = now();
            } else if quiet_since.elapsed() >= QUIET {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.tasks.hand_back().await;
    }

    /// Marks the host as shutting down: it is no longer ready (see
    /// [`Server::unready`]).
    pub fn stop(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Why the host should not be sent traffic now; empty when it is ready:
    /// the plugins' first load has ended, the tasks store opened, and the
    /// host is not shutting down.
    pub fn unready(&self) -> Vec<&'static str> {
        let mut reasons = Vec::new();
        if self.loading.borrow().is_some() {
            reasons.push("the plugins are still loading");
        }
        if self.tasks.store_failed() {
            reasons.push("the tasks store did not open");
        }
        let reached =
            |r: &Arc<std::sync::atomic::AtomicBool>| r.load(std::sync::atomic::Ordering::Relaxed);
        if self.reached.as_ref().is_some_and(|r| !reached(r)) {
            reasons.push("the shared database has not been reached yet");
        }
        if self.stopping.load(std::sync::atomic::Ordering::Relaxed) {
            reasons.push("the host is shutting down");
        }
        reasons
    }

    /// Marks the plugins' first load as running until the returned guard
    /// drops. Until then, and for at most `startup_wait` from now, requests
    /// wait for it ([`Server::until_loaded`]).
    pub fn loading(&self) -> Loading {
        let now = Instant::now();
        // A wait too long to add up is as good as a year.
        let until = now
            .checked_add(self.options.startup_wait)
            .unwrap_or(now + Duration::from_secs(365 * 24 * 3600));
        self.loading.send_replace(Some(until));
        Loading(self.loading.clone())
    }

    /// Waits for the plugins' first load to end, but not past `startup_wait`
    /// after it began, so that a client that connects at startup sees every
    /// plugin that loads in time and gets an answer all the same if one
    /// does not. A plugin loaded after that is announced with
    /// `list_changed`. Requests whose answers depend on the plugins (lists,
    /// calls, reads) call this before they are served; the others
    /// (`initialize`, `ping`, `server/discover`) do not wait.
    pub async fn until_loaded(&self) {
        let Some(until) = *self.loading.borrow() else {
            return;
        };
        let mut loading = self.loading.subscribe();
        let _ = tokio::time::timeout_at(until.into(), loading.wait_for(Option::is_none)).await;
    }

    /// Notes the plugins the first load is about to load.
    pub fn first_load_of(&self, plugins: impl IntoIterator<Item = String>) {
        self.first_load.lock().extend(plugins);
    }

    /// Notes that plugin `plugin` of the first load has loaded (or failed
    /// to).
    pub fn first_loaded(&self, plugin: &str) {
        self.first_load.lock().remove(plugin);
    }

    /// The plugins of the first load still loading once requests no longer
    /// wait for them (none before): answers are given without them.
    pub fn late_plugins(&self) -> Vec<String> {
        if !self.announces_first_loads() {
            return Vec::new();
        }
        self.first_load.lock().iter().cloned().collect()
    }

    /// A sentence naming the plugins still loading once requests no longer
    /// wait for them (see [`Server::late_plugins`]); empty when there are
    /// none. Added to `instructions` and to the error for a name that is
    /// not served (yet).
    pub fn late_notice(&self) -> String {
        let late = self.late_plugins();
        if late.is_empty() {
            return String::new();
        }
        let shown: Vec<&str> = late.iter().take(16).map(String::as_str).collect();
        let more = late.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!(
            "Plugins still loading (a first compile takes a while): {}{more}; what they offer is \
             served once they have loaded, and announced with notifications/*/list_changed.",
            shown.join(", ")
        )
    }

    /// Whether a plugin that has just loaded for the first time needs
    /// announcing: not while every request still waits for the first load,
    /// for each of them will see it.
    pub fn announces_first_loads(&self) -> bool {
        self.loading
            .borrow()
            .is_none_or(|until| Instant::now() >= until)
    }

    /// Re-asks plugin `plugin` for its lists (it said one changed), swaps
    /// the catalogue and announces the lists that really changed. At most
    /// one re-listing per plugin runs at a time; requests meanwhile make it
    /// run once more.
    pub fn relist(self: &Arc<Self>, plugin: &str) {
        let server = Arc::downgrade(self);
        let name = plugin.to_owned();
        self.relists.request(plugin, move || {
            let (server, plugin) = (server.clone(), name.clone());
            async move {
                if let Some(server) = server.upgrade() {
                    server.relist_now(&plugin).await;
                }
            }
        });
    }

    /// Re-asks a plugin for its lists, swaps the catalogue, and announces
    /// the lists that really changed.
    async fn relist_now(&self, plugin: &str) {
        let Some(entry) = self.registry.catalogue().plugin(plugin).cloned() else {
            return;
        };
        match Registry::describe(entry.plugin).await {
            Ok(fresh) => {
                if let Some(change) = self.registry.relisted(fresh) {
                    self.announce(&change);
                }
            }
            Err(e) => tracing::error!(plugin, "could not re-list the plugin: {e:#}"),
        }
    }

    /// Whether plugin `plugin` serves the resource at `uri` (a listed
    /// resource or one of its templates).
    pub fn serves(&self, plugin: &str, uri: &str) -> bool {
        self.registry
            .catalogue()
            .resource_owner(uri)
            .is_some_and(|p| p.name() == plugin)
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Publishes a server-wide event to every connection.
    pub fn publish(&self, event: ServerEvent) {
        self.events.publish(event);
    }

    /// Tells every connection which lists a registry change changed.
    pub fn announce(&self, change: &Change) {
        for kind in &change.lists {
            self.publish(ServerEvent::ListChanged(*kind));
        }
    }

    /// Announces a plugin file's reload: changed lists, and for a replaced
    /// plugin, the subscribed resources it serves.
    pub fn announce_reload(&self, plugin: &str, reload: &Reload) {
        match reload {
            Reload::Unchanged => {}
            Reload::Added(change) | Reload::Removed(change) => self.announce(change),
            // Subscribers to what the plugin serves hear of it: a skill
            // file's bytes may be what changed.
            Reload::Replaced(change) | Reload::Reskilled(change) => {
                self.announce(change);
                self.publish(ServerEvent::PluginReplaced(plugin.to_owned()));
            }
        }
    }

    /// Warns of what `config` names that matches nothing loaded
    /// (`config::unmatched`): all of it, or with `plugin` (one just
    /// loaded, replaced or removed), what concerns that plugin.
    pub fn warn_unknown_items(&self, config: &crate::config::Config, plugin: Option<&str>) {
        let catalogue = self.registry.catalogue();
        let offered: Vec<_> = catalogue.plugins.iter().map(Self::offered).collect();
        for finding in crate::config::unmatched::findings(config, None, &offered) {
            if plugin.is_none() || finding.plugin.as_deref() == plugin {
                let about = finding.plugin.as_deref().unwrap_or_default();
                tracing::warn!(
                    plugin = about,
                    "the config names what matches nothing: {finding}"
                );
            }
        }
    }

    /// What a loaded plugin offers, by the names the config gives rules.
    pub fn offered(entry: &crate::registry::PluginEntry) -> crate::config::unmatched::Offered {
        let listing = &entry.listing;
        crate::config::unmatched::Offered {
            plugin: entry.plugin.name().to_owned(),
            tools: listing.tools.iter().map(|t| t.name.clone()).collect(),
            prompts: listing.prompts.iter().map(|p| p.name.clone()).collect(),
            resources: (listing.resources.iter().map(|r| r.uri.clone()))
                .chain(listing.templates.iter().map(|t| t.uri_template.clone()))
                .chain(entry.skills.files().map(|(_, file)| file.uri.clone()))
                .collect(),
        }
    }

    /// Logs an error server-side (`detail`, which may name host paths) and
    /// tells every session that set a log level `summary` (which must not).
    pub fn log_error(&self, logger: &str, detail: String, summary: String) {
        tracing::error!(logger, "{detail}");
        self.publish(ServerEvent::Log {
            level: LogLevel::Error,
            logger: logger.to_owned(),
            message: summary,
        });
    }

    /// Logs `detail` and tells every client `summary` at level error,
    /// whatever log level it set (see [`ServerEvent::Alert`]).
    pub fn alert(&self, logger: &str, detail: String, summary: String) {
        tracing::error!(logger, "{detail}");
        self.publish(ServerEvent::Alert {
            logger: logger.to_owned(),
            message: summary,
        });
    }

    /// Where handshake sessions named by a transport are kept.
    pub fn session_store(&self) -> &Arc<dyn SessionStore> {
        &self.sessions
    }

    /// Whether other hosts share the session store (replicas): a session
    /// may then be in use through another host.
    pub fn shares_sessions(&self) -> bool {
        self.stream_events.is_some()
    }

    /// Where the sessions' SSE events are kept for other hosts to replay,
    /// if anywhere.
    pub fn stream_events(&self) -> Option<&Arc<dyn super::StreamEvents>> {
        self.stream_events.as_ref()
    }

    /// Listens to server-wide events.
    pub fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }

    /// What clients are told of plugins not served as their files stand.
    pub fn notices(&self) -> &Notices {
        &self.options.notices
    }

    /// `instructions`: the configured ones, then the plugins' notices, then
    /// the plugins still loading (see [`Server::late_notice`]).
    pub(super) fn instructions(&self) -> Option<String> {
        let base = self.options.instructions.as_deref();
        let instructions = self.options.notices.instructions(base);
        let late = self.late_notice();
        match instructions {
            _ if late.is_empty() => instructions,
            Some(text) => Some(format!("{text}\n\n{late}")),
            None => Some(late),
        }
    }

    /// `serverInfo`.
    pub(super) fn server_info(&self) -> crate::protocol::model::ServerInfo<'_> {
        self.options.server_info()
    }
}

impl Server {
    /// A stateless request of `method` on its way in. A `tools/call`
    /// waits for the plugins' first load: the arguments it repeats in
    /// headers are its tool's.
    pub async fn arriving(&self, method: &str) -> Arriving {
        let method = Method::parse(method);
        let catalogue = match method {
            Some(Method::CallTool) => {
                self.until_loaded().await;
                Some(self.registry.catalogue())
            }
            _ => None,
        };
        Arriving { method, catalogue }
    }

    /// An `arriving` stateless request with `params`, its headers checked,
    /// settled once: its `_meta` checked into its era, and served by the
    /// catalogue its headers were checked against.
    pub fn settle_stateless(
        &self,
        arriving: Arriving,
        params: &Map<String, Value>,
    ) -> Result<Settled, RpcError> {
        let era = session::era_of(params, &Session::default(), self.options.handshake_only)?;
        Ok(Settled {
            era,
            method: arriving.method,
            catalogue: arriving.catalogue,
        })
    }

    /// Whether the stateless revision is offered.
    pub fn offers_stateless(&self) -> bool {
        !self.options.handshake_only
    }

    /// -32022 for a request of `requested`, listing the revisions offered.
    pub fn unsupported_version(&self, requested: &Value) -> RpcError {
        session::unsupported_version(requested, self.options.handshake_only)
    }
}

impl rerun::Host for Server {
    fn tasks(&self) -> &Arc<tasks::Tasks> {
        &self.tasks
    }

    fn catalogue(&self) -> Arc<crate::registry::Catalogue> {
        self.registry.catalogue()
    }

    fn access(&self) -> &super::Policy {
        &self.options.access
    }

    fn audit(&self) -> Option<&super::audit::Audit> {
        Server::audit(self)
    }

    fn headless(
        self: Arc<Self>,
        principal: Option<String>,
        tenant: crate::tenant::Tenant,
        roots: Option<Vec<std::path::PathBuf>>,
    ) -> call::CallRequest {
        let input_timeout = self.options.input_timeout;
        call::headless(self, input_timeout, principal, tenant, roots)
    }
}

impl call::PluginNotices for Server {
    fn relist(self: Arc<Self>, plugin: &str) {
        Server::relist(&self, plugin);
    }

    fn resource_updated(&self, plugin: &str, uri: String) {
        // A plugin speaks only for the resources it serves.
        if self.serves(plugin, &uri) {
            self.publish(ServerEvent::ResourceUpdated(uri));
        } else {
            tracing::debug!(plugin, %uri, "resources/updated for a URI the plugin does not serve: dropped");
        }
    }
}
